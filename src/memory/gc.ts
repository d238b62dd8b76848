// V8's full collection, without --expose-gc on the command line: the flag set at run time
// installs `gc` in contexts created afterwards (node:vm makes one). Used by the memory release
// (release.ts) and by the CPU workers, whose isolates hold views of the upload buffers (shared
// memory) until they collect.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

let gc: (() => void) | null | undefined;

/** Runs a full collection; false where this runtime does not allow it. */
export function collectGarbage(): boolean {
  if (gc === undefined) {
    try {
      setFlagsFromString("--expose-gc");
      const fn = runInNewContext("gc");
      gc = typeof fn === "function" ? () => fn() : null;
    } catch {
      gc = null;
    }
  }
  gc?.();
  return gc !== null;
}
