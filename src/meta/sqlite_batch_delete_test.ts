// DeleteObjects in SQLite as set-based statements: the outcome of each key must be what deleting
// the keys one after the other would give (duplicates, refusals, missing keys, several versions of
// one key), with the events, audit entries and chunk references of the removed versions only.
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { newScope, runAudited } from "../audit/scope.ts";
import { verifyStored } from "../audit/verify.ts";
import { SqliteMetaStore } from "./sqlite.ts";
import type { BatchDelete, BatchDeleteOutcome, ObjectVersion, OutboxEvent } from "./store.ts";

function version(key: string, versionId: string, over: Partial<ObjectVersion> = {}): ObjectVersion {
  return {
    bucket: "b",
    key,
    versionId,
    deleteMarker: false,
    size: 3,
    etag: '"x"',
    lastModified: 0,
    contentType: "text/plain",
    userMeta: {},
    headers: {},
    owner: "o",
    data: { kind: "inline", bytes: new Uint8Array(3) },
    ...over,
  };
}

const chunk = {
  id: "c1",
  plainSize: 10,
  storedSize: 10,
  compression: "none" as const,
  encrypted: false,
  dataShards: 1,
  parityShards: 0,
  drives: [1],
};

/** A store in memory with bucket "b", versioning enabled. */
async function versionedStore(): Promise<SqliteMetaStore> {
  const meta = new SqliteMetaStore(":memory:");
  await meta.createBucket({
    name: "b",
    owner: "o",
    createdAt: 0,
    region: "r",
    versioning: "Enabled",
    objectLock: false,
  });
  return meta;
}

/**
 * Removes versions of a fixture (a key named twice, a refused one, a missing one, both versions of
 * a key, the latest of two, a chunked one) through `send`, and checks what deleting the keys one
 * after the other gives: outcomes, versions left, events, audit entries and the freed chunk.
 */
async function removalCase(
  send: (meta: SqliteMetaStore, batch: BatchDelete[]) => Promise<BatchDeleteOutcome[]>,
): Promise<void> {
  const meta = await versionedStore();
  await meta.putObjectVersion(version("a", "a1"));
  await meta.putObjectVersion(version("locked", "l1"));
  await meta.putObjectVersion(version("two", "t1"));
  await meta.putObjectVersion(version("two", "t2"));
  await meta.putObjectVersion(version("older", "o1"));
  await meta.putObjectVersion(version("older", "o2"));
  await meta.putObjectVersion(version("chunked", "c1", { data: { kind: "chunks", vid: 0 } }), [
    { chunk, offset: 0, size: 10 },
  ]);

  const outbox = (removed: ObjectVersion): OutboxEvent => ({
    bucket: "b",
    key: removed.key,
    name: "ObjectRemoved:Delete",
    detail: JSON.stringify({ versionId: removed.versionId }),
  });
  const remove = (key: string, versionId: string, refuse = false): BatchDelete => ({
    bucket: "b",
    key,
    versionId,
    outbox,
    guard: refuse
      ? () => {
        throw new Error(`${key} is locked`);
      }
      : undefined,
  });
  const head = (await meta.eventBounds()).head;
  const scope = newScope({ requestId: "R", principal: "user:u", operation: "DeleteObjects" });
  scope.bucket = "b";
  const outcomes = await runAudited(scope, () =>
    send(meta, [
      remove("a", "a1"),
      remove("a", "a1"), // named twice: already gone
      remove("locked", "l1", true),
      remove("missing", "m1"),
      remove("two", "t1"),
      remove("two", "t2"),
      remove("older", "o2"), // the latest: o1 becomes the current version
      remove("chunked", "c1"),
    ]));

  const summary = outcomes.map((o) => o.ok ? (o.removed?.versionId ?? "none") : "refused");
  assertEquals(summary, ["a1", "none", "refused", "none", "t1", "t2", "o2", "c1"]);
  const refused = outcomes[2];
  assert(!refused.ok && String(refused.error).includes("locked"));
  const freed = outcomes[7];
  assertEquals(freed.ok && freed.freed.map((c) => c.id), ["c1"]);
  assertEquals(await meta.hasChunk("c1"), false);

  assertEquals(await meta.getObjectVersion("b", "a"), undefined);
  assertEquals((await meta.getObjectVersion("b", "locked"))?.versionId, "l1");
  assertEquals(await meta.getObjectVersion("b", "two"), undefined);
  assertEquals((await meta.getObjectVersion("b", "older"))?.versionId, "o1");
  const listed = await meta.listObjects("b", { prefix: "", delimiter: "", after: "", maxKeys: 9 });
  assertEquals(listed.objects.map((o) => o.key), ["locked", "older"]);
  assertEquals((await meta.usage()).objects, 2);

  // One event and one audit entry per removed version, in the order of the batch.
  const events = await meta.readEvents(head, 100);
  assertEquals(events.map((e) => `${e.key}:${JSON.parse(e.detail).versionId}`), [
    "a:a1",
    "two:t1",
    "two:t2",
    "older:o2",
    "chunked:c1",
  ]);
  assertEquals(scope.recorded, 5);
  const entries = await meta.auditPage(0, 100);
  assertEquals(
    entries.filter((e) => e.operation === "DeleteObjects").map((e) => `${e.key}:${e.versionId}`),
    ["a:a1", "two:t1", "two:t2", "older:o2", "chunked:c1"],
  );
  assertEquals((await verifyStored(meta)).ok, true);
  await meta.close();
}

