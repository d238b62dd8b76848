// The read path: the chunks overlapping a byte range, decoded one after another and sent in
// small slices, with memory bounded per connection and server-wide:
// - of each chunk only the part within the range (and not yet sent) is read, and accounted as
//   ChunkStore.heldBytes says: about that part for a chunk stored as it is or in segments
//   (readRange reads only the shard blocks and segments under it), the whole chunk for a
//   compressed or encrypted chunk written in one piece; a chunk stored as it is or in segments
//   is read in pieces of at most READ_PIECE bytes (a segmented one's end at a segment boundary),
//   into buffers of the piece pool;
// - the stream is pull-based (highWaterMark 0): a slice is cut only when the client took the
//   last one, and the next chunk is decoded ahead only when the read budget has room at once;
// - every decoded chunk holds a grant of the server-wide ReadBudget; readers wait in line for
//   it instead of growing memory;
// - a reader that takes nothing for 250 ms while others wait gives its decoded chunks back
//   (they are decoded again when it resumes), and one that takes nothing for `stallMs` is ended
//   by closing its connection.
// A client that keeps up gets views of the decoded chunk, growing from 64 KiB to 1 MiB (no
// copy), while nobody waits for the budget; otherwise 64 KiB copies, so a slow socket pins one
// small slice, not a whole chunk. Under pressure a client that holds a view for 2 s is let go.
import type { VersionChunk } from "../meta/store.ts";
import type { ChunkStore } from "../storage/chunk_store.ts";
import { KeptFiles } from "../storage/kept_files.ts";
import { connectionCloser } from "../net/connection_context.ts";
import type { Grant, ReadBudget } from "./read_budget.ts";
import type { PiecePool } from "./piece_pool.ts";
import { unwatchWrites, watchWrites } from "../http/written.ts";
import { SweepTimer } from "../sweep_timer.ts";

export interface ReadLimits {
  budget: ReadBudget;
  /** A reader that takes nothing for this long is ended (STORE_BODY_TIMEOUT). */
  stallMs: number;
  /** Buffers of READ_PIECE bytes for pieces of chunks stored as they are, reused. */
  pieces?: PiecePool;
  /** Buffers of SLICE bytes for the copies slow clients get, reused. */
  slices?: PiecePool;
}

/** Of a chunk stored as it is or in segments, at most this much is read at a time. */
export const READ_PIECE = 1024 * 1024;
/** Bytes handed to the HTTP server per read, at first and for a slow client. */
export const SLICE = 64 * 1024;
/** The largest slice, for a client that keeps up. */
const MAX_SLICE = 1024 * 1024;
/** A client that takes a slice within this many ms of its being offered keeps up. */
const KEEPING_UP_MS = 20;
/** While others wait for the budget, a client may hold a view this long before it is let go. */
const PINNED_MAX_MS = 2000;
/** An idle reader gives its decoded chunks back after this long when others are waiting. */
const YIELD_AFTER_MS = 250;

interface Held {
  /** Plaintext of (a piece of) the chunk from `from` on. */
  plain: Uint8Array;
  from: number;
  grant: Grant;
  /** The pool's buffer `plain` is a view of. */
  lent?: Lent;
}

/**
 * A buffer of the piece pool, read into for one piece: it goes back once the piece is done with
 * (retired) and every byte of the views handed to the client has been written to the socket.
 */
class Lent {
  #handed = 0;
  #written = 0;
  #retired = false;
  #given = false;

  constructor(readonly buffer: Uint8Array, readonly pool: PiecePool) {
    watchWrites(buffer.buffer, (bytes) => {
      this.#written += bytes;
      this.#giveBack();
    });
  }

  /** A view of `bytes` bytes goes to the client. */
  hand(bytes: number): void {
    this.#handed += bytes;
  }

  /** Nothing reads into the buffer or cuts views of it any more. */
  retire(): void {
    this.#retired = true;
    this.#giveBack();
  }

  #giveBack(): void {
    if (!this.#retired || this.#written !== this.#handed || this.#given) return;
    // Once only: a buffer in the pool twice would be lent to two readers at once.
    this.#given = true;
    unwatchWrites(this.buffer.buffer);
    this.pool.give(this.buffer);
  }
}

class RangeReader {
  #index = 0;
  #pos: number;
  readonly #end: number;
  #current: Held | undefined;
  /** The piece decoded ahead, by the position (in the object) where it starts. */
  #ahead: { at: number; held: Promise<Held> } | undefined;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** When the slice with the client was offered (undefined while the next one is being cut). */
  #offeredAt: number | undefined;
  #closed = false;
  #sliceSize = SLICE;
  #enqueuedAt = 0;
  /** The grant of a chunk whose last slice is still with the client. */
  #finished: Grant | undefined;
  /**
   * The same for the slice before: the HTTP writer asks for the next slice before it writes the
   * last one, so a slice is written (or dropped) only once the one after it has been taken.
   */
  #writing: Grant | undefined;
  /** The slice with the client is a view of the current chunk (which must stay accounted). */
  #pinned = false;
  /** The same for the slice before it. */
  #pinnedBefore = false;
  /** Closes the client's connection: how a stalled response is ended. */
  readonly #closeConnection = connectionCloser();
  /** Lets go of the chunks of the range: a delete that freed them may remove them then. */
  readonly #unpin: () => void;
  /** Shard files kept open from one piece to the next. */
  readonly #files = new KeptFiles();

