// The lifecycle worker: every interval it applies the lifecycle configuration of each bucket that
// has one. One run at a time; also started on demand (tests, POST /admin/lifecycle).
import { newScope, runAudited } from "../audit/scope.ts";
import { log } from "../log.ts";
import {
  applyLifecycle,
  emptyCounts,
  type LifecycleAction,
  type LifecycleCounts,
} from "../object/lifecycle_apply.ts";
import type { ObjectLayer } from "../object/layer.ts";
import { readStoredLifecycle } from "../object/lifecycle_rules.ts";

/** Buckets with a configuration fetched per metadata query. */
const BUCKET_PAGE = 100;

export interface LifecycleReport extends LifecycleCounts {
  /** Buckets whose configuration was applied. */
  buckets: number;
  startedAt: string;
  durationMs: number;
}

export interface LifecycleWorker {
  /** Runs lifecycle now (or joins the run in progress) and returns its report. */
  runNow(): Promise<LifecycleReport>;
  last(): LifecycleReport | undefined;
  stop(): Promise<void>;
}

export interface LifecycleOptions {
  /** Seconds between runs. */
  intervalSeconds: number;
  /** Seconds in one lifecycle day (86400 in production; tests shorten it). */
  daySeconds: number;
  /** Entries per listing page. */
  pageSize?: number;
  /** Called for every action taken (the hook for the event feed, once events exist). */
  onAction?: (action: LifecycleAction) => void;
}

async function runLifecycle(
  layer: ObjectLayer,
  opts: LifecycleOptions,
  stopped: () => boolean,
): Promise<LifecycleReport> {
  const started = Date.now();
  const totals: LifecycleReport = {
    buckets: 0,
    ...emptyCounts(),
    startedAt: new Date(started).toISOString(),
    durationMs: 0,
  };
  let after = "";
  while (!stopped()) {
    const configs = await layer.meta.listBucketConfigs("lifecycle", after, BUCKET_PAGE);
    for (const { bucket, value } of configs) {
      after = bucket;
      if (stopped()) break;
      try {
        const record = await layer.meta.getBucket(bucket);
        if (!record) continue;
        // Its changes are audited as the lifecycle's, one scope per bucket and run.
        const scope = newScope({
          requestId: `lifecycle-${started}`,
          principal: "system:lifecycle",
          operation: "Lifecycle",
          bucket,
        });
        const counts = await runAudited(
          scope,
          () =>
            applyLifecycle(layer, record, readStoredLifecycle(value), {
              now: started,
              dayMs: opts.daySeconds * 1000,
              pageSize: opts.pageSize,
              stopped,
              onAction: opts.onAction,
            }),
        );
        totals.buckets++;
        for (const k of Object.keys(counts) as (keyof LifecycleCounts)[]) totals[k] += counts[k];
      } catch (err) {
        totals.errors++;
        log("error", "Lifecycle failed for a bucket", {
          source: "lifecycle",
          bucket,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
    if (configs.length < BUCKET_PAGE) break;
  }
  totals.durationMs = Date.now() - started;
  return totals;
}

export function startLifecycle(layer: ObjectLayer, opts: LifecycleOptions): LifecycleWorker {
  let running: Promise<LifecycleReport> | undefined;
  let lastReport: LifecycleReport | undefined;
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const runNow = () => {
    running ??= runLifecycle(layer, opts, () => stopping).then((report) => {
      lastReport = report;
      log(report.errors > 0 ? "warn" : "info", "Lifecycle run finished", { ...report });
      return report;
    }).finally(() => (running = undefined));
    return running;
  };
  // Each run starts one interval after the previous one ended, so runs never overlap.
  const schedule = () => {
    if (stopping) return;
    timer = setTimeout(() => {
      runNow().catch((err) => log("error", "Lifecycle run failed", { error: String(err) }))
        .finally(schedule);
    }, opts.intervalSeconds * 1000);
  };
  schedule();
  return {
    runNow,
    last: () => lastReport,
    async stop() {
      stopping = true;
      if (timer !== undefined) clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
