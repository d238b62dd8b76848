// A GET that has started is answered with the whole version it started on, even when the object
// is deleted or overwritten meanwhile: the freed chunks' shard files stay until the last reader
// of them is done (src/storage/read_pins.ts), then go. Before, the reclaimer unlinked them at
// once and the response was cut at the next piece.
import { assert, assertEquals } from "./assert.ts";
import { randomBytes, sha256Hex, shardFileCount, startServer, type TestServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";

const BUCKET = "reads";
const KiB = 1024;
const MiB = 1024 * KiB;
const CHUNK = 256 * KiB;

/** Reads about `bytes` of the body, then the rest after `pause()` ran; the whole body. */
async function readAcross(
  res: Response,
  bytes: number,
  pause: () => Promise<void>,
): Promise<Uint8Array> {
  const reader = res.body!.getReader();
  const parts: Uint8Array[] = [];
  let got = 0;
  let paused = false;
  while (true) {
    if (!paused && got >= bytes) {
      paused = true;
      await pause();
    }
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value.slice());
    got += value.byteLength;
  }
  const out = new Uint8Array(got);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

async function put(server: TestServer, key: string, body: Uint8Array): Promise<void> {
  const res = await signedFetch(server, { method: "PUT", path: objectPath(BUCKET, key), body });
  assertEquals(res.status, 200);
  await res.body?.cancel();
}

/** Polls until `fn` holds (20 ms apart, at most 10 s). */
async function until(what: string, fn: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + 10_000;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`Timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test("a GET in progress gets the whole object when it is deleted or overwritten meanwhile", async () => {
  // 256 KiB chunks: a 24 MiB object is 96 of them. It is larger than what the sockets' buffers
  // on both sides hold, so the server is still reading it when the reader pauses.
  const server = await startServer({ env: { STORE_CHUNK_SIZE: String(CHUNK) } });
  try {
    assertEquals((await signedFetch(server, { method: "PUT", path: `/${BUCKET}` })).status, 200);
    const first = randomBytes(24 * MiB + 321);
    const second = randomBytes(MiB + 7);
    await put(server, "deleted", first);
    await put(server, "overwritten", first.slice().reverse());
    const files = await shardFileCount(server.dataDir);
    assert(files >= 192, `expected the two objects' shard files, found ${files}`);

    const get = (key: string, headers?: Record<string, string>) =>
      signedFetch(server, { method: "GET", path: objectPath(BUCKET, key), headers });
    const reading = await get("deleted");
    const ranged = await get("overwritten", { range: "bytes=100000-19999999" });
    assertEquals([reading.status, ranged.status], [200, 206]);

    // Both readers have a part of their object; then it is deleted, and the other one
    // overwritten, and their freed chunks are handed to the reclaimer.
    const bodies = await Promise.all([
      readAcross(reading, 200 * KiB, async () => {
        const res = await signedFetch(server, {
          method: "DELETE",
          path: objectPath(BUCKET, "deleted"),
        });
        assertEquals(res.status, 204);
        await res.body?.cancel();
        // Time for the reclaimer to have removed what it may.
        await new Promise((r) => setTimeout(r, 300));
      }),
      readAcross(ranged, 100 * KiB, async () => {
        await put(server, "overwritten", second);
        await new Promise((r) => setTimeout(r, 300));
      }),
    ]);
    assertEquals(await sha256Hex(bodies[0]), await sha256Hex(first), "the deleted object's body");
    assertEquals(
      await sha256Hex(bodies[1]),
      await sha256Hex(first.slice().reverse().subarray(100000, 20000000)),
      "the overwritten object's range",
    );

    // A new GET sees the state after the writes.
    const gone = await get("deleted");
    assertEquals(gone.status, 404);
    await gone.body?.cancel();
    const now = await get("overwritten");
    assertEquals(await sha256Hex(new Uint8Array(await now.arrayBuffer())), await sha256Hex(second));

    // Once the readers are done the freed chunks' files go: only the new object's remain.
    await until(
      "the freed shard files removed",
      async () => await shardFileCount(server.dataDir) === Math.ceil(second.byteLength / CHUNK),
    );
  } finally {
    await server.stop();
  }
});

Deno.test("a GET abandoned half-way lets the chunks it pinned go", async () => {
  const server = await startServer({ env: { STORE_CHUNK_SIZE: String(CHUNK) } });
  try {
    assertEquals((await signedFetch(server, { method: "PUT", path: `/${BUCKET}` })).status, 200);
    await put(server, "o", randomBytes(24 * MiB));
    const res = await signedFetch(server, { method: "GET", path: objectPath(BUCKET, "o") });
    const reader = res.body!.getReader();
    await reader.read();
    const del = await signedFetch(server, { method: "DELETE", path: objectPath(BUCKET, "o") });
    assertEquals(del.status, 204);
    await new Promise((r) => setTimeout(r, 300));
    assert(await shardFileCount(server.dataDir) > 0, "the files went while the GET was running");
    await reader.cancel();
    await until("the files removed", async () => await shardFileCount(server.dataDir) === 0);
  } finally {
    await server.stop();
  }
});
