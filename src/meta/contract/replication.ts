// The bucket-change queue of a MetaStore (clustering): filled in the change's transaction only
// when clustering is on, coalesced per bucket, applied last-writer-wins, with per-node cursors.
// Run against SQLite (sqlite_cluster_test.ts) and PostgreSQL (pg/ports_test.ts).
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import type { BucketRecord, MetaStore } from "../store.ts";

/**
 * Opens a store: a fresh one, or the one holding `data` when that name was opened before (the
 * earlier store closed), with clustering on as `clusterNode`.
 */
export type Opener = (opts: { clusterNode?: string; data?: string }) => Promise<MetaStore>;

type Test = (name: string, fn: () => Promise<void>) => void;

/** Registers the cases with `test`, each opening its stores with `open`. */
export function replicationCases(test: Test, open: Opener): void {
  function bucket(name: string, over: Partial<BucketRecord> = {}): BucketRecord {
    return {
      name,
      owner: "o",
      createdAt: 1000,
      region: "r",
      versioning: "",
      objectLock: false,
      ...over,
    };
  }

  test("nothing is queued while clustering is off", async () => {
    const meta = await open({});
    await meta.createBucket(bucket("b1"));
    await meta.putBucketConfig("b1", "cors", "[]");
    assertEquals(await meta.bucketChanges(0, 10), []);
    await meta.close();
  });

  test("changes of one bucket coalesce into one row at the end of the queue", async () => {
    const meta = await open({ clusterNode: "a" });
    await meta.createBucket(bucket("b1"));
    await meta.createBucket(bucket("b2"));
    const first = await meta.bucketChanges(0, 10);
    assertEquals(first.map((c) => [c.bucket, c.seq]), [["b1", 1], ["b2", 2]]);
    await meta.putBucketConfig("b1", "policy", '{"p":1}');
    await meta.setBucketVersioning("b1", "Enabled");
    // An existing bucket created again and a document deleted that was never there change nothing.
    assertEquals(await meta.createBucket(bucket("b2")), "exists");
    await meta.deleteBucketConfig("b2", "cors");
    const changes = await meta.bucketChanges(0, 10);
    assertEquals(changes.map((c) => [c.bucket, c.seq]), [["b2", 2], ["b1", 4]]);
    const b1 = changes[1];
    assertEquals(b1.record?.value, { owner: "o", createdAt: 1000, region: "r" });
    assertEquals(b1.versioning?.value, "Enabled");
    assertEquals(b1.configs, { policy: { stamp: b1.configs.policy!.stamp, value: '{"p":1}' } });
    // Each change has a later stamp than the one before, and only the parts it touched get it.
    const created = first[0].record!.stamp;
    const policy = b1.configs.policy!.stamp;
    const versioned = b1.versioning!.stamp;
    assert(created.ms < policy.ms && policy.ms < versioned.ms, JSON.stringify(b1));
    assertEquals([b1.record!.stamp, versioned.node], [created, "a"]);
    assertEquals((await meta.deleteBucket("b2")).outcome, "deleted");
    const [tomb] = await meta.bucketChanges(4, 10);
    assertEquals([tomb.bucket, tomb.seq, tomb.record?.value], ["b2", 5, null]);
    assertEquals((await meta.replicationBacklog(2)).depth, 2);
    await meta.close();
  });

  test("another node's state applies when newer, and is queued on for the others", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    await a.createBucket(bucket("x", { versioning: "Enabled" }));
    await a.putBucketConfig("x", "tagging", '{"k":"v"}');
    const [change] = await a.bucketChanges(0, 10);
    assertEquals(await b.applyBucketState(change), "applied");
    assertEquals((await b.getBucket("x"))?.versioning, "Enabled");
    assertEquals(await b.getBucketConfig("x", "tagging"), '{"k":"v"}');
    // The same state again, or back to its origin, is stale: no loop.
    assertEquals(await b.applyBucketState(change), "stale");
    const [forwarded] = await b.bucketChanges(0, 10);
    assertEquals(forwarded.configs.tagging, change.configs.tagging);
    assertEquals(await a.applyBucketState(forwarded), "stale");
    // Later changes on b win on a: a removed document is removed there too.
    await b.deleteBucketConfig("x", "tagging");
    await b.putBucketConfig("x", "cors", "[1]");
    const [later] = await b.bucketChanges(1, 10);
    assertEquals(await a.applyBucketState(later), "applied");
    assertEquals(await a.getBucketConfig("x", "tagging"), undefined);
    assertEquals(await a.getBucketConfig("x", "cors"), "[1]");
    // An older state never overwrites a newer one.
    assertEquals(await a.applyBucketState(change), "stale");
    assertEquals(await a.getBucketConfig("x", "tagging"), undefined);
    await a.close();
    await b.close();
  });

  test("changes of different parts on different nodes both survive", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    await a.createBucket(bucket("x"));
    await b.applyBucketState((await a.bucketChanges(0, 10))[0]);
    // Concurrently: versioning on a, tags on b (each before hearing of the other).
    await a.setBucketVersioning("x", "Enabled");
    await new Promise((r) => setTimeout(r, 2));
    await b.putBucketConfig("x", "tagging", "{}");
    const [fromA] = await a.bucketChanges(1, 10);
    const [fromB] = await b.bucketChanges(1, 10);
    assertEquals(await a.applyBucketState(fromB), "applied");
    assertEquals(await b.applyBucketState(fromA), "applied");
    for (const m of [a, b]) {
      assertEquals((await m.getBucket("x"))?.versioning, "Enabled");
      assertEquals(await m.getBucketConfig("x", "tagging"), "{}");
    }
    await a.close();
    await b.close();
  });

  test("a deletion is applied to an empty bucket, kept where objects remain", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    const c = await open({ clusterNode: "c" });
    await a.createBucket(bucket("x"));
    await a.putBucketConfig("x", "cors", "[]");
    const [created] = await a.bucketChanges(0, 10);
    await b.applyBucketState(created);
    await c.applyBucketState(created);
    await c.putObjectVersion({
      bucket: "x",
      key: "k",
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
    });
    await a.deleteBucket("x");
    const [deleted] = await a.bucketChanges(1, 10);
    assertEquals(await b.applyBucketState(deleted), "applied");
    assertEquals(await b.getBucket("x"), undefined);
    assertEquals(await b.getBucketConfig("x", "cors"), undefined);
    assertEquals(await c.applyBucketState(deleted), "kept");
    assert(await c.getBucket("x"));
    // The state from before the deletion does not bring the bucket back.
    assertEquals(await b.applyBucketState(created), "stale");
    assertEquals(await b.getBucket("x"), undefined);
    for (const m of [a, b, c]) await m.close();
  });

  test("buckets made before clustering are queued once, older than any later change", async () => {
    const data = `before-${crypto.randomUUID().slice(0, 8)}`;
    {
      const before = await open({ data });
      await before.createBucket(bucket("old", { createdAt: 5000 }));
      await before.putBucketConfig("old", "cors", "[]");
      await before.close();
      const a = await open({ data, clusterNode: "a" });
      assertEquals(await a.queueUnreplicatedBuckets(), 1);
      assertEquals(await a.queueUnreplicatedBuckets(), 0);
      const [old] = await a.bucketChanges(0, 10);
      assertEquals(old.record, {
        stamp: { ms: 5000, node: "a" },
        value: {
          owner: "o",
          createdAt: 5000,
          region: "r",
        },
      });
      assertEquals(old.configs.cors, { stamp: { ms: 5000, node: "a" }, value: "[]" });
      // Another node that changed the bucket since keeps its change.
      const b = await open({ clusterNode: "b" });
      await b.applyBucketState(old);
      await b.deleteBucketConfig("old", "cors");
      assertEquals(await b.applyBucketState(old), "stale");
      assertEquals(await b.getBucketConfig("old", "cors"), undefined);
      await a.close();
      await b.close();
    }
  });

  test("cursors only move forward", async () => {
    const meta = await open({ clusterNode: "a" });
    assertEquals(await meta.replicationCursor("b"), 0);
    await meta.setReplicationCursor("b", 5);
    await meta.setReplicationCursor("b", 3);
    assertEquals(await meta.replicationCursor("b"), 5);
    await meta.close();
  });

  test("deleted buckets every node has received are pruned; live ones and the newest stay", async () => {
    const meta = await open({ clusterNode: "a" });
    for (const name of ["gone1", "live", "gone2", "gone3"]) await meta.createBucket(bucket(name));
    for (const name of ["gone1", "gone2", "gone3"]) await meta.deleteBucket(name);
    const names = async () => (await meta.bucketChanges(0, 10)).map((c) => c.bucket);
    assertEquals(await names(), ["live", "gone1", "gone2", "gone3"]);
    const last = (await meta.bucketChanges(0, 10)).at(-1)!.seq;
    await meta.setReplicationCursor("n1", last);
    // n2 has received nothing yet: nothing goes.
    assertEquals(await meta.pruneBucketChanges(["n1", "n2"]), 0);
    await meta.setReplicationCursor("n2", last - 1);
    assertEquals(await meta.pruneBucketChanges(["n1", "n2"]), 2);
    assertEquals(await names(), ["live", "gone3"]);
    await meta.setReplicationCursor("n2", last);
    // The newest is kept: positions keep growing past the cursors.
    assertEquals(await meta.pruneBucketChanges(["n1", "n2"]), 0);
    await meta.createBucket(bucket("next"));
    const next = await meta.bucketChanges(last, 10);
    assertEquals(next.map((c) => [c.bucket, c.seq]), [["next", last + 1]]);
    // A stale state of a pruned bucket does not bring it back: its stamp stays.
    assertEquals(
      await meta.applyBucketState({
        bucket: "gone1",
        record: { stamp: { ms: 1, node: "z" }, value: { owner: "o", createdAt: 1, region: "r" } },
        configs: {},
      }),
      "stale",
    );
    // A node forgotten releases its cursors: a node with none is not waited for any more.
    await meta.setObjectReplicationCursor("n3", 0);
    await meta.setReplicationCursor("n3", 0);
    assertEquals(await meta.pruneBucketChanges([]), 0);
    assertEquals(await meta.forgetReplicationNode("n3"), true);
    assertEquals(await meta.forgetReplicationNode("n3"), false);
    assertEquals(await meta.replicationCursor("n3"), 0);
    await meta.deleteBucket("next");
    await meta.setReplicationCursor("n1", last + 2);
    await meta.setReplicationCursor("n2", last + 2);
    assertEquals(await meta.pruneBucketChanges([]), 1);
    assertEquals(await names(), ["live", "next"]);
    await meta.close();
  });
}
