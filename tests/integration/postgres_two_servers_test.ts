// Two servers sharing one PostgreSQL (each with its own data directory; the shard drives are
// shared directories, as on shared storage): concurrent writes of the same content, overwrites
// and deletes from both must leave every chunk's reference count equal to its references, and
// every object readable from either server, also when one server frees chunks the other is
// deduplicating against at that moment.
import { assert, assertBytesEqual, assertEquals } from "./assert.ts";
import { chunkCounts, startPgMeta, startPgServer, stopServer } from "./postgres_meta_helpers.ts";
import { randomBytes, type TestServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";

const BUCKET = "shared";
const KiB = 1024;

async function put(server: TestServer, key: string, body: Uint8Array): Promise<void> {
  const res = await signedFetch(server, { method: "PUT", path: objectPath(BUCKET, key), body });
  assertEquals(res.status, 200, `${key}: ${await res.text()}`);
}

async function del(server: TestServer, key: string): Promise<void> {
  const res = await signedFetch(server, { method: "DELETE", path: objectPath(BUCKET, key) });
  await res.body?.cancel();
  assertEquals(res.status, 204, key);
}

/** Waits for every operation, then fails with the first failure (none left running). */
async function settled(ops: Promise<void>[]): Promise<void> {
  const failed = (await Promise.allSettled(ops)).find((r) => r.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
}

async function read(server: TestServer, key: string): Promise<Uint8Array | undefined> {
  const res = await signedFetch(server, { method: "GET", path: objectPath(BUCKET, key) });
  if (res.status === 404) {
    await res.body?.cancel();
    return undefined;
  }
  assertEquals(res.status, 200, key);
  return new Uint8Array(await res.arrayBuffer());
}

Deno.test("two servers on one PostgreSQL keep chunk reference counts exact", async (t) => {
  const meta = await startPgMeta();
  const url = await meta.database();
  const drives = [await Deno.makeTempDir(), await Deno.makeTempDir()];
  // 64 KiB chunks: a 256 KiB body is four chunks; bodies share chunks with each other.
  const env = { STORE_DATA_DIRS: drives.join(","), STORE_CHUNK_SIZE: String(64 * KiB) };
  const a = await startPgServer(url, { env });
  const b = await startPgServer(url, { env });
  const sql = meta.query(url);
  const blocks = Array.from({ length: 6 }, () => randomBytes(64 * KiB));
  const body = (...ids: number[]) => {
    const out = new Uint8Array(ids.length * 64 * KiB);
    ids.forEach((id, i) => out.set(blocks[id], i * 64 * KiB));
    return out;
  };
  const contents = [body(0, 1, 2, 3), body(2, 3, 4, 5), body(0, 0, 5, 5)];
  const raceBlocks = Array.from({ length: 28 }, () => randomBytes(64 * KiB));
  const raceBody = (round: number) => {
    const out = new Uint8Array(16 * 64 * KiB);
    for (let i = 0; i < 16; i++) out.set(raceBlocks[(round + i) % 28], i * 64 * KiB);
    return out;
  };
  /** The content each key should hold at the end (undefined: deleted). */
  const expected = new Map<string, Uint8Array | undefined>();
  try {
    assertEquals(
      (await signedFetch(a, { method: "PUT", path: objectPath(BUCKET) })).status,
      200,
    );

    await t.step("the same content written at once through both servers", async () => {
      const writes: Promise<void>[] = [];
      for (let i = 0; i < 40; i++) {
        const content = contents[i % contents.length];
        writes.push(put(i % 2 ? a : b, `same/${i}`, content));
        expected.set(`same/${i}`, content);
      }
      await settled(writes);
      const { counts, exact } = await chunkCounts(sql);
      assert(exact, "every count equals the references to its chunk");
      assertEquals(counts.size, 6, "six distinct chunks");
      // Block 0 is referenced once by each body(0,1,2,3) and twice by each body(0,0,5,5).
      const [row] = await sql`SELECT sum(refcount)::int AS n FROM chunks`;
      assertEquals(row.n, 40 * 4);
    });

    await t.step("overwrites and deletes of one key set from both servers at once", async () => {
      const ops: Promise<void>[] = [];
      for (let i = 0; i < 40; i++) {
        const server = i % 2 ? b : a;
        const key = `same/${i}`;
        if (i % 4 === 0) {
          ops.push(del(server, key));
          expected.set(key, undefined);
        } else {
          const content = contents[(i + 1) % contents.length];
          ops.push(put(server, key, content));
          expected.set(key, content);
        }
        // The same key from the other server too: one of the two writes wins.
        if (i % 4 === 1) {
          const other = contents[(i + 2) % contents.length];
          ops.push(put(server === a ? b : a, key, other));
          expected.set(key, undefined);
        }
      }
      await settled(ops);
      assert((await chunkCounts(sql)).exact, "every count equals the references to its chunk");
    });

    await t.step("every object reads back whole from either server", async () => {
      for (const [key, content] of expected) {
        const fromA = await read(a, key);
        const fromB = await read(b, key);
        assertEquals(fromA?.byteLength, fromB?.byteLength, key);
        if (content) assertBytesEqual(fromA!, content, key);
        else if (fromA) assert(contents.some((c) => c.byteLength === fromA.byteLength), key);
        if (fromA) assertBytesEqual(fromB!, fromA, key);
      }
    });

    await t.step("a chunk freed on one server while the other reuses it is kept", async () => {
      // Each round: a's delete frees the content's last references while b writes the same
      // content (finding the chunks, reusing their shards). b's claim holds off a's collection.
      for (let round = 0; round < 12; round++) {
        // Sixteen chunks: b finds the first ones long before it commits.
        const content = raceBody(round);
        await put(a, `race/a${round}`, content);
        await settled([del(a, `race/a${round}`), put(b, `race/b${round}`, content)]);
        expected.set(`race/b${round}`, content);
      }
      for (let round = 0; round < 12; round++) {
        const content = expected.get(`race/b${round}`)!;
        assertBytesEqual((await read(a, `race/b${round}`))!, content, `race/b${round} from a`);
        assertBytesEqual((await read(b, `race/b${round}`))!, content, `race/b${round} from b`);
      }
      assert((await chunkCounts(sql)).exact, "every count equals the references to its chunk");
    });

    await t.step("deleting everything frees every chunk", async () => {
      await settled([...expected.keys()].map((key, i) => del(i % 2 ? a : b, key)));
      const [left] = await sql`SELECT count(*)::int AS n FROM chunks`;
      assertEquals(left.n, 0);
      const [usage] = await sql`
        SELECT ((SELECT objects FROM usage) + coalesce(sum(objects), 0))::int AS objects,
          ((SELECT chunks FROM usage) + coalesce(sum(chunks), 0))::int AS chunks
        FROM usage_deltas`;
      assertEquals([usage.objects, usage.chunks], [0, 0]);
    });
  } finally {
    await stopServer(a);
    await stopServer(b);
    await meta.dispose();
    for (const d of drives) await Deno.remove(d, { recursive: true }).catch(() => {});
  }
  for (const server of [a, b]) {
    assert(!server.logs().includes('"level":"error"'), server.logs());
  }
});
