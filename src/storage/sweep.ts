// The start-up sweep: temp files and shard files of chunks that no metadata refers to, left by
// a crash between writing shards and committing (or between a commit and a collection). Only
// files older than the process start are touched, so uploads running meanwhile are safe.
import { join } from "node:path";
import type { ChunkStore } from "./chunk_store.ts";

export interface SweepReport {
  tmp: number;
  orphans: number;
}

async function olderThan(path: string, before: number): Promise<boolean> {
  try {
    return ((await Deno.stat(path)).mtime?.getTime() ?? 0) < before;
  } catch {
    return false;
  }
}

export async function sweepDrives(store: ChunkStore, before: number): Promise<SweepReport> {
  const report: SweepReport = { tmp: 0, orphans: 0 };
  for (const drive of store.options.drives.list) {
    for await (const entry of Deno.readDir(drive.tmpDir)) {
      const path = join(drive.tmpDir, entry.name);
      if (await olderThan(path, before)) {
        await Deno.remove(path, { recursive: true }).catch(() => {});
        report.tmp++;
      }
    }
    for await (const dir of Deno.readDir(drive.shardDir)) {
      if (!dir.isDirectory) continue;
      for await (const entry of Deno.readDir(join(drive.shardDir, dir.name))) {
        const path = join(drive.shardDir, dir.name, entry.name);
        const id = entry.name.split(".")[0];
        // A chunk freed while a GET reads it is removed when the GET is done (read_pins.ts).
        if (!(await olderThan(path, before)) || store.reads.reading(id)) continue;
        await store.claims.collect(id, async () => {
          await Deno.remove(path).catch(() => {});
          report.orphans++;
        });
      }
    }
  }
  return report;
}
