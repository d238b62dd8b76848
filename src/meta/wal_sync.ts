// Makes SQLite commits durable off the event loop. The database runs with synchronous=NORMAL, so
// COMMIT writes its WAL frames without waiting for the disk; before a committed write is
// acknowledged, `durable()` fdatasyncs the WAL file on one of Deno's blocking threads. A slow disk
// (a NAS's spinning drive takes 5-20 ms per flush) then delays the writers waiting for it instead
// of stopping every request for the length of each flush.
//
// Every batch starts its own flush at once, so a commit waits for one flush, not for the rest
// of one under way and then its own (flushes that overlap share what the disk does for them:
// the pages written before both go out once). At most
// `parallel` run at once, each through a file handle of its own (Deno runs the operations of one
// handle one after another); a commit that finds them all busy waits for the next to start, which
// covers every commit made meanwhile.

/** A file the flushes go to: the WAL, or a stand-in in tests. */
export interface Flushable {
  syncData(): Promise<void>;
  syncDataSync(): void;
  close(): void;
}

export class WalSync {
  /** Handles not flushing now (opened as needed, at most `parallel`). */
  #idle: Flushable[] = [];
  #running = new Set<Promise<void>>();
  #next?: PromiseWithResolvers<void>;

  /** `open` is called for each handle: the WAL file exists once something was committed. */
  constructor(readonly open: () => Flushable, readonly parallel = 4) {}

  /** The WAL of the database at `path` (created by the first commit in WAL mode). */
  static forDatabase(path: string): WalSync {
    return new WalSync(() => Deno.openSync(`${path}-wal`, { read: true }));
  }

  /** Resolves once everything committed before the call is on disk. */
  durable(): Promise<void> {
    if (this.#running.size < this.parallel) return this.#start();
    this.#next ??= Promise.withResolvers<void>();
    return this.#next.promise;
  }

  /** Flushes now, blocking (start-up migrations, which run before any request). */
  durableNow(): void {
    const file = this.#idle.pop() ?? this.open();
    try {
      file.syncDataSync();
    } finally {
      this.#idle.push(file);
    }
  }

  /** Waits for the flushes under way and queued, then closes the file (before the database closes). */
  async close(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
    for (const file of this.#idle.splice(0)) file.close();
  }

  #start(): Promise<void> {
    let flush: Promise<void>;
    let file: Flushable | undefined;
    try {
      file = this.#idle.pop() ?? this.open();
      flush = file.syncData();
    } catch (err) {
      flush = Promise.reject(err);
    }
    const running: Promise<void> = flush.finally(() => {
      if (file) this.#idle.push(file);
      this.#running.delete(running);
      const next = this.#next;
      this.#next = undefined;
      if (next) this.#start().then(next.resolve, next.reject);
    });
    this.#running.add(running);
    return running;
  }
}
