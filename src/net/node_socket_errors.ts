// Read errors of Node-compatible sockets that nobody listens to any more. The clients of
// PostgreSQL and of the notification brokers run on Deno's `node:net`, whose socket read loop is
// an async function: a read error (the peer reset the connection) on a socket whose client has
// already let go of it — its `error` listener removed while it closed — is thrown inside that
// loop and surfaces as an unhandled promise rejection, which would end the process. It was seen
// once, when a test stopped PostgreSQL in the middle of writes. The client learned of the loss
// through the socket's close and reconnects by itself; this error is logged and the server goes on.
// Any other unhandled rejection still ends the process.
import { log } from "../log.ts";

const RESET_CODES = new Set(["ECONNRESET", "EPIPE", "ETIMEDOUT"]);

/** A socket read error raised by Deno's node:net read loop (and nothing else). */
export function isOrphanedSocketReadError(reason: unknown): boolean {
  if (!(reason instanceof Error)) return false;
  const { code, syscall } = reason as Error & { code?: unknown; syscall?: unknown };
  if (syscall !== "read" || typeof code !== "string" || !RESET_CODES.has(code)) return false;
  const firstFrame = (reason.stack ?? "").split("\n").find((line) => line.trim().startsWith("at "));
  return firstFrame !== undefined && firstFrame.includes("onStreamRead") &&
    firstFrame.includes("ext:deno_node/internal/stream_base_commons");
}

let installed = false;

/** Installs the guard once per process. */
export function ignoreOrphanedSocketReadErrors(): void {
  if (installed) return;
  installed = true;
  globalThis.addEventListener("unhandledrejection", (event) => {
    if (!isOrphanedSocketReadError(event.reason)) return;
    event.preventDefault();
    log("warn", "A connection of a client library was reset after it was let go (ignored)", {
      error: String(event.reason),
    });
  });
}
