import { createHash } from "node:crypto";
import {
  assert,
  assertBytesEqual,
  assertEquals,
  AssertionError,
} from "../../tests/integration/assert.ts";
import { loadConfig } from "../config.ts";
import { compressChunk, type CompressionMode, decodeChunk, encodeChunk } from "./codec.ts";
import { CpuPool, MD5_BATCH_BYTES, MD5_FIRST_BATCH_BYTES, OFFLOAD_MIN_BYTES } from "./cpu_pool.ts";
import { mulberry32, randomBytes } from "./sample_data.ts";

const MiB = 1024 * 1024;

/** Deterministic numbers in [0, 1), so a failure can be replayed. */
function rng(seed: number): () => number {
  const next = mulberry32(seed);
  return () => next() / 2 ** 32;
}
function text(size: number, seed = 3): Uint8Array {
  const words = "object bucket chunk request the a of to and GET PUT 200 404 2024-05-01".split(" ");
  const next = rng(seed);
  let s = "";
  while (s.length < size) {
    s += words[Math.floor(next() * words.length)] + (next() < 0.1 ? "\n" : " ");
  }
  return new TextEncoder().encode(s).subarray(0, size);
}

/** Awaits `fn`, expecting a rejection whose message contains `includes`. */
async function assertRejects(fn: () => Promise<unknown>, includes = ""): Promise<void> {
  try {
    await fn();
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (!message.includes(includes)) {
      throw new AssertionError(`Expected an error with "${includes}", got: ${message}`);
    }
    return;
  }
  throw new AssertionError("Expected a rejection, but the call succeeded");
}

/** Bytes, or both absent. */
function assertSameBytes(a: Uint8Array | undefined, b: Uint8Array | undefined, message: string) {
  assertEquals(a === undefined, b === undefined, `${message}: presence`);
  if (a && b) assertBytesEqual(a, b, message);
}

function md5(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("md5").update(bytes).digest());
}

/** Feeds `data` to a stream in random pieces (views into it, as a request body would be). */
async function streamMd5(pool: CpuPool, data: Uint8Array, seed: number): Promise<Uint8Array> {
  const next = rng(seed);
  const stream = pool.md5();
  let at = 0;
  while (at < data.byteLength) {
    const n = Math.min(data.byteLength - at, 1 + Math.floor(next() ** 3 * 300 * 1024));
    const piece = data.subarray(at, at + n);
    await stream.update(piece);
    piece.fill(0); // the stream must have copied it
    at += n;
  }
  return await stream.digest();
}

async function withPool(size: number, fn: (pool: CpuPool) => Promise<void>): Promise<void> {
  const pool = new CpuPool(size);
  try {
    await pool.ready();
    assertEquals(pool.running, size);
    await fn(pool);
  } finally {
    pool.close();
  }
}

Deno.test("md5 streams equal node:crypto for random splits, inline and on workers", async () => {
  const sizes = [
    0,
    1,
    1000,
    MD5_FIRST_BATCH_BYTES - 1,
    MD5_FIRST_BATCH_BYTES,
    MD5_FIRST_BATCH_BYTES + 1,
    MD5_FIRST_BATCH_BYTES + MD5_BATCH_BYTES,
    MD5_FIRST_BATCH_BYTES + MD5_BATCH_BYTES + 1,
    9 * MiB + 7,
  ];
  for (const workers of [0, 1, 2]) {
    await withPool(workers, async (pool) => {
      for (const [i, size] of sizes.entries()) {
        const data = randomBytes(size);
        const expected = md5(data);
        assertBytesEqual(await streamMd5(pool, data.slice(), i + 1), expected, `${size} bytes`);
      }
    });
  }
});

Deno.test("md5 streams in parallel keep their own order and state", async () => {
  await withPool(2, async (pool) => {
    const bodies = Array.from({ length: 6 }, (_, i) => randomBytes(3 * MiB + i * 12345));
    const digests = await Promise.all(bodies.map((b, i) => streamMd5(pool, b.slice(), 100 + i)));
    digests.forEach((d, i) => assertBytesEqual(d, md5(bodies[i])));
  });
});

