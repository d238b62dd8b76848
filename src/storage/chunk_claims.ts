// Claims on chunk ids, so a chunk is never collected while a write that will refer to it is in
// flight. A writer claims the id before it checks whether the chunk exists and releases it after
// its metadata commit; collection (deleting the shards of an unreferenced chunk) happens only
// for unclaimed ids whose metadata row is gone, under a per-id lock. The metadata store sees the
// first and the last claim of this process (ChunkGuard), so servers sharing a PostgreSQL
// metadata store respect each other's claims.
import type { ChunkGuard } from "../meta/store.ts";

export class ChunkClaims {
  readonly #pending = new Map<string, number>();
  readonly #locks = new Map<string, Promise<void>>();

  constructor(readonly guard: ChunkGuard) {}

  /** Runs `fn` with the id's lock held. */
  async #locked<T>(id: string, fn: () => Promise<T>): Promise<T> {
    while (this.#locks.has(id)) await this.#locks.get(id);
    let unlock!: () => void;
    this.#locks.set(id, new Promise<void>((r) => (unlock = r)));
    try {
      return await fn();
    } finally {
      this.#locks.delete(id);
      unlock();
    }
  }

  claim(id: string): Promise<void> {
    return this.#locked(id, async () => {
      const held = this.#pending.get(id) ?? 0;
      if (held === 0) await this.guard.claimChunk(id);
      this.#pending.set(id, held + 1);
    });
  }

  /** Drops a claim; when it was the last and no metadata refers to the chunk, `remove` runs. */
  release(id: string, remove: () => Promise<void>): Promise<void> {
    return this.#locked(id, async () => {
      const left = (this.#pending.get(id) ?? 1) - 1;
      if (left > 0) this.#pending.set(id, left);
      else this.#pending.delete(id);
      if (left <= 0) await this.guard.releaseChunk(id, remove);
    });
  }

  /** For a chunk the metadata just freed: `remove` runs unless a writer has claimed it again. */
  collect(id: string, remove: () => Promise<void>): Promise<void> {
    return this.#locked(id, async () => {
      if (!this.#pending.has(id)) await this.guard.collectChunk(id, remove);
    });
  }

  /** Whether a writer holds a claim on the id (its metadata may not be committed yet). */
  held(id: string): boolean {
    return this.#pending.has(id);
  }

  get size(): number {
    return this.#pending.size;
  }
}
