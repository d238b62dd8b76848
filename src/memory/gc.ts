// V8's full collection, used by the memory release (release.ts) and by the CPU workers, whose
// isolates hold views of the upload buffers (shared memory) until they collect. It needs V8's
// --expose-gc at start-up, which the start script and the systemd unit pass (SERVER_V8_FLAGS).
// Setting the flag at run time (node:v8 setFlagsFromString, then a node:vm context) works too, but
// measurably slowed small requests afterwards (4 KiB GETs at 0.75x), so it is not done: without
// the flag the release drops buffers and trims the C heap, but does not collect.

/** V8 flags the server is started with (scripts/start.sh, scripts/store.service, tests, bench). */
export const SERVER_V8_FLAGS = "--max-semi-space-size=4,--expose-gc";

/**
 * Runs a full collection, V8's "last resort" kind (several passes, the heap compacted, its
 * unused pages given back); false where the process was started without --expose-gc.
 */
export function collectGarbage(): boolean {
  const gc = (globalThis as { gc?: (options?: GcOptions) => void }).gc;
  if (typeof gc !== "function") return false;
  gc({ type: "major", execution: "sync", flavor: "last-resort" });
  return true;
}

interface GcOptions {
  type: "major" | "minor";
  execution: "sync" | "async";
  flavor: "regular" | "last-resort";
}