Deno.test("md5 streams aborted while others share their worker leave the others intact", async () => {
  // One worker: the streams' batches wait together and are hashed in the SIMD lanes together.
  await withPool(1, async (pool) => {
    const bodies = Array.from({ length: 5 }, (_, i) => randomBytes(4 * MiB + i * 777));
    const results = await Promise.allSettled(bodies.map(async (body, i) => {
      const stream = pool.md5();
      for (let at = 0; at < body.byteLength; at += 300_000) {
        const wait = stream.update(body.subarray(at, at + 300_000));
        if (i % 2 === 1 && at >= 2 * MiB) {
          stream.abort();
          return undefined;
        }
        if (wait) await wait;
      }
      return await stream.digest();
    }));
    results.forEach((r, i) => {
      assertEquals(r.status, "fulfilled");
      const digest = (r as PromiseFulfilledResult<Uint8Array | undefined>).value;
      if (i % 2 === 1) assertEquals(digest, undefined);
      else assertBytesEqual(digest!, md5(bodies[i]), `stream ${i}`);
    });
    // The worker still hashes new streams right.
    const after = randomBytes(3 * MiB + 5);
    assertBytesEqual(await streamMd5(pool, after.slice(), 7), md5(after));
  });
});

Deno.test("shared memory: MD5 streams and chunk work read it in place, with the same results", async () => {
  // Text, then random bytes: chunks that compress and chunks that do not.
  const data = new Uint8Array(9 * MiB + 123);
  data.set(text(5 * MiB));
  data.set(randomBytes(4 * MiB + 123), 5 * MiB);
  for (const size of [0, 2]) {
    await withPool(size, async (pool) => {
      const stream = pool.md5();
      // Copied pieces (a partial batch), then shared chunks the stream must see after them.
      await stream.update(data.subarray(0, 100_000));
      const waits: Promise<void>[] = [];
      for (let at = 100_000; at < data.byteLength; at += 4 * MiB) {
        const piece = data.subarray(at, Math.min(data.byteLength, at + 4 * MiB));
        const shared = new Uint8Array(new SharedArrayBuffer(piece.byteLength));
        shared.set(piece);
        const work = pool.chunk(shared);
        assertEquals(await work.sha256(), createHash("sha256").update(piece).digest("hex"));
        const packed = await work.compress("on", undefined, 1024 * 1024);
        assertSameBytes(packed, await compressChunk(piece, "on", undefined, 1024 * 1024), "packed");
        work.done();
        const wait = stream.updateHeld(shared);
        if (wait) waits.push(wait);
      }
      await Promise.all(waits);
      assertBytesEqual(await stream.digest(), md5(data), `md5 with ${size} workers`);
    });
  }
});

Deno.test("chunk work equals the inline path: ids, compression decisions and bytes", async () => {
  const repetitive = new Uint8Array(4 * MiB);
  for (let i = 0; i < repetitive.byteLength; i += 16384) {
    repetitive.set(text(16384, 9), i);
  }
  const samples: [string, Uint8Array][] = [
    ["random 4 MiB", randomBytes(4 * MiB)],
    ["text 4 MiB", text(4 * MiB)],
    ["repetitive 4 MiB", repetitive],
    ["text 200 KiB", text(200 * 1024)],
    ["random 200 KiB", randomBytes(200 * 1024)],
    ["text below the offload size", text(OFFLOAD_MIN_BYTES - 1)],
    [
      "mostly text, random tail",
      (() => {
        const b = text(MiB);
        b.set(randomBytes(MiB / 2), MiB / 2);
        return b;
      })(),
    ],
  ];
  const modes: CompressionMode[] = ["auto", "on", "off"];
  await withPool(2, async (pool) => {
    for (const [name, plain] of samples) {
      const before = plain.slice();
      const sha256 = createHash("sha256").update(plain).digest("hex");
      for (const mode of modes) {
        const expected = await compressChunk(plain, mode);
        // Compression alone, and after a SHA-256 that looked ahead for every mode ("auto" probes).
        assertSameBytes(await pool.chunk(plain).compress(mode), expected, `${name}, ${mode}`);
        for (const next of modes) {
          const work = pool.chunk(plain);
          assertEquals(await work.sha256(next), sha256, `${name}: sha256`);
          const packed = await work.compress(mode);
          assertSameBytes(packed, expected, `${name}, ${mode} after looking ahead for ${next}`);
          work.done();
        }
      }
      const work = pool.chunk(plain);
      // In parallel on one piece of work (two copies travel), and the level passes through.
      const [a, b] = await Promise.all([work.compress("on", 3), work.sha256()]);
      assertSameBytes(a, await compressChunk(plain, "on", 3), `${name}: level 3`);
      assertEquals(b, createHash("sha256").update(plain).digest("hex"));
      assertBytesEqual(plain, before, `${name}: the caller's bytes are untouched`);
    }
    // Copies are reused once work is done, also for shorter chunks (views of larger buffers).
    for (const size of [4 * MiB, MiB, 3 * MiB + 5, 4 * MiB, OFFLOAD_MIN_BYTES]) {
      const plain = text(size, size);
      const work = pool.chunk(plain);
      assertEquals(await work.sha256(), createHash("sha256").update(plain).digest("hex"));
      assertSameBytes(await work.compress("on"), await compressChunk(plain, "on"), `${size}`);
      work.done();
      work.done();
    }
    // What the pool compressed decodes through the unchanged read path.
    const plain = text(4 * MiB, 5);
    const packed = await pool.chunk(plain).compress("auto");
    assert(packed !== undefined && packed.byteLength < plain.byteLength / 2);
    const stored = await encodeChunk(plain, { compression: "auto" });
    assertBytesEqual(stored.bytes, packed);
    assertBytesEqual(await decodeChunk(packed, stored.form, { size: plain.byteLength }), plain);
  });
});

