// Chunks that GETs in progress are reading. A delete or an overwrite frees a version's chunks as
// soon as it commits, and the reclaimer would unlink their shard files while a GET that started
// on the old version still streams them: its response was cut at the next piece. A GET pins the
// chunks of its range for as long as it runs; the removal of a pinned chunk waits until the last
// reader lets go. Within this process only: servers sharing a PostgreSQL metadata store do not
// see each other's readers.
export class ReadPins {
  readonly #readers = new Map<string, number>();
  /** What runs once a pinned chunk is no longer read, by chunk id. */
  readonly #deferred = new Map<string, (() => void)[]>();

  /** Pins `ids` (repeats count once each); the returned function lets go of them (once). */
  pin(ids: Iterable<string>): () => void {
    const pinned = [...new Set(ids)];
    for (const id of pinned) this.#readers.set(id, (this.#readers.get(id) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const id of pinned) this.#unpin(id);
    };
  }

  /**
   * True when `id` is being read: `then` runs once the last reader lets go. False (and `then`
   * does not run) when nobody reads it.
   */
  deferWhileRead(id: string, then: () => void): boolean {
    if (!this.#readers.has(id)) return false;
    const waiting = this.#deferred.get(id);
    if (waiting) waiting.push(then);
    else this.#deferred.set(id, [then]);
    return true;
  }

  /** Whether a GET reads the chunk now. */
  reading(id: string): boolean {
    return this.#readers.has(id);
  }

  /** Chunks pinned now. */
  get size(): number {
    return this.#readers.size;
  }

  #unpin(id: string): void {
    const left = (this.#readers.get(id) ?? 1) - 1;
    if (left > 0) return void this.#readers.set(id, left);
    this.#readers.delete(id);
    const waiting = this.#deferred.get(id);
    this.#deferred.delete(id);
    for (const then of waiting ?? []) then();
  }
}
