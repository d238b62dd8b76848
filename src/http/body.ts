// The request body as a stream of chunks, verified as it flows: against the signed payload hash,
// or, for a streaming upload, decoded from its chunked framing with every chunk signature checked.
import { createHash, type Hash } from "node:crypto";
import type { SignedRequest } from "../auth/sigv4.ts";
import { STREAMING_UNSIGNED_TRAILER } from "../auth/sigv4.ts";
import { type ChunkedOptions, decodeChunked } from "./chunked_body.ts";
import { type Dialect, h } from "./dialect.ts";
import { S3Error } from "./errors.ts";
import { BodyStalledError, declaredLength, readWithProgress, withProgress } from "./progress.ts";
import { directBody } from "../net/http1/body.ts";

export interface BodyOptions {
  /** Hex SHA-256 the (raw) body must have. */
  sha256?: string;
  /** The raw body's declared length (Content-Length), when known. */
  length?: number;
  /** Present when the body is a streaming upload to decode. */
  chunked?: ChunkedOptions;
}

/**
 * Bytes read at a time into a request's own buffer by `chunks({ transient: true })`. A default
 * reader gets a fresh 64 KiB buffer per read instead: garbage that eight fast 64 MiB uploads
 * turned into hundreds of MiB of resident memory before V8 collected it.
 */
const TRANSIENT_READ_BYTES = 256 * 1024;

export class RequestBody {
  readonly #stream: ReadableStream<Uint8Array> | null;
  readonly #opts: BodyOptions;
  #consumed = false;
  /** Trailing headers of a streaming upload, filled in once the body has been read. */
  readonly trailers = new Headers();

  constructor(stream: ReadableStream<Uint8Array> | null, opts?: string | BodyOptions) {
    this.#stream = stream;
    this.#opts = typeof opts === "string" ? { sha256: opts } : opts ?? {};
  }

  /** True for a streaming upload with trailing headers. */
  get hasTrailer(): boolean {
    return this.#opts.chunked?.trailer ?? false;
  }

  /** The decoded length a streaming upload declared, or undefined for a plain body. */
  get decodedLength(): number | undefined {
    return this.#opts.chunked?.decodedLength;
  }

  /**
   * Yields the body's chunks. After the last chunk the signed payload hash is checked; a
   * mismatch throws before the consumer sees the end, so nothing is committed from a bad body.
   * `transient`: the consumer copies each chunk before asking for the next, so a plain body is
   * read into one reused buffer (each chunk is a view of it, valid until the next).
   */
  chunks(opts: { transient?: boolean } = {}): AsyncGenerator<Uint8Array> {
    if (this.#consumed) throw new Error("Request body read twice");
    this.#consumed = true;
    const chunked = this.#opts.chunked;
    if (chunked) return decodeChunked(this.#raw(), chunked, this.trailers);
    return this.#raw(this.#opts.sha256, opts.transient);
  }

  /**
   * The body for a consumer that brings its own buffers (the write path's chunk buffers, which
   * may be shared memory): `readInto(view)` reads the next bytes straight into the view and
   * answers how many (0 at the end, after the signed payload hash was checked); `settled()` waits
   * for a read given up on when the body stalled, which may still land in its view. Saves the copy
   * out of a read buffer that `chunks` makes. Undefined when the body cannot be read that way (a
   * streaming upload, whose framing is decoded; a stream from elsewhere): use `chunks`.
   */
  direct(): { readInto(into: Uint8Array): Promise<number>; settled(): Promise<void> } | undefined {
    const source = this.#stream && !this.#opts.chunked ? directBody(this.#stream) : undefined;
    if (!source) return undefined;
    if (this.#consumed) throw new Error("Request body read twice");
    this.#consumed = true;
    // Held, so that nothing reads the stream meanwhile; cancelled when the body stalls.
    const lock = this.#stream!.getReader();
    const expected = this.#opts.sha256;
    const hash = expected ? createHash("sha256") : undefined;
    let ended = false;
    /** The last read from the connection: given up on when the body stalls, it still runs. */
    let reading: Promise<unknown> = Promise.resolve();
    return {
      readInto: async (into) => {
        if (ended) return 0;
        let n: number;
        try {
          const read = source.readInto(into);
          reading = read.catch(() => {});
          n = await withProgress(read, () => lock.cancel());
        } catch (err) {
          throw readError(err);
        }
        if (n > 0) {
          hash?.update(into.subarray(0, n));
          return n;
        }
        ended = true;
        lock.releaseLock();
        if (hash && hash.digest("hex") !== expected) throw sha256Mismatch();
        return 0;
      },
      settled: async () => {
        await reading;
      },
    };
  }

  /** A reader of the stream: into one reused buffer when `transient` and the stream allows. */
  #reader(transient = false) {
    const stream = this.#stream!;
    let byob: ReadableStreamBYOBReader | undefined;
    if (transient) {
      try {
        byob = stream.getReader({ mode: "byob" });
      } catch { /* not a byte stream */ }
    }
    if (!byob) return stream.getReader();
    const reader = byob;
    // A short body gets a buffer of its length: a fresh 256 KiB one costs ~30 µs to allocate.
    const declared = this.#opts.length;
    let buffer = new ArrayBuffer(
      declared !== undefined && declared > 0 && declared < TRANSIENT_READ_BYTES
        ? declared
        : TRANSIENT_READ_BYTES,
    );
    return {
      async read(): Promise<ReadableStreamReadResult<Uint8Array>> {
        const result = await reader.read(new Uint8Array(buffer));
        // The view's buffer was transferred: the same memory, under a new ArrayBuffer.
        if (result.value) buffer = result.value.buffer as ArrayBuffer;
        return result;
      },
      cancel: () => reader.cancel(),
      releaseLock: () => reader.releaseLock(),
    };
  }

  async *#raw(expectedSha256?: string, transient?: boolean): AsyncGenerator<Uint8Array> {
    const hash: Hash | undefined = expectedSha256 ? createHash("sha256") : undefined;
    if (this.#stream) {
      const reader = this.#reader(transient);
      try {
        while (true) {
          const { done, value } = await readWithProgress(reader);
          if (done) break;
          if (value.byteLength === 0) continue;
          hash?.update(value);
          yield value;
        }
      } catch (err) {
        throw readError(err);
      } finally {
        reader.releaseLock();
      }
    }
    if (hash && hash.digest("hex") !== expectedSha256) throw sha256Mismatch();
  }

  /** Reads a small body whole; larger than `limit` bytes is an error. */
  async bytes(limit: number): Promise<Uint8Array> {
    const parts: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of this.chunks()) {
      size += chunk.byteLength;
      if (size > limit) {
        throw new S3Error("InvalidRequest", `The request body is larger than ${limit} bytes.`);
      }
      parts.push(chunk);
    }
    const out = new Uint8Array(size);
    let offset = 0;
    for (const p of parts) {
      out.set(p, offset);
      offset += p.byteLength;
    }
    return out;
  }

