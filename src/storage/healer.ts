// Background healing. Two kinds of work, one at a time, throttled:
// - a drive heal: every chunk with a shard on drives that came back (replaced, returned from
//   missing or offline, or flagged for missed writes at start-up) is checked there, and what is
//   missing or bad is rebuilt from the other shards;
// - the heal queue: single chunks a read or write found damaged, bounded (when it is full a read
//   heals the chunk itself; a write's damage is left to the next scrub; both count as dropped).
import type { ChunkStore } from "./chunk_store.ts";
import type { DriveMonitor } from "./drive_monitor.ts";
import { advance, finish, idleProgress, startProgress, type WalkProgress } from "./progress.ts";
import type { Throttle } from "./throttle.ts";

export interface HealStatus extends WalkProgress {
  /** Drives of the running (or last) drive heal, by path. */
  drives: string[];
  /** Drives waiting for the next drive heal. */
  pendingDrives: string[];
  queue: { depth: number; limit: number; healedShards: number; dropped: number };
}

export interface HealTotals {
  driveHeals: number;
  chunksChecked: number;
  healedShards: number;
  errors: number;
}

export interface HealerOptions {
  throttle: Throttle;
  queueLimit: number;
  warn: (message: string, fields?: Record<string, unknown>) => void;
  info: (message: string, fields?: Record<string, unknown>) => void;
}

const PAGE = 200;
/** A queued chunk not yet in the metadata (its write has not committed) is retried this long. */
const QUEUE_RETRY_MS = 60_000;

export class Healer {
  readonly #pending = new Set<number>();
  /** Chunk id -> first queued at (ms). */
  readonly #queue = new Map<string, number>();
  #progress: WalkProgress = idleProgress();
  #drives: string[] = [];
  #queueHealed = 0;
  #dropped = 0;
  readonly totals: HealTotals = { driveHeals: 0, chunksChecked: 0, healedShards: 0, errors: 0 };
  #wake: () => void = () => {};
  #stopped = false;
  readonly #loop: Promise<void>;

  constructor(
    readonly store: ChunkStore,
    readonly monitor: DriveMonitor,
    readonly opts: HealerOptions,
  ) {
    store.queueHeal = (id) => this.enqueue(id);
    this.#loop = this.#run();
  }

  /** Schedules a heal of everything the drive should hold. */
  healDrive(driveId: number): void {
    this.#pending.add(driveId);
    this.#wake();
  }

  /** Queues a damaged chunk; false when the queue is full. */
  enqueue(chunkId: string): boolean {
    if (this.#queue.has(chunkId)) return true;
    if (this.#queue.size >= this.opts.queueLimit) {
      this.#dropped++;
      return false;
    }
    this.#queue.set(chunkId, Date.now());
    this.#wake();
    return true;
  }

  status(): HealStatus {
    const paths = new Map(this.monitor.list().map((d) => [d.id, d.path]));
    return {
      ...this.#progress,
      lostChunks: [...this.#progress.lostChunks],
      drives: this.#drives,
      pendingDrives: [...this.#pending].map((id) => paths.get(id) ?? String(id)),
      queue: {
        depth: this.#queue.size,
        limit: this.opts.queueLimit,
        healedShards: this.#queueHealed,
        dropped: this.#dropped,
      },
    };
  }

  queueDepth(): number {
    return this.#queue.size;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      if (this.#pending.size > 0) {
        await this.#healDrives().catch((err) =>
          this.opts.warn("Drive heal failed", { error: String(err) })
        );
      } else if (this.#queue.size > 0) {
        await this.#healQueued().catch((err) =>
          this.opts.warn("Queued heal failed", { error: String(err) })
        );
      } else {
        await new Promise<void>((resolve) => (this.#wake = resolve));
      }
    }
  }

  async #healQueued(): Promise<void> {
    const [id, queuedAt] = this.#queue.entries().next().value!;
    this.#queue.delete(id);
    const rec = await this.store.meta.getChunk(id);
    if (!rec) {
      // Not committed yet, or already collected: look again a little later.
      if (Date.now() - queuedAt < QUEUE_RETRY_MS && this.store.claims.held(id)) {
        this.#queue.set(id, queuedAt);
        await new Promise((r) => setTimeout(r, 100));
      }
      return;
    }
    const health = await this.opts.throttle.run(() => this.store.verify(rec));
    this.#queueHealed += health.healed.length;
    this.totals.healedShards += health.healed.length;
    this.totals.chunksChecked++;
  }

  async #healDrives(): Promise<void> {
    const ids = new Set(this.#pending);
    this.#pending.clear();
    const paths = new Map(this.monitor.list().map((d) => [d.id, d.path]));
    this.#drives = [...ids].map((id) => paths.get(id) ?? String(id));
    const p = this.#progress = startProgress((await this.store.meta.usage()).chunks);
    this.opts.info("Drive heal started", { drives: this.#drives, chunks: p.chunksTotal });
    let after = "";
    while (!this.#stopped) {
      const page = await this.store.meta.listChunks(after, PAGE);
      for (const rec of page) {
        if (rec.drives.some((d) => ids.has(d))) {
          const health = await this.opts.throttle.run(() => this.store.healOn(rec, ids));
          const shardLen = Math.ceil(rec.storedSize / rec.dataShards);
          p.badShards += health.bad.length;
          p.healedShards += health.healed.length;
          p.bytes += shardLen * health.healed.length;
          p.errors += health.bad.length - health.healed.length;
          if (health.lost) p.lostChunks.push(rec.id);
          this.totals.chunksChecked++;
          this.totals.healedShards += health.healed.length;
          this.totals.errors += health.bad.length - health.healed.length;
        }
        advance(p);
        // Queued chunks are not kept waiting for a whole drive.
        if (this.#queue.size > 0) await this.#healQueued();
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1].id;
    }
    if (this.#stopped) return;
    finish(p);
    this.totals.driveHeals++;
    const offline = [...ids].filter((id) => !this.store.drive(id));
    if (p.errors === 0 && offline.length === 0) {
      for (const id of ids) {
        this.monitor.healed(id);
        await this.store.meta.setDriveNeedsHeal(id, false);
      }
    }
    const level = p.errors > 0 || p.lostChunks.length > 0 ? "warn" : "info";
    this.opts[level]("Drive heal finished", {
      drives: this.#drives,
      chunks: p.chunksDone,
      healedShards: p.healedShards,
      errors: p.errors,
      lostChunks: p.lostChunks.length,
    });
  }
}
