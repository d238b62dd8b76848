// Buffers for the pieces a GET reads of chunks stored as they are or in segments (read_stream.ts),
// decoded into them: a buffer
// whose every byte handed to the client has been written to the socket comes back here and
// serves the next piece, of this response or another. A fresh buffer per piece is zero-filled
// by V8 and garbage a moment later: at GB/s that was a tenth of the read path's CPU plus the
// collector's work on the other core. Kept buffers are bounded (`maxKept`), dropped by the
// memory release, and never counted twice: a piece in use is accounted by its ReadBudget grant.

export class PiecePool {
  #kept: Uint8Array[] = [];
  #reused = 0;

  constructor(readonly pieceBytes: number, readonly maxKept: number) {}

  /** A buffer of pieceBytes: a kept one, or a new one. */
  take(): Uint8Array {
    const kept = this.#kept.pop();
    if (kept) this.#reused++;
    return kept ?? new Uint8Array(this.pieceBytes);
  }

  /** Takes back a buffer nobody reads or writes any more (kept while there is room). */
  give(buffer: Uint8Array): void {
    if (buffer.byteLength === this.pieceBytes && this.#kept.length < this.maxKept) {
      this.#kept.push(buffer);
    }
  }

  dropKept(): void {
    this.#kept = [];
  }

  get kept(): number {
    return this.#kept.length;
  }

  /** Pieces served from a kept buffer, since start. */
  get reused(): number {
    return this.#reused;
  }
}
