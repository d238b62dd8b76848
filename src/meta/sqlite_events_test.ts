// The outbox in SQLite: an event commits with its change or not at all, ids only grow (also
// after pruning), cursors and per-bucket reads.
import { assertEquals } from "../../tests/integration/assert.ts";
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

function version(key: string): ObjectVersion {
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
  };
}

function event(key: string, bucket = "b"): OutboxEvent {
  return { bucket, key, name: "ObjectCreated:Put", detail: "{}" };
}

async function store(): Promise<SqliteMetaStore> {
  const meta = new SqliteMetaStore(":memory:");
  for (const name of ["b", "c"]) {
    await meta.createBucket({
      name,
      owner: "o",
      createdAt: 0,
      region: "r",
      versioning: "",
      objectLock: false,
    });
  }
  return meta;
}

Deno.test("outbox: an event commits with its change, a refused change records none", async () => {
  const meta = await store();
  await meta.putObjectVersion(version("a"), [], { outbox: event("a") });
  const refused = meta.putObjectVersion(version("a"), [], {
    guard: () => {
      throw new Error("precondition failed");
    },
    outbox: event("a-refused"),
  });
  await refused.then(() => Promise.reject(new Error("not refused")), () => {});
  const missingBucket = { ...version("x"), bucket: "nope" };
  await meta.putObjectVersion(missingBucket, [], { outbox: event("x", "nope") }).catch(() => {});
  const removed = await removeVersion(meta, "b", "gone", "null", () => event("gone"));
  assertEquals(removed.removed, undefined);
  await meta.setObjectTags({ bucket: "b", key: "absent", versionId: "null" }, {}, event("t"));
  assertEquals((await meta.readEvents(0, 10)).map((e) => e.key), ["a"]);
  await meta.close();
});

Deno.test("outbox: ids grow after pruning; cursors; one bucket's events", async () => {
  const meta = await store();
  await meta.appendEvents([event("1"), event("2", "c"), event("3")]);
  assertEquals(await meta.eventBounds(), { head: 3, oldest: 1 });
  assertEquals((await meta.readEvents(0, 10, "b")).map((e) => e.seq), [1, 3]);
  assertEquals(await meta.countEvents(1), 2);
  assertEquals(await meta.countEvents(0, "c"), 1);
  assertEquals(await meta.pruneEvents(3, Date.now() + 1), 3);
  assertEquals(await meta.eventBounds(), { head: 3, oldest: undefined });
  await meta.appendEvents([event("4")]);
  assertEquals((await meta.readEvents(0, 10)).map((e) => e.seq), [4]);
  // Pruning keeps what is younger than the cut-off time.
  assertEquals(await meta.pruneEvents(4, 0), 0);
  await meta.setCursor("target:webhook:a", 2);
  await meta.setCursor("target:webhook:a", 4);
  assertEquals(await meta.getCursor("target:webhook:a"), 4);
  assertEquals(await meta.listCursors(), [{ consumer: "target:webhook:a", seq: 4 }]);
  await meta.deleteCursor("target:webhook:a");
  assertEquals(await meta.getCursor("target:webhook:a"), undefined);
  await meta.close();
});