Deno.test("a failed task rejects its caller, inline and on a worker", async () => {
  for (const workers of [0, 2]) {
    await withPool(workers, async (pool) => {
      const work = pool.chunk(randomBytes(MiB));
      await assertRejects(
        () => work.compress("bogus" as CompressionMode),
        'Unknown compression mode "bogus"',
      );
      // The pool still works afterwards.
      assertEquals(await work.compress("off"), undefined);
      assertEquals(await work.compress("auto"), undefined);
    });
  }
});

Deno.test("a worker that dies rejects its pending work and is replaced", async () => {
  const errors: string[] = [];
  const pool = new CpuPool(1, { onError: (m) => errors.push(m) });
  try {
    await pool.ready();
    const data = randomBytes(8 * MiB);
    const stream = pool.md5();
    await stream.update(data.subarray(0, 2 * MiB));
    pool.crashWorkerForTest(0);
    const pending = pool.chunk(text(4 * MiB)).compress("on");
    await assertRejects(() => pending, "CPU worker 0 failed");
    // The stream was bound to the dead worker: it fails too, and says so on every call.
    await assertRejects(async () => {
      await stream.update(data.subarray(2 * MiB));
      await stream.digest();
    });
    stream.abort();
    assert(errors.some((m) => m.includes("replaced")), errors.join("\n"));
    await pool.ready();
    assertEquals(pool.running, 1);
    assertBytesEqual(await streamMd5(pool, data.slice(), 7), md5(data));
  } finally {
    pool.close();
  }
});

Deno.test("a worker that cannot start leaves the work inline", async () => {
  const errors: string[] = [];
  const pool = new CpuPool(2, {
    onError: (m) => errors.push(m),
    workerUrl: new URL("data:application/javascript,throw new Error('no start')"),
  });
  try {
    await pool.ready();
    assertEquals(pool.running, 0);
    assertEquals(errors.length, 2);
    const data = text(3 * MiB);
    assertBytesEqual(await streamMd5(pool, data.slice(), 1), md5(data));
    assertSameBytes(
      await pool.chunk(data).compress("auto"),
      await compressChunk(data, "auto"),
      "inline",
    );
  } finally {
    pool.close();
  }
});

Deno.test("close rejects pending work, then the pool works inline", async () => {
  const pool = new CpuPool(2);
  await pool.ready();
  const data = text(4 * MiB);
  const pending = pool.chunk(data).compress("on");
  const stream = pool.md5();
  await stream.update(randomBytes(2 * MiB));
  const digest = stream.digest();
  pool.close();
  await assertRejects(() => pending, "closed");
  await assertRejects(() => digest, "closed");
  stream.abort();
  assertEquals(pool.running, 0);
  assertEquals(await pool.chunk(data).sha256(), createHash("sha256").update(data).digest("hex"));
  assertBytesEqual(await streamMd5(pool, data.slice(), 2), md5(data));
});

Deno.test("an aborted stream fails its waiting and later calls", async () => {
  await withPool(1, async (pool) => {
    const stream = pool.md5();
    await stream.update(randomBytes(3 * MiB));
    stream.abort();
    await assertRejects(async () => await stream.update(new Uint8Array(1)), "aborted");
    await assertRejects(() => stream.digest(), "aborted");
    stream.abort();
  });
});

