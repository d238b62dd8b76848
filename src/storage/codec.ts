// Per-chunk transformation between plaintext and the bytes kept on the drives:
// zstd when it pays, then AES-256-GCM when a key is given.
//
// Encrypted layout: 12-byte random nonce | ciphertext | 16-byte tag. The additional data that
// GCM authenticates is one byte naming the compression, followed by the caller's `aad` (object
// and chunk index), so neither a chunk moved to another place nor a flipped compression flag
// decodes: both fail authentication.
//
// Segmented layout (segmentSize > 0, what the chunk store writes for compressed or encrypted
// chunks): the plaintext is cut into segments of segmentSize bytes (the last may be shorter; an
// empty chunk has one empty segment), each compressed and/or sealed on its own, so that a range
// decodes only the segments under it:
//   count u32 | end u32 x count | bodies
// where `end` is the offset of the end of each body from the end of the table (big-endian). A
// sealed body is laid out as above, with the segment's index and the count (u32 each) appended
// to its additional data: segments cannot be reordered, moved or dropped. Segment size 0 is the
// whole-chunk form written before segments (still read; used for SSE's sealed data keys).
//
// Measured on Deno 2.9.6: node:zlib's zstd functions (async, sync and stream alike) run on the
// calling thread; only the WebCrypto AES-GCM calls leave it. So the write path splits encoding in
// two: compressChunk (the CPU-heavy part) runs on a worker of the CPU pool (cpu_pool.ts), and
// encodePrepared (encryption) stays on the caller. Compression uses the async API anyway, so
// that a runtime that moves it off the thread speeds this module up without a change;
// decompression is synchronous (see decompress).
import { constants, createZstdCompress, zstdCompress, zstdDecompressSync } from "node:zlib";

export type Compression = "none" | "zstd";
export type CompressionMode = "auto" | "on" | "off";

/** How a chunk is stored; kept beside the chunk's reference in the metadata. */
export interface StoredForm {
  compression: Compression;
  encrypted: boolean;
  /** Plaintext bytes per independently decodable segment; absent or 0: one piece. */
  segmentSize?: number;
}

export interface EncodeOptions {
  compression: CompressionMode;
  /** AES-256-GCM key; without one the chunk is stored in the clear. */
  key?: CryptoKey;
  /** Binds the chunk to its place (object and chunk index). */
  aad?: Uint8Array;
  /** zstd level, 1 (default) to 3 are the sensible choices for this path. */
  level?: number;
  /** Segments of this many plaintext bytes (see the segmented layout); 0 (default): one piece. */
  segmentSize?: number;
}

export interface DecodeOptions {
  key?: CryptoKey;
  aad?: Uint8Array;
  /** The plaintext length when known: sizes the output buffer, and is verified. */
  size?: number;
}

/** The stored bytes do not authenticate or decode: tampering, bitrot, wrong key or wrong aad. */
export class ChunkIntegrityError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ChunkIntegrityError";
  }
}

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** The segment size the chunk store writes. */
export const SEGMENT_SIZE = 64 * 1024;
/** "auto" leaves smaller chunks alone: the frame overhead eats most of the gain. */
export const MIN_COMPRESS_BYTES = 4096;
/** "auto" tries this much of a chunk first to tell whether the data compresses at all. */
export const PROBE_BYTES = 64 * 1024;
/** The probe must shrink below this fraction, or the chunk is stored as it is. */
const PROBE_RATIO = 0.9;
/** A whole chunk compressed by "auto" is kept only below this fraction of its size. */
const KEEP_RATIO = 0.95;
const DEFAULT_LEVEL = 1;
/** Largest plaintext decompressed into a single preallocated buffer. */
const MAX_ONE_PIECE = 64 * 1024 * 1024;

const FORM_BYTE: Record<Compression, number> = { none: 0, zstd: 1 };

/**
 * Gives the buffer of bytes made for one use (a decoded segment once copied into its piece, a
 * compressed or sealed form and parity once written) back to the system at once
 * (ArrayBuffer.transfer(0) detaches it): else it is garbage until V8's next full collection, and
 * GETs of compressible objects piled up hundreds of MiB of decoded segments. Only for bytes
 * that start a buffer of their own and are large (a Buffer below 4 KiB may be a slice of node's
 * shared pool, which must never be detached); nothing may use them afterwards.
 */
export function releaseOwned(bytes: Uint8Array): void {
  if (bytes.byteLength >= RELEASE_MIN_BYTES) detachFromStart(bytes);
}

