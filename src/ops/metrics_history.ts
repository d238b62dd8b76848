// The recent past of the request totals: a sample every 10 seconds for the last hour, kept in
// memory, so the web console's charts open with that hour rather than empty.

export interface RequestTotals {
  requests: number;
  received: number;
  sent: number;
  /** Seconds spent answering, summed over the requests. */
  seconds: number;
}

export interface TotalsSample extends RequestTotals {
  /** Epoch milliseconds. */
  at: number;
}

export const HISTORY_INTERVAL_MS = 10_000;
/** One hour of samples. */
export const HISTORY_SAMPLES = 360;

export class TotalsHistory {
  readonly #samples: TotalsSample[] = [];
  #last = -Infinity;

  constructor(
    readonly intervalMs = HISTORY_INTERVAL_MS,
    readonly keep = HISTORY_SAMPLES,
  ) {}

  /** Records the totals when an interval has passed since the last sample. */
  offer(now: number, totals: () => RequestTotals): void {
    if (now - this.#last < this.intervalMs) return;
    this.#last = now;
    this.#samples.push({ at: now, ...totals() });
    if (this.#samples.length > this.keep) this.#samples.shift();
  }

  /** The samples kept, oldest first. */
  samples(): TotalsSample[] {
    return [...this.#samples];
  }
}
