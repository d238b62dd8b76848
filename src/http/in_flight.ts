// Tracks requests whose handlers are running, so shutdown can wait for them (and memory release
// for a quiet moment, src/memory/release.ts).
// Deno's server.shutdown() lets response bodies finish but breaks request bodies that are
// still being read, so uploads must be drained before it is called.

export class InFlight {
  #count = 0;
  #started = 0;
  #draining = false;
  #idle: (() => void) | undefined;

  get draining(): boolean {
    return this.#draining;
  }

  /** Handlers running now. */
  get running(): number {
    return this.#count;
  }

  /** Requests started since the server did. */
  get started(): number {
    return this.#started;
  }

  enter(): void {
    this.#count++;
    this.#started++;
  }

  exit(): void {
    this.#count--;
    if (this.#count === 0) this.#idle?.();
  }

  /** Refuses new work and resolves when running handlers are done (or after `timeoutMs`). */
  async drain(timeoutMs: number): Promise<void> {
    this.#draining = true;
    if (this.#count === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      new Promise<void>((resolve) => (this.#idle = resolve)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
  }
}
