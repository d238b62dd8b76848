// The write path reading a body straight into its chunk buffers (a DirectBody, as RequestBody's
// `direct` gives for plain bodies): what is stored, where the bytes were read to, and failures.
import { assert, assertBytesEqual, assertEquals } from "../../tests/integration/assert.ts";
import { S3Error } from "../http/errors.ts";
import type { ObjectLayer } from "./layer.ts";
import type { DirectBody } from "./write_pipeline.ts";
import { createTestBucket, withTestLayer } from "./test_layer.ts";

const MiB = 1024 * 1024;

/** `size` bytes: a random 64 KiB block over and over (random data, quick to make). */
function randomBytes(size: number): Uint8Array {
  const block = crypto.getRandomValues(new Uint8Array(65536));
  const out = new Uint8Array(size);
  for (let at = 0; at < size; at += block.length) out.set(block.subarray(0, size - at), at);
  return out;
}

/** Hands out `data` in reads of at most `most` bytes (fewer than asked, like a socket). */
function directBody(data: Uint8Array, most: number, views: Uint8Array[] = []): DirectBody {
  let at = 0;
  return {
    readInto(into) {
      views.push(into);
      const n = Math.min(into.byteLength, most, data.byteLength - at);
      into.set(data.subarray(at, at + n));
      at += n;
      return Promise.resolve(n);
    },
  };
}

function put(layer: ObjectLayer, key: string, body: DirectBody) {
  return layer.putObject({
    bucket: "b",
    key,
    body,
    contentType: "application/octet-stream",
    userMeta: {},
    headers: {},
    owner: "owner-id",
  });
}

async function stored(layer: ObjectLayer, key: string): Promise<Uint8Array> {
  const opened = await layer.openObject(await layer.headObject("b", key));
  const body = opened.body;
  return body instanceof Uint8Array ? body : new Uint8Array(await new Response(body).arrayBuffer());
}

