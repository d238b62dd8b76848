// The periodic scrub, one run at a time; also started on demand through the admin interface.
import { log } from "../log.ts";
import type { ChunkStore } from "../storage/chunk_store.ts";
import { scrub, type ScrubReport } from "../storage/scrub.ts";

export interface Scrubber {
  /** Runs a scrub now (or joins the one running) and returns its report. */
  runNow(): Promise<ScrubReport>;
  last(): ScrubReport | undefined;
  stop(): Promise<void>;
}

export function startScrubber(store: ChunkStore, intervalSeconds: number): Scrubber {
  let running: Promise<ScrubReport> | undefined;
  let lastReport: ScrubReport | undefined;
  const runNow = () => {
    running ??= scrub(store).then((report) => {
      lastReport = report;
      const level = report.lostChunks.length > 0 ? "error" : report.badShards > 0 ? "warn" : "info";
      log(level, "Scrub finished", { source: "scrub", ...report });
      return report;
    }).finally(() => (running = undefined));
    return running;
  };
  const timer = intervalSeconds > 0
    ? setInterval(
      () => runNow().catch((err) => log("error", "Scrub failed", { error: String(err) })),
      intervalSeconds * 1000,
    )
    : undefined;
  return {
    runNow,
    last: () => lastReport,
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      await running?.catch(() => {});
    },
  };
}
