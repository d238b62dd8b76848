// Calls to other nodes: signed, bounded in time and size, and trusted only when the answer's
// Cluster-Signature matches (bound to this call's nonce).
import { readAtMost } from "../http/progress.ts";
import { ANSWER_HEADER, checkAnswer, signCall } from "./signature.ts";

/** Bytes an answer may have at most. */
const ANSWER_LIMIT = 1024 * 1024;

export class ClusterCallError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export interface CallOptions {
  secret: string;
  /** This node's id. */
  node: string;
  timeoutMs: number;
}

/** POSTs (or GETs, without a body) a JSON call and answers the JSON object of a 200. */
export async function callNode(
  url: string,
  path: string,
  opts: CallOptions & { body?: unknown },
): Promise<Record<string, unknown>> {
  const method = opts.body === undefined ? "GET" : "POST";
  const body = opts.body === undefined
    ? new Uint8Array(0)
    : new TextEncoder().encode(JSON.stringify(opts.body));
  const { header, nonce } = signCall(opts.secret, { method, target: path, node: opts.node, body });
  const signal = AbortSignal.timeout(opts.timeoutMs);
  const res = await fetch(url + path, {
    method,
    headers: {
      authorization: header,
      ...(opts.body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: opts.body === undefined ? undefined : body,
    signal,
  });
  const answer = await readAtMost(res.body, res.headers, ANSWER_LIMIT);
  if (answer === null) throw new ClusterCallError(res.status, "The answer is too large");
  const signature = res.headers.get(ANSWER_HEADER);
  if (!checkAnswer(opts.secret, { nonce, status: res.status, body: answer, signature })) {
    throw new ClusterCallError(res.status, `Unsigned or badly signed answer (${res.status})`);
  }
  const value = JSON.parse(new TextDecoder().decode(answer));
  if (res.status !== 200) {
    throw new ClusterCallError(res.status, value?.error?.message ?? `Status ${res.status}`);
  }
  return value;
}

/**
 * A signed POST whose body is streamed (an object's bytes): `sha256` is the body's hex SHA-256,
 * signed in place of a digest computed here; the receiver checks it as the bytes arrive. Answers
 * the status and the JSON of the answer, whose Cluster-Signature must be valid whatever the status.
 */
export async function streamToNode(
  url: string,
  target: string,
  opts: CallOptions & {
    body: ReadableStream<Uint8Array> | Uint8Array;
    sha256: string;
    headers: Record<string, string>;
  },
): Promise<{ status: number; value: Record<string, unknown> }> {
  const { header, nonce } = signCall(opts.secret, {
    method: "POST",
    target,
    node: opts.node,
    body: { sha256: opts.sha256 },
  });
  const res = await fetch(url + target, {
    method: "POST",
    headers: { ...opts.headers, authorization: header },
    body: opts.body as BodyInit,
    signal: AbortSignal.timeout(opts.timeoutMs),
  });
  const answer = await readAtMost(res.body, res.headers, ANSWER_LIMIT);
  if (answer === null) throw new ClusterCallError(res.status, "The answer is too large");
  const signature = res.headers.get(ANSWER_HEADER);
  if (!checkAnswer(opts.secret, { nonce, status: res.status, body: answer, signature })) {
    throw new ClusterCallError(res.status, `Unsigned or badly signed answer (${res.status})`);
  }
  return { status: res.status, value: JSON.parse(new TextDecoder().decode(answer)) };
}
