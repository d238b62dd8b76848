// The body of a replicated version that travels in its stored form (SSE-C: sealed with the
// customer's key, which no node holds, so the sender cannot decrypt it and the receiver cannot
// encrypt it again). For each chunk of the version, in order:
//
//   length u32 (big-endian) | JSON {id, plainSize, storedSize, compression, encrypted,
//   segmentSize?, offset, size} | the chunk's stored bytes (compressed and sealed as on the drives)
//
// The receiver keeps each chunk under the same id: the id is the additional data the chunk's
// AES-GCM authenticates, so the customer's key opens it there as here. The bytes are checked
// against the call's signed digest as they arrive (the receiver cannot check them otherwise).
import { ApiError } from "../api/json.ts";
import type { BodyCheck, StoredChunk } from "../object/layer.ts";

/** A frame's JSON header at most. */
const HEAD_LIMIT = 4096;
/** The largest chunk a node writes (STORE_CHUNK_SIZE's maximum). */
const MAX_CHUNK = 64 * 1024 * 1024;
/** Stored bytes may exceed the plaintext by the segment table and the seals (well below this). */
const STORED_SLACK = 64 * 1024;

/**
 * The frames of `chunks`, as the body of an object call: one piece per chunk (a copy of its stored
 * bytes), not three writes, two of them a few bytes long.
 */
export async function* storedFrames(
  chunks: AsyncIterable<StoredChunk>,
): AsyncGenerator<Uint8Array> {
  for await (const { form, offset, size, stored } of chunks) {
    const head = new TextEncoder().encode(JSON.stringify({ ...form, offset, size }));
    const frame = new Uint8Array(4 + head.byteLength + stored.byteLength);
    new DataView(frame.buffer).setUint32(0, head.byteLength);
    frame.set(head, 4);
    frame.set(stored, 4 + head.byteLength);
    yield frame;
  }
}

/**
 * The body of an object call from `chunks`: a version of one chunk as one piece (sent with its
 * length, in one write), a longer one as a stream of frames holding two chunks at most. A stream
 * ends with a write of its own, which costs a small version a delayed acknowledgement or two.
 */
export async function storedBody(
  chunks: AsyncIterable<StoredChunk>,
): Promise<ReadableStream<Uint8Array> | Uint8Array> {
  const frames = storedFrames(chunks);
  const first = await frames.next();
  if (first.done) return new Uint8Array(0);
  const second = await frames.next();
  if (second.done) return first.value;
  return ReadableStream.from((async function* () {
    yield first.value;
    yield second.value;
    yield* frames;
  })());
}

function malformed(message: string): ApiError {
  return new ApiError(400, "invalid_message", message);
}

/** Reads exact lengths from a stream, showing every byte to `seen` as it arrives. */
class ExactReader {
  #it: AsyncIterator<Uint8Array>;
  #buf: Uint8Array = new Uint8Array(0);
  #at = 0;

  constructor(body: AsyncIterable<Uint8Array>, readonly seen: (bytes: Uint8Array) => void) {
    this.#it = body[Symbol.asyncIterator]();
  }

  /** False once the body has ended. */
  async #fill(): Promise<boolean> {
    while (this.#at === this.#buf.byteLength) {
      const next = await this.#it.next();
      if (next.done) return false;
      this.seen(next.value);
      this.#buf = next.value;
      this.#at = 0;
    }
    return true;
  }

  async atEnd(): Promise<boolean> {
    return !(await this.#fill());
  }

  /** The next `n` bytes (into `out`), or undefined when the body ends first. */
  async take(n: number, out: Uint8Array = new Uint8Array(n)): Promise<Uint8Array | undefined> {
    for (let got = 0; got < n;) {
      if (!(await this.#fill())) return undefined;
      const k = Math.min(n - got, this.#buf.byteLength - this.#at);
      out.set(this.#buf.subarray(this.#at, this.#at + k), got);
      got += k;
      this.#at += k;
    }
    return out;
  }
}

const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/** A frame's header, or undefined when it is not one. */
function parseHead(
  bytes: Uint8Array,
): (StoredChunk["form"] & { offset: number; size: number }) | undefined {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null) return undefined;
  const { id, plainSize, storedSize, compression, encrypted, segmentSize, offset, size } = v;
  const ok = typeof id === "string" && /^[0-9a-f]{64}$/.test(id) && isCount(plainSize) &&
    plainSize <= MAX_CHUNK && isCount(storedSize) && storedSize <= 2 * plainSize + STORED_SLACK &&
    (compression === "none" || compression === "zstd") && encrypted === true &&
    (segmentSize === undefined || (isCount(segmentSize) && segmentSize > 0)) && isCount(offset) &&
    isCount(size) && size <= plainSize;
  if (!ok) return undefined;
  return {
    id: id as string,
    plainSize: plainSize as number,
    storedSize: storedSize as number,
    compression: compression as "none" | "zstd",
    encrypted: true,
    ...(segmentSize !== undefined ? { segmentSize: segmentSize as number } : {}),
    offset: offset as number,
    size: size as number,
  };
}

/** Where the stored bytes of each chunk are read into (the server's write buffers). */
export interface FrameBuffers {
  /** A buffer of exactly `size` bytes (may wait for the budget). */
  take(size: number): Promise<Uint8Array>;
  give(buffer: Uint8Array): void;
}

/**
 * The chunks framed in `body`, which must hold the `size` bytes of a version, in order. `checks`
 * see every byte and are finished at the end (the iteration throws when they fail): a body that
 * does not match its signed digest, one cut short included, is refused before anything commits.
 * Each chunk's bytes are read into a buffer from `buffers`, which its `release` gives back.
 */
export async function* unframeStored(
  body: AsyncIterable<Uint8Array>,
  size: number,
  checks: BodyCheck[],
  buffers?: FrameBuffers,
): AsyncGenerator<StoredChunk> {
  const reader = new ExactReader(body, (bytes) => {
    for (const c of checks) c.update(bytes);
  });
  const cutShort = () => {
    for (const c of checks) c.finish();
    return malformed("The stored chunks end in the middle of a frame.");
  };
  let offset = 0;
  let count = 0;
  while (!(await reader.atEnd())) {
    const length = await reader.take(4);
    if (!length) throw cutShort();
    const n = new DataView(length.buffer).getUint32(0);
    if (n > HEAD_LIMIT) throw malformed("A stored chunk's header is too long.");
    const bytes = await reader.take(n);
    if (!bytes) throw cutShort();
    const head = parseHead(bytes);
    if (!head || head.offset !== offset || offset + head.size > size) {
      throw malformed("A stored chunk's header is malformed or out of place.");
    }
    const buffer = buffers ? await buffers.take(head.storedSize) : new Uint8Array(head.storedSize);
    let stored: Uint8Array | undefined;
    try {
      stored = await reader.take(head.storedSize, buffer);
      if (!stored) throw cutShort();
    } catch (err) {
      buffers?.give(buffer);
      throw err;
    }
    const { offset: at, size: held, ...form } = head;
    offset += held;
    count++;
    // Stored as they come; the version commits only once this has ended, checks passed.
    yield {
      form,
      offset: at,
      size: held,
      stored,
      ...(buffers ? { release: () => buffers.give(buffer) } : {}),
    };
  }
  for (const c of checks) c.finish();
  if (offset !== size || count === 0) {
    throw malformed("The stored chunks are not as long as the version.");
  }
}
