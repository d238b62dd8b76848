// The write path: a body stream cut into fixed-size plaintext chunks, each stored (deduplicated,
// compressed, encrypted, erasure-coded) while the next one is read. Memory stays bounded by a
// few chunks whatever the object size.
import type { VersionChunk } from "../meta/store.ts";
import type { ChunkStore } from "../storage/chunk_store.ts";

/** Chunk writes allowed in flight while the body keeps streaming. */
const WRITES_IN_FLIGHT = 2;

/**
 * Chunk buffers of finished writes, kept for the next chunks: a fresh buffer per chunk is
 * garbage until V8's next full GC, and glibc, once such buffers are freed, serves the next ones
 * from its heap, which does not shrink; concurrent large uploads left hundreds of MiB resident.
 * At most SPARE_BYTES are kept, and none after SPARE_IDLE_MS without uploads.
 */
const SPARE_BYTES = 64 * 1024 * 1024;
const SPARE_IDLE_MS = 10_000;
const spare: ArrayBufferLike[] = [];
let spareTimer: ReturnType<typeof setTimeout> | undefined;

/**
 * A chunk buffer, in shared memory when `shared`: the CPU pool's workers then read it in place
 * (the MD5 of the body and the chunk's SHA-256 and compression) instead of each getting a copy.
 * Encrypted bodies keep plain buffers: WebCrypto does not take views on shared memory.
 */
function takeBuffer(size: number, shared: boolean): Uint8Array {
  const at = spare.findIndex((b) =>
    b.byteLength === size && (b instanceof SharedArrayBuffer) === shared
  );
  if (at >= 0) return new Uint8Array(spare.splice(at, 1)[0]);
  return new Uint8Array(shared ? new SharedArrayBuffer(size) : new ArrayBuffer(size));
}

function giveBuffer(buffer: ArrayBufferLike): void {
  const kept = spare.reduce((n, b) => n + b.byteLength, 0);
  if (kept + buffer.byteLength <= SPARE_BYTES) spare.push(buffer);
  clearTimeout(spareTimer);
  spareTimer = setTimeout(() => spare.length = 0, SPARE_IDLE_MS);
  Deno.unrefTimer(spareTimer);
}

export interface BodyCheck {
  update(chunk: Uint8Array): void;
  /** Throws an S3Error when the body does not match. */
  finish(): void;
}

export interface WrittenBody {
  size: number;
  md5: Uint8Array;
  /** The whole body when it fit within the inline limit (and inline storage is allowed). */
  inline?: Uint8Array;
  chunks: VersionChunk[];
}

/**
 * Reads `body` to the end, hashing it (MD5 for the ETag, plus `checks`), and stores it: inline
 * when it ends within `inlineMax` bytes, otherwise as chunks. On any failure every chunk written
 * so far is released (and removed unless something else refers to it). Each chunk of `body` is
 * copied (or hashed) before the next is asked for, so the body may reuse one buffer.
 *
 * The body is copied once, into chunk buffers; the MD5 stream is fed from them as they fill, in
 * order, so that a worker reads a chunk for its MD5 and for its SHA-256 without further copies.
 * A chunk buffer serves another chunk only once its write and its MD5 are done.
 */
export async function writeBody(
  body: AsyncIterable<Uint8Array>,
  store: ChunkStore,
  opts: {
    inlineMax: number;
    chunkSize: number;
    key?: CryptoKey;
    checks?: BodyCheck[];
    maxSize: number;
    tooLarge: () => Error;
  },
): Promise<WrittenBody> {
  // Hashed on the store's CPU pool, off the event loop (inline for short bodies).
  const md5 = store.cpu.md5();
  const chunks: Promise<VersionChunk>[] = [];
  /** Per chunk: settles when its buffer is free again (written and hashed); rejects on failure. */
  const settled: Promise<unknown>[] = [];
  const shared = !opts.key;
  let buffer: Uint8Array = new Uint8Array(
    Math.min(opts.chunkSize, Math.max(opts.inlineMax + 1, 64 * 1024)),
  );
  let filled = 0;
  let offset = 0;
  const flush = async () => {
    const plain = buffer.subarray(0, filled);
    const at = offset;
    offset += filled;
    // Synchronously, so the chunks reach the MD5 stream in order.
    const hashed = md5.updateHeld(plain);
    const written = store.write(plain, { key: opts.key })
      .then((chunk) => ({ chunk, offset: at, size: plain.byteLength }));
    // Awaited later; a failure must not surface as an unhandled rejection meanwhile. Once the
    // write and the MD5 settled, nothing refers to its plaintext any more.
    const free = Promise.all([written, hashed]);
    const whole = buffer.byteLength === opts.chunkSize ? buffer.buffer : undefined;
    free.then(() => whole && giveBuffer(whole), () => {});
    chunks.push(written);
    settled.push(free);
    buffer = new Uint8Array(0);
    filled = 0;
    if (settled.length > WRITES_IN_FLIGHT) await settled[settled.length - 1 - WRITES_IN_FLIGHT];
  };
  try {
    for await (const part of body) {
      for (const c of opts.checks ?? []) c.update(part);
      if (offset + filled + part.byteLength > opts.maxSize) throw opts.tooLarge();
      let at = 0;
      while (at < part.byteLength) {
        if (filled === buffer.byteLength) {
          if (filled === opts.chunkSize) await flush();
          buffer = filled === 0
            ? takeBuffer(opts.chunkSize, shared)
            : grow(buffer, opts.chunkSize, shared);
        }
        const n = Math.min(buffer.byteLength - filled, part.byteLength - at);
        buffer.set(part.subarray(at, at + n), filled);
        filled += n;
        at += n;
      }
    }
    for (const c of opts.checks ?? []) c.finish();
    const size = offset + filled;
    if (chunks.length === 0 && size <= opts.inlineMax && !opts.key) {
      const inline = buffer.slice(0, filled);
      await md5.update(inline);
      return { size, md5: await md5.digest(), inline, chunks: [] };
    }
    if (filled > 0 || chunks.length === 0) await flush();
    // The worker finishes the digest while the last chunk is stored.
    return { size, md5: await md5.digest(), chunks: await Promise.all(chunks) };
  } catch (err) {
    md5.abort();
    await releaseAll(store, chunks);
    throw err;
  }
}

function grow(buffer: Uint8Array, size: number, shared: boolean): Uint8Array {
  const next = new Uint8Array(shared ? new SharedArrayBuffer(size) : new ArrayBuffer(size));
  next.set(buffer);
  return next;
}

/** Releases the claims of every chunk write that succeeded (failures released their own). */
export async function releaseAll(
  store: ChunkStore,
  chunks: (Promise<VersionChunk> | VersionChunk)[],
): Promise<void> {
  const done = await Promise.allSettled(chunks);
  for (const r of done) if (r.status === "fulfilled") await store.release(r.value.chunk.id);
}
