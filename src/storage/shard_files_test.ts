import { assert, assertBytesEqual, assertEquals } from "../../tests/integration/assert.ts";
import zlib from "node:zlib";
import { join } from "node:path";
import type { Drive } from "./drives.ts";
import {
  BLOCK_SIZE,
  HEADER_SIZE,
  readShard,
  readShardRange,
  removeShard,
  shardFileSize,
  shardPath,
  shardPresent,
  type ShardRead,
  writeShard,
} from "./shard_files.ts";
import { keptFileCount, KeptFiles } from "./kept_files.ts";

const crc32 = (zlib as unknown as { crc32: (d: Uint8Array) => number }).crc32;
const ID = "ab" + "0".repeat(62);

/** readShardRange into a fresh buffer: the bytes, or the state when not ok. */
async function rangeOf(
  drive: Drive,
  index: number,
  length: number,
  from: number,
  to: number,
  files?: KeptFiles,
): Promise<ShardRead> {
  const into = new Uint8Array(to - from);
  const r = await readShardRange(drive, ID, index, length, from, to, into, files);
  return r.state === "ok" ? { state: "ok", payload: into } : r;
}

async function withDrive(fn: (drive: Drive) => Promise<void>): Promise<void> {
  const path = await Deno.makeTempDir({ prefix: "shard-files-" });
  const drive = {
    id: 1,
    uuid: "u",
    path,
    shardDir: join(path, "chunks"),
    tmpDir: join(path, "tmp"),
  };
  await Deno.mkdir(drive.tmpDir);
  try {
    await fn(drive);
  } finally {
    await Deno.remove(path, { recursive: true });
  }
}

function payloadOf(size: number): Uint8Array {
  const p = new Uint8Array(size);
  for (let i = 0; i < size; i++) p[i] = (i * 31 + (i >> 11)) & 0xff;
  return p;
}

/** Writes a shard in the version 1 format (one CRC-32 over the payload), as older servers did. */
async function writeV1(drive: Drive, index: number, payload: Uint8Array): Promise<void> {
  const h = new Uint8Array(HEADER_SIZE);
  const v = new DataView(h.buffer);
  v.setUint32(0, 0x53545348);
  v.setUint8(4, 1);
  v.setUint8(5, index);
  v.setUint32(8, payload.byteLength);
  v.setUint32(12, crc32(payload));
  const file = shardPath(drive, ID, index);
  await Deno.mkdir(join(file, ".."), { recursive: true });
  const bytes = new Uint8Array(HEADER_SIZE + payload.byteLength);
  bytes.set(h);
  bytes.set(payload, HEADER_SIZE);
  await Deno.writeFile(file, bytes);
}

const SIZE = 3 * BLOCK_SIZE + 1234;
/** Every range between points at, before and after each block boundary, first and last bytes. */
const POINTS = [0, 1, 2, SIZE - 1, SIZE];
for (let b = 1; b <= 3; b++) POINTS.push(b * BLOCK_SIZE - 1, b * BLOCK_SIZE, b * BLOCK_SIZE + 1);
const RANGES: [number, number][] = POINTS.flatMap((from) =>
  POINTS.filter((to) => to >= from).map((to): [number, number] => [from, to])
);

Deno.test("a shard is written with per-block checksums and read whole or by range", async () => {
  await withDrive(async (drive) => {
    const payload = payloadOf(SIZE);
    await writeShard(drive, ID, 2, payload);
    const file = await Deno.readFile(shardPath(drive, ID, 2));
    assertEquals(file.byteLength, shardFileSize(SIZE));
    assertEquals(file[4], 2, "format version");
    assert(await shardPresent(drive, ID, 2, SIZE));
    const whole = await readShard(drive, ID, 2, SIZE);
    assert(whole.state === "ok");
    assertBytesEqual(whole.payload, payload);
    for (const [from, to] of RANGES) {
      const r = await rangeOf(drive, 2, SIZE, from, to);
      assert(r.state === "ok", `${from}-${to}: ${JSON.stringify(r)}`);
      assertBytesEqual(r.payload, payload.subarray(from, to), `${from}-${to}`);
    }
    assertEquals((await rangeOf(drive, 3, SIZE, 0, 1)).state, "missing");
    assertEquals((await rangeOf(drive, 2, SIZE + 1, 0, 1)).state, "corrupt");
  });
});

