// Request bodies that stop arriving: every read of a body waits at most the body-progress
// timeout (STORE_BODY_TIMEOUT) for its next piece, so a client that declares more than it sends
// cannot hold a request (and its memory) open.
import { SweepTimer } from "../sweep_timer.ts";

let bodyTimeoutMs = 30_000;

/** Sets the body-progress timeout (from the configuration, at start-up). */
export function setBodyTimeout(ms: number): void {
  bodyTimeoutMs = ms;
}

export function bodyTimeout(): number {
  return bodyTimeoutMs;
}

/** No piece of a body arrived within the body-progress timeout; the body has been cancelled. */
export class BodyStalledError extends Error {
  constructor() {
    super(`No request body data arrived for ${bodyTimeoutMs / 1000} seconds`);
  }
}

/**
 * The reader's next piece, or BodyStalledError (after cancelling the body) when none arrives
 * within the body-progress timeout.
 */
export function readWithProgress<T>(
  reader: { read(): Promise<ReadableStreamReadResult<T>>; cancel(): Promise<void> },
): Promise<ReadableStreamReadResult<T>> {
  return withProgress(reader.read(), () => reader.cancel());
}

/**
 * A read of a body (`read`), or BodyStalledError when it does not settle within the
 * body-progress timeout; `cancel` then cancels the body.
 */
export async function withProgress<T>(read: Promise<T>, cancel: () => Promise<void>): Promise<T> {
  const pending: PendingRead = { since: watch.ticks, fail: () => {} };
  const stalled = new Promise<never>((_, reject) => pending.fail = reject);
  watch.add(pending);
  try {
    return await Promise.race([read, stalled]);
  } catch (err) {
    if (err instanceof BodyStalledError) cancel().catch(() => {});
    throw err;
  } finally {
    watch.delete(pending);
  }
}

interface PendingRead {
  /** The watch's tick when the read started. */
  since: number;
  fail(err: BodyStalledError): void;
}

/** How often pending reads are looked at: a stall is noticed up to this much late. */
const WATCH_MS = 250;

/**
 * The reads of request bodies waiting for data, looked at together by one timer instead of a
 * timer per read. A read noted at tick t has waited at least (ticks - t - 1) whole periods.
 */
const watch: SweepTimer<PendingRead> = new SweepTimer(WATCH_MS, (read) => {
  if (watch.ticks - read.since >= Math.ceil(bodyTimeoutMs / WATCH_MS) + 1) {
    read.fail(new BodyStalledError());
  }
});

/** The declared Content-Length of a request, or undefined (absent, chunked, malformed). */
export function declaredLength(headers: Headers): number | undefined {
  const raw = headers.get("content-length");
  return raw !== null && /^\d{1,15}$/.test(raw) ? Number(raw) : undefined;
}

/**
 * Reads a whole body of at most `limit` bytes; null, with the body cancelled, as soon as it
 * declares or delivers more. Nothing beyond the limit is kept in memory.
 */
export async function readAtMost(
  stream: ReadableStream<Uint8Array> | null,
  headers: Headers,
  limit: number,
): Promise<Uint8Array | null> {
  if (!stream) return new Uint8Array(0);
  if ((declaredLength(headers) ?? 0) > limit) {
    await stream.cancel().catch(() => {});
    return null;
  }
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (true) {
      const { done, value } = await readWithProgress(reader);
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        return null;
      }
      parts.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.byteLength;
  }
  return out;
}
