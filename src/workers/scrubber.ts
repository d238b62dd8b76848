// The periodic scrub, one run at a time; also started on demand through the admin interface.
import { log } from "../log.ts";
import type { ChunkStore } from "../storage/chunk_store.ts";
import { scrub, type ScrubReport } from "../storage/scrub.ts";
import type { Throttle } from "../storage/throttle.ts";

export interface Scrubber {
  /** Runs a scrub now (or joins the one running) and returns its report. */
  runNow(): Promise<ScrubReport>;
  /** The scrub running now, else the last one finished. */
  current(): ScrubReport | undefined;
  /** Scrubs finished since start-up. */
  runs(): number;
  stop(): Promise<void>;
}

export function startScrubber(
  store: ChunkStore,
  intervalSeconds: number,
  throttle: Throttle,
): Scrubber {
  let running: Promise<ScrubReport> | undefined;
  let current: ScrubReport | undefined;
  let runs = 0;
  const runNow = () => {
    running ??= scrub(store, throttle, (report) => (current = report)).then((report) => {
      runs++;
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
    current: () => current,
    runs: () => runs,
    async stop() {
      if (timer !== undefined) clearInterval(timer);
      await running?.catch(() => {});
    },
  };
}