Deno.test("a flipped byte fails the ranges over its block, and the whole read", async () => {
  await withDrive(async (drive) => {
    const payload = payloadOf(SIZE);
    await writeShard(drive, ID, 0, payload);
    const path = shardPath(drive, ID, 0);
    const file = await Deno.readFile(path);
    const start = shardFileSize(SIZE) - SIZE;
    file[start + 2 * BLOCK_SIZE + 10] ^= 0x40; // in block 2
    await Deno.writeFile(path, file);
    assertEquals((await readShard(drive, ID, 0, SIZE)).state, "corrupt");
    const across = await rangeOf(drive, 0, SIZE, 2 * BLOCK_SIZE - 1, 2 * BLOCK_SIZE);
    assert(across.state === "ok", "a range of block 1 does not read block 2");
    assertBytesEqual(across.payload, payload.subarray(2 * BLOCK_SIZE - 1, 2 * BLOCK_SIZE));
    const r = await rangeOf(drive, 0, SIZE, 2 * BLOCK_SIZE + 100, 2 * BLOCK_SIZE + 101);
    assertEquals(r.state, "corrupt");

    // A damaged block table is caught too.
    await writeShard(drive, ID, 0, payload);
    const again = await Deno.readFile(path);
    again[HEADER_SIZE + 1] ^= 1;
    await Deno.writeFile(path, again);
    assertEquals((await rangeOf(drive, 0, SIZE, 0, 1)).state, "corrupt");

    // A truncated file: the blocks that are gone are not "read".
    await writeShard(drive, ID, 0, payload);
    await Deno.truncate(path, start + BLOCK_SIZE);
    assertEquals((await rangeOf(drive, 0, SIZE, SIZE - 1, SIZE)).state, "corrupt");
    assertEquals((await readShard(drive, ID, 0, SIZE)).state, "corrupt");
    assert(!(await shardPresent(drive, ID, 0, SIZE)));
  });
});

Deno.test("version 1 shards (one checksum) stay readable, whole and by range", async () => {
  await withDrive(async (drive) => {
    const payload = payloadOf(SIZE);
    await writeV1(drive, 1, payload);
    assert(await shardPresent(drive, ID, 1, SIZE));
    const whole = await readShard(drive, ID, 1, SIZE);
    assert(whole.state === "ok");
    assertBytesEqual(whole.payload, payload);
    for (const [from, to] of RANGES) {
      const r = await rangeOf(drive, 1, SIZE, from, to);
      assert(r.state === "ok", `${from}-${to}`);
      assertBytesEqual(r.payload, payload.subarray(from, to));
    }
    const bytes = await Deno.readFile(shardPath(drive, ID, 1));
    bytes[HEADER_SIZE + 7] ^= 1;
    await Deno.writeFile(shardPath(drive, ID, 1), bytes);
    assertEquals((await rangeOf(drive, 1, SIZE, SIZE - 1, SIZE)).state, "corrupt");
  });
});

