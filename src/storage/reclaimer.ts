// Removes the shard files of chunks the metadata freed, after the request that freed them has
// answered: a 64 MiB DELETE frees sixteen 4 MiB chunks, and unlinking them took most of its time.
// The backlog is bounded (a request that would grow it past the bound waits for room), each
// removal still runs under the chunk's claim lock (a writer that claimed the id since keeps it),
// and what a crash leaves queued is found by the start-up sweep as unreferenced shard files.
import type { ChunkRecord } from "../meta/store.ts";
import { log } from "../log.ts";

export interface ReclaimerOptions {
  /** Removes one freed chunk (claims checked); may throw. */
  remove: (rec: ChunkRecord) => Promise<void>;
  /** Chunks removed at once. */
  parallel: number;
  /** Queued chunks past which `add` waits for the queue to shrink. */
  backlog: number;
}

export class Reclaimer {
  #queue: ChunkRecord[] = [];
  #head = 0;
  #running = 0;
  #stopped = false;
  /** Callers waiting for room in the backlog, or for the queue to empty. */
  #waiters: (() => void)[] = [];
  removed = 0;

  constructor(readonly options: ReclaimerOptions) {}

  get pending(): number {
    return this.#queue.length - this.#head + this.#running;
  }

  /** Queues freed chunks; resolves at once unless the backlog is full. */
  async add(freed: ChunkRecord[]): Promise<void> {
    if (freed.length === 0) return;
    while (!this.#stopped && this.pending >= this.options.backlog) await this.#wait();
    if (this.#stopped) return;
    for (const rec of freed) this.#queue.push(rec);
    this.#pump();
  }

  /** Resolves once every queued chunk has been removed (or the reclaimer stopped). */
  async drained(): Promise<void> {
    while (!this.#stopped && this.pending > 0) await this.#wait();
  }

  /**
   * Stops after the removals running now, waiting at most `waitMs` for the queue to empty
   * first; what stays queued is left to the next start's sweep.
   */
  async stop(waitMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.drained(),
      new Promise<void>((r) => timer = setTimeout(r, waitMs)),
    ]);
    clearTimeout(timer);
    this.#stopped = true;
    this.#queue = [];
    this.#head = 0;
    this.#wake();
  }

  #wait(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  #pump(): void {
    while (
      !this.#stopped && this.#running < this.options.parallel && this.#head < this.#queue.length
    ) {
      const rec = this.#queue[this.#head++];
      if (this.#head === this.#queue.length) {
        this.#queue = [];
        this.#head = 0;
      }
      this.#running++;
      this.options.remove(rec).then(
        () => this.removed++,
        (err) =>
          log("error", "Removing a freed chunk failed; the next start's sweep retries it", {
            chunk: rec.id,
            error: String(err),
          }),
      ).finally(() => {
        this.#running--;
        this.#pump();
        this.#wake();
      });
    }
  }
}
