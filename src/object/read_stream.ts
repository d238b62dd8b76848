// The read path: the chunks overlapping a byte range, decoded one after another and sent in
// small slices, with memory bounded per connection and server-wide:
// - the stream is pull-based (highWaterMark 0): a slice is cut only when the client took the
//   last one, and the next chunk is decoded ahead only when the read budget has room at once;
// - every decoded chunk holds a grant of the server-wide ReadBudget; readers wait in line for
//   it instead of growing memory;
// - a reader that takes nothing for 250 ms while others wait gives its decoded chunks back
//   (they are decoded again when it resumes), and one that takes nothing for `stallMs` is ended
//   by closing its connection.
// Slices are copies, so a slow socket holds one slice, never a whole decoded chunk.
import type { VersionChunk } from "../meta/store.ts";
import type { ChunkStore } from "../storage/chunk_store.ts";
import { connectionCloser } from "../net/connection_context.ts";
import type { Grant, ReadBudget } from "./read_budget.ts";

export interface ReadLimits {
  budget: ReadBudget;
  /** A reader that takes nothing for this long is ended (STORE_BODY_TIMEOUT). */
  stallMs: number;
}

/** Bytes handed to the HTTP server per read. */
const SLICE = 64 * 1024;
/** An idle reader gives its decoded chunks back after this long when others are waiting. */
const YIELD_AFTER_MS = 250;

interface Held {
  plain: Uint8Array;
  grant: Grant;
}

class RangeReader {
  #index = 0;
  #pos: number;
  readonly #end: number;
  #current: Held | undefined;
  #ahead: { index: number; held: Promise<Held> } | undefined;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #stallTimer: ReturnType<typeof setTimeout> | undefined;
  #yieldTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /** Closes the client's connection: how a stalled response is ended. */
  readonly #closeConnection = connectionCloser();

  constructor(
    readonly store: ChunkStore,
    readonly chunks: VersionChunk[],
    readonly opts: { offset: number; length: number; key?: CryptoKey; limits: ReadLimits },
  ) {
    this.#pos = opts.offset;
    this.#end = opts.offset + opts.length;
  }

  /** Decodes the first chunk, so a chunk that cannot be read becomes an error response. */
  async start(): Promise<void> {
    if (this.chunks.length > 0) this.#current = await this.#take(0);
  }

  attach(controller: ReadableStreamDefaultController<Uint8Array>): void {
    this.#controller = controller;
    this.#arm();
  }

  async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    this.#disarm();
    if (this.#pos >= this.#end || this.#index >= this.chunks.length) {
      this.close();
      controller.close();
      return;
    }
    const chunk = this.chunks[this.#index];
    this.#current ??= await this.#take(this.#index);
    const chunkEnd = Math.min(chunk.offset + chunk.size, this.#end);
    const to = Math.min(this.#pos + SLICE, chunkEnd);
    const slice = this.#current.plain.slice(this.#pos - chunk.offset, to - chunk.offset);
    this.#pos = to;
    if (to >= chunkEnd) {
      this.#current.grant.release();
      this.#current = undefined;
      this.#index++;
    }
    controller.enqueue(slice);
    this.#arm();
  }

  close(): void {
    this.#closed = true;
    this.#disarm();
    this.#giveBack();
  }

  /** Chunk `i`: the one decoded ahead, or decoded now; then the next is decoded ahead. */
  async #take(i: number): Promise<Held> {
    const ahead = this.#ahead;
    this.#ahead = undefined;
    const held = ahead?.index === i ? await ahead.held : await this.#decode(i);
    if (ahead && ahead.index !== i) ahead.held.then((h) => h.grant.release(), () => {});
    this.#readAhead(i + 1);
    return held;
  }

  async #decode(i: number, granted?: Grant): Promise<Held> {
    const grant = granted ?? await this.opts.limits.budget.acquire(this.chunks[i].size, i);
    try {
      if (this.#closed) throw new Error("The read was closed");
      const plain = await this.store.read(this.chunks[i].chunk, { key: this.opts.key });
      return { plain, grant };
    } catch (err) {
      grant.release();
      throw err;
    }
  }

  /** Starts decoding chunk `i` when it is within the range and the budget has room now. */
  #readAhead(i: number): void {
    if (i >= this.chunks.length || this.chunks[i].offset >= this.#end) return;
    const grant = this.opts.limits.budget.tryAcquire(this.chunks[i].size);
    if (!grant) return;
    const held = this.#decode(i, grant);
    held.catch(() => {});
    this.#ahead = { index: i, held };
  }

  #giveBack(): void {
    this.#current?.grant.release();
    this.#current = undefined;
    this.#ahead?.held.then((h) => h.grant.release(), () => {});
    this.#ahead = undefined;
  }

  #arm(): void {
    const { budget, stallMs } = this.opts.limits;
    this.#stallTimer = setTimeout(() => {
      this.close();
      if (this.#closeConnection) return this.#closeConnection();
      try {
        this.#controller?.error(new Error(`The client took no data for ${stallMs} ms`));
      } catch { /* the stream has ended meanwhile */ }
    }, stallMs);
    const check = () => {
      if (budget.waiting > 0) this.#giveBack();
      else this.#yieldTimer = setTimeout(check, YIELD_AFTER_MS);
    };
    this.#yieldTimer = setTimeout(check, YIELD_AFTER_MS);
  }

  #disarm(): void {
    clearTimeout(this.#stallTimer);
    clearTimeout(this.#yieldTimer);
  }
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
  await reader.start();
  return new ReadableStream<Uint8Array>({
    start: (controller) => reader.attach(controller),
    pull: (controller) => reader.pull(controller),
    cancel: () => reader.close(),
  }, { highWaterMark: 0 });
}
