// ChunkStore.readRange over 2+1 on three drive directories: chunks stored as they are, segmented
// (compressed, encrypted) chunks, and chunks in the one-piece form written before segments; a
// damaged shard under a range is rebuilt and healed.
import { join } from "node:path";
import { assert, assertBytesEqual, assertEquals } from "../../tests/integration/assert.ts";
import type { ChunkRecord, MetaStore } from "../meta/store.ts";
import { ChunkStore } from "./chunk_store.ts";
import { encodeChunk, importAesKey, SEGMENT_SIZE } from "./codec.ts";
import { CpuPool } from "./cpu_pool.ts";
import type { Drive } from "./drives.ts";
import { ReedSolomon, split } from "./erasure/reed_solomon.ts";
import { randomBytes, sampleText } from "./sample_data.ts";
import { shardPath, writeShard } from "./shard_files.ts";

const KiB = 1024;
const SIZE = 1024 * KiB + 777;
const KEY = await importAesKey(crypto.getRandomValues(new Uint8Array(32)));

async function withStore(
  fn: (store: ChunkStore, drives: Drive[]) => Promise<void>,
  opts: { cpu?: CpuPool } = {},
) {
  const root = await Deno.makeTempDir({ prefix: "chunk-store-test-" });
  const drives: Drive[] = [];
  for (let id = 1; id <= 3; id++) {
    const path = join(root, `d${id}`);
    const drive = {
      id,
      uuid: `u${id}`,
      path,
      shardDir: join(path, "chunks"),
      tmpDir: join(path, "tmp"),
    };
    await Deno.mkdir(drive.tmpDir, { recursive: true });
    drives.push(drive);
  }
  // No metadata: nothing exists, claims are this process's alone.
  const meta = {
    getChunk: () => Promise.resolve(undefined),
    hasChunk: () => Promise.resolve(false),
    claimChunk: () => Promise.resolve(),
    releaseChunk: (_id: string, remove: () => Promise<void>) => remove(),
    collectChunk: (_id: string, remove: () => Promise<void>) => remove(),
  };
  const store = new ChunkStore(meta as unknown as MetaStore, {
    drives: {
      byId: new Map(drives.map((d) => [d.id, d])),
      list: drives,
      missing: [],
      replaced: [],
    },
    layout: { dataShards: 2, parityShards: 1 },
    compression: "auto",
    dedup: false,
    ...opts,
  });
  try {
    await fn(store, drives);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

/** Ranges at segment, shard-block and data-shard boundaries, first and last bytes. */
function ranges(size: number): [number, number][] {
  const half = Math.ceil(size / 2);
  const points = [0, 1, 16 * KiB - 1, 16 * KiB + 1, SEGMENT_SIZE - 1, SEGMENT_SIZE + 3];
  points.push(3 * SEGMENT_SIZE + 100, half - 5, half + 5, size - SEGMENT_SIZE - 1, size - 1);
  const out: [number, number][] = [];
  for (const from of points) {
    for (const to of [from + 1, from + 100, from + SEGMENT_SIZE + 1, size]) {
      if (to <= size && from < to) out.push([from, to]);
    }
  }
  return out;
}

async function expectRanges(
  store: ChunkStore,
  rec: ChunkRecord,
  plain: Uint8Array,
  key?: CryptoKey,
) {
  for (const [from, to] of ranges(plain.byteLength)) {
    const got = await store.readRange(rec, from, to, { key });
    assertBytesEqual(got, plain.subarray(from, to), `${from}-${to}`);
    if (to - from <= 100) {
      assert(store.heldBytes(rec, from, to) < plain.byteLength / 2, `held for ${from}-${to}`);
    }
  }
  assertBytesEqual(await store.readRange(rec, 0, plain.byteLength, { key }), plain, "whole");
}

Deno.test("readRange: stored as it is, compressed and encrypted chunks, by segments", async () => {
  await withStore(async (store) => {
    const cases = [
      { name: "random", plain: randomBytes(SIZE), key: undefined, form: ["none", false] },
      { name: "text", plain: sampleText(SIZE), key: undefined, form: ["zstd", false] },
      { name: "random, encrypted", plain: randomBytes(SIZE), key: KEY, form: ["none", true] },
      { name: "text, encrypted", plain: sampleText(SIZE), key: KEY, form: ["zstd", true] },
    ];
    for (const c of cases) {
      const rec = await store.write(c.plain, { key: c.key });
      await store.claims.release(rec.id, () => Promise.resolve());
      assertEquals([rec.compression, rec.encrypted], c.form, c.name);
      const segmented = rec.compression === "zstd" || rec.encrypted;
      assertEquals(rec.segmentSize, segmented ? SEGMENT_SIZE : undefined, c.name);
      await expectRanges(store, rec, c.plain, c.key);
    }
  });
});

Deno.test("readRange: a damaged data shard under a segmented range is rebuilt and healed", async () => {
  await withStore(async (store, drives) => {
    const plain = sampleText(SIZE);
    const rec = await store.write(plain, { key: KEY });
    const from = SIZE - 5000;
    // Damage in the middle of data shard 0 (the table is in its first block): not read.
    const path0 = shardPath(drives.find((d) => d.id === rec.drives[0])!, rec.id, 0);
    const shard0 = await Deno.readFile(path0);
    const damaged0 = shard0.slice();
    damaged0[shard0.byteLength >> 1] ^= 0x01;
    await Deno.writeFile(path0, damaged0);
    assertBytesEqual(
      await store.readRange(rec, from, SIZE - 10, { key: KEY }),
      plain.subarray(from, SIZE - 10),
    );
    assertBytesEqual(await Deno.readFile(path0), damaged0, "the damage outside was not read");
    await Deno.writeFile(path0, shard0);
    const path = shardPath(drives.find((d) => d.id === rec.drives[1])!, rec.id, 1);
    const original = await Deno.readFile(path);
    const bad = original.slice();
    bad[bad.byteLength - 1000] ^= 0x10;
    await Deno.writeFile(path, bad);
    assertBytesEqual(
      await store.readRange(rec, from, SIZE - 10, { key: KEY }),
      plain.subarray(from, SIZE - 10),
    );
    assertBytesEqual(await Deno.readFile(path), original, "healed");
    await Deno.remove(path);
    assertBytesEqual(
      await store.readRange(rec, from, SIZE - 10, { key: KEY }),
      plain.subarray(from, SIZE - 10),
    );
    assertBytesEqual(await Deno.readFile(path), original, "rewritten");
  });
});

Deno.test("readRange: chunks in the one-piece form (written before segments) stay readable", async () => {
  await withStore(async (store, drives) => {
    for (
      const [name, plain, key] of [
        ["text", sampleText(SIZE), undefined],
        ["text, encrypted", sampleText(SIZE), KEY],
        ["random, encrypted", randomBytes(SIZE), KEY],
      ] as const
    ) {
      const id = crypto.randomUUID().replaceAll("-", "").padEnd(64, "0");
      const { bytes, form } = await encodeChunk(plain, {
        compression: "auto",
        key,
        aad: key ? new TextEncoder().encode(id) : undefined,
      });
      assertEquals(form.segmentSize, undefined, name);
      const shards = split(bytes, 2);
      const parity = [new Uint8Array(shards[0].byteLength)];
      new ReedSolomon(2, 1).encode(shards, parity);
      await Promise.all([...shards, ...parity].map((s, i) => writeShard(drives[i], id, i, s)));
      const rec: ChunkRecord = {
        id,
        plainSize: plain.byteLength,
        storedSize: bytes.byteLength,
        compression: form.compression,
        encrypted: form.encrypted,
        dataShards: 2,
        parityShards: 1,
        drives: [1, 2, 3],
      };
      for (const [from, to] of [[0, 1], [SIZE - 1, SIZE], [5000, 90000], [0, SIZE]]) {
        assertBytesEqual(
          await store.readRange(rec, from, to, { key }),
          plain.subarray(from, to),
          name,
        );
        assertEquals(store.heldBytes(rec, from, to), SIZE, `${name}: decoded whole`);
      }
    }
  });
});

Deno.test("write gives back the compressed form once written; the chunk reads back", async () => {
  const cpu = new CpuPool(0);
  const made: Uint8Array[] = [];
  const chunk = cpu.chunk.bind(cpu);
  cpu.chunk = (plain) => {
    const work = chunk(plain);
    return {
      ...work,
      compress: async (...args) => {
        const packed = await work.compress(...args);
        if (packed) made.push(packed);
        return packed;
      },
    };
  };
  await withStore(async (store) => {
    const plain = sampleText(SIZE);
    const rec = await store.write(plain);
    assertEquals([rec.compression, made.length], ["zstd", 1]);
    assertEquals(made[0].byteLength, 0, "its memory was given back");
    assertEquals(plain.byteLength, SIZE, "the caller's plaintext stays");
    assertBytesEqual(await store.read(rec), plain);
  }, { cpu });
});