  constructor(
    readonly store: ChunkStore,
    readonly chunks: VersionChunk[],
    readonly opts: { offset: number; length: number; key?: CryptoKey; limits: ReadLimits },
  ) {
    this.#pos = opts.offset;
    this.#end = opts.offset + opts.length;
    this.#unpin = store.reads.pin(chunks.map((c) => c.chunk.id));
  }

  /** Decodes the first chunk, so a chunk that cannot be read becomes an error response. */
  async start(): Promise<void> {
    if (this.chunks.length > 0) this.#current = await this.#take(0);
  }

  attach(controller: ReadableStreamDefaultController<Uint8Array>): void {
    this.#controller = controller;
    this.#offeredAt = performance.now();
    idleWatch.add(this);
  }

  async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    this.#offeredAt = undefined;
    // The slice before the previous one has been written: a chunk it was cut from may go now.
    this.#writing?.release();
    this.#writing = this.#finished;
    this.#finished = undefined;
    this.#pinnedBefore = this.#pinned;
    this.#pinned = false;
    if (this.#pos >= this.#end || this.#index >= this.chunks.length) {
      this.close();
      controller.close();
      return;
    }
    const chunk = this.chunks[this.#index];
    try {
      this.#current ??= await this.#take(this.#index);
    } catch (err) {
      // The stream errors, and nothing cancels an errored stream: everything is let go here.
      this.close();
      throw err;
    }
    const chunkEnd = Math.min(chunk.offset + chunk.size, this.#end);
    const { plain, from: base } = this.#current;
    const pieceEnd = Math.min(chunk.offset + base + plain.byteLength, chunkEnd);
    const keepingUp = performance.now() - this.#enqueuedAt < KEEPING_UP_MS &&
      this.opts.limits.budget.waiting === 0;
    this.#sliceSize = keepingUp ? Math.min(MAX_SLICE, this.#sliceSize * 2) : SLICE;
    const to = Math.min(this.#pos + this.#sliceSize, pieceEnd);
    const [from, until] = [this.#pos - chunk.offset, to - chunk.offset];
    // A client that keeps up gets views of the decoded chunk (no copy); they pin the chunk,
    // whose grant is therefore kept until the next pull. A slow one gets copies.
    this.#pinned = keepingUp;
    // What is left of a small range, read into a buffer of its own, is handed over as it is:
    // a copy would take as much memory.
    const rest = from === base && until - base === plain.byteLength && until - from <= SLICE &&
      plain.byteLength === plain.buffer.byteLength;
    const slice = keepingUp || rest
      ? plain.subarray(from - base, until - base)
      : this.#copy(plain.subarray(from - base, until - base));
    if (slice.buffer === plain.buffer) this.#current.lent?.hand(slice.byteLength);
    this.#pos = to;
    if (to >= pieceEnd) {
      // A copy frees the piece now; a view keeps it (and its grant) until the next pull.
      if (keepingUp) this.#finished = this.#current.grant;
      else this.#current.grant.release();
      this.#current.lent?.retire();
      this.#current = undefined;
      if (to >= chunkEnd) this.#index++;
    }
    controller.enqueue(slice);
    this.#enqueuedAt = this.#offeredAt = performance.now();
  }

  /**
   * A copy for a slow client, in a buffer of the slice pool that comes back once the socket took
   * it. Fresh copies were garbage by the hundreds of MiB: 200 stalled readers, each pushed
   * megabytes into its socket's buffers before it filled, all in 64 KiB copies while they waited
   * for the budget, and the collector let ~130 MiB of them pile up.
   */
  #copy(bytes: Uint8Array): Uint8Array {
    const pool = this.opts.limits.slices;
    if (!pool || bytes.byteLength > pool.pieceBytes) return bytes.slice();
    const lent = new Lent(pool.take(), pool);
    const copy = lent.buffer.subarray(0, bytes.byteLength);
    copy.set(bytes);
    lent.hand(copy.byteLength);
    lent.retire();
    return copy;
  }

  close(): void {
    this.#closed = true;
    this.#offeredAt = undefined;
    idleWatch.delete(this);
    this.#giveBack();
    this.#finished?.release();
    this.#writing?.release();
    this.#unpin();
    this.#files.close();
  }

  /**
   * The piece of chunk `i` at the current position: the one decoded ahead, or decoded now; then
   * the next piece (of this chunk or the next) is decoded ahead.
   */
  async #take(i: number): Promise<Held> {
    const ahead = this.#ahead;
    this.#ahead = undefined;
    const at = this.#pos;
    const held = ahead?.at === at ? await ahead.held : await this.#decode(i, at);
    if (ahead && ahead.at !== at) ahead.held.then(drop, () => {});
    const { offset, size } = this.chunks[i];
    const next = offset + held.from + held.plain.byteLength;
    this.#readAhead(next < offset + size ? i : i + 1, next);
    return held;
  }

  /**
   * The piece of chunk `i` to read from position `pos` of the object (chunk-relative: up to the
   * range's end, at most READ_PIECE of a chunk stored as it is or in segments) and the memory
   * reading it holds.
   */
  #span(i: number, pos: number): { from: number; to: number; bytes: number } {
    const { chunk, offset, size } = this.chunks[i];
    const from = Math.max(0, pos - offset);
    let to = Math.min(size, this.#end - offset);
    if (this.store.readsInPieces(chunk)) to = this.store.pieceEnd(chunk, from, to, READ_PIECE);
    return { from, to, bytes: this.store.heldBytes(chunk, from, to) };
  }

  async #decode(i: number, pos: number, granted?: Grant): Promise<Held> {
    const { from, to, bytes } = this.#span(i, pos);
    const grant = granted ?? await this.opts.limits.budget.acquire(bytes, i);
    try {
      if (this.#closed) throw new Error("The read was closed");
      const chunk = this.chunks[i].chunk;
      const pool = this.opts.limits.pieces;
      // Only for pieces near the buffer's size: a small range in a pool buffer would hold far
      // more memory than its grant accounts for.
      let lent = pool && this.store.readsInPieces(chunk) && to - from <= pool.pieceBytes &&
          to - from >= pool.pieceBytes / 2
        ? new Lent(pool.take(), pool)
        : undefined;
      const plain = await this.store.readRange(chunk, from, to, {
        key: this.opts.key,
        into: lent?.buffer,
        files: this.#files,
      });
      // Read some other way (a shard was not good): the buffer was not used.
      if (lent && plain.buffer !== lent.buffer.buffer) {
        lent.retire();
        lent = undefined;
      }
      return { plain, from, grant, lent };
    } catch (err) {
      grant.release();
      throw err;
    }
  }

  /** Starts decoding the piece of chunk `i` at `pos` when the budget has room now. */
  #readAhead(i: number, pos: number): void {
    if (i >= this.chunks.length || pos >= this.#end) return;
    const grant = this.opts.limits.budget.tryAcquire(this.#span(i, pos).bytes);
    if (!grant) return;
    const held = this.#decode(i, pos, grant);
    held.catch(() => {});
    this.#ahead = { at: pos, held };
  }

  #giveBack(): void {
    this.#files.release();
    if (this.#current) drop(this.#current);
    this.#current = undefined;
    this.#ahead?.held.then(drop, () => {});
    this.#ahead = undefined;
  }

  /**
   * Called by the idle watch: a reader whose client has taken nothing for `stallMs` is ended; one
   * idle for YIELD_AFTER_MS while others wait for the budget gives its decoded pieces back, unless
   * the client holds a view of them, in which case it is ended after PINNED_MAX_MS.
   */
  checkIdle(now: number): void {
    if (this.#offeredAt === undefined) return;
    const idle = now - this.#offeredAt;
    const { budget, stallMs } = this.opts.limits;
    if (idle >= stallMs) return this.#stop(`took no data for ${stallMs} ms`);
    if (budget.waiting === 0 || idle < YIELD_AFTER_MS) return;
    if (!this.#pinned && !this.#pinnedBefore) return this.#giveBack();
    if (idle >= PINNED_MAX_MS) this.#stop("held a view too long");
  }

  /** Ends a reader that does not take its data: its connection is closed. */
  #stop(why: string): void {
    this.close();
    if (this.#closeConnection) return this.#closeConnection();
    try {
      this.#controller?.error(new Error(`The client ${why}`));
    } catch { /* the stream has ended meanwhile */ }
  }
}

/**
 * The readers whose clients have a slice to take, looked at together every YIELD_AFTER_MS by one
 * timer instead of two timers set and cleared per slice. A reader's stall is therefore noticed up
 * to YIELD_AFTER_MS late.
 */
const idleWatch = new SweepTimer<RangeReader>(
  YIELD_AFTER_MS,
  (reader) => reader.checkIdle(performance.now()),
);

/** Readers whose idle time is watched now: every reader not yet closed (tests). */
export function watchedReaders(): number {
  return idleWatch.size;
}

/** A piece that will not be sent (any more): its grant and its buffer go back. */
function drop(held: Held): void {
  held.grant.release();
  held.lent?.retire();
}

/**
 * The stream of a range. The first chunk is read before the stream is returned, so a chunk that
 * cannot be read (lost shards, failed authentication) becomes an error response, not a cut body.
 */
export async function chunkStream(
  store: ChunkStore,
  chunks: VersionChunk[],
  opts: { offset: number; length: number; key?: CryptoKey; limits: ReadLimits },
): Promise<ReadableStream<Uint8Array>> {
  const reader = new RangeReader(store, chunks, opts);
  try {
    await reader.start();
  } catch (err) {
    reader.close();
    throw err;
  }
  return new ReadableStream<Uint8Array>({
    start: (controller) => reader.attach(controller),
    pull: (controller) => reader.pull(controller),
    cancel: () => reader.close(),
  }, { highWaterMark: 0 });
}
