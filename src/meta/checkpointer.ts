// Background checkpoints of the metadata database. SQLite's automatic checkpoint runs inside the
// COMMIT that crosses its threshold, on the event loop, and flushes the WAL and the database
// (two 8 ms waits on a spinning disk, every few hundred small writes). Instead, once `minCommits`
// batches have committed since the last checkpoint, within `everyMs` a worker
// (checkpoint_worker.ts) with its own connection runs a PASSIVE checkpoint, which never blocks the
// server's writes; once it has copied everything, the next write starts the WAL over. The worker
// exists only while checkpoints come (it is stopped `idleStopMs` after the last one): an idle
// server, one that wrote a few rows at start, or one whose writes come slowly (large uploads: a
// batch per object, a checkpoint every several seconds) keeps no isolate for it between them.
// SqliteMetaStore keeps SQLite's own checkpoint as a backstop at a larger threshold, for a worker
// that falls behind or fails.
import { log } from "../log.ts";
import type { CheckpointReply, CheckpointRequest } from "./checkpoint_worker.ts";

export interface CheckpointerOptions {
  /** How often the commits are looked at (default 250 ms: under load a checkpoint copies ~1,000 pages). */
  everyMs?: number;
  /**
   * The worker stops this long after its last checkpoint (default 2,000 ms; starting one again
   * costs ~22 ms of CPU).
   */
  idleStopMs?: number;
  /** Commits that call for a checkpoint (default 64, a few hundred WAL pages). */
  minCommits?: number;
}

export class Checkpointer {
  readonly everyMs: number;
  readonly idleStopMs: number;
  readonly minCommits: number;
  /** Checkpoints run so far, and what the last one found (WAL frames) and copied. */
  runs = 0;
  last?: { frames: number; copied: number };
  #worker?: Worker;
  /** Who waits for the worker's next replies, in the order asked (it answers in order). */
  #replies: ((reply: CheckpointReply) => void)[] = [];
  #timer?: ReturnType<typeof setTimeout>;
  #commits = 0;
  /** When the last checkpoint was asked for (Date.now()). */
  #lastCheckpoint = 0;
  #closed = false;

  constructor(readonly path: string, opts: CheckpointerOptions = {}) {
    this.everyMs = opts.everyMs ?? 250;
    this.idleStopMs = opts.idleStopMs ?? 2_000;
    this.minCommits = opts.minCommits ?? 64;
  }

  /** Whether the worker is running now. */
  get working(): boolean {
    return this.#worker !== undefined;
  }

  /** A batch committed: once there are `minCommits`, a checkpoint follows within `everyMs`. */
  committed(): void {
    this.#commits++;
    if (this.#commits >= this.minCommits && this.#timer === undefined && !this.#closed) {
      this.#arm();
    }
  }

  /** Stops the worker (after the checkpoint under way), closing its connection first. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#stop();
  }

  #arm(): void {
    const timer = setTimeout(() => this.#tick(), this.everyMs);
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  async #tick(): Promise<void> {
    if (this.#closed) return;
    if (this.#commits >= this.minCommits) {
      this.#commits = 0;
      await this.#checkpoint();
    } else if (!this.#worker || Date.now() - this.#lastCheckpoint >= this.idleStopMs) {
      // Nothing to do, and no worker left to stop later: the next commits arm the timer again.
      this.#timer = undefined;
      await this.#stop();
      return;
    }
    if (!this.#closed) this.#arm();
  }

  async #checkpoint(): Promise<void> {
    this.#lastCheckpoint = Date.now();
    const reply = await this.#ask({ kind: "checkpoint", path: this.path });
    if (reply.kind === "checkpointed") {
      this.runs++;
      this.last = { frames: reply.frames, copied: reply.copied };
    } else if (reply.kind === "failed") {
      log("warn", "A background checkpoint of the metadata failed; SQLite's own runs later", {
        source: "meta",
        error: reply.error,
      });
    }
  }

  async #stop(): Promise<void> {
    if (!this.#worker) return;
    await this.#ask({ kind: "close" });
    this.#worker?.terminate();
    this.#worker = undefined;
  }

  /** A close may be asked while a checkpoint runs: each reply goes to its own request. */
  #ask(req: CheckpointRequest): Promise<CheckpointReply> {
    const worker = this.#worker ??= this.#spawn();
    return new Promise((resolve) => {
      this.#replies.push(resolve);
      worker.postMessage(req);
    });
  }

  #spawn(): Worker {
    const worker = new Worker(new URL("./checkpoint_worker.ts", import.meta.url), {
      type: "module",
    });
    worker.onmessage = (e: MessageEvent<CheckpointReply>) => this.#replies.shift()?.(e.data);
    worker.onerror = (e) => {
      e.preventDefault();
      worker.terminate();
      if (this.#worker === worker) this.#worker = undefined;
      for (const resolve of this.#replies.splice(0)) resolve({ kind: "failed", error: e.message });
    };
    return worker;
  }
}
