// The decoder of streaming upload bodies (content coding `aws-chunked` / `store-chunked`):
//
//   chunk   = hex-size [ ";chunk-signature=" 64HEXDIG ] CRLF data CRLF     (repeated)
//   last    = "0" [ ";chunk-signature=" 64HEXDIG ] CRLF
//   trailer = *( name ":" value CRLF ) [ trailer-signature ":" 64HEXDIG CRLF ]
//   end     = CRLF
//
// Data is yielded as it arrives, never buffered whole. With signed chunks each chunk's signature
// is checked when its last byte has been read, chained from the request's own signature (the
// seed); a mismatch throws before the consumer sees the end of the body, so nothing is committed.
import { createHash, type Hash, timingSafeEqual } from "node:crypto";
import { S3Error } from "./errors.ts";

/** Signs the chunks and the trailer of a streaming upload (see src/auth/sigv4.ts). */
export interface ChunkSigner {
  /** The request's own signature, which the first chunk's signature chains from. */
  seed: string;
  /** The signature of a chunk, from the previous signature and the chunk's SHA-256 (hex). */
  chunk(previous: string, sha256Hex: string): string;
  /** The signature of the trailer, from the previous signature and the canonical trailer's hash. */
  trailer(previous: string, sha256Hex: string): string;
}

export interface ChunkedOptions {
  /** Present when every chunk carries a signature (`STREAMING-*-HMAC-SHA256-PAYLOAD*`). */
  signer?: ChunkSigner;
  /** True when trailing headers follow the last chunk (`*-TRAILER` payloads). */
  trailer: boolean;
  /** The decoded body must have exactly this many bytes. */
  decodedLength: number;
  /** Name of the trailer's signature line, e.g. `x-store-trailer-signature`. */
  trailerSignatureName: string;
}

/** Longest chunk-size line accepted (size, extensions and CRLF). */
export const MAX_CHUNK_LINE = 4096;
/** Largest trailer accepted, all lines together. */
export const MAX_TRAILER_BYTES = 16 * 1024;
const MAX_TRAILER_LINES = 100;

const CR = 13;
const LF = 10;
const EMPTY = new Uint8Array(0);
const latin1 = new TextDecoder("latin1");

function malformed(detail: string): S3Error {
  return new S3Error("InvalidRequest", `The chunked request body is malformed: ${detail}.`);
}

function incomplete(detail: string): S3Error {
  return new S3Error("IncompleteBody", `The request body ended before it was complete: ${detail}.`);
}

function badSignature(what: string): S3Error {
  return new S3Error(
    "SignatureDoesNotMatch",
    `The ${what} signature we calculated does not match the signature you provided.`,
  );
}

/** Reads lines and byte runs from a stream of byte arrays, copying only to join split lines. */
class ByteReader {
  readonly #source: AsyncIterator<Uint8Array>;
  #buf: Uint8Array = EMPTY;
  #ended = false;

  constructor(source: AsyncIterable<Uint8Array>) {
    this.#source = source[Symbol.asyncIterator]();
  }

