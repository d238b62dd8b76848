// Verification of calls from other nodes: a signed Authorization header, a timestamp inside the
// window, a nonce not seen in it, and a body (read against a limit) matching its signed digest.
// Anything else is refused with 403 and a JSON error before any state is touched.
import { ApiError, jsonResponse } from "../api/json.ts";
import { BodyStalledError, readAtMost } from "../http/progress.ts";
import type { NonceCache } from "./nonces.ts";
import {
  ANSWER_HEADER,
  type CallSignature,
  checkCall,
  parseCallSignature,
  sameHex,
  sha256Hex,
  signAnswer,
} from "./signature.ts";

export interface VerifiedCall {
  /** The calling node's id, as signed. */
  node: string;
  nonce: string;
  body: Uint8Array;
}

export function refused(code: string, message: string): ApiError {
  return new ApiError(403, code, message);
}

/** The raw path and query of a request, as signed. */
export function requestTarget(url: string): string {
  return url.slice(url.indexOf("/", url.indexOf("//") + 2));
}

export async function verifyCall(
  req: Request,
  opts: { secret: string; nonces: NonceCache; bodyLimit: number },
): Promise<VerifiedCall> {
  const signature = await verifySignature(req, opts);
  const body = await readBody(req, opts.bodyLimit);
  if (!sameHex(sha256Hex(body), signature.body)) {
    throw refused("cluster_bad_signature", "The body does not match its signed digest.");
  }
  return { node: signature.node, nonce: signature.nonce, body };
}

/**
 * Checks a call's signature, window and nonce without reading its body: the caller checks the
 * body against `body` (its signed SHA-256) as it reads it (a streamed object).
 */
export async function verifySignature(
  req: Request,
  opts: { secret: string; nonces: NonceCache },
): Promise<CallSignature> {
  const signature = parseCallSignature(req.headers.get("authorization"));
  if (!signature) {
    await req.body?.cancel().catch(() => {});
    throw refused("cluster_unsigned", "Cluster calls must carry a CLUSTER-HMAC-SHA256 signature.");
  }
  const problem = checkCall(opts.secret, {
    method: req.method,
    target: requestTarget(req.url),
    signature,
  });
  if (problem) {
    await req.body?.cancel().catch(() => {});
    throw problem === "expired"
      ? refused("cluster_expired", "The call's timestamp is outside the accepted window.")
      : refused("cluster_bad_signature", "The call's signature does not match.");
  }
  const seen = opts.nonces.admit(signature.nonce, signature.timestamp);
  if (seen !== "fresh") {
    await req.body?.cancel().catch(() => {});
    throw seen === "replayed"
      ? refused("cluster_replayed", "This call's nonce was used before.")
      : new ApiError(503, "cluster_busy", "Too many cluster calls in the window; retry later.", {
        "retry-after": "1",
      });
  }
  return signature;
}

async function readBody(req: Request, limit: number): Promise<Uint8Array> {
  let body: Uint8Array | null;
  try {
    body = await readAtMost(req.body, req.headers, limit);
  } catch (err) {
    if (err instanceof BodyStalledError) {
      throw new ApiError(408, "request_timeout", err.message, { connection: "close" });
    }
    throw new ApiError(400, "incomplete_body", "The request body ended before it was complete.");
  }
  if (body === null) {
    throw new ApiError(413, "body_too_large", `The body must be at most ${limit} bytes.`, {
      connection: "close",
    });
  }
  return body;
}

/** The JSON body of a verified call, which must be an object. */
export function callJson(call: VerifiedCall): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(call.body));
  } catch {
    throw new ApiError(400, "invalid_json", "The body is not valid JSON.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ApiError(400, "invalid_json", "The body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}

/** A JSON answer signed for the call with this nonce. */
export function signedAnswer(secret: string, nonce: string, status: number, value: unknown) {
  const body = new TextEncoder().encode(JSON.stringify(value));
  const res = jsonResponse(status, value);
  res.headers.set(ANSWER_HEADER, signAnswer(secret, nonce, status, body));
  return res;
}