const RELEASE_MIN_BYTES = 64 * 1024;

/**
 * releaseOwned for what compress answered: a view at the start of node:zlib's output buffer,
 * which may be longer than the view (a segment's frame fills about half of its bound).
 */
function releaseOutput(out: Uint8Array): void {
  if (out.buffer.byteLength >= RELEASE_MIN_BYTES) detachFromStart(out);
}

/** Detaches the buffer `bytes` starts (never shared memory, never twice). */
function detachFromStart(bytes: Uint8Array): void {
  const buffer = bytes.buffer;
  if (buffer instanceof ArrayBuffer && !buffer.detached && bytes.byteOffset === 0) {
    buffer.transfer(0);
  }
}

function zstdParams(level: number) {
  return { [constants.ZSTD_c_compressionLevel]: level, [constants.ZSTD_c_checksumFlag]: 1 };
}

/**
 * zstd frames of `inputs`, one each, made by one context: each input is written and its frame
 * ended (ZSTD_e_end), after which the context starts the next frame afresh, so every frame
 * decodes on its own. The frames land one after another in one output buffer (sized to their
 * bounds). A context per segment, as compress makes, took 15-30% longer for a 4 MiB chunk of
 * text and built 64 contexts.
 */
async function compressFrames(inputs: Uint8Array[], level: number): Promise<Uint8Array[]> {
  if (inputs.length === 0) return [];
  const total = inputs.reduce((n, input) => n + zstdBound(input.byteLength), 0);
  const stream = createZstdCompress({ params: zstdParams(level), chunkSize: total });
  let pieces: Uint8Array[] = [];
  let failed: Error | undefined;
  let settle: (() => void) | undefined;
  stream.on("data", (piece: Uint8Array) => pieces.push(piece));
  // A failure settles the frame being waited for too (a destroyed stream may never call back).
  stream.on("error", (err: Error) => {
    failed = err;
    settle?.();
  });
  const frames: Uint8Array[] = [];
  try {
    for (const input of inputs) {
      if (failed) throw failed;
      stream.write(input);
      await new Promise<void>((resolve) => {
        settle = resolve;
        stream.flush(constants.ZSTD_e_end, () => resolve());
      });
      if (failed) throw failed;
      frames.push(pieces.length === 1 ? asPlainBytes(pieces[0]) : concat(pieces));
      pieces = [];
    }
  } finally {
    stream.close();
  }
  return frames;
}