Deno.test("an on-demand pool starts its workers for work and stops them when idle", async () => {
  let stops = 0;
  const pool = new CpuPool(2, { idleMs: 300, onIdleStop: () => stops++ });
  try {
    assertEquals(pool.running, 0);
    // Small bodies (MD5 inline, chunks under the offload size) start no worker.
    const small = randomBytes(100_000);
    for (let i = 0; i < 20; i++) {
      assertBytesEqual(await streamMd5(pool, small.slice(), i), md5(small));
    }
    assertEquals(
      await pool.chunk(small).sha256(),
      createHash("sha256").update(small).digest("hex"),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    assertEquals(pool.running, 0, "small work started no worker");
    const data = text(4 * MiB);
    // No worker yet: the first work is done inline, and starts the workers.
    const expected = createHash("sha256").update(data).digest("hex");
    assertEquals(await pool.chunk(data).sha256(), expected);
    await pool.ready();
    assertEquals(pool.running, 2);
    assertEquals(await pool.chunk(data).sha256(), expected);
    assertBytesEqual(await streamMd5(pool, data.slice(), 4), md5(data));
    // A stream still open keeps its worker through an idle period.
    const stream = pool.md5();
    await stream.update(data.subarray(0, 2 * MiB));
    await new Promise((resolve) => setTimeout(resolve, 700));
    assertEquals(pool.running, 2);
    await stream.update(data.subarray(2 * MiB));
    assertBytesEqual(await stream.digest(), md5(data));
    await new Promise((resolve) => setTimeout(resolve, 700));
    assertEquals(pool.running, 0);
    assertEquals(stops, 1); // told, so that the memory they held can be given back
    // And they come back for the next work.
    assertSameBytes(await pool.chunk(data).compress("on"), await compressChunk(data, "on"), "on");
    await pool.ready();
    assertEquals(pool.running, 2);
  } finally {
    pool.close();
  }
});

Deno.test("an MD5 stream begun while the workers start waits for one, not the main thread", async () => {
  const pool = new CpuPool(2, { idleMs: 1000 });
  try {
    assertEquals(pool.running, 0);
    const data = randomBytes(8 * MiB);
    const stream = pool.md5();
    // Fed at once, before any worker is up: the batches are held, then go to the first ready.
    for (let at = 0; at < data.byteLength; at += 100 * 1024) {
      await stream.update(data.subarray(at, at + 100 * 1024));
    }
    assert(pool.running > 0, "the stream waited for a worker");
    assertEquals(pool.boundStreams, 1);
    assertBytesEqual(await stream.digest(), md5(data));
    // Aborted while held: nothing stays bound, later calls fail.
    pool.close();
    const fresh = new CpuPool(1, { idleMs: 1000 });
    const aborted = fresh.md5();
    aborted.update(data.subarray(0, 2 * MiB));
    aborted.abort();
    await fresh.ready();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assertEquals(fresh.boundStreams, 0);
    await assertRejects(() => aborted.digest(), "aborted");
    fresh.close();
  } finally {
    pool.close();
  }
});

Deno.test("shared bytes given while the workers start wait for one as they are, not copied", async () => {
  const pool = new CpuPool(1, { idleMs: 1000 });
  try {
    assertEquals(pool.running, 0);
    const data = randomBytes(8 * MiB);
    const shared = new Uint8Array(new SharedArrayBuffer(4 * MiB));
    const stream = pool.md5();
    shared.set(data.subarray(0, 4 * MiB));
    const first = stream.updateHeld(shared);
    assert(first, "held until a worker has hashed them");
    // Changed before the promise settled (which a caller must not do): a copy would hash the
    // bytes as given, the held bytes are read as they are when the worker is up.
    shared.fill(7);
    let settled = false;
    first.then(() => settled = true);
    await new Promise((resolve) => setTimeout(resolve, 0));
    assertEquals(settled, false, "not settled before a worker hashed them");
    await first;
    assert(pool.running > 0);
    shared.set(data.subarray(4 * MiB));
    await stream.updateHeld(shared);
    const expected = data.slice();
    expected.fill(7, 0, 4 * MiB);
    assertBytesEqual(await stream.digest(), md5(expected));
    // Aborted while held: the caller's promise rejects, nothing stays bound.
    pool.close();
    const fresh = new CpuPool(1, { idleMs: 1000 });
    const aborted = fresh.md5();
    const held = aborted.updateHeld(shared)!;
    aborted.abort();
    await assertRejects(() => held, "aborted");
    await fresh.ready();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assertEquals(fresh.boundStreams, 0);
    fresh.close();
  } finally {
    pool.close();
  }
});

Deno.test("STORE_CPU_WORKERS: default 2, 0 to 16", () => {
  const config = (env: Record<string, string>) => loadConfig((name) => env[name]);
  assertEquals(config({}).cpuWorkers, 2);
  assertEquals(config({ STORE_CPU_WORKERS: "0" }).cpuWorkers, 0);
  assertEquals(config({ STORE_CPU_WORKERS: "16" }).cpuWorkers, 16);
  let failed = false;
  try {
    config({ STORE_CPU_WORKERS: "17" });
  } catch {
    failed = true;
  }
  assert(failed);
});