  async #fill(): Promise<boolean> {
    while (!this.#ended) {
      const { done, value } = await this.#source.next();
      if (done) {
        this.#ended = true;
        return false;
      }
      if (value.byteLength === 0) continue;
      if (this.#buf.byteLength === 0) this.#buf = value;
      else {
        const joined = new Uint8Array(this.#buf.byteLength + value.byteLength);
        joined.set(this.#buf);
        joined.set(value, this.#buf.byteLength);
        this.#buf = joined;
      }
      return true;
    }
    return false;
  }

  /**
   * The next line without its terminator, or undefined at the end of the stream. With `strict`
   * the line must end in CRLF; otherwise a bare LF is accepted too. Lines longer than `max`
   * bytes are refused.
   */
  async line(max: number, strict: boolean): Promise<string | undefined> {
    let searched = 0;
    while (true) {
      const limit = Math.min(this.#buf.byteLength, max + 2);
      const at = this.#buf.subarray(searched, limit).indexOf(LF);
      if (at >= 0) {
        const end = searched + at;
        const cr = end > 0 && this.#buf[end - 1] === CR;
        if (strict && !cr) throw malformed("a line ends in LF without CR");
        const text = latin1.decode(this.#buf.subarray(0, cr ? end - 1 : end));
        this.#buf = this.#buf.subarray(end + 1);
        return text;
      }
      if (this.#buf.byteLength >= max + 2) throw malformed(`a line is longer than ${max} bytes`);
      searched = this.#buf.byteLength;
      if (!(await this.#fill())) {
        if (this.#buf.byteLength === 0) return undefined;
        throw incomplete("a line was cut short");
      }
    }
  }

  /** Up to `n` bytes (at least one), or undefined at the end of the stream. */
  async take(n: number): Promise<Uint8Array | undefined> {
    if (this.#buf.byteLength === 0 && !(await this.#fill())) return undefined;
    const out = this.#buf.subarray(0, Math.min(n, this.#buf.byteLength));
    this.#buf = this.#buf.subarray(out.byteLength);
    return out;
  }

  /** Consumes a CRLF that must come next. */
  async crlf(): Promise<void> {
    while (this.#buf.byteLength < 2) {
      if (!(await this.#fill())) throw incomplete("a chunk is not followed by CRLF");
    }
    if (this.#buf[0] !== CR || this.#buf[1] !== LF) {
      throw malformed("a chunk's data is not followed by CRLF");
    }
    this.#buf = this.#buf.subarray(2);
  }

  /** Stops reading the source (its reader is released). */
  async close(): Promise<void> {
    await this.#source.return?.();
  }

  /** True when nothing but the end of the stream is left. */
  async atEnd(): Promise<boolean> {
    return this.#buf.byteLength === 0 && !(await this.#fill());
  }
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Parses `size[;name[=value]]...` into the size and the extensions (RFC 9112 section 7.1.1). */
export function parseChunkLine(line: string): { size: number; extensions: Map<string, string> } {
  const parts = line.split(";");
  const sizeText = parts[0].replace(/[ \t]+$/, "");
  if (!/^[0-9A-Fa-f]{1,12}$/.test(sizeText)) throw malformed("a chunk size is not a hex number");
  const extensions = new Map<string, string>();
  for (const raw of parts.slice(1)) {
    const eq = raw.indexOf("=");
    const name = (eq < 0 ? raw : raw.slice(0, eq)).trim().toLowerCase();
    let value = eq < 0 ? "" : raw.slice(eq + 1).trim();
    if (!TOKEN.test(name)) throw malformed("a chunk extension has no valid name");
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) {
      value = value.slice(1, -1);
    } else if (eq >= 0 && !TOKEN.test(value)) {
      throw malformed(`the chunk extension ${name} has no valid value`);
    }
    if (extensions.has(name)) throw malformed(`the chunk extension ${name} appears twice`);
    extensions.set(name, value);
  }
  return { size: parseInt(sizeText, 16), extensions };
}

function sameSignature(expected: string, given: string | undefined): boolean {
  if (given === undefined || !/^[0-9a-f]{64}$/.test(given)) return false;
  return timingSafeEqual(new TextEncoder().encode(expected), new TextEncoder().encode(given));
}

/**
 * Decodes a streaming upload body, yielding the payload bytes. Trailing headers are stored into
 * `trailers` (names lower-case) before the generator ends; every check (chunk signatures, the
 * trailer signature, the decoded length) has passed by then.
 */
export async function* decodeChunked(
  source: AsyncIterable<Uint8Array>,
  opts: ChunkedOptions,
  trailers: Headers,
): AsyncGenerator<Uint8Array> {
  const reader = new ByteReader(source);
  try {
    yield* decodeWith(reader, opts, trailers);
  } finally {
    await reader.close();
  }
}

async function* decodeWith(
  reader: ByteReader,
  opts: ChunkedOptions,
  trailers: Headers,
): AsyncGenerator<Uint8Array> {
  const signer = opts.signer;
  let previous = signer?.seed ?? "";
  let decoded = 0;
  while (true) {
    const line = await reader.line(MAX_CHUNK_LINE, true);
    if (line === undefined) throw incomplete("the last chunk is missing");
    const { size, extensions } = parseChunkLine(line);
    if (size > opts.decodedLength - decoded) {
      throw incomplete("the chunks hold more bytes than the decoded content length");
    }
    const hash: Hash | undefined = signer ? createHash("sha256") : undefined;
    let left = size;
    while (left > 0) {
      const data = await reader.take(left);
      if (data === undefined) throw incomplete("a chunk was cut short");
      hash?.update(data);
      left -= data.byteLength;
      decoded += data.byteLength;
      yield data;
    }
    if (signer) {
      const expected = signer.chunk(previous, hash!.digest("hex"));
      if (!sameSignature(expected, extensions.get("chunk-signature"))) throw badSignature("chunk");
      previous = expected;
    }
    if (size === 0) break;
    await reader.crlf();
  }
  if (decoded !== opts.decodedLength) {
    throw incomplete(`${decoded} of ${opts.decodedLength} bytes arrived`);
  }
  if (opts.trailer) await readTrailer(reader, opts, { previous, trailers });
  else if ((await reader.line(MAX_CHUNK_LINE, true)) !== "") {
    throw malformed("the last chunk is not followed by an empty line");
  }
  if (!(await reader.atEnd())) throw malformed("bytes follow the end of the body");
}

/** Reads the trailing headers and checks their signature when the chunks are signed. */
async function readTrailer(
  reader: ByteReader,
  opts: ChunkedOptions,
  state: { previous: string; trailers: Headers },
): Promise<void> {
  let canonical = "";
  let signature: string | undefined;
  let bytes = 0;
  let lines = 0;
  let skipped = false;
  while (true) {
    // Some clients end trailer lines in a bare LF, then put an empty line before the signature.
    const line = await reader.line(MAX_TRAILER_BYTES, false);
    // Unsigned, a body may end right after its last chunk when it has no trailer to send.
    if (line === undefined && lines === 0 && !opts.signer) break;
    // Signed, an empty line was skipped in hope of a signature line that never came.
    if (line === undefined && skipped) break;
    if (line === undefined) throw incomplete("the trailer was cut short");
    bytes += line.length + 2;
    if (bytes > MAX_TRAILER_BYTES || ++lines > MAX_TRAILER_LINES) {
      throw malformed("the trailer is too large");
    }
    if (line === "") {
      if (opts.signer && signature === undefined && lines > 1 && !skipped) {
        skipped = true;
        continue;
      }
      break;
    }
    const colon = line.indexOf(":");
    const name = colon < 0 ? "" : line.slice(0, colon).trim().toLowerCase();
    if (!TOKEN.test(name)) throw malformed("a trailer line is not a header");
    const value = line.slice(colon + 1).trim();
    if (signature !== undefined) throw malformed("a trailer line follows the trailer signature");
    if (name === opts.trailerSignatureName) signature = value;
    else {
      if (state.trailers.has(name)) throw malformed(`the trailer ${name} appears twice`);
      state.trailers.set(name, value);
      canonical += `${name}:${value}\n`;
    }
  }
  if (opts.signer) {
    const hash = createHash("sha256").update(canonical).digest("hex");
    const expected = opts.signer.trailer(state.previous, hash);
    if (!sameSignature(expected, signature)) throw badSignature("trailer");
  }
}
