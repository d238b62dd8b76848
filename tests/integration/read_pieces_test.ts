// GETs of chunks stored as they are read their pieces into buffers reused once the bytes cut
// from them were written to the socket (src/object/piece_pool.ts). A buffer reused too early
// would put one response's bytes into another: many concurrent downloads of different objects,
// fast and slow readers, whole and ranged, some abandoned half-way, must each get exactly their
// bytes, and the reuse must actually happen.
import { assert, assertBytesEqual, assertEquals } from "./assert.ts";
import { metric, randomBytes, sha256Hex, startServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";

const MiB = 1024 * 1024;
const BUCKET = "pieces";

/** The whole body, read as it comes or with a pause after each read (a slow client). */
async function readAll(res: Response, pauseMs = 0): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const part of res.body!) {
    parts.push(part.slice());
    length += part.byteLength;
    if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
  }
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

Deno.test("concurrent GETs reusing read buffers each get exactly their own bytes", async () => {
  const server = await startServer();
  try {
    assertEquals((await signedFetch(server, { method: "PUT", path: `/${BUCKET}` })).status, 200);
    // Random bytes do not compress: the chunks are stored as they are and read in pieces.
    const objects = Array.from({ length: 4 }, () => randomBytes(9 * MiB + 12_345));
    const digests = await Promise.all(objects.map(sha256Hex));
    for (const [i, body] of objects.entries()) {
      const res = await signedFetch(server, {
        method: "PUT",
        path: objectPath(BUCKET, `o${i}`),
        body,
      });
      assertEquals(res.status, 200);
      await res.body?.cancel();
    }
    const before = await metric(server, "store_read_pieces_reused_total");
    const get = (i: number, headers?: Record<string, string>) =>
      signedFetch(server, { method: "GET", path: objectPath(BUCKET, `o${i}`), headers });

    for (let round = 0; round < 3; round++) {
      const work: Promise<void>[] = [];
      for (let n = 0; n < 12; n++) {
        const i = n % objects.length;
        work.push((async () => {
          const res = await get(i);
          assertEquals(res.status, 200);
          const body = await readAll(res, n % 4 === 3 ? 25 : 0);
          assertEquals(await sha256Hex(body), digests[i], `object o${i}, reader ${n}`);
        })());
      }
      for (let n = 0; n < 8; n++) {
        const i = (n + round) % objects.length;
        const from = (n * 1_234_567 + round * 77_777) % (8 * MiB);
        const to = from + MiB + n * 300_001;
        work.push((async () => {
          const res = await get(i, { range: `bytes=${from}-${to - 1}` });
          assertEquals(res.status, 206);
          assertBytesEqual(
            await readAll(res),
            objects[i].subarray(from, to),
            `o${i} ${from}-${to}`,
          );
        })());
      }
      // Readers that go away half-way: their pieces must not come back while still being sent.
      for (let n = 0; n < 4; n++) {
        work.push((async () => {
          const res = await get(n);
          const reader = res.body!.getReader();
          let got = 0;
          while (got < 2 * MiB) {
            const { value, done } = await reader.read();
            if (done) break;
            got += value.byteLength;
          }
          await reader.cancel();
        })());
      }
      await Promise.all(work);
    }
    const reused = await metric(server, "store_read_pieces_reused_total");
    assert(reused - before > 50, `read buffers were reused (${reused - before} pieces)`);

    // A small range gets a buffer of its size, not a 1 MiB one from the pool (its grant counts
    // only its size: thousands of them would hold a GiB).
    for (let n = 0; n < 20; n++) {
      const from = n * 300_000;
      const res = await get(n % objects.length, { range: `bytes=${from}-${from + 65_535}` });
      assertBytesEqual(
        await readAll(res),
        objects[n % objects.length].subarray(from, from + 65_536),
        `small range ${n}`,
      );
    }
    assertEquals(
      await metric(server, "store_read_pieces_reused_total"),
      reused,
      "small ranges take no pool buffer",
    );
  } finally {
    await server.stop();
  }
});

/** Text-like bytes (16 letters, about 2:1 under zstd): stored compressed, in segments. */
function compressible(size: number): Uint8Array {
  const bytes = randomBytes(size);
  for (let i = 0; i < bytes.length; i++) bytes[i] = 97 + (bytes[i] & 15);
  return bytes;
}

Deno.test("GETs of compressed chunks read them in pieces, into reused buffers, each exactly", async () => {
  const server = await startServer();
  try {
    assertEquals((await signedFetch(server, { method: "PUT", path: `/${BUCKET}` })).status, 200);
    const objects = Array.from({ length: 3 }, () => compressible(9 * MiB + 4_321));
    const digests = await Promise.all(objects.map(sha256Hex));
    for (const [i, body] of objects.entries()) {
      const res = await signedFetch(server, {
        method: "PUT",
        path: objectPath(BUCKET, `c${i}`),
        body,
      });
      assertEquals(res.status, 200);
      await res.body?.cancel();
    }
    const before = await metric(server, "store_read_pieces_reused_total");
    const get = (i: number, headers?: Record<string, string>) =>
      signedFetch(server, { method: "GET", path: objectPath(BUCKET, `c${i}`), headers });
    const work: Promise<void>[] = [];
    for (let n = 0; n < 9; n++) {
      const i = n % objects.length;
      work.push((async () => {
        const res = await get(i);
        assertEquals(res.status, 200);
        const body = await readAll(res, n % 3 === 2 ? 20 : 0);
        assertEquals(await sha256Hex(body), digests[i], `object c${i}, reader ${n}`);
      })());
    }
    // Ranges that start and end inside segments (64 KiB) and cross chunks (4 MiB).
    for (let n = 0; n < 6; n++) {
      const i = n % objects.length;
      const from = 12_345 + n * 1_111_111;
      const to = from + 3 * MiB + 70_001 * n;
      work.push((async () => {
        const res = await get(i, { range: `bytes=${from}-${to - 1}` });
        assertEquals(res.status, 206);
        assertBytesEqual(await readAll(res), objects[i].subarray(from, to), `c${i} ${from}-${to}`);
      })());
    }
    await Promise.all(work);
    const reused = await metric(server, "store_read_pieces_reused_total");
    assert(reused - before > 20, `compressed chunks were read in pieces (${reused - before})`);
  } finally {
    await server.stop();
  }
});
