// The scrub: every chunk's shards read and verified, bad ones rebuilt and rewritten.
import type { ChunkStore } from "./chunk_store.ts";

export interface ScrubReport {
  startedAt: string;
  finishedAt: string;
  chunks: number;
  shardsChecked: number;
  /** Shards found missing or corrupt. */
  badShards: number;
  healedShards: number;
  /** Chunks with fewer than k good shards: their objects cannot be read. */
  lostChunks: string[];
}

const PAGE = 200;

export async function scrub(store: ChunkStore): Promise<ScrubReport> {
  const report: ScrubReport = {
    startedAt: new Date().toISOString(),
    finishedAt: "",
    chunks: 0,
    shardsChecked: 0,
    badShards: 0,
    healedShards: 0,
    lostChunks: [],
  };
  let after = "";
  while (true) {
    const page = await store.meta.listChunks(after, PAGE);
    for (const rec of page) {
      const health = await store.verify(rec);
      report.chunks++;
      report.shardsChecked += rec.dataShards + rec.parityShards;
      report.badShards += health.bad.length;
      report.healedShards += health.healed.length;
      if (health.lost) report.lostChunks.push(rec.id);
    }
    if (page.length < PAGE) break;
    after = page[page.length - 1].id;
  }
  report.finishedAt = new Date().toISOString();
  return report;
}