/** The pieces, one after another, in a buffer of their own. */
function concat(pieces: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Inputs whose frame bound is at most this are compressed into one output buffer. */
const ONE_PIECE_OUTPUT = 1024 * 1024;

/** ZSTD_compressBound: the largest frame zstd makes of `n` bytes. */
function zstdBound(n: number): number {
  return n + (n >> 8) + (n < 128 * 1024 ? (128 * 1024 - n) >> 11 : 0);
}

function asPlainBytes(buf: Uint8Array): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** WebCrypto takes views of ArrayBuffers only; a SharedArrayBuffer view is copied. */
function ownBytes(buf: Uint8Array): Uint8Array<ArrayBuffer> {
  return buf.buffer instanceof ArrayBuffer ? buf as Uint8Array<ArrayBuffer> : buf.slice();
}

/**
 * zstd's frame of `data`. Up to a segment, the output buffer is sized to the frame's bound, so the
 * answer is one piece at the start of a buffer made for it (releaseOutput can give it back);
 * larger inputs gather their output in 64 KiB pieces (cheaper than the default 16 KiB).
 */
function compress(data: Uint8Array, level: number): Promise<Uint8Array> {
  const bound = zstdBound(data.byteLength);
  const opts = {
    params: zstdParams(level),
    chunkSize: bound <= ONE_PIECE_OUTPUT ? bound : 64 * 1024,
  };
  return new Promise((resolve, reject) => {
    zstdCompress(data, opts, (err, out) => err ? reject(err) : resolve(asPlainBytes(out)));
  });
}

/**
 * Synchronous on purpose: in Deno 2.9.6 the async zstdDecompress reports a corrupt frame as an
 * uncaught exception instead of through its callback, which would take the process down; and
 * it runs on the calling thread anyway.
 */
function decompress(data: Uint8Array, size: number | undefined): Uint8Array {
  if (size === undefined) return asPlainBytes(zstdDecompressSync(data, { chunkSize: 256 * 1024 }));
  // A known size: one output piece (up to ~2x faster on very compressible data), and a frame
  // that would inflate beyond it fails early instead of allocating.
  const chunkSize = size < MAX_ONE_PIECE ? size + 1024 : 256 * 1024;
  return asPlainBytes(zstdDecompressSync(data, { chunkSize, maxOutputLength: size + 1 }));
}

/**
 * The compressed form of `plain` when it is worth keeping under `mode`, otherwise undefined: the
 * first, CPU-heavy step of encodeChunk (the CPU pool runs it on a worker). With a segment size,
 * the answer is the segmented layout of the compressed segments.
 */
export async function compressChunk(
  plain: Uint8Array,
  mode: CompressionMode,
  level: number = DEFAULT_LEVEL,
  segmentSize = 0,
): Promise<Uint8Array | undefined> {
  if (mode === "off") return undefined;
  const all = (probe?: Uint8Array) =>
    segmentSize > 0
      ? compressSegments(plain, segmentSize, level, probe)
      : probe ?? compress(plain, level);
  // Whatever is not kept is given back at once (see compressSegments).
  const kept = (packed: Uint8Array, keep: boolean) => {
    if (keep) return packed;
    releaseOutput(packed);
    return undefined;
  };
  if (mode === "on") {
    const packed = await all();
    return kept(packed, packed.byteLength < plain.byteLength);
  }
  if (mode !== "auto") throw new Error(`Unknown compression mode "${mode}"`);
  const probe = await autoProbe(plain);
  if (!probe) return undefined;
  // The probe is the compressed first 64 KiB: the whole of a short chunk, or its first segment.
  const reusable = level === DEFAULT_LEVEL &&
    (segmentSize > 0 ? segmentSize === PROBE_BYTES : plain.byteLength <= PROBE_BYTES);
  const packed = await all(reusable ? probe : undefined);
  if (!reusable) releaseOutput(probe);
  return kept(packed, packed.byteLength <= plain.byteLength * KEEP_RATIO);
}

async function compressSegments(
  plain: Uint8Array,
  segmentSize: number,
  level: number,
  first?: Uint8Array,
): Promise<Uint8Array> {
  const segments = segmentsOf(plain, segmentSize);
  const rest = await compressFrames(first ? segments.slice(1) : segments, level);
  const bodies = first ? [first, ...rest] : rest;
  const packed = packSegments(bodies);
  // Copied: the output buffers go now (the frames share one, which the first frame starts).
  // Left to the collector, a CPU worker's isolate (which sees little garbage on its heap) piled
  // up ~60 MiB of them before it collected.
  for (const body of bodies) releaseOutput(body);
  return packed;
}

/** The plaintext cut into segments (at least one). */
function segmentsOf(plain: Uint8Array, segmentSize: number): Uint8Array[] {
  const count = segmentCount(plain.byteLength, segmentSize);
  return Array.from(
    { length: count },
    (_, j) => plain.subarray(j * segmentSize, (j + 1) * segmentSize),
  );
}

/** How many segments a chunk of `plainSize` bytes has. */
export function segmentCount(plainSize: number, segmentSize: number): number {
  return Math.max(1, Math.ceil(plainSize / segmentSize));
}

/** The size of the table in front of the bodies of `count` segments. */
export function segmentTableSize(count: number): number {
  return 4 + 4 * count;
}

function packSegments(bodies: Uint8Array[]): Uint8Array {
  const head = segmentTableSize(bodies.length);
  const total = bodies.reduce((n, b) => n + b.byteLength, head);
  const out = new Uint8Array(total);
  const v = new DataView(out.buffer);
  v.setUint32(0, bodies.length);
  let at = 0;
  bodies.forEach((b, j) => {
    out.set(b, head + at);
    at += b.byteLength;
    v.setUint32(4 + 4 * j, at);
  });
  return out;
}

/**
 * Where each segment's body starts in the stored bytes, plus the end of the last (count + 1
 * offsets), from the table at the start of `stored` (`storedSize` bytes in all). Throws
 * ChunkIntegrityError when the table does not describe bytes of that size.
 */
export function segmentBounds(table: Uint8Array, storedSize: number): number[] {
  const bad = () => new ChunkIntegrityError("Segment table is damaged");
  if (table.byteLength < 4) throw bad();
  const v = new DataView(table.buffer, table.byteOffset, table.byteLength);
  const count = v.getUint32(0);
  const head = segmentTableSize(count);
  if (count === 0 || head > storedSize || head > table.byteLength) throw bad();
  const bounds = [head];
  for (let j = 0; j < count; j++) {
    const end = head + v.getUint32(4 + 4 * j);
    if (end < bounds[j]) throw bad();
    bounds.push(end);
  }
  if (bounds[count] !== storedSize) throw bad();
  return bounds;
}

/**
 * The first step of "auto": the compressed probe when the whole chunk is worth trying, undefined
 * when compressChunk(plain, "auto") stores it as it is (too short, or the probe does not shrink).
 */
async function autoProbe(plain: Uint8Array): Promise<Uint8Array | undefined> {
  if (plain.byteLength < MIN_COMPRESS_BYTES) return undefined;
  const sample = plain.subarray(0, PROBE_BYTES);
  const probe = await compress(sample, DEFAULT_LEVEL);
  if (probe.byteLength < sample.byteLength * PROBE_RATIO) return probe;
  releaseOutput(probe);
  return undefined;
}

/** Whether compressChunk(plain, "auto") would try the whole chunk (the probe is not kept). */
export async function compressionPays(plain: Uint8Array): Promise<boolean> {
  const probe = await autoProbe(plain);
  if (probe) releaseOutput(probe);
  return probe !== undefined;
}

function additionalData(
  compression: Compression,
  aad: Uint8Array | undefined,
  segment?: { index: number; count: number },
): Uint8Array<ArrayBuffer> {
  const length = 1 + (aad?.byteLength ?? 0);
  const out = new Uint8Array(length + (segment ? 8 : 0));
  out[0] = FORM_BYTE[compression];
  if (aad) out.set(aad, 1);
  if (segment) {
    const v = new DataView(out.buffer);
    v.setUint32(length, segment.index);
    v.setUint32(length + 4, segment.count);
  }
  return out;
}

async function seal(
  data: Uint8Array,
  key: CryptoKey,
  additional: Uint8Array<ArrayBuffer>,
): Promise<Uint8Array> {
  const nonce = crypto.getRandomValues(new Uint8Array(NONCE_BYTES));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv: nonce, additionalData: additional, tagLength: TAG_BYTES * 8 },
    key,
    ownBytes(data),
  );
  const out = new Uint8Array(NONCE_BYTES + sealed.byteLength);
  out.set(nonce, 0);
  out.set(new Uint8Array(sealed), NONCE_BYTES);
  return out;
}