  async text(limit: number): Promise<string> {
    return new TextDecoder().decode(await this.bytes(limit));
  }

  /** Drains an unused body so its hash is still verified and the connection stays usable. */
  async discard(): Promise<void> {
    if (this.#consumed) return;
    for await (const _ of this.chunks()) { /* drain */ }
  }
}

/** What a failed read of the body answers. */
function readError(err: unknown): S3Error {
  if (err instanceof S3Error) return err;
  if (err instanceof BodyStalledError) {
    return new S3Error(
      "RequestTimeout",
      "Your socket connection to the server was not read from or written to within the " +
        "timeout period.",
    );
  }
  return new S3Error("IncompleteBody", "The request body ended before it was complete.");
}

function sha256Mismatch(): S3Error {
  return new S3Error(
    "ContentSHA256Mismatch",
    "The provided content SHA-256 does not match what was computed.",
  );
}

/**
 * The body of a request as its authentication describes it: a streaming upload (signed chunks,
 * or unsigned chunks with a trailer) is decoded; otherwise the raw body is checked against the
 * signed payload hash, if any.
 */
export function requestBody(
  stream: ReadableStream<Uint8Array> | null,
  opts: { headers: Headers; dialect: Dialect; signed?: SignedRequest },
): RequestBody {
  const { headers, dialect: d, signed } = opts;
  let streaming = signed?.streaming;
  // An anonymous request may still frame its body as unsigned chunks with a trailer.
  if (!signed && headers.get(h(d, "content-sha256")) === STREAMING_UNSIGNED_TRAILER) {
    streaming = { trailer: true };
  }
  if (!streaming) {
    return new RequestBody(stream, {
      sha256: signed?.payloadSha256,
      length: declaredLength(headers),
    });
  }
  const raw = headers.get(h(d, "decoded-content-length"));
  if (raw === null) {
    throw new S3Error(
      "MissingContentLength",
      `A streaming upload must carry the ${h(d, "decoded-content-length")} header.`,
    );
  }
  if (!/^\d{1,15}$/.test(raw)) {
    throw new S3Error("InvalidArgument", `${h(d, "decoded-content-length")} must be a number.`, {
      details: { ArgumentName: h(d, "decoded-content-length"), ArgumentValue: raw },
    });
  }
  return new RequestBody(stream, {
    chunked: {
      signer: streaming.signer,
      trailer: streaming.trailer,
      decodedLength: Number(raw),
      trailerSignatureName: h(d, "trailer-signature"),
    },
  });
}
