// Buffered reading from one connection: request heads, body bytes (fixed length or chunked).

import { CONTROL, HeadError, MAX_HEAD_BYTES, TOKEN } from "./head.ts";

/** A connection's buffer between requests; it grows for a longer head, up to MAX_HEAD_BYTES. */
const BUFFER_BYTES = 8 * 1024;
/**
 * Size of a read straight into a body chunk of its own (nothing buffered, a long body, a reader
 * without a buffer of its own; uploads bring theirs: readInto). Larger reads (256 KiB was tried)
 * left more garbage between collections: 8 concurrent 64 MiB uploads peaked at 260-311 MiB
 * against 235-245 with 64 KiB, the size Deno's own server handed out.
 */
const DIRECT_READ_BYTES = 64 * 1024;
/**
 * Bytes all connections together may hold in buffers grown beyond BUFFER_BYTES for long heads:
 * thousands of clients each sending most of a 64 KiB head would otherwise hold gigabytes.
 */
const GROWN_BUDGET = 32 * 1024 * 1024;
let grownBytes = 0;
/** Longest chunk-size line or trailer field of a chunked body. */
const MAX_CHUNK_LINE = 4096;
/** Most trailer bytes after a chunked body. */
const MAX_TRAILER_BYTES = 16 * 1024;

/** The connection ended in the middle of a request. */
export class UnexpectedEof extends Error {
  constructor() {
    super("The connection ended in the middle of a request");
  }
}

export class ConnReader {
  #buf = new Uint8Array(BUFFER_BYTES);
  #start = 0;
  #end = 0;
  /** Size of the next direct body read; 0 while reads come back short (they go through #buf). */
  #direct = DIRECT_READ_BYTES;

  constructor(readonly conn: Deno.Conn) {}

  /** Gives back the buffer's share of the grown-buffer budget (the connection has ended). */
  release(): void {
    this.#resize(BUFFER_BYTES);
  }

  #resize(size: number): void {
    const delta = size - this.#buf.length;
    if (delta === 0) return;
    if (delta > 0 && grownBytes + delta > GROWN_BUDGET) {
      throw new HeadError(503, "too many long request heads at once");
    }
    grownBytes += delta;
    const next = new Uint8Array(size);
    if (delta > 0) next.set(this.#buf);
    this.#buf = next;
  }