async function open(
  stored: Uint8Array,
  key: CryptoKey,
  additional: Uint8Array<ArrayBuffer>,
): Promise<Uint8Array> {
  const own = ownBytes(stored);
  if (stored.byteLength < NONCE_BYTES + TAG_BYTES) {
    throw new ChunkIntegrityError("Encrypted chunk is shorter than its nonce and tag");
  }
  try {
    const plain = await crypto.subtle.decrypt(
      {
        name: "AES-GCM",
        iv: own.subarray(0, NONCE_BYTES),
        additionalData: additional,
        tagLength: TAG_BYTES * 8,
      },
      key,
      own.subarray(NONCE_BYTES),
    );
    return new Uint8Array(plain);
  } catch (err) {
    throw new ChunkIntegrityError("Encrypted chunk failed authentication", { cause: err });
  }
}

/** Plaintext -> stored bytes and the form needed to reverse it. */
export async function encodeChunk(
  plain: Uint8Array,
  opts: EncodeOptions,
): Promise<{ bytes: Uint8Array; form: StoredForm }> {
  const segmentSize = opts.segmentSize ?? 0;
  const packed = await compressChunk(
    plain,
    opts.compression,
    opts.level ?? DEFAULT_LEVEL,
    segmentSize,
  );
  return await encodePrepared(plain, packed, { ...opts, segmentSize });
}

/**
 * The rest of encodeChunk once `packed` (compressChunk's answer for the same plaintext and
 * segment size) is known: the stored bytes and their form. A chunk neither compressed nor
 * encrypted is stored as it is, whatever the segment size.
 */
export async function encodePrepared(
  plain: Uint8Array,
  packed: Uint8Array | undefined,
  opts: { key?: CryptoKey; aad?: Uint8Array; segmentSize?: number },
): Promise<{ bytes: Uint8Array; form: StoredForm }> {
  const compression: Compression = packed ? "zstd" : "none";
  const segmentSize = opts.segmentSize ?? 0;
  const form: StoredForm = { compression, encrypted: !!opts.key };
  if (segmentSize > 0 && (packed || opts.key)) form.segmentSize = segmentSize;
  if (!opts.key) return { bytes: packed ?? plain, form };
  if (!segmentSize) {
    return {
      bytes: await seal(packed ?? plain, opts.key, additionalData(compression, opts.aad)),
      form,
    };
  }
  const bodies = packed
    ? bodiesOf(packed, segmentBounds(packed, packed.byteLength))
    : segmentsOf(plain, segmentSize);
  const count = bodies.length;
  const sealed = await Promise.all(
    bodies.map((b, index) =>
      seal(b, opts.key!, additionalData(compression, opts.aad, { index, count }))
    ),
  );
  return { bytes: packSegments(sealed), form };
}

