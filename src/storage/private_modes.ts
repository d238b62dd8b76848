// Data at rest is private to the server's account: directories 0700, files 0600. New files get
// these modes from the process umask (set at start) and explicit modes; an installation made by
// an older version is tightened by one walk at start-up, in the background.
import { join, resolve } from "node:path";

export const DIR_MODE = 0o700;
export const FILE_MODE = 0o600;
/** What the process creates anything with: nothing for group or others. */
export const PRIVATE_UMASK = 0o077;

/** File checks in flight at once: async ops run off the event loop, this bounds their queue. */
const PARALLEL = 64;

export interface TightenReport {
  /** Directories and files looked at. */
  checked: number;
  /** Those whose mode was changed. */
  changed: number;
}

/** Makes `path` private when group or others have any access. */
async function tighten(path: string, mode: number, report: TightenReport): Promise<void> {
  report.checked++;
  try {
    const info = await Deno.lstat(path);
    if (info.isSymlink || ((info.mode ?? 0) & 0o077) === 0) return;
    await Deno.chmod(path, mode);
    report.changed++;
  } catch (err) {
    // Removed meanwhile (a finished upload's temp file): nothing to protect.
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/**
 * Walks every root once (roots below another root are not walked twice) and makes each directory
 * 0700 and each file 0600. Symbolic links are neither followed nor changed.
 */
export async function tightenModes(roots: string[]): Promise<TightenReport> {
  const report: TightenReport = { checked: 0, changed: 0 };
  const seen = new Set<string>();
  const queue = roots.map((r) => resolve(r));
  while (queue.length > 0) {
    const dir = queue.pop()!;
    if (seen.has(dir)) continue;
    seen.add(dir);
    await tighten(dir, DIR_MODE, report);
    let pending: Promise<void>[] = [];
    try {
      for await (const entry of Deno.readDir(dir)) {
        const path = join(dir, entry.name);
        if (entry.isDirectory) queue.push(path);
        else if (entry.isFile) pending.push(tighten(path, FILE_MODE, report));
        if (pending.length >= PARALLEL) {
          await Promise.all(pending);
          pending = [];
        }
      }
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    await Promise.all(pending);
  }
  return report;
}