Deno.test("DeleteObjects batch: each key as if deleted one after the other", async () => {
  await removalCase((meta, batch) => meta.deleteObjects(batch));
});

Deno.test("DELETE requests one after the other (a batch of one each): the same", async () => {
  await removalCase(async (meta, batch) => {
    const outcomes: BatchDeleteOutcome[] = [];
    for (const item of batch) outcomes.push(...await meta.deleteObjects([item]));
    return outcomes;
  });
});

Deno.test("DeleteObjects batch of delete markers: the same as one marker after the other", async () => {
  /** A store with versions of a and b, in a bucket with versioning enabled. */
  const open = async () => {
    const meta = await versionedStore();
    await meta.putObjectVersion(version("a", "a1"));
    await meta.putObjectVersion(version("b", "b1"));
    await meta.putObjectVersion(version("b", "b2"));
    return meta;
  };
  const marker = (key: string): BatchDelete => ({
    marker: version(key, `m-${key}`, {
      deleteMarker: true,
      size: 0,
      etag: "",
      contentType: "",
      lastModified: 5,
      data: { kind: "none" },
    }),
    outbox: { bucket: "b", key, name: "ObjectRemoved:DeleteMarkerCreated", detail: "{}" },
  });
  const keys = ["a", "b", "c"];
  /** Everything a reader sees of the store after the markers. */
  const state = async (meta: SqliteMetaStore, head: number) => {
    const listed = await meta.listVersions("b", {
      prefix: "",
      delimiter: "",
      keyMarker: "",
      versionIdMarker: "",
      maxKeys: 100,
    });
    const latest = await Promise.all(keys.map((k) => meta.getObjectVersion("b", k)));
    const objects = await meta.listObjects("b", {
      prefix: "",
      delimiter: "",
      after: "",
      maxKeys: 9,
    });
    const events = await meta.readEvents(head, 100);
    return {
      versions: listed.versions.map((v) =>
        `${v.key}:${v.versionId}:${v.isLatest}:${v.deleteMarker}`
      ),
      latest: latest.map((v) =>
        `${v?.versionId}:${v?.deleteMarker}:${v?.owner}:${v?.lastModified}`
      ),
      objects: objects.objects.map((o) => o.key),
      events: events.map((e) => `${e.key}:${e.name}`),
      usage: await meta.usage(),
    };
  };
  const run = async (batched: boolean) => {
    const meta = await open();
    const head = (await meta.eventBounds()).head;
    const scope = newScope({ requestId: "R", principal: "user:u", operation: "DeleteObjects" });
    scope.bucket = "b";
    const outcomes = await runAudited(scope, async () => {
      if (batched) return await meta.deleteObjects(keys.map(marker));
      const one = [];
      for (const k of keys) one.push(...await meta.deleteObjects([marker(k)]));
      return one;
    });
    assertEquals(outcomes.map((o) => o.ok), [true, true, true]);
    const audit = (await meta.auditPage(0, 100)).filter((e) => e.operation === "DeleteObjects");
    const seen = {
      ...await state(meta, head),
      audit: audit.map((e) => `${e.key}:${e.versionId}`),
      recorded: scope.recorded,
    };
    assertEquals((await verifyStored(meta)).ok, true);
    // A marker on top of a marker: the batch path sees the flags it wrote.
    await meta.deleteObjects(["a", "b"].map((k) => {
      const m = marker(k) as { marker: ObjectVersion };
      return { marker: { ...m.marker, versionId: `n-${k}`, lastModified: 6 } };
    }));
    const again = await state(meta, head);
    await meta.close();
    return { seen, again };
  };
  const batched = await run(true);
  const oneByOne = await run(false);
  assertEquals(batched, oneByOne);
  assertEquals(batched.seen.versions, [
    "a:m-a:true:true",
    "a:a1:false:false",
    "b:m-b:true:true",
    "b:b2:false:false",
    "b:b1:false:false",
    "c:m-c:true:true",
  ]);
  assertEquals(batched.seen.objects, []);
  assertEquals(batched.seen.audit, ["a:m-a", "b:m-b", "c:m-c"]);
  assertEquals(batched.again.versions.slice(0, 2), ["a:n-a:true:true", "a:m-a:false:true"]);
});