function bodiesOf(stored: Uint8Array, bounds: number[]): Uint8Array[] {
  return bounds.slice(1).map((end, j) => stored.subarray(bounds[j], end));
}

/**
 * Stored bytes -> plaintext. Throws ChunkIntegrityError when the bytes do not authenticate
 * (encrypted), do not decode (compressed, checked by the zstd frame checksum) or do not have
 * the expected size; never returns wrong bytes for an encrypted chunk.
 */
export async function decodeChunk(
  stored: Uint8Array,
  form: StoredForm,
  opts: DecodeOptions,
): Promise<Uint8Array> {
  if (form.segmentSize) return await decodeSegmented(stored, form, opts);
  let body = stored;
  if (form.encrypted) {
    if (!opts.key) throw new Error("A key is required to decode an encrypted chunk");
    body = await open(stored, opts.key, additionalData(form.compression, opts.aad));
  }
  let plain = body;
  if (form.compression === "zstd") {
    try {
      plain = decompress(body, opts.size);
    } catch (err) {
      throw new ChunkIntegrityError("Compressed chunk does not decode", { cause: err });
    }
  }
  if (opts.size !== undefined && plain.byteLength !== opts.size) {
    throw new ChunkIntegrityError(`Chunk decodes to ${plain.byteLength} bytes, not ${opts.size}`);
  }
  return plain;
}

async function decodeSegmented(
  stored: Uint8Array,
  form: StoredForm,
  opts: DecodeOptions,
): Promise<Uint8Array> {
  const segmentSize = form.segmentSize!;
  const bodies = bodiesOf(stored, segmentBounds(stored, stored.byteLength));
  const count = bodies.length;
  if (opts.size !== undefined && count !== segmentCount(opts.size, segmentSize)) {
    throw new ChunkIntegrityError(`Chunk has ${count} segments, not ${opts.size} bytes' worth`);
  }
  const pieces: Uint8Array[] = [];
  for (const [index, body] of bodies.entries()) {
    // Every segment but the last is whole; the last is what remains (up to a segment).
    const size = index < count - 1
      ? segmentSize
      : opts.size === undefined
      ? undefined
      : opts.size - index * segmentSize;
    pieces.push(await decodeSegment(body, form, { index, count }, { ...opts, size }));
  }
  if (pieces.length === 1) return pieces[0];
  const out = concat(pieces);
  // Decoded (not views of the stored bytes): copied, so their memory goes now.
  if (form.compression !== "none" || form.encrypted) { for (const p of pieces) releaseOwned(p); }
  return out;
}

/**
 * One segment's body -> its plaintext (`opts.size` bytes when given; at most the segment size).
 * Throws ChunkIntegrityError as decodeChunk does.
 */
export async function decodeSegment(
  body: Uint8Array,
  form: StoredForm,
  segment: { index: number; count: number },
  opts: DecodeOptions,
): Promise<Uint8Array> {
  let plain = body;
  if (form.encrypted) {
    if (!opts.key) throw new Error("A key is required to decode an encrypted chunk");
    plain = await open(body, opts.key, additionalData(form.compression, opts.aad, segment));
  }
  if (form.compression === "zstd") {
    try {
      plain = decompress(plain, opts.size ?? form.segmentSize);
    } catch (err) {
      throw new ChunkIntegrityError("Compressed segment does not decode", { cause: err });
    }
  }
  const max = form.segmentSize ?? Infinity;
  if (opts.size !== undefined ? plain.byteLength !== opts.size : plain.byteLength > max) {
    throw new ChunkIntegrityError(`Segment ${segment.index} decodes to ${plain.byteLength} bytes`);
  }
  return plain;
}

/** A non-extractable AES-256-GCM key from 32 raw bytes. */
export async function importAesKey(raw: Uint8Array): Promise<CryptoKey> {
  if (raw.byteLength !== 32) throw new Error("An AES-256 key must be 32 bytes");
  return await crypto.subtle.importKey("raw", ownBytes(raw), { name: "AES-GCM" }, false, [
    "encrypt",
    "decrypt",
  ]);
}
