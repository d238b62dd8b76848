// The SQLite MetaStore: buckets, versions and the listing range scan.
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

async function storeWith(keys: string[]): Promise<SqliteMetaStore> {
  const meta = new SqliteMetaStore(":memory:");
  await meta.createBucket({
    name: "b",
    owner: "o",
    createdAt: 0,
    region: "r",
    versioning: "",
    objectLock: false,
  });
  for (const k of keys) await meta.putObjectVersion(version(k));
  return meta;
}

async function listAll(meta: SqliteMetaStore, prefix: string, delimiter: string, maxKeys: number) {
  const out: string[] = [];
  let after = "";
  let pages = 0;
  while (true) {
    const page = await meta.listObjects("b", { prefix, delimiter, after, maxKeys });
    pages++;
    out.push(...page.objects.map((o) => o.key), ...page.commonPrefixes);
    if (!page.isTruncated) return { out, pages };
    after = page.lastReturned!;
  }
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

Deno.test("listing matches a brute-force model for every page size", async () => {
  const keys: string[] = [];
  for (const a of ["", "x/", "x/y/", "é/", "\u{1F600}/"]) {
    for (const b of ["1", "2", "z/3", "z/4", "\ue000", "\u{1F601}"]) keys.push(a + b);
  }
  const meta = await storeWith(keys);
  const sorted = [...keys].sort(compareKeys);
  for (
    const [prefix, delimiter] of [["", ""], ["", "/"], ["x/", "/"], ["x/y", "/"], ["é/", ""], [
      "",
      "z",
    ]]
  ) {
    const expected: string[] = [];
    for (const k of sorted) {
      if (!k.startsWith(prefix)) continue;
      const cut = delimiter ? k.indexOf(delimiter, prefix.length) : -1;
      const item = cut >= 0 ? k.slice(0, cut + delimiter.length) : k;
      if (!expected.includes(item)) expected.push(item);
    }
    for (const maxKeys of [1, 2, 3, 7, 1000]) {
      const { out } = await listAll(meta, prefix, delimiter, maxKeys);
      assertEquals(
        out.sort(compareKeys),
        [...expected].sort(compareKeys),
        `${prefix}|${delimiter}|${maxKeys}`,
      );
    }
  }
  await meta.close();
});

Deno.test("delete markers are not listed and deleting the newest restores the previous", async () => {
  const meta = await storeWith(["a", "b", "c"]);
  await meta.putObjectVersion(version("b", { versionId: "v2", deleteMarker: true }));
  let page = await meta.listObjects("b", { prefix: "", delimiter: "", after: "", maxKeys: 10 });
  assertEquals(page.objects.map((o) => o.key), ["a", "c"]);
  const { removed } = await removeVersion(meta, "b", "b", "v2");
  assertEquals(removed?.deleteMarker, true);
  page = await meta.listObjects("b", { prefix: "", delimiter: "", after: "", maxKeys: 10 });
  assertEquals(page.objects.map((o) => o.key), ["a", "b", "c"]);
  await meta.close();
});

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

Deno.test("chunk reference counts follow versions: shared, replaced, deleted", async () => {
  const meta = await storeWith([]);
  const chunked = { data: { kind: "chunks" as const, vid: 0 } };
  const refs = (...ids: string[]) =>
    ids.map((id, i) => ({ chunk: chunk(id), offset: i * 10, size: 10 }));
  await meta.putObjectVersion(version("a", chunked), refs("c1", "c2"));
  await meta.putObjectVersion(version("b", chunked), refs("c2", "c3"));
  // Overwriting "a" drops c1 (only "a" had it) but keeps c2 (shared with "b").
  const replaced = await meta.putObjectVersion(version("a", chunked), refs("c4"));
  assertEquals(replaced.freed.map((c) => c.id), ["c1"]);
  assertEquals(replaced.displaced.length, 1);
  assertEquals(await meta.hasChunk("c2"), true);
  // Re-referencing a chunk in the same write keeps it.
  const same = await meta.putObjectVersion(version("a", chunked), refs("c4"));
  assertEquals(same.freed, []);
  const current = await meta.getObjectVersion("b", "b");
  if (current?.data.kind !== "chunks") throw new Error("chunked version expected");
  const listed = await meta.versionChunks(current.data.vid, { from: 10, to: 11 });
  assertEquals(listed.map((c) => [c.chunk.id, c.offset]), [["c3", 10]]);
  assertEquals((await meta.deleteBucket("b")).outcome, "not_empty");
  const gone = await removeVersion(meta, "b", "b", "null");
  assertEquals(gone.freed.map((c) => c.id).sort(), ["c2", "c3"]);
  const last = await removeVersion(meta, "b", "a", "null");
  assertEquals(last.freed.map((c) => c.id), ["c4"]);
  assertEquals(await meta.listChunks("", 10), []);
  assertEquals((await meta.deleteBucket("b")).outcome, "deleted");
  assertEquals((await meta.deleteBucket("b")).outcome, "missing");
  await meta.close();
});

Deno.test("listing seeks past long common prefixes and pages through them", async () => {
  const keys: string[] = [];
  for (let f = 0; f < 5; f++) {
    for (let i = 0; i < 150; i++) keys.push(`f${f}/k${String(i).padStart(3, "0")}`);
    keys.push(`f${f}x`);
  }
  const meta = await storeWith(keys);
  for (const maxKeys of [1, 2, 3, 1000]) {
    const rolled = await listAll(meta, "", "/", maxKeys);
    assertEquals(
      rolled.out.sort(compareKeys),
      [
        "f0/",
        "f0x",
        "f1/",
        "f1x",
        "f2/",
        "f2x",
        "f3/",
        "f3x",
        "f4/",
        "f4x",
      ].sort(compareKeys),
    );
    const inside = await listAll(meta, "f2/", "/", maxKeys === 1000 ? 1000 : 40);
    assertEquals(inside.out.length, 150);
  }
  await meta.close();
});

Deno.test("tags: kept per version, replaced, removed; delete markers and uploads", async () => {
  const meta = await storeWith([]);
  await meta.putObjectVersion(version("k", { versionId: "v1", tags: { a: "1", b: "" } }));
  await meta.putObjectVersion(version("k", { versionId: "v2" }));
  assertEquals((await meta.getObjectVersion("b", "k", "v1"))?.tags, { a: "1", b: "" });
  assertEquals((await meta.getObjectVersion("b", "k"))?.tags, undefined);
  const target = { bucket: "b", key: "k", versionId: "v2" };
  assertEquals(await meta.setObjectTags(target, { c: "3" }), true);
  assertEquals((await meta.getObjectVersion("b", "k"))?.tags, { c: "3" });
  assertEquals((await meta.getObjectVersion("b", "k", "v1"))?.tags, { a: "1", b: "" });
  assertEquals(await meta.setObjectTags(target, {}), true);
  assertEquals((await meta.getObjectVersion("b", "k"))?.tags, undefined);
  assertEquals(await meta.setObjectTags({ ...target, versionId: "nope" }, { c: "3" }), false);
  // A delete marker has no tags and cannot get any.
  await meta.putObjectVersion(
    version("k", { versionId: "m", deleteMarker: true, tags: { x: "y" }, data: { kind: "none" } }),
  );
  assertEquals((await meta.getObjectVersion("b", "k", "m"))?.tags, undefined);
  assertEquals(await meta.setObjectTags({ ...target, versionId: "m" }, { c: "3" }), false);
  // An upload keeps the tags of its object to be.
  const upload = {
    bucket: "b",
    key: "u",
    uploadId: "up",
    initiated: 0,
    owner: "o",
    contentType: "",
    userMeta: {},
    headers: {},
  };
  await meta.createUpload({ ...upload, tags: { t: "1" } });
  assertEquals((await meta.getUpload("b", "u", "up"))?.tags, { t: "1" });
  await meta.createUpload({ ...upload, uploadId: "up2" });
  assertEquals((await meta.getUpload("b", "u", "up2"))?.tags, undefined);
  await meta.close();
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
  await store.putObjectVersion(version("c", { ...chunked, size: 20 }), refs("c3", "c4"));
  await store.close();

  store = new SqliteMetaStore(path);
  await check("reopened");
  await store.putObjectVersion(version("d", { size: 3 }));
  await check("a write after reopening");
  await store.close();
  await Deno.remove(dir, { recursive: true });
});
