// SQLite-only checks of the MetaStore (the behaviour every store shares is the contract suite,
// src/meta/contract): key order, and usage counters equal to a full count across a reopen.
import { assertEquals } from "../../tests/integration/assert.ts";
import { compareKeys, prefixSuccessor } from "./keys.ts";
import { DatabaseSync } from "node:sqlite";
import { SqliteMetaStore } from "./sqlite.ts";
import type { ChunkRecord, ObjectVersion, OutboxEvent } from "./store.ts";

/** One version removed through a batch of one (as DeleteObjects and DELETE do). */
async function removeVersion(
  meta: SqliteMetaStore,
  bucket: string,
  key: string,
  versionId: string,
  outbox?: (removed: ObjectVersion) => OutboxEvent | undefined,
): Promise<{ removed?: ObjectVersion; freed: ChunkRecord[] }> {
  const [outcome] = await meta.deleteObjects([{ bucket, key, versionId, outbox }]);
  if (!outcome.ok) throw outcome.error;
  return outcome;
}

function version(key: string, over: Partial<ObjectVersion> = {}): ObjectVersion {
  return {
    bucket: "b",
    key,
    versionId: "null",
    deleteMarker: false,
    size: 1,
    etag: '"x"',
    lastModified: 0,
    contentType: "text/plain",
    userMeta: {},
    headers: {},
    owner: "o",
    data: { kind: "inline", bytes: new Uint8Array([1]) },
    ...over,
  };
}

function chunk(id: string) {
  return {
    id,
    plainSize: 10,
    storedSize: 10,
    compression: "none" as const,
    encrypted: false,
    dataShards: 1,
    parityShards: 0,
    drives: [1],
  };
}

Deno.test("keys sort by code point, as UTF-8 bytes do", () => {
  const keys = ["\uffff", "\u{1F600}", "a", "\ue000", "ab", "A"];
  const sorted = [...keys].sort(compareKeys);
  assertEquals(sorted, ["A", "a", "ab", "\ue000", "\uffff", "\u{1F600}"]);
  assertEquals(prefixSuccessor("a/"), "a0");
  assertEquals(prefixSuccessor("a\u{10FFFF}"), "b");
  assertEquals(prefixSuccessor("\ud7ff"), "\ue000");
  assertEquals(prefixSuccessor(""), undefined);
});

Deno.test("usage counters follow every kind of write, equal to a full count", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/meta.db`;
  let store = new SqliteMetaStore(path);
  await store.createBucket({
    name: "b",
    owner: "o",
    createdAt: 0,
    region: "r",
    versioning: "",
    objectLock: false,
  });
  const counted = () => {
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      const v = db.prepare(
        "SELECT count(*) AS n, coalesce(sum(size), 0) AS s FROM versions WHERE delete_marker = 0",
      ).get() as { n: number; s: number };
      const c = db.prepare(
        "SELECT count(*) AS n, coalesce(sum((stored_size + data_shards - 1) / data_shards * " +
          "(data_shards + parity_shards)), 0) AS s FROM chunks",
      ).get() as { n: number; s: number };
      return { objects: v.n, bytes: v.s, chunks: c.n, shardBytes: c.s };
    } finally {
      db.close();
    }
  };
  const check = async (what: string) => assertEquals(await store.usage(), counted(), what);
  const chunked = { data: { kind: "chunks" as const, vid: 0 } };
  const refs = (...ids: string[]) =>
    ids.map((id, i) => ({ chunk: chunk(id), offset: i * 10, size: 10 }));
  await store.putObjectVersion(version("a", { size: 5 }));
  await store.putObjectVersion(version("b", { ...chunked, size: 20 }), refs("c1", "c2"));
  await check("puts");
  assertEquals((await store.usage()).objects, 2);
  await store.putObjectVersion(version("a", { size: 7 })); // replaces the null version
  await store.putObjectVersion(version("b", { ...chunked, size: 10 }), refs("c2"));
  await check("overwrites");
  await store.setBucketVersioning("b", "Enabled");
  await store.putObjectVersion(version("a", { versionId: "v1", size: 100 }));
  await store.putObjectVersion(version("a", { versionId: "dm", deleteMarker: true, size: 0 }));
  await check("versions and a delete marker");
  assertEquals((await store.usage()).objects, 3);
  await removeVersion(store, "b", "a", "dm");
  await removeVersion(store, "b", "b", "null");
  await check("deletes");
  assertEquals(await store.usage(), { objects: 2, bytes: 107, chunks: 0, shardBytes: 0 });
  await store.putObjectVersion(
    version("c", { ...chunked, versionId: "vc", size: 20 }),
    refs("c3", "c4"),
  );
  await store.close();

  store = new SqliteMetaStore(path);
  await check("reopened");
  await store.putObjectVersion(version("d", { versionId: "vd", size: 3 }));
  await check("a write after reopening");
  await store.close();
  await Deno.remove(dir, { recursive: true });
});
