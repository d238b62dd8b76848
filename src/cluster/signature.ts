// Signed node messages. Every call between nodes carries
//   Authorization: CLUSTER-HMAC-SHA256 Node=<id>, Timestamp=<unix ms>, Nonce=<32 hex>,
//                  Body=<hex SHA-256 of the body>, Signature=<hex HMAC-SHA256>
// over the string below, keyed with the shared secret. A receiver refuses calls whose timestamp
// is outside the window and nonces it has seen within it; the answer carries a Cluster-Signature
// bound to the request's nonce, so a caller knows the reply came from a node with the secret.
import { Buffer } from "node:buffer";
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export const SCHEME = "CLUSTER-HMAC-SHA256";
/** How far a call's timestamp may be from the receiver's clock, either way. */
export const WINDOW_MS = 5 * 60_000;
/** Header of the signature on an answer. */
export const ANSWER_HEADER = "cluster-signature";

export interface CallSignature {
  node: string;
  timestamp: number;
  nonce: string;
  /** Hex SHA-256 of the body (of the empty string when there is none). */
  body: string;
  signature: string;
}

export function sha256Hex(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

function hmacHex(secret: string, text: string): string {
  return createHmac("sha256", secret).update(text).digest("hex");
}

/** Constant-time equality of two hex strings (different lengths differ at once). */
export function sameHex(a: string, b: string): boolean {
  if (a.length !== b.length || !/^[0-9a-f]*$/.test(a) || !/^[0-9a-f]*$/.test(b)) return false;
  return timingSafeEqual(Buffer.from(a, "hex"), Buffer.from(b, "hex"));
}

function stringToSign(method: string, target: string, s: Omit<CallSignature, "signature">) {
  return [SCHEME, method.toUpperCase(), target, s.node, String(s.timestamp), s.nonce, s.body]
    .join("\n");
}

/** The Authorization header value of a call to `target` (path and query) with this body. */
export function signCall(
  secret: string,
  call: {
    method: string;
    target: string;
    node: string;
    /** The body, or the hex SHA-256 of one streamed (src/cluster/objects.ts). */
    body: Uint8Array | { sha256: string };
    now?: number;
  },
): { header: string; nonce: string } {
  const parts = {
    node: call.node,
    timestamp: call.now ?? Date.now(),
    nonce: randomBytes(16).toString("hex"),
    body: call.body instanceof Uint8Array ? sha256Hex(call.body) : call.body.sha256,
  };
  const signature = hmacHex(secret, stringToSign(call.method, call.target, parts));
  return {
    header: `${SCHEME} Node=${parts.node}, Timestamp=${parts.timestamp}, Nonce=${parts.nonce}, ` +
      `Body=${parts.body}, Signature=${signature}`,
    nonce: parts.nonce,
  };
}

/** The parts of an Authorization header in this scheme, or undefined when it is not one. */
export function parseCallSignature(header: string | null): CallSignature | undefined {
  if (!header?.startsWith(SCHEME + " ")) return undefined;
  const fields = new Map<string, string>();
  for (const part of header.slice(SCHEME.length + 1).split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) return undefined;
    fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const node = fields.get("Node") ?? "";
  const timestamp = fields.get("Timestamp") ?? "";
  const nonce = fields.get("Nonce") ?? "";
  const body = fields.get("Body") ?? "";
  const signature = fields.get("Signature") ?? "";
  if (
    fields.size !== 5 || !/^[A-Za-z0-9._-]{1,64}$/.test(node) || !/^\d{1,15}$/.test(timestamp) ||
    !/^[0-9a-f]{32}$/.test(nonce) || !/^[0-9a-f]{64}$/.test(body) ||
    !/^[0-9a-f]{64}$/.test(signature)
  ) return undefined;
  return { node, timestamp: Number(timestamp), nonce, body, signature };
}

export type SignatureProblem = "expired" | "mismatch";

/** Checks a parsed call against the secret and the clock; the nonce is checked by the caller. */
export function checkCall(
  secret: string,
  call: { method: string; target: string; signature: CallSignature; now?: number },
): SignatureProblem | undefined {
  const { signature: s } = call;
  if (Math.abs((call.now ?? Date.now()) - s.timestamp) > WINDOW_MS) return "expired";
  const expected = hmacHex(secret, stringToSign(call.method, call.target, s));
  return sameHex(expected, s.signature) ? undefined : "mismatch";
}

function answerString(nonce: string, status: number, bodyHex: string): string {
  return [SCHEME + "-ANSWER", nonce, String(status), bodyHex].join("\n");
}

/** The Cluster-Signature of an answer to the call with this nonce. */
export function signAnswer(secret: string, nonce: string, status: number, body: Uint8Array) {
  return hmacHex(secret, answerString(nonce, status, sha256Hex(body)));
}

export function checkAnswer(
  secret: string,
  answer: { nonce: string; status: number; body: Uint8Array; signature: string | null },
): boolean {
  const expected = hmacHex(
    secret,
    answerString(answer.nonce, answer.status, sha256Hex(answer.body)),
  );
  return answer.signature !== null && sameHex(expected, answer.signature);
}
