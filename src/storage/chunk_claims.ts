// Claims on chunk ids, so a chunk is never collected while a write that will refer to it is in
// flight. A writer claims the id before it checks whether the chunk exists and releases it after
// its metadata commit; collection (deleting the shards of an unreferenced chunk) happens only
// for unclaimed ids whose metadata row is gone, under a per-id lock. The metadata store sees the
// first and the last claim of this process (ChunkGuard), so servers sharing a PostgreSQL
// metadata store respect each other's claims.
import type { ChunkGuard } from "../meta/store.ts";
import { KeyedLock } from "../keyed_lock.ts";

export class ChunkClaims {
  readonly #pending = new Map<string, number>();
  readonly #lock = new KeyedLock();

  constructor(readonly guard: ChunkGuard) {}

  claim(id: string): Promise<void> {
    return this.#lock.run(id, async () => {
      const held = this.#pending.get(id) ?? 0;
      if (held === 0) await this.guard.claimChunk(id);
      this.#pending.set(id, held + 1);
    });
  }

  /** Drops a claim; when it was the last and no metadata refers to the chunk, `remove` runs. */
  release(id: string, remove: () => Promise<void>): Promise<void> {
    return this.#lock.run(id, async () => {
      const left = (this.#pending.get(id) ?? 1) - 1;
      if (left > 0) this.#pending.set(id, left);
      else this.#pending.delete(id);
      if (left <= 0) await this.guard.releaseChunk(id, remove);
    });
  }

  /** For a chunk the metadata just freed: `remove` runs unless a writer has claimed it again. */
  collect(id: string, remove: () => Promise<void>): Promise<void> {
    return this.#lock.run(id, async () => {
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
