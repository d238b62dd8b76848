// The server-wide budget of chunk buffers for uploads (STORE_WRITE_BUFFER_MAX): every chunk-sized
// buffer an upload fills, and that its chunk write and MD5 then read, comes from here, and uploads
// wait in line for one when the budget is spent instead of allocating more. Buffers that come
// back are kept for the next chunk (a fresh one is garbage until V8's next full GC, and glibc does
// not give such freed memory back to the system), and dropped after `idleMs` without uploads.
// Kept buffers count against the budget; one of the other kind (shared or not) or size is dropped
// to make room. A request for more than the whole budget waits until nothing is held.

interface Waiter {
  size: number;
  shared: boolean;
  resolve(buffer: Uint8Array): void;
}

export class WriteBuffers {
  /** Bytes of every buffer handed out or kept. */
  #held = 0;
  #kept: ArrayBufferLike[] = [];
  readonly #queue: Waiter[] = [];
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #waits = 0;

  constructor(readonly maxBytes: number, readonly idleMs = 10_000) {}

  /** Bytes handed out or kept now (at most maxBytes, or one buffer when a single one exceeds it). */
  get held(): number {
    return this.#held;
  }

  /** Uploads waiting for a buffer. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Times an upload had to wait for a buffer, since start. */
  get waits(): number {
    return this.#waits;
  }

  /** Bytes of buffers kept for reuse. */
  get kept(): number {
    return this.#kept.reduce((n, b) => n + b.byteLength, 0);
  }

  /**
   * A buffer of `size` bytes, in shared memory when `shared` (the CPU pool's workers then read it
   * in place); waits in line while the budget is spent. Its contents are not cleared.
   */
  take(size: number, shared: boolean): Promise<Uint8Array> {
    if (this.#queue.length === 0) {
      const now = this.#tryTake(size, shared);
      if (now) return Promise.resolve(now);
    }
    this.#waits++;
    return new Promise((resolve) => this.#queue.push({ size, shared, resolve }));
  }

  /** Returns a buffer from `take` (once, when nothing reads it any more). */
  give(buffer: ArrayBufferLike): void {
    this.#kept.push(buffer);
    while (this.#queue.length > 0) {
      const next = this.#queue[0];
      const got = this.#tryTake(next.size, next.shared);
      if (!got) break;
      this.#queue.shift();
      next.resolve(got);
    }
    clearTimeout(this.#idleTimer);
    if (this.#kept.length === 0) return;
    this.#idleTimer = setTimeout(() => this.dropKept(), this.idleMs);
    Deno.unrefTimer(this.#idleTimer);
  }

  #tryTake(size: number, shared: boolean): Uint8Array | undefined {
    const at = this.#kept.findIndex((b) =>
      b.byteLength === size && (b instanceof SharedArrayBuffer) === shared
    );
    if (at >= 0) return new Uint8Array(this.#kept.splice(at, 1)[0]);
    while (this.#held + size > this.maxBytes && this.#kept.length > 0) {
      this.#held -= this.#kept.pop()!.byteLength;
    }
    if (this.#held > 0 && this.#held + size > this.maxBytes) return undefined;
    this.#held += size;
    return new Uint8Array(shared ? new SharedArrayBuffer(size) : new ArrayBuffer(size));
  }

  /** Forgets the kept buffers (uploads have stopped for a while, or memory is released). */
  dropKept(): void {
    clearTimeout(this.#idleTimer);
    for (const b of this.#kept) this.#held -= b.byteLength;
    this.#kept = [];
  }
}
