// The operations side of the server, built at start-up: drive monitoring and healing, health
// probes, metrics and metadata backups.
import type { ClusterNode } from "../cluster/node.ts";
import type { Config } from "../config.ts";
import { log } from "../log.ts";
import type { MetaStore } from "../meta/store.ts";
import type { Notifier } from "../events/notifier.ts";
import type { ChunkStore } from "../storage/chunk_store.ts";
import { DriveMonitor } from "../storage/drive_monitor.ts";
import type { DriveSet } from "../storage/drives.ts";
import { Healer } from "../storage/healer.ts";
import { Throttle } from "../storage/throttle.ts";
import type { Scrubber } from "../workers/scrubber.ts";
import { Backups } from "./backup.ts";
import { Health } from "./health.ts";
import { type MemoryGauges, Metrics } from "./metrics.ts";

export interface Ops {
  monitor: DriveMonitor;
  healer: Healer;
  health: Health;
  metrics: Metrics;
  backups: Backups;
  stop(): Promise<void>;
}

/** The drive monitor, before the chunk store (which asks it which drives to use). */
export async function openDriveMonitor(
  meta: MetaStore,
  drives: DriveSet,
  config: Config,
  onReturn: (driveId: number) => void,
): Promise<DriveMonitor> {
  for (const id of drives.replaced) await meta.setDriveNeedsHeal(id, true);
  return new DriveMonitor(drives, await meta.drivesNeedingHeal(), {
    errorLimit: config.driveErrorLimit,
    onReturn,
    flagForHeal: (id) => meta.setDriveNeedsHeal(id, true),
    warn: (message, fields) => log("warn", message, fields),
  });
}

export function backgroundThrottle(config: Config): Throttle {
  return new Throttle(config.healThrottle);
}

/** Starts healing (drives flagged or replaced are healed at once), probes, metrics, backups. */
export function startOps(parts: {
  config: Config;
  meta: MetaStore;
  chunks: ChunkStore;
  monitor: DriveMonitor;
  throttle: Throttle;
  scrubber: Scrubber;
  notifier: Notifier;
  cluster?: ClusterNode;
  memory?: () => MemoryGauges;
}): Ops {
  const { config, meta, chunks, monitor } = parts;
  const healer = new Healer(chunks, monitor, {
    throttle: parts.throttle,
    queueLimit: config.healQueue,
    warn: (message, fields) => log("warn", message, fields),
    info: (message, fields) => log("info", message, fields),
  });
  for (const d of monitor.list()) if (d.needsHeal && d.state === "online") healer.healDrive(d.id);
  const probe = setInterval(() => {
    monitor.probe().catch((err) => log("warn", "Drive probe failed", { error: String(err) }));
  }, config.driveCheckInterval * 1000);
  const backups = new Backups(meta, {
    dir: config.backupDir,
    keep: config.backupKeep,
    scratchDir: config.dataDir,
  }, (level, message, fields) => log(level, message, fields as Record<string, unknown>));
  backups.schedule(config.backupInterval);
  const metrics = new Metrics({
    meta,
    monitor,
    healer,
    scrubber: parts.scrubber,
    notifier: parts.notifier,
    cluster: parts.cluster,
    memory: parts.memory,
    reclaimer: parts.chunks.reclaimer,
  });
  return {
    monitor,
    healer,
    health: new Health({ meta, monitor, layout: config.erasure }),
    metrics,
    backups,
    async stop() {
      clearInterval(probe);
      backups.stop();
      metrics.stop();
      await healer.stop();
    },
  };
}
