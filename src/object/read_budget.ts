// The server-wide budget of decoded object bytes held for GET responses (STORE_READ_BUFFER_MAX).
// A reader takes a grant before decoding a chunk and returns it once the chunk has been sent;
// when the budget is spent, readers wait in line instead of growing memory. The line is ordered
// by how much each reader has been granted already (then by arrival): a new reader is not stuck
// behind many that are streaming large objects.

export interface Grant {
  readonly bytes: number;
  /** Returns the bytes to the budget (once; later calls do nothing). */
  release(): void;
}

export class ReadBudget {
  #used = 0;
  readonly #queue: { bytes: number; served: number; resolve: (g: Grant) => void }[] = [];

  constructor(readonly max: number) {}

  get used(): number {
    return this.#used;
  }

  /** Readers waiting for bytes: holders that are not sending should give theirs back. */
  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * A grant of `bytes`, waiting in line for it; `served` is how many grants this reader had
   * before (fewer go first). One larger than the whole budget waits until nothing is held.
   */
  acquire(bytes: number, served = 0): Promise<Grant> {
    const now = this.tryAcquire(bytes);
    if (now) return Promise.resolve(now);
    return new Promise((resolve) => {
      let at = this.#queue.length;
      while (at > 0 && this.#queue[at - 1].served > served) at--;
      this.#queue.splice(at, 0, { bytes, served, resolve });
    });
  }

  /** A grant at once, or undefined when it would not fit or others are waiting. */
  tryAcquire(bytes: number): Grant | undefined {
    if (this.#queue.length > 0 || !this.#fits(bytes)) return undefined;
    return this.#grant(bytes);
  }

  #fits(bytes: number): boolean {
    return this.#used === 0 || this.#used + bytes <= this.max;
  }

  #grant(bytes: number): Grant {
    this.#used += bytes;
    let released = false;
    return {
      bytes,
      release: () => {
        if (released) return;
        released = true;
        this.#used -= bytes;
        this.#wake();
      },
    };
  }

  #wake(): void {
    while (this.#queue.length > 0 && this.#fits(this.#queue[0].bytes)) {
      const next = this.#queue.shift()!;
      next.resolve(this.#grant(next.bytes));
    }
  }
}
