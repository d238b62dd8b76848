// The write path: a body stream cut into fixed-size plaintext chunks, each stored (deduplicated,
// compressed, encrypted, erasure-coded) while the next one is read. Memory stays bounded by a
// few chunks whatever the object size.
import type { VersionChunk } from "../meta/store.ts";
import type { ChunkStore } from "../storage/chunk_store.ts";
import { copyInto } from "../storage/shared_memory.ts";
import type { WriteBuffers } from "./write_buffers.ts";

/** What a direct body's read after a full chunk may take (see writeBody). */
const PROBE_BYTES = 64 * 1024;
/** Chunk writes allowed in flight while the body keeps streaming. */
const WRITES_IN_FLIGHT = 2;

export interface BodyCheck {
  update(chunk: Uint8Array): void;
  /** Throws an S3Error when the body does not match. */
  finish(): void;
}

/**
 * A body read straight into the caller's buffer: `readInto` fills the start of the view and
 * answers how many bytes it read, 0 at the end (the HTTP layer's RequestBody.direct).
 */
export interface DirectBody {
  readInto(into: Uint8Array): Promise<number>;
  /**
   * Settles once no read into a buffer the caller gave is under way: a read given up on (the body
   * stalled) may still write into it until then, so the buffer must not serve anyone else before.
   */
  settled?(): Promise<void>;
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
 * so far is released (and removed unless something else refers to it). Each chunk of an iterable
 * `body` is copied (or hashed) before the next is asked for, so the body may reuse one buffer.
 *
 * A DirectBody is read straight into chunk buffers; an iterable one is copied into them once
 * (about a quarter of the event loop's time in 64 MiB uploads). The MD5 stream is fed from them as
 * they fill, in order, so that a worker reads a chunk for its MD5 and for its SHA-256 without
 * further copies.
 * A chunk buffer serves another chunk only once its write and its MD5 are done. Chunk-sized
 * buffers come from `opts.buffers`, in shared memory unless the body is encrypted (the CPU pool's
 * workers read shared ones in place; WebCrypto does not take views on shared memory).
 */
export async function writeBody(
  body: AsyncIterable<Uint8Array> | DirectBody,
  store: ChunkStore,
  opts: {
    inlineMax: number;
    chunkSize: number;
    key?: CryptoKey;
    checks?: BodyCheck[];
    maxSize: number;
    tooLarge: () => Error;
    /** Where chunk-sized buffers come from (and go back to); uploads wait there for one. */
    buffers: WriteBuffers;
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
  /** `buffer` came from opts.buffers and goes back there. */
  let pooled = false;
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
    free.catch(() => {});
    if (pooled) {
      // Back once neither reads it any more, also after a failure.
      const whole = buffer.buffer;
      Promise.allSettled([written, hashed]).then(() => opts.buffers.give(whole));
    }
    chunks.push(written);
    settled.push(free);
    buffer = new Uint8Array(0);
    pooled = false;
    filled = 0;
    if (settled.length > WRITES_IN_FLIGHT) await settled[settled.length - 1 - WRITES_IN_FLIGHT];
  };
  /** Makes room in `buffer`: a full chunk is flushed, a full first buffer grown to a chunk's. */
  const room = async () => {
    if (filled < buffer.byteLength) return;
    if (filled === opts.chunkSize) await flush();
    const next = await opts.buffers.take(opts.chunkSize, shared);
    next.set(buffer.subarray(0, filled));
    buffer = next;
    pooled = true;
  };
  try {
    if ("readInto" in body) {
      // Read where the bytes belong: no copy. Except after a full buffer: whether the body goes
      // on is known only by reading, and the end of a body must not take (or wait for) a chunk
      // buffer it will not use, so that read goes to a small buffer and is copied.
      let probe: Uint8Array | undefined;
      for (;;) {
        const full = filled === buffer.byteLength;
        // At most what the chunk buffer `room` makes has space for after what it keeps.
        const space = filled === opts.chunkSize ? opts.chunkSize : opts.chunkSize - filled;
        const into = full
          ? (probe ??= new Uint8Array(PROBE_BYTES)).subarray(0, Math.min(PROBE_BYTES, space))
          : buffer.subarray(filled);
        const n = await body.readInto(into);
        if (n === 0) break;
        if (offset + filled + n > opts.maxSize) throw opts.tooLarge();
        const part = into.subarray(0, n);
        for (const c of opts.checks ?? []) c.update(part);
        if (full) {
          await room();
          copyInto(buffer, part, filled);
        }
        filled += n;
      }
    } else {
      for await (const part of body) {
        for (const c of opts.checks ?? []) c.update(part);
        if (offset + filled + part.byteLength > opts.maxSize) throw opts.tooLarge();
        let at = 0;
        while (at < part.byteLength) {
          await room();
          const n = Math.min(buffer.byteLength - filled, part.byteLength - at);
          copyInto(buffer, part.subarray(at, at + n), filled);
          filled += n;
          at += n;
        }
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
    if (pooled) {
      const whole = buffer.buffer;
      const settled = "readInto" in body ? body.settled?.() : undefined;
      if (settled) settled.then(() => opts.buffers.give(whole));
      else opts.buffers.give(whole);
    }
    pooled = false;
    md5.abort();
    await releaseAll(store, chunks);
    throw err;
  }
}

/** Releases the claims of every chunk write that succeeded (failures released their own). */
export async function releaseAll(
  store: ChunkStore,
  chunks: (Promise<VersionChunk> | VersionChunk)[],
): Promise<void> {
  const done = await Promise.allSettled(chunks);
  for (const r of done) if (r.status === "fulfilled") await store.release(r.value.chunk.id);
}
