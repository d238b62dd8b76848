// A wake-up signal: the object layer fires it after committing events; consumers and feed
// readers wait on it instead of polling the outbox in a tight loop. A generation count closes
// the gap between "looked, found nothing" and "started waiting".
export class Signal {
  #waiters = new Set<() => void>();
  #generation = 0;

  get generation(): number {
    return this.#generation;
  }

  /**
   * Resolves once the signal has fired after generation `since` (at once if it already has),
   * after `timeoutMs`, or when `abort` fires.
   */
  wait(since: number, timeoutMs: number, abort?: AbortSignal): Promise<void> {
    if (this.#generation !== since || abort?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        abort?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      abort?.addEventListener("abort", done);
      this.#waiters.add(done);
    });
  }

  fire(): void {
    this.#generation++;
    for (const done of [...this.#waiters]) done();
  }
}
