// The scrub: every chunk's shards read and verified, bad ones rebuilt and rewritten.
import type { ChunkStore } from "./chunk_store.ts";
import { advance, finish, startProgress, type WalkProgress } from "./progress.ts";
import { Throttle } from "./throttle.ts";

export interface ScrubReport extends WalkProgress {
  /** Chunks verified (chunksDone). */
  chunks: number;
  shardsChecked: number;
}

const PAGE = 200;

/** Scrubs every chunk; `report` is updated as it goes (GET /admin/scrub shows it running). */
export async function scrub(
  store: ChunkStore,
  throttle = new Throttle(0),
  onStart: (report: ScrubReport) => void = () => {},
): Promise<ScrubReport> {
  const report: ScrubReport = {
    ...startProgress((await store.meta.usage()).chunks),
    chunks: 0,
    shardsChecked: 0,
  };
  onStart(report);
  let after = "";
  while (true) {
    const page = await store.meta.listChunks(after, PAGE);
    for (const rec of page) {
      // Another node's chunk (shared metadata): that node scrubs it.
      if (store.resolver && !store.isLocal(rec)) continue;
      const health = await throttle.run(() => store.verify(rec));
      if (health.gone) {
        advance(report);
        continue;
      }
      const n = rec.dataShards + rec.parityShards;
      report.chunks++;
      report.shardsChecked += n;
      report.bytes += Math.ceil(rec.storedSize / rec.dataShards) * n;
      report.badShards += health.bad.length;
      report.healedShards += health.healed.length;
      report.errors += health.bad.length - health.healed.length;
      if (health.lost) report.lostChunks.push(rec.id);
      advance(report);
    }
    if (page.length < PAGE) break;
    after = page[page.length - 1].id;
  }
  finish(report);
  return report;
}
