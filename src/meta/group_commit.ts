// Group commit: write transactions that arrive together share one SQLite transaction, so one
// flush of the WAL makes a whole batch durable instead of one per write. Each operation runs
// inside its own savepoint, so one that throws rolls back alone; its caller gets the error, the
// others commit. A caller's promise settles only after the COMMIT is durable: `durable` (the WAL
// flush of wal_sync.ts) runs after COMMIT, off the event loop, while the next batch may already
// be committing.
import type { DatabaseSync } from "node:sqlite";

interface Pending {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

export class GroupCommit {
  #pending: Pending[] = [];
  #scheduled = false;

  /** `durable` resolves once everything committed so far is on disk (none: COMMIT itself is). */
  constructor(
    readonly db: DatabaseSync,
    readonly durable: () => Promise<void> = () => Promise.resolve(),
  ) {}

  /** Runs `fn` in the next batch; resolves with its result once the batch is committed. */
  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // One timer turn lets writes of concurrent requests join the batch.
        setTimeout(() => this.flush(), 0);
      }
    });
  }

  /**
   * Commits everything queued so far (also called before the database closes); the callers'
   * promises settle once the commit is durable.
   */
  flush(): void {
    this.#scheduled = false;
    const batch = this.#pending.splice(0);
    if (batch.length === 0) return;
    // A batch of one runs without a savepoint: when it throws, the whole transaction rolls back
    // (below). A savepoint journals the original of every page the operation changes (to a
    // temporary file past 64 KiB): hundreds of pages for a 1,000-key DeleteObjects.
    const alone = batch.length === 1;
    const outcomes: { ok: boolean; value: unknown }[] = [];
    try {
      this.db.exec("BEGIN IMMEDIATE");
      for (const op of batch) {
        outcomes.push(alone ? { ok: true, value: op.fn() } : this.#runOne(op));
      }
      this.db.exec("COMMIT");
    } catch (err) {
      try {
        this.db.exec("ROLLBACK");
      } catch { /* the transaction is already gone */ }
      for (const op of batch) op.reject(err);
      return;
    }
    this.durable().then(
      () => batch.forEach((op, i) => (outcomes[i].ok ? op.resolve : op.reject)(outcomes[i].value)),
      // Committed but maybe not on disk: no caller is told its write is safe.
      (err) => batch.forEach((op) => op.reject(err)),
    );
  }

  #runOne(op: Pending): { ok: boolean; value: unknown } {
    this.db.exec("SAVEPOINT op");
    try {
      const value = op.fn();
      this.db.exec("RELEASE op");
      return { ok: true, value };
    } catch (err) {
      this.db.exec("ROLLBACK TO op");
      this.db.exec("RELEASE op");
      return { ok: false, value: err };
    }
  }
}
