// A request's body as a stream read from the connection on demand. `100 Continue` is sent when
// the handler first reads the body, never before: a request refused from its head alone (bad
// signature, no access) is answered without the client ever sending its body.

import { type BodyFraming, HeadError } from "./head.ts";
import type { ConnReader } from "./reader.ts";

const CONTINUE = new TextEncoder().encode("HTTP/1.1 100 Continue\r\n\r\n");

/** The bodies of requests in progress, by the stream a handler sees (see `directBody`). */
const directBodies = new WeakMap<ReadableStream<Uint8Array>, RequestBody>();

/**
 * The body behind a request's stream when it comes from this server, for a reader that reads
 * straight into its own buffer (`readInto`, once it holds the stream's lock); undefined for any
 * other stream.
 */
export function directBody(
  stream: ReadableStream<Uint8Array>,
): Pick<RequestBody, "readInto"> | undefined {
  return directBodies.get(stream);
}

export class RequestBody {
  /** Body bytes not yet read (fixed length), or -1 while a chunked body is not finished. */
  #remaining: number;
  /** Bytes left in the current chunk of a chunked body. */
  #chunkLeft = 0;
  #done: boolean;
  #continuePending: boolean;
  /** The `100 Continue` write in progress: the response head must not overtake it. */
  #continueWrite: Promise<void> | undefined;
  #touched = false;
  readonly #write: (bytes: Uint8Array) => Promise<void>;
  /** Why reading the body failed (malformed framing, the client went away), if it did. */
  failure: unknown;
  /** The response head has gone out: too late for `100 Continue`. */
  responseStarted = false;
  readonly stream: ReadableStream<Uint8Array>;

  constructor(
    readonly reader: ConnReader,
    framing: BodyFraming,
    expectContinue: boolean,
    write: (bytes: Uint8Array) => Promise<void>,
  ) {
    this.#remaining = framing.kind === "length" ? framing.length : -1;
    this.#done = framing.kind === "none";
    this.#continuePending = expectContinue;
    // A byte stream: a reader that brings its own buffer (BYOB, as streaming uploads do) gets the
    // body read straight into it, reused from read to read; any other gets a buffer per read.
    // (Plain uploads read through `readInto`, into shared memory.)
    this.#write = write;
    this.stream = new ReadableStream({
      type: "bytes",
      pull: async (controller) => {
        await this.#begin();
        const request = controller.byobRequest;
        try {
          if (request?.view) {
            const view = request.view;
            const into = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
            const n = await this.#nextInto(into);
            if (n === 0 && this.#done) {
              controller.close();
              request.respond(0);
              return;
            }
            request.respond(n);
          } else {
            const chunk = await this.#next();
            if (chunk) controller.enqueue(chunk);
          }
        } catch (err) {
          this.failure = err;
          throw err;
        }
        if (this.#done) controller.close();
      },
    }, { highWaterMark: 0 });
    directBodies.set(this.stream, this);
  }

  /**
   * Reads body bytes straight into `into`, which may be shared memory (a BYOB read of the stream
   * cannot take a view on a SharedArrayBuffer: it would transfer the buffer); 0 at the end. Only
   * for the holder of the stream's lock, which reads no other way.
   */
  async readInto(into: Uint8Array): Promise<number> {
    await this.#begin();
    try {
      const n = await this.#nextInto(into);
      // 0 means the end to the caller: never for a body still going on.
      if (n === 0 && !this.#done) throw new Error("An empty read of a body not finished");
      return n;
    } catch (err) {
      this.failure = err;
      throw err;
    }
  }

  /** Before a read: the handler has touched the body, and the client is told to send it. */
  async #begin(): Promise<void> {
    this.#touched = true;
    if (this.#continuePending) {
      this.#continuePending = false;
      if (!this.responseStarted) await (this.#continueWrite = this.#write(CONTINUE));
    }
  }

  /** Settles once a `100 Continue` being written (if any) is out. */
  async continueWritten(): Promise<void> {
    await this.#continueWrite?.catch(() => {});
  }

  /** The whole body has been read from the connection. */
  get done(): boolean {
    return this.#done;
  }

  /** The client was never told to send the body (it waits for `100 Continue`). */
  get withheld(): boolean {
    return this.#continuePending;
  }

  /** The handler has started reading the body. */
  get touched(): boolean {
    return this.#touched;
  }

  async #next(): Promise<Uint8Array | null> {
    if (this.#done) return null;
    if (this.#remaining >= 0) {
      const chunk = await this.reader.readSome(this.#remaining);
      this.#remaining -= chunk.length;
      if (this.#remaining === 0) this.#done = true;
      return chunk;
    }
    if (!(await this.#chunkStart())) return null;
    const chunk = await this.reader.readSome(this.#chunkLeft);
    this.#chunkLeft -= chunk.length;
    if (this.#chunkLeft === 0) await this.reader.readCrlf();
    return chunk;
  }

  /** As #next, into `into`: the bytes read (0 at the end). */
  async #nextInto(into: Uint8Array): Promise<number> {
    if (this.#done) return 0;
    if (this.#remaining === 0) {
      this.#done = true;
      return 0;
    }
    if (this.#remaining > 0) {
      const n = await this.reader.readInto(
        into.subarray(0, Math.min(into.length, this.#remaining)),
      );
      this.#remaining -= n;
      if (this.#remaining === 0) this.#done = true;
      return n;
    }
    if (!(await this.#chunkStart())) return 0;
    const n = await this.reader.readInto(into.subarray(0, Math.min(into.length, this.#chunkLeft)));
    this.#chunkLeft -= n;
    if (this.#chunkLeft === 0) await this.reader.readCrlf();
    return n;
  }

  /**
   * At the start of a chunk of a chunked body, reads its size line (and at the last chunk the
   * trailers); false once the body has ended.
   */
  async #chunkStart(): Promise<boolean> {
    if (this.#chunkLeft === 0) {
      const line = await this.reader.readLine();
      // chunk-size [ BWS ";" chunk-ext ]: no control characters in extensions (ignored).
      const size = /^([0-9a-fA-F]{1,15})(?:[ \t]*;[\t\x20-\x7e\x80-\xff]*)?$/.exec(line);
      if (!size) throw new HeadError(400, "malformed chunk size");
      this.#chunkLeft = parseInt(size[1], 16);
      if (this.#chunkLeft === 0) {
        await this.reader.skipTrailers();
        this.#done = true;
        return false;
      }
    }
    return true;
  }

  /**
   * Reads and drops what is left of the body, at most `limit` bytes within `withinMs`; false when
   * more is left or it does not arrive in time (the connection cannot carry another request).
   */
  async drain(limit: number, withinMs: number): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<false>((r) => timer = setTimeout(() => r(false), withinMs));
    const read = async () => {
      let dropped = 0;
      while (!this.#done) {
        if (this.#remaining > limit - dropped) return false;
        const chunk = await this.#next();
        dropped += chunk?.length ?? 0;
        if (dropped > limit) return false;
      }
      return true;
    };
    try {
      // On time-out the read is abandoned: the caller closes the connection.
      return await Promise.race([read().catch(() => false), late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
