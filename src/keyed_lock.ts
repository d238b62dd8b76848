// One at a time per key: work under a key waits until the work under that key before it has
// ended (whether it succeeded or failed); work under other keys runs alongside. Waiters go in
// the order they arrived. Keys nobody holds take no memory.
export class KeyedLock {
  readonly #held = new Map<string, Promise<void>>();

  /** Runs `fn` holding `key`. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    while (this.#held.has(key)) await this.#held.get(key);
    let unlock!: () => void;
    this.#held.set(key, new Promise<void>((r) => (unlock = r)));
    try {
      return await fn();
    } finally {
      this.#held.delete(key);
      unlock();
    }
  }
}