Deno.test("a direct body is read into the chunk buffers themselves and stored whole", async () => {
  await withTestLayer(async (layer) => {
    await createTestBucket(layer.meta, "b");
    const big = randomBytes(2 * MiB + 12345);
    const views: Uint8Array[] = [];
    const version = await put(layer, "k", directBody(big, 100_003, views));
    assertEquals(version.size, big.byteLength);
    assertBytesEqual(await stored(layer, "k"), big);
    // Every read but the first (a small buffer, for bodies that turn out inline) and the one
    // after each full buffer, that one and the two chunks (which may find the end), went into a
    // chunk buffer in shared memory, which the CPU workers and the shard writes use as it is.
    const intoChunks = views.filter((v) => v.buffer instanceof SharedArrayBuffer);
    assert(intoChunks.length > 20, `${intoChunks.length} of ${views.length} reads`);
    for (const view of intoChunks) assertEquals(view.buffer.byteLength, MiB, "a chunk buffer");
    assertEquals(views.length - intoChunks.length, 1 + 3, "reads anywhere else");

    // A body of whole chunks ends without taking another chunk buffer (all go back).
    const exact = big.subarray(0, 2 * MiB);
    await put(layer, "exact", directBody(exact, 300_007));
    assertBytesEqual(await stored(layer, "exact"), exact);
    // (Given back once their writes settle, a moment after the PUT answered.)
    const inUse = () => layer.writeBuffers.held - layer.writeBuffers.kept;
    for (let i = 0; i < 100 && inUse() > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assertEquals(inUse(), 0, "chunk buffers still held by uploads that ended");

    // Small: stored inline, the same way.
    await put(layer, "small", directBody(big.subarray(0, 1000), 7));
    assertBytesEqual(await stored(layer, "small"), big.subarray(0, 1000));
    await put(layer, "empty", directBody(new Uint8Array(0), 7));
    assertEquals((await stored(layer, "empty")).byteLength, 0);
  }, { prefix: "write-direct-" });
});

Deno.test("a direct body with chunks hardly larger than the first buffer", async () => {
  // The first buffer holds 64 KiB + 1 (the inline limit and a byte): once it is full, the chunk
  // buffer it grows into has less than 64 KiB of room left.
  for (const chunkSize of [64 * 1024 + 1, 100 * 1024, 128 * 1024]) {
    await withTestLayer(async (layer) => {
      await createTestBucket(layer.meta, "b");
      const body = randomBytes(5 * chunkSize + 777);
      for (const most of [65536, 100_000, 1 << 20]) {
        await put(layer, `k${most}`, directBody(body, most));
        assertBytesEqual(await stored(layer, `k${most}`), body, `${chunkSize}, reads of ${most}`);
      }
    }, { prefix: "write-direct-", chunkSize });
  }
});

Deno.test("a direct body that fails midway stores nothing and leaves no chunk behind", async () => {
  await withTestLayer(async (layer, dir) => {
    await createTestBucket(layer.meta, "b");
    let reads = 0;
    const failing: DirectBody = {
      readInto(into) {
        if (++reads > 40) {
          return Promise.reject(new S3Error("IncompleteBody", "The request body ended."));
        }
        into.fill(reads, 0, Math.min(into.byteLength, 65536));
        return Promise.resolve(Math.min(into.byteLength, 65536));
      },
    };
    const err = await put(layer, "k", failing).then(() => undefined, (e) => e);
    assert(err instanceof S3Error && err.code === "IncompleteBody", `${err}`);
    const missing = await layer.headObject("b", "k").then(() => undefined, (e) => e);
    assert(missing instanceof S3Error && missing.code === "NoSuchKey", `${missing}`);
    await layer.chunks.reclaimer.drained();
    assertEquals(await filesUnder(`${dir}/chunks`), 0, "the chunks written before are removed");
  }, { prefix: "write-direct-" });
});

Deno.test("a read given up on when the body stalled keeps its chunk buffer from other uploads", async () => {
  await withTestLayer(async (layer) => {
    await createTestBucket(layer.meta, "b");
    // The stalled upload: its third read into a chunk buffer is given up on (RequestTimeout)
    // while the read from the connection still runs, and lands 50 ms later, as a late client's
    // bytes would.
    let reads = 0;
    let late: Promise<void> = Promise.resolve();
    const stalled: DirectBody = {
      readInto(into) {
        if (into.buffer instanceof SharedArrayBuffer) reads++;
        if (reads === 3) {
          late = new Promise((r) => setTimeout(() => (into.fill(0xee), r()), 50));
          return Promise.reject(new S3Error("RequestTimeout", "The body stalled."));
        }
        const n = Math.min(into.byteLength, 65536);
        into.fill(reads + 1, 0, n);
        return Promise.resolve(n);
      },
      settled: () => late,
    };
    const err = await put(layer, "stalled", stalled).then(() => undefined, (e) => e);
    assert(err instanceof S3Error && err.code === "RequestTimeout", `${err}`);
    // Another upload right after, which has all but its last bytes in its chunk buffer when the
    // late bytes land (its last read waits 100 ms): it must not have been given the stalled
    // upload's buffer.
    const body = randomBytes(MiB - 1000);
    let given = 0;
    const fast = directBody(body, 65536);
    const next: DirectBody = {
      async readInto(into) {
        if (body.byteLength - given < 65536) await new Promise((r) => setTimeout(r, 100));
        const n = await fast.readInto(into);
        given += n;
        return n;
      },
    };
    await put(layer, "next", next);
    assertBytesEqual(await stored(layer, "next"), body, "the next upload's bytes");
  }, { prefix: "write-direct-" });
});

async function filesUnder(path: string): Promise<number> {
  let n = 0;
  for await (const entry of Deno.readDir(path)) {
    n += entry.isDirectory ? await filesUnder(`${path}/${entry.name}`) : 1;
  }
  return n;
}
