// The chunk codec end to end: compression where it pays (and only then), clients always seeing
// the original bytes, size and ETag, exact range reads across chunk boundaries on compressed
// and erasure-coded objects, and objects written under one storage configuration staying
// readable under another.
import { assert, assertEquals } from "./assert.ts";
import { randomBytes, type TestServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";
import {
  checkConsistency,
  CHUNK,
  chunkRows,
  concat,
  copy,
  createBucket,
  del,
  expectBytes,
  KiB,
  makeSetup,
  md5Etag,
  objectChunks,
  putOk,
  removeSetup,
  startFresh,
  startStorage,
  textBytes,
} from "./storage_helpers.ts";

const BUCKET = "codec";

interface Range {
  header: string;
  from: number;
  to: number;
  total: number;
}

/** Ranges around the chunk boundaries of an object of `size` bytes cut in `chunk`-byte chunks. */
function rangesFor(size: number, chunk: number): Range[] {
  const r = (header: string, from: number, to: number): Range => ({
    header,
    from,
    to: Math.min(to, size - 1),
    total: size,
  });
  const out = [
    r("bytes=0-0", 0, 0),
    r(`bytes=${size - 1}-${size - 1}`, size - 1, size - 1),
    r(`bytes=${chunk - 1}-${chunk}`, chunk - 1, chunk),
    r(`bytes=${chunk - 100}-${2 * chunk + 99}`, chunk - 100, 2 * chunk + 99),
    r(`bytes=1-${3 * chunk}`, 1, 3 * chunk),
    r(`bytes=${2 * chunk}-${3 * chunk - 1}`, 2 * chunk, 3 * chunk - 1),
    r(`bytes=${chunk}-${chunk}`, chunk, chunk),
    r("bytes=-1", size - 1, size - 1),
    r("bytes=-1000", size - 1000, size - 1),
    r(`bytes=-${chunk + 1500}`, size - chunk - 1500, size - 1),
    r(`bytes=-${2 * chunk + 10}`, size - 2 * chunk - 10, size - 1),
    r(`bytes=${3 * chunk + 7}-`, 3 * chunk + 7, size - 1),
    r(`bytes=100-${size * 10}`, 100, size * 10),
    r(`bytes=0-${size - 1}`, 0, size - 1),
  ];
  return out.filter((x) => x.from <= x.to && x.from >= 0);
}

async function checkRanges(
  server: TestServer,
  key: string,
  content: Uint8Array,
  chunk: number,
): Promise<void> {
  for (const range of rangesFor(content.byteLength, chunk)) {
    await expectBytes(server, BUCKET, key, content.subarray(range.from, range.to + 1), range);
  }
}

async function head(server: TestServer, key: string): Promise<Headers> {
  const res = await signedFetch(server, { method: "HEAD", path: objectPath(BUCKET, key) });
  await res.body?.cancel();
  assertEquals(res.status, 200, `HEAD ${key}`);
  return res.headers;
}

/** GET and HEAD show the original size and the MD5 ETag of the plaintext. */
async function checkWhole(server: TestServer, key: string, content: Uint8Array): Promise<void> {
  await expectBytes(server, BUCKET, key, content);
  const h = await head(server, key);
  assertEquals(h.get("content-length"), String(content.byteLength), `HEAD ${key} size`);
  assertEquals(h.get("etag"), md5Etag(content), `HEAD ${key} ETag`);
}

Deno.test("codec: compression in auto mode, with erasure coding 2+1", async (t) => {
  const setup = await makeSetup(3);
  const server = await startFresh(setup, { ec: "2+1", compression: "auto" });
  try {
    await createBucket(server, BUCKET);
    const text = textBytes(4 * CHUNK + 1234, 7);
    const random = randomBytes(4 * CHUNK + 777);
    const mixed = concat(textBytes(CHUNK, 9), randomBytes(CHUNK), textBytes(CHUNK + 5000, 11));

    await t.step("compressible chunks are stored as zstd, well below their size", async () => {
      await putOk(server, BUCKET, "text.txt", text);
      const chunks = objectChunks(setup, BUCKET, "text.txt");
      assertEquals(chunks.length, 5);
      for (const c of chunks.slice(0, 4)) {
        assertEquals(c.compression, "zstd", `chunk at ${c.offset}`);
        assertEquals(c.plainSize, CHUNK);
        assert(c.storedSize < c.plainSize * 0.6, `stored ${c.storedSize} of ${c.plainSize}`);
        assertEquals([c.k, c.m], [2, 1]);
      }
      // A tail below 4 KiB is not worth a zstd frame in auto mode.
      assertEquals(chunks[4].plainSize, 1234);
      assertEquals(chunks[4].compression, "none");
      await checkWhole(server, "text.txt", text);
    });

    await t.step("random data stays uncompressed", async () => {
      await putOk(server, BUCKET, "random.bin", random);
      const chunks = objectChunks(setup, BUCKET, "random.bin");
      assertEquals(chunks.length, 5);
      for (const c of chunks) {
        assertEquals(c.compression, "none");
        assertEquals(c.storedSize, c.plainSize);
      }
      await checkWhole(server, "random.bin", random);
    });

    await t.step("the choice is made per chunk", async () => {
      await putOk(server, BUCKET, "mixed", mixed);
      assertEquals(
        objectChunks(setup, BUCKET, "mixed").map((c) => c.compression),
        ["zstd", "none", "zstd", "zstd"],
      );
      await checkWhole(server, "mixed", mixed);
    });

    await t.step("range reads across chunk boundaries return exact bytes", async () => {
      await checkRanges(server, "text.txt", text, CHUNK);
      await checkRanges(server, "random.bin", random, CHUNK);
      await checkRanges(server, "mixed", mixed, CHUNK);
    });

    await t.step("an unsatisfiable range is refused, the object untouched", async () => {
      const res = await signedFetch(server, {
        method: "GET",
        path: objectPath(BUCKET, "text.txt"),
        headers: { range: `bytes=${text.byteLength}-` },
      });
      await res.body?.cancel();
      assertEquals(res.status, 416);
      await checkConsistency(setup, "after the reads");
    });
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

Deno.test("codec: STORE_COMPRESSION=off stores everything as it is", async () => {
  const setup = await makeSetup(1);
  const server = await startFresh(setup, { compression: "off" });
  try {
    await createBucket(server, BUCKET);
    const text = textBytes(3 * CHUNK + 10, 3);
    await putOk(server, BUCKET, "text.txt", text);
    const chunks = objectChunks(setup, BUCKET, "text.txt");
    assertEquals(chunks.length, 4);
    for (const c of chunks) {
      assertEquals(c.compression, "none");
      assertEquals(c.storedSize, c.plainSize);
      assertEquals([c.k, c.m], [1, 0], "one drive: one copy");
    }
    await checkWhole(server, "text.txt", text);
    await checkRanges(server, "text.txt", text, CHUNK);
    await checkConsistency(setup, "compression off");
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

Deno.test("codec: STORE_COMPRESSION=on compresses what shrinks, keeps the rest", async () => {
  const setup = await makeSetup(1);
  const server = await startFresh(setup, { compression: "on" });
  try {
    await createBucket(server, BUCKET);
    // Small text chunks (below the auto-mode threshold) are compressed too when forced.
    const text = concat(textBytes(2 * CHUNK, 5), textBytes(2000, 6));
    const random = randomBytes(2 * CHUNK + 50);
    await putOk(server, BUCKET, "text", text);
    await putOk(server, BUCKET, "random", random);
    assertEquals(
      objectChunks(setup, BUCKET, "text").map((c) => c.compression),
      ["zstd", "zstd", "zstd"],
    );
    for (const c of objectChunks(setup, BUCKET, "random")) {
      assertEquals(c.compression, "none", "a larger zstd frame is not kept");
      assertEquals(c.storedSize, c.plainSize);
    }
    await checkWhole(server, "text", text);
    await checkWhole(server, "random", random);
    await checkRanges(server, "text", text, CHUNK);
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

Deno.test("codec: objects stay readable when the storage settings change", async (t) => {
  const setup = await makeSetup(3);
  const old = {
    text: textBytes(5 * CHUNK + 321, 21),
    random: randomBytes(3 * CHUNK + 11),
    dup: randomBytes(2 * CHUNK + 5),
    small: randomBytes(30 * KiB),
  };
  const fresh = {
    text: old.text, // same bytes, under other settings
    random: randomBytes(3 * 128 * KiB + 99),
  };
  let server: TestServer | undefined;
  const verifyOld = async (chunk: number) => {
    await checkWhole(server!, "old/text", old.text);
    await checkWhole(server!, "old/random", old.random);
    await checkWhole(server!, "old/small", old.small);
    await checkRanges(server!, "old/text", old.text, chunk);
    await checkRanges(server!, "old/random", old.random, chunk);
  };
  try {
    await t.step("written with zstd, 2+1 over three drives, 64 KiB chunks, dedup", async () => {
      server = await startStorage(setup, {
        compression: "on",
        ec: "2+1",
        chunkSize: CHUNK,
        dedup: true,
      });
      await createBucket(server, BUCKET);
      await putOk(server, BUCKET, "old/text", old.text);
      await putOk(server, BUCKET, "old/random", old.random);
      await putOk(server, BUCKET, "old/dup1", old.dup);
      await putOk(server, BUCKET, "old/dup2", old.dup);
      await putOk(server, BUCKET, "old/small", old.small);
      const rows = chunkRows(setup);
      assertEquals(rows.length, 6 + 4 + 3, "the duplicate stored once");
      assert(rows.every((c) => c.k === 2 && c.m === 1), "all 2+1");
      assert(
        objectChunks(setup, BUCKET, "old/text").every((c) => c.compression === "zstd"),
        "text compressed",
      );
      await verifyOld(CHUNK);
      await checkConsistency(setup, "first settings");
      await server.stop();
      server = undefined;
    });

    await t.step("read and written with no compression, 1+0, 128 KiB, no dedup", async () => {
      server = await startStorage(setup, {
        compression: "off",
        ec: "1+0",
        chunkSize: 128 * KiB,
        dedup: false,
      });
      await verifyOld(CHUNK);
      await checkWhole(server, "old/dup1", old.dup);
      await putOk(server, BUCKET, "new/text", fresh.text);
      await putOk(server, BUCKET, "new/random", fresh.random);
      for (const key of ["new/text", "new/random"]) {
        const chunks = objectChunks(setup, BUCKET, key);
        assert(chunks.every((c) => c.k === 1 && c.m === 0), `${key}: 1+0`);
        assert(chunks.every((c) => c.compression === "none"), `${key}: uncompressed`);
        assertEquals(chunks[0].plainSize, 128 * KiB, `${key}: 128 KiB chunks`);
      }
      await checkWhole(server, "new/text", fresh.text);
      await checkWhole(server, "new/random", fresh.random);
      await checkRanges(server, "new/text", fresh.text, 128 * KiB);
      await checkRanges(server, "new/random", fresh.random, 128 * KiB);
      // Old chunks are shared by a copy, freed by an overwrite and a delete.
      assertEquals((await copy(server, BUCKET, "new/copy", `/${BUCKET}/old/text`)).status, 200);
      await putOk(server, BUCKET, "old/dup1", randomBytes(CHUNK + 1));
      await checkWhole(server, "old/dup2", old.dup);
      assertEquals(await del(server, BUCKET, "old/random"), 204);
      await checkConsistency(setup, "second settings");
      await server.stop();
      server = undefined;
    });

    await t.step("back to auto, 2+1, 64 KiB, dedup, drives listed in another order", async () => {
      const reordered = { root: setup.root, drives: [...setup.drives].reverse() };
      server = await startStorage(reordered, {
        compression: "auto",
        ec: "2+1",
        chunkSize: CHUNK,
        dedup: true,
      });
      await checkWhole(server, "old/text", old.text);
      await checkRanges(server, "old/text", old.text, CHUNK);
      await checkWhole(server, "old/small", old.small);
      await checkWhole(server, "old/dup2", old.dup);
      await checkWhole(server, "new/copy", old.text);
      await checkWhole(server, "new/text", fresh.text);
      await checkWhole(server, "new/random", fresh.random);
      // The same bytes again: the 64 KiB chunks of old/text are found and shared.
      const before = chunkRows(setup).length;
      await putOk(server, BUCKET, "again/text", old.text);
      assertEquals(chunkRows(setup).length, before, "no new chunks for known content");
      await checkWhole(server, "again/text", old.text);
      await checkConsistency(setup, "third settings");
      for (const key of ["old/text", "new/copy", "again/text", "new/text"]) {
        assertEquals(await del(server, BUCKET, key), 204);
      }
      await checkWhole(server, "new/random", fresh.random);
      await checkConsistency(setup, "after deletes under the third settings");
    });
  } finally {
    await server?.stop();
    await removeSetup(setup);
  }
});
