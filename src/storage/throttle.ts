// Background work (heals, scrubs) yields to foreground requests: after each unit of work it
// sleeps in proportion to the time the unit took (STORE_HEAL_THROTTLE percent; 100 means it
// sleeps as long as it worked, so it uses at most half the time; 0 runs at full speed).

export class Throttle {
  constructor(readonly percent: number) {}

  /** Runs one unit of work, then sleeps its share. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      const pause = (performance.now() - started) * this.percent / 100;
      // Even unthrottled, one timer turn lets queued requests run between units.
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}
