// Range reads of chunks stored as they are (not compressed, not encrypted) read and verify only
// the shard blocks under the range: exact bytes at block, shard and chunk boundaries, first and
// last bytes, suffix and open-ended ranges; a corrupt block under the range is rebuilt from the
// other shards and healed, one outside it is not even read (the scrub finds it); a lost data
// shard during a range read is rebuilt; shards in the older format (one checksum per shard)
// stay readable, whole and by range. Compressed and encrypted (SSE) chunks are written in 64 KiB
// segments, and a range reads and decodes only its segments.
import { assert, assertEquals } from "./assert.ts";
import { randomBytes, type TestServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";
import {
  bytesEqual,
  type ChunkRow,
  createBucket,
  expectBytes,
  fileExists,
  KiB,
  makeSetup,
  objectChunks,
  put,
  putOk,
  query,
  removeSetup,
  scrub,
  shardPaths,
  sleep,
  startFresh,
  type StorageSetup,
  textBytes,
} from "./storage_helpers.ts";

const CHUNK = 1024 * KiB;
/** The block a range read fetches and verifies (src/storage/shard_files.ts). */
const BLOCK = 16 * KiB;
const BUCKET = "ranges";

/** Where the payload of a (version 2) shard file of `shardLen` bytes starts. */
function payloadStart(shardLen: number): number {
  return 16 + 4 * Math.ceil(shardLen / BLOCK);
}

/** GETs `bytes=spec` and expects bytes [from, to] of `data`. */
function expectRange(
  server: TestServer,
  key: string,
  data: Uint8Array,
  spec: string,
  from: number,
  to: number,
): Promise<void> {
  return expectBytes(server, BUCKET, key, data.subarray(from, to + 1), {
    header: `bytes=${spec}`,
    from,
    to,
    total: data.byteLength,
  });
}

/** Inverts 8 bytes at `at` of a file. */
async function flip(path: string, at: number): Promise<void> {
  const bytes = await Deno.readFile(path);
  for (let i = at; i < at + 8; i++) bytes[i] ^= 0xff;
  await Deno.writeFile(path, bytes);
}

/** Rewrites a shard file in the version 1 format: the payload under one CRC-32. */
async function toVersion1(path: string): Promise<void> {
  const bytes = await Deno.readFile(path);
  const v = new DataView(bytes.buffer);
  assertEquals(v.getUint8(4), 2, `${path} is written in format version 2`);
  const length = v.getUint32(8);
  const payload = bytes.subarray(bytes.byteLength - length);
  const out = new Uint8Array(16 + length);
  out.set(bytes.subarray(0, 16));
  const o = new DataView(out.buffer);
  o.setUint8(4, 1);
  o.setUint8(6, 0);
  o.setUint32(12, crc32(payload));
  out.set(payload, 16);
  await Deno.writeFile(path, out);
}

function crc32(data: Uint8Array): number {
  let c = ~0;
  for (const b of data) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

async function withStorage(
  drives: number,
  opts: { ec?: string; compression?: "auto" | "on" | "off" },
  fn: (setup: StorageSetup, server: TestServer) => Promise<void>,
): Promise<void> {
  const setup = await makeSetup(drives);
  const server = await startFresh(setup, { chunkSize: CHUNK, ...opts });
  try {
    await createBucket(server, BUCKET);
    await fn(setup, server);
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
}

/** Ranges at block, shard and chunk boundaries, first and last bytes, suffix and open ranges. */
async function expectEveryKindOfRange(
  server: TestServer,
  key: string,
  data: Uint8Array,
  shardLen: number,
): Promise<void> {
  const n = data.byteLength;
  const cases: [string, number, number][] = [
    ["0-0", 0, 0],
    [`${n - 1}-${n - 1}`, n - 1, n - 1],
    ["-1", n - 1, n - 1],
    ["-100000", n - 100000, n - 1],
    [`${n - 5}-`, n - 5, n - 1],
    [`${n - CHUNK - 3}-`, n - CHUNK - 3, n - 1],
    ["0-", 0, n - 1],
    [`${BLOCK - 1}-${BLOCK}`, BLOCK - 1, BLOCK],
    [`${BLOCK}-${2 * BLOCK - 1}`, BLOCK, 2 * BLOCK - 1],
    [`${BLOCK + 7}-${5 * BLOCK + 3}`, BLOCK + 7, 5 * BLOCK + 3],
    [`${shardLen - 10}-${shardLen + 10}`, shardLen - 10, shardLen + 10],
    [`${CHUNK - 10}-${CHUNK + BLOCK + 10}`, CHUNK - 10, CHUNK + BLOCK + 10],
    [`${CHUNK + 12345}-${CHUNK + 12345 + 65535}`, CHUNK + 12345, CHUNK + 12345 + 65535],
    [`${CHUNK}-${2 * CHUNK - 1}`, CHUNK, 2 * CHUNK - 1],
  ];
  for (const [spec, from, to] of cases) await expectRange(server, key, data, spec, from, to);
}

Deno.test("1+0: range reads at every kind of boundary return the exact bytes", async () => {
  await withStorage(1, { compression: "auto" }, async (setup, server) => {
    const data = randomBytes(3 * CHUNK + 4321);
    await putOk(server, BUCKET, "media", data);
    const chunks = objectChunks(setup, BUCKET, "media");
    assert(chunks.every((c) => c.compression === "none"), "random bytes are stored as they are");
    await expectEveryKindOfRange(server, "media", data, CHUNK);
    // Compressed chunks are still decoded whole for a range, and answer the same.
    const text = textBytes(2 * CHUNK + 99);
    await putOk(server, BUCKET, "text", text);
    assert(objectChunks(setup, BUCKET, "text").some((c) => c.compression === "zstd"));
    await expectEveryKindOfRange(server, "text", text, CHUNK);
  });
});

Deno.test("1+0: a range reads only the blocks under it", async () => {
  await withStorage(1, { compression: "off" }, async (setup, server) => {
    const data = randomBytes(2 * CHUNK);
    await putOk(server, BUCKET, "k", data);
    const [c0] = objectChunks(setup, BUCKET, "k");
    const [path] = shardPaths(setup, c0);
    // Block 10 of the only shard corrupted: ranges elsewhere never read it.
    await flip(path, payloadStart(CHUNK) + 10 * BLOCK + 100);
    await expectRange(server, "k", data, `0-${10 * BLOCK - 1}`, 0, 10 * BLOCK - 1);
    await expectRange(server, "k", data, `${11 * BLOCK}-${CHUNK + 5}`, 11 * BLOCK, CHUNK + 5);
    // A range over it, without parity, is an error and never wrong bytes.
    const res = await fetchRange(server, "k", `${10 * BLOCK + 90}-${10 * BLOCK + 200}`);
    assertEquals(res.status, 500);
    await res.body?.cancel();
  });
});

async function fetchRange(server: TestServer, key: string, spec: string): Promise<Response> {
  return await signedFetch(server, {
    method: "GET",
    path: objectPath(BUCKET, key),
    headers: { range: `bytes=${spec}` },
  });
}

/** The shard files of a chunk and their contents now. */
async function snapshot(setup: StorageSetup, c: ChunkRow) {
  const paths = shardPaths(setup, c);
  return { paths, original: await Promise.all(paths.map((p) => Deno.readFile(p))) };
}

/** Whether shard `i` is back to its contents in the snapshot within `ms` (the heal queue runs
 * after the read that found the damage). */
async function healedSoon(
  s: Awaited<ReturnType<typeof snapshot>>,
  i: number,
  ms = 10_000,
): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!(await sameAsBefore(s, i))) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

/** Whether shard `i` still differs after a while: no heal was queued for it. */
async function stillDamaged(s: Awaited<ReturnType<typeof snapshot>>, i: number): Promise<boolean> {
  await sleep(500);
  return !(await sameAsBefore(s, i));
}

async function sameAsBefore(s: Awaited<ReturnType<typeof snapshot>>, i: number): Promise<boolean> {
  return (await fileExists(s.paths[i])) &&
    bytesEqual(await Deno.readFile(s.paths[i]), s.original[i]);
}

Deno.test("2+1 over 3 drives: corrupt blocks and lost shards during range reads", async (t) => {
  await withStorage(3, { ec: "2+1", compression: "off" }, async (setup, server) => {
    const data = randomBytes(3 * CHUNK + 777);
    await putOk(server, BUCKET, "video", data);
    const chunks = objectChunks(setup, BUCKET, "video");
    assertEquals(chunks.map((c) => [c.k, c.m]), chunks.map(() => [2, 1]));
    const shardLen = CHUNK / 2;
    const start = payloadStart(shardLen);

    await t.step("ranges across blocks, data shards and chunks", async () => {
      await expectEveryKindOfRange(server, "video", data, shardLen);
    });

    await t.step("a corrupt block under the range is rebuilt and healed", async () => {
      const s = await snapshot(setup, chunks[1]);
      await flip(s.paths[1], start + 3 * BLOCK + 5); // data shard 1, block 3
      assert(!(await sameAsBefore(s, 1)));
      const at = CHUNK + shardLen + 3 * BLOCK;
      await expectRange(server, "video", data, `${at}-${at + 99}`, at, at + 99);
      assert(await healedSoon(s, 1), "healed after the range read");
    });

    await t.step("a corrupt block outside the range is not read; the scrub heals it", async () => {
      const s = await snapshot(setup, chunks[0]);
      await flip(s.paths[0], start + 20 * BLOCK + 5); // data shard 0, block 20
      await expectRange(server, "video", data, `${BLOCK}-${3 * BLOCK}`, BLOCK, 3 * BLOCK);
      await expectRange(server, "video", data, `${shardLen}-${CHUNK - 1}`, shardLen, CHUNK - 1);
      assert(await stillDamaged(s, 0), "the block the ranges did not cover was not read");
      const report = await scrub(server);
      assertEquals([report.badShards, report.healedShards], [1, 1]);
      assert(await sameAsBefore(s, 0), "healed by the scrub");
    });

    await t.step("a lost data shard during a range read is rebuilt", async () => {
      const s = await snapshot(setup, chunks[2]);
      await Deno.remove(s.paths[0]);
      const at = 2 * CHUNK + 1000;
      await expectRange(server, "video", data, `${at}-${at + 70000}`, at, at + 70000);
      assert(await healedSoon(s, 0), "the lost shard was rewritten");
      // A range across both data shards, with one lost again.
      await Deno.remove(s.paths[1]);
      const mid = 2 * CHUNK + shardLen - 40000;
      await expectRange(server, "video", data, `${mid}-${mid + 80000}`, mid, mid + 80000);
      assert(await healedSoon(s, 1));
    });

    await t.step("a suffix range of a small last chunk with a lost data shard", async () => {
      const s = await snapshot(setup, chunks[3]);
      await Deno.remove(s.paths[0]);
      await expectRange(server, "video", data, "-700", data.byteLength - 700, data.byteLength - 1);
      assert(await healedSoon(s, 0));
      await expectBytes(server, BUCKET, "video", data);
    });
  });
});

Deno.test("shards in the older format (one checksum per shard) stay readable and heal", async () => {
  await withStorage(3, { ec: "2+1", compression: "off" }, async (setup, server) => {
    const data = randomBytes(2 * CHUNK + 5);
    await putOk(server, BUCKET, "old", data);
    const chunks = objectChunks(setup, BUCKET, "old");
    for (const c of chunks) for (const p of shardPaths(setup, c)) await toVersion1(p);
    await expectBytes(server, BUCKET, "old", data);
    await expectEveryKindOfRange(server, "old", data, CHUNK / 2);
    // A flipped byte in an old shard: the range read rebuilds it and heals it (in the new
    // format).
    const s = await snapshot(setup, chunks[0]);
    await flip(s.paths[0], 16 + 100);
    await expectRange(server, "old", data, "50-5000", 50, 5000);
    // The heal queue rewrites it shortly after, in the new format.
    const deadline = Date.now() + 10_000;
    while ((await Deno.readFile(s.paths[0]))[4] !== 2 && Date.now() < deadline) await sleep(20);
    assertEquals((await Deno.readFile(s.paths[0]))[4], 2, "rewritten in the new format");
    await expectBytes(server, BUCKET, "old", data);
    const report = await scrub(server);
    assertEquals(report.badShards, 0);
  });
});

Deno.test("2+1: compressed and SSE-S3 chunks are read by segments; damage under a range heals", async () => {
  await withStorage(3, { ec: "2+1", compression: "auto" }, async (setup, server) => {
    const text = textBytes(2 * CHUNK + 9999);
    await putOk(server, BUCKET, "text", text);
    const media = randomBytes(2 * CHUNK + 999);
    const sse = await put(server, BUCKET, "sealed", media, {
      "x-store-server-side-encryption": "AES256",
    });
    assertEquals(sse.status, 200, sse.text);
    const segmentSize = (c: ChunkRow) =>
      query(setup, "SELECT segment_size FROM chunks WHERE id = ?", c.id)[0].segment_size;
    const forms: [string, [string, number]][] = [["text", ["zstd", 0]], ["sealed", ["none", 1]]];
    for (const [key, form] of forms) {
      for (const c of objectChunks(setup, BUCKET, key)) {
        assertEquals<[string, number]>([c.compression, c.encrypted], form, key);
        assertEquals(segmentSize(c), 64 * KiB, `${key}: written in 64 KiB segments`);
      }
    }
    await expectEveryKindOfRange(server, "text", text, CHUNK / 2);
    await expectEveryKindOfRange(server, "sealed", media, CHUNK / 2);

    // Damage in the middle of data shard 0 of the first sealed chunk (its table is in the first
    // block): a range in the chunk's second half does not read it; one over it heals it.
    const [c0] = objectChunks(setup, BUCKET, "sealed");
    const shardLen = Math.ceil(c0.storedSize / 2);
    const s = await snapshot(setup, c0);
    await flip(s.paths[0], payloadStart(shardLen) + (shardLen >> 1));
    await expectRange(
      server,
      "sealed",
      media,
      `${CHUNK - 5000}-${CHUNK - 100}`,
      CHUNK - 5000,
      CHUNK - 100,
    );
    assert(await stillDamaged(s, 0), "the damage outside the range was not read");
    const at = CHUNK >> 2;
    await expectRange(server, "sealed", media, `${at - 100}-${at + 100}`, at - 100, at + 100);
    assert(await healedSoon(s, 0), "healed after the range read");
  });
});
