// Nonces of accepted calls, remembered while their timestamps are inside the window so that a
// replay is refused. Memory is bounded: past `max` live entries new calls are refused (fail
// closed) until old ones expire, never accepted unchecked.

export class NonceCache {
  /** Nonce -> when it may be forgotten; insertion order is roughly expiry order. */
  #seen = new Map<string, number>();

  constructor(readonly windowMs: number, readonly max: number) {}

  /** "fresh" (and remembered), "replayed", or "full" when no more can be remembered now. */
  admit(nonce: string, timestamp: number, now = Date.now()): "fresh" | "replayed" | "full" {
    this.#expire(now);
    if (this.#seen.has(nonce)) return "replayed";
    if (this.#seen.size >= this.max) return "full";
    // Refused again until the timestamp itself falls out of the window.
    this.#seen.set(nonce, timestamp + this.windowMs);
    return "fresh";
  }

  get size(): number {
    return this.#seen.size;
  }

  /** Drops expired entries from the front; an entry is never dropped before its expiry. */
  #expire(now: number): void {
    for (const [nonce, until] of this.#seen) {
      if (until >= now) break;
      this.#seen.delete(nonce);
    }
  }
}