  /** Reads more bytes into the buffer; false at the end of the stream. */
  async #fill(): Promise<boolean> {
    if (this.#start === this.#end) {
      this.#start = this.#end = 0;
      // A buffer grown for a long head is given back while the connection waits.
      this.#resize(BUFFER_BYTES);
    } else if (this.#end === this.#buf.length) {
      if (this.#start === 0) {
        // Full of one unfinished head or line: the callers' limits stop it at MAX_HEAD_BYTES.
        if (this.#buf.length >= MAX_HEAD_BYTES) return true;
        this.#resize(Math.min(MAX_HEAD_BYTES, this.#buf.length * 2));
      } else {
        this.#buf.copyWithin(0, this.#start, this.#end);
        this.#end -= this.#start;
        this.#start = 0;
      }
    }
    const n = await this.conn.read(this.#buf.subarray(this.#end));
    if (n === null) return false;
    this.#end += n;
    return true;
  }

  /**
   * The next request head (without its terminating blank line), null when the connection ends
   * cleanly before one starts. Blank lines before a request line are skipped (RFC 9112 §2.2).
   */
  async readHead(): Promise<Uint8Array | null> {
    let started = false;
    let scanned = 0;
    for (;;) {
      while (this.#end - this.#start >= 2 && this.#buf[this.#start] === 13) {
        if (this.#buf[this.#start + 1] !== 10) break;
        this.#start += 2;
      }
      if (this.#end > this.#start) {
        started = true;
        const at = this.#findBlankLine(Math.max(this.#start, this.#start + scanned - 3));
        if (at >= 0) {
          const head = this.#buf.subarray(this.#start, at);
          this.#start = at + 4;
          return head;
        }
        scanned = this.#end - this.#start;
        if (scanned >= MAX_HEAD_BYTES) throw new HeadError(431, "request head too large");
      }
      if (!(await this.#fill())) {
        if (started) throw new UnexpectedEof();
        return null;
      }
    }
  }

  #findBlankLine(from: number): number {
    const buf = this.#buf;
    let i = from;
    for (;;) {
      i = buf.indexOf(13, i);
      if (i < 0 || i + 3 >= this.#end) return -1;
      if (buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) return i;
      i++;
    }
  }

  /** Up to `max` bytes of body, in a buffer of its own; throws UnexpectedEof at the end. */
  async readSome(max: number): Promise<Uint8Array> {
    if (this.#start === this.#end) {
      if (max >= 16 * 1024 && this.#direct > 0) {
        const chunk = new Uint8Array(Math.min(max, this.#direct));
        const n = await this.conn.read(chunk);
        if (n === null) throw new UnexpectedEof();
        if (n > chunk.length / 2) return n === chunk.length ? chunk : chunk.subarray(0, n);
        // A slow sender: its trickle goes through the connection buffer until a read fills it,
        // and what the handler keeps is copied out, without the unused tail.
        this.#direct = 0;
        return chunk.slice(0, n);
      }
      if (!(await this.#fill())) throw new UnexpectedEof();
      if (this.#end === this.#buf.length) this.#direct = DIRECT_READ_BYTES;
    }
    const n = Math.min(max, this.#end - this.#start);
    const out = this.#buf.slice(this.#start, this.#start + n);
    this.#start += n;
    return out;
  }

  /**
   * Up to `into.length` bytes of body into the caller's buffer (a reader that reuses its buffer):
   * what the connection buffer holds first, else straight from the connection. Throws
   * UnexpectedEof at the end.
   */
  async readInto(into: Uint8Array): Promise<number> {
    if (this.#start === this.#end) {
      const n = await this.conn.read(into);
      if (n === null) throw new UnexpectedEof();
      return n;
    }
    const n = Math.min(into.length, this.#end - this.#start);
    into.set(this.#buf.subarray(this.#start, this.#start + n));
    this.#start += n;
    return n;
  }

  /** One CRLF-terminated line of a chunked body (chunk size or trailer field), as text. */
  async readLine(): Promise<string> {
    let scanned = 0;
    for (;;) {
      const found = this.#buf.subarray(this.#start + scanned, this.#end).indexOf(10);
      const lf = found < 0 ? -1 : scanned + found;
      scanned = this.#end - this.#start;
      if (lf >= 0) {
        const end = this.#start + lf;
        if (lf === 0 || this.#buf[end - 1] !== 13) throw new HeadError(400, "malformed chunk");
        const line = String.fromCharCode(...this.#buf.subarray(this.#start, end - 1));
        this.#start = end + 1;
        return line;
      }
      if (this.#end - this.#start >= MAX_CHUNK_LINE) {
        throw new HeadError(400, "chunk line too long");
      }
      if (!(await this.#fill())) throw new UnexpectedEof();
    }
  }

  /** The CRLF after a chunk's data. */
  async readCrlf(): Promise<void> {
    if ((await this.readLine()) !== "") throw new HeadError(400, "malformed chunk");
  }

  /** The trailer fields after the last chunk, up to the blank line (checked and dropped). */
  async skipTrailers(): Promise<void> {
    let total = 0;
    for (;;) {
      const line = await this.readLine();
      if (line === "") return;
      total += line.length + 2;
      if (total > MAX_TRAILER_BYTES) throw new HeadError(400, "trailer too large");
      const colon = line.indexOf(":");
      if (colon <= 0 || !TOKEN.test(line.slice(0, colon)) || CONTROL.test(line.slice(colon + 1))) {
        throw new HeadError(400, "malformed trailer field");
      }
    }
  }
}