Deno.test("range reads keep a shard's head: a file replaced behind it is read again, a flipped byte still caught", async () => {
  await withDrive(async (drive) => {
    await withDrive(async (other) => {
      const path = shardPath(drive, ID, 0);
      const a = payloadOf(SIZE);
      const b = a.map((x) => x ^ 0x5a);
      await writeShard(drive, ID, 0, a);
      await writeShard(other, ID, 0, b);
      const first = await rangeOf(drive, 0, SIZE, BLOCK_SIZE, 3 * BLOCK_SIZE);
      assert(first.state === "ok");
      assertBytesEqual(first.payload, a.subarray(BLOCK_SIZE, 3 * BLOCK_SIZE));

      // Replaced without writeShard (its head kept from the read above): not "corrupt".
      await Deno.writeFile(path, await Deno.readFile(shardPath(other, ID, 0)));
      for (const [from, to] of [[BLOCK_SIZE, 3 * BLOCK_SIZE], [5, SIZE - 7]]) {
        const r = await rangeOf(drive, 0, SIZE, from, to);
        assert(r.state === "ok", `${from}-${to}: ${r.state}`);
        assertBytesEqual(r.payload, b.subarray(from, to));
      }

      // A flipped byte under a range is caught with the head kept, and the file still read.
      const bytes = await Deno.readFile(path);
      bytes[shardFileSize(SIZE) - SIZE + 2 * BLOCK_SIZE + 3] ^= 1;
      await Deno.writeFile(path, bytes);
      assertEquals(
        (await rangeOf(drive, 0, SIZE, 2 * BLOCK_SIZE, 3 * BLOCK_SIZE)).state,
        "corrupt",
      );
      const clean = await rangeOf(drive, 0, SIZE, 0, BLOCK_SIZE);
      assert(clean.state === "ok");
      assertBytesEqual(clean.payload, b.subarray(0, BLOCK_SIZE));

      // Removed and written again through the module: read as the new file.
      await removeShard(drive, ID, 0);
      assertEquals((await rangeOf(drive, 0, SIZE, 0, 1)).state, "missing");
      await writeShard(drive, ID, 0, a);
      const rewritten = await rangeOf(drive, 0, SIZE, 0, SIZE);
      assert(rewritten.state === "ok");
      assertBytesEqual(rewritten.payload, a);
    });
  });
});

Deno.test("range reads through a reader's kept files: one file for every piece, read from its start for a head not kept", async () => {
  await withDrive(async (drive) => {
    const a = payloadOf(SIZE);
    await writeShard(drive, ID, 0, a);
    const files = new KeptFiles();
    try {
      for (const [from, to] of [[0, BLOCK_SIZE], [2 * BLOCK_SIZE, SIZE], [7, 9]]) {
        const r = await rangeOf(drive, 0, SIZE, from, to, files);
        assert(r.state === "ok", `${from}-${to}: ${r.state}`);
        assertBytesEqual(r.payload, a.subarray(from, to));
        assertEquals(keptFileCount(), 1, "the one file kept");
      }
      const path = shardPath(drive, ID, 0);
      // Written again: its kept head goes, and the head is read from the kept file, wherever the
      // last read left it.
      await writeShard(drive, ID, 0, a);
      const r = await rangeOf(drive, 0, SIZE, 5, SIZE - 7, files);
      assert(r.state === "ok", `after the rewrite: ${r.state}`);
      assertBytesEqual(r.payload, a.subarray(5, SIZE - 7));

      // Healed behind a kept file: the kept file still reads the one it opened, damaged since
      // here; the read is made again afresh and finds the good file.
      files.release();
      await rangeOf(drive, 0, SIZE, 0, 1, files);
      assertEquals(keptFileCount(), 1);
      const replaced = await Deno.open(path, { write: true });
      try {
        await writeShard(drive, ID, 0, a);
        replaced.seekSync(shardFileSize(SIZE) - SIZE + 10, Deno.SeekMode.Start);
        await replaced.write(new Uint8Array([1, 2, 3]));
      } finally {
        replaced.close();
      }
      const healed = await rangeOf(drive, 0, SIZE, 0, BLOCK_SIZE, files);
      assert(healed.state === "ok", `read through a kept file of a healed shard: ${healed.state}`);
      assertBytesEqual(healed.payload, a.subarray(0, BLOCK_SIZE));

      // A read that finds damage does not keep its file. (The kept file is still the one
      // replaced by the rewrite: let go of it first.)
      files.release();
      const bytes = await Deno.readFile(path);
      bytes[shardFileSize(SIZE) - SIZE + 2 * BLOCK_SIZE + 3] ^= 1;
      await Deno.writeFile(path, bytes);
      const bad = await rangeOf(drive, 0, SIZE, 2 * BLOCK_SIZE, 3 * BLOCK_SIZE, files);
      assertEquals(bad.state, "corrupt");
      assertEquals(keptFileCount(), 0);
    } finally {
      files.close();
    }
  });
});
