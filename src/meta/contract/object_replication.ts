// The object-change queue of a MetaStore (clustering): appended in the write's transaction only
// when clustering is on and the write is not a REPLICA, with per-node cursors and the versions'
// replication status. Run against SQLite (sqlite_cluster_test.ts) and PostgreSQL
// (pg/ports_test.ts).
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { bucket, upload, version } from "./helpers.ts";
import type { Opener } from "./replication.ts";
import { newerStamp, stampedParts } from "../version_stamps.ts";

type Test = (name: string, fn: () => Promise<void>) => void;

const ops = (changes: { op: string; key: string; versionId: string }[]) =>
  changes.map((c) => `${c.op} ${c.key} ${c.versionId}`);

/** Registers the cases with `test`, each opening its stores with `open`. */
export function objectReplicationCases(test: Test, open: Opener): void {
  test("no object change is queued and no status kept while clustering is off", async () => {
    const meta = await open({});
    await meta.createBucket(bucket("b"));
    await meta.putObjectVersion(version("k"));
    await meta.deleteObjects([{ bucket: "b", key: "k", versionId: "null" }]);
    await meta.putObjectVersion(version("k2"));
    assertEquals(await meta.objectChanges(0, 10), []);
    assertEquals((await meta.getObjectVersion("b", "k2"))?.replication, undefined);
    await meta.close();
  });

  test("writes, markers, removals and completions queue in order; REPLICA writes do not", async () => {
    const meta = await open({ clusterNode: "a" });
    await meta.createBucket(bucket("b", { versioning: "Enabled" }));
    await meta.putObjectVersion(version("k", { versionId: "v1" }));
    await meta.deleteObjects([
      { marker: version("k", { versionId: "m1", deleteMarker: true, size: 0 }) },
    ]);
    await meta.deleteObjects([{ bucket: "b", key: "k", versionId: "v1" }]);
    // A removal of a version that is not there changes nothing and queues nothing.
    await meta.deleteObjects([{ bucket: "b", key: "k", versionId: "gone" }]);
    await meta.putObjectVersion(version("r", { versionId: "v2", replication: "REPLICA" }));
    await meta.deleteObjects([{ bucket: "b", key: "r", versionId: "v2", replica: true }]);
    await meta.createUpload(upload("u", "up1"));
    await meta.putPart("up1", { partNumber: 1, size: 1, etag: '"p"', lastModified: 1 }, []);
    await meta.completeUpload(
      upload("u", "up1"),
      [{ partNumber: 1, etag: '"p"' }],
      version("u", { versionId: "v3" }),
    );
    const changes = await meta.objectChanges(0, 10);
    assertEquals(ops(changes), ["put k v1", "put k m1", "delete k v1", "put u v3"]);
    assertEquals(changes.map((c) => c.seq), [1, 2, 3, 4].map((n) => changes[0].seq + n - 1));
    assert(changes.every((c) => c.bucket === "b" && c.queuedAt > 0));
    assertEquals(ops(await meta.objectChanges(changes[1].seq, 1)), ["delete k v1"]);
    assertEquals((await meta.getObjectVersion("b", "k", "m1"))?.replication, "PENDING");
    assertEquals((await meta.getObjectVersion("b", "u"))?.replication, "PENDING");
    await meta.putObjectVersion(version("r", { versionId: "v4", replication: "REPLICA" }));
    assertEquals((await meta.getObjectVersion("b", "r"))?.replication, "REPLICA");
    assertEquals((await meta.objectChanges(0, 10)).length, 4);
    await meta.close();
  });

  test("removals queue their time and bypass; a replicated write and removal: the later wins", async () => {
    const meta = await open({ clusterNode: "a" });
    await meta.createBucket(bucket("b"));
    const at = 1_000_000;
    // A removal made here is queued at its time (its tombstone's), with the governance bypass.
    await meta.putObjectVersion(version("q", { lastModified: at }));
    await meta.deleteObjects([{
      bucket: "b",
      key: "q",
      versionId: "null",
      bypassGovernance: true,
    }]);
    await meta.putObjectVersion(version("p", { lastModified: at }));
    await meta.deleteObjects([{ bucket: "b", key: "p", versionId: "null" }]);
    const removals = (await meta.objectChanges(0, 10)).filter((c) => c.op === "delete");
    assertEquals(removals.map((c) => [c.key, c.bypassGovernance ?? false]), [
      ["q", true],
      ["p", false],
    ]);
    assertEquals(
      await meta.versionTombstone({ bucket: "b", key: "q", versionId: "null" }),
      removals[0].queuedAt,
    );
    // A replicated removal where nothing is keeps its tombstone, at its source's time...
    const k = { bucket: "b", key: "k", versionId: "null" };
    await meta.deleteObjects([{ ...k, replica: true, deletedAt: at }]);
    assertEquals(await meta.versionTombstone(k), at);
    // ...so a copy written at or before it is not taken, and one written after it is.
    await meta.putObjectVersion(version("k", { lastModified: at, replication: "REPLICA" }));
    assertEquals(await meta.getObjectVersion("b", "k"), undefined);
    await meta.putObjectVersion(
      version("k", { lastModified: at + 1, etag: '"new"', replication: "REPLICA" }),
    );
    assertEquals((await meta.getObjectVersion("b", "k"))?.etag, '"new"');
    // A replicated removal of a version here records its source's time, not the arrival's.
    await meta.deleteObjects([{ ...k, replica: true, deletedAt: at + 5 }]);
    assertEquals(await meta.getObjectVersion("b", "k"), undefined);
    assertEquals(await meta.versionTombstone(k), at + 5);
    // Replicated removals are not queued again.
    assertEquals((await meta.objectChanges(0, 10)).filter((c) => c.op === "delete").length, 2);
    await meta.close();
  });

  test("later changes (tags, ACL, retention, legal hold) are stamped and queued; merges are not", async () => {
    const meta = await open({ clusterNode: "a" });
    await meta.createBucket(bucket("b", { versioning: "Enabled" }));
    await meta.putObjectVersion(version("k", { versionId: "v1" }));
    const v1 = { bucket: "b", key: "k", versionId: "v1" };
    assertEquals((await meta.getObjectVersion("b", "k", "v1"))?.stamps, undefined);
    assertEquals(await meta.setObjectTags(v1, { a: "1" }), true);
    assertEquals(await meta.setObjectTags(v1, {}), true);
    assertEquals(await meta.setObjectAcl(v1, '{"owner":"o"}'), true);
    const until = Date.now() + 86_400_000;
    assert(await meta.setObjectLock(v1, { retention: { mode: "GOVERNANCE", until } }));
    assert(await meta.setObjectLock(v1, { legalHold: true }));
    // Nothing changed (no such version): nothing queued.
    assertEquals(await meta.setObjectTags({ ...v1, versionId: "gone" }, { a: "1" }), false);
    assertEquals(ops(await meta.objectChanges(0, 10)), [
      "put k v1",
      "tags k v1",
      "tags k v1",
      "acl k v1",
      "lock k v1",
      "lock k v1",
    ]);
    const stamps = (await meta.getObjectVersion("b", "k", "v1"))!.stamps!;
    assertEquals(Object.values(stamps).map((s) => s.node), ["a", "a", "a", "a"]);
    // Each change is stamped after every earlier one of the version, whatever the clock says.
    assert(stamps.tags!.ms < stamps.acl!.ms && stamps.acl!.ms < stamps.retention!.ms);
    assert(stamps.retention!.ms < stamps.legalHold!.ms);
    // Received from another node: an older part is ignored, a newer one taken; not queued again.
    const older = { ms: stamps.tags!.ms - 1, node: "z" };
    const newer = { ms: stamps.legalHold!.ms + 5, node: "b" };
    assert(
      await meta.mergeVersionParts(v1, {
        tags: { stamp: older, value: { old: "1" } },
        acl: { stamp: newer, value: null },
        legalHold: { stamp: newer, value: false },
      }),
    );
    const merged = (await meta.getObjectVersion("b", "k", "v1"))!;
    assertEquals(merged.tags, undefined);
    assertEquals(merged.acl, undefined);
    assertEquals(merged.legalHold, false);
    assertEquals(merged.retention, { mode: "GOVERNANCE", until });
    assertEquals(merged.stamps, { ...stamps, acl: newer, legalHold: newer });
    assertEquals((await meta.objectChanges(0, 10)).length, 6);
    assertEquals(await meta.mergeVersionParts({ ...v1, versionId: "gone" }, {}), false);
    // A change made here after a newer stamp was received is stamped after it.
    assert(await meta.setObjectLock(v1, { legalHold: true }));
    const after = (await meta.getObjectVersion("b", "k", "v1"))!.stamps!.legalHold!;
    assert(after.ms > newer.ms && after.node === "a");
    await meta.close();
    const off = await open({});
    await off.createBucket(bucket("b"));
    await off.putObjectVersion(version("k"));
    await off.setObjectTags({ bucket: "b", key: "k", versionId: "null" }, { a: "1" });
    await off.setObjectAcl({ bucket: "b", key: "k", versionId: "null" }, "{}");
    assertEquals(await off.objectChanges(0, 10), []);
    assertEquals((await off.getObjectVersion("b", "k"))?.stamps, undefined);
    await off.close();
  });

  test("two nodes changing one version at once converge, whatever order changes arrive in", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    const v1 = { bucket: "b", key: "k", versionId: "v1" };
    await a.createBucket(bucket("b", { versioning: "Enabled" }));
    await b.createBucket(bucket("b", { versioning: "Enabled" }));
    const written = version("k", { versionId: "v1", lastModified: 5000 });
    await a.putObjectVersion(written);
    await b.putObjectVersion({ ...written, replication: "REPLICA" });
    // Both change the same parts before either hears of the other's change.
    await a.setObjectTags(v1, { by: "a" });
    await b.setObjectTags(v1, { by: "b" });
    await b.setObjectAcl(v1, '{"owner":"b"}');
    await a.setObjectAcl(v1, '{"owner":"a"}');
    await a.setObjectLock(v1, { legalHold: true });
    const fromA = stampedParts((await a.getObjectVersion("b", "k", "v1"))!);
    const fromB = stampedParts((await b.getObjectVersion("b", "k", "v1"))!);
    await a.mergeVersionParts(v1, fromB);
    await b.mergeVersionParts(v1, fromA);
    // Sent again (a retry): changes nothing.
    await a.mergeVersionParts(v1, fromB);
    const [va, vb] = [
      (await a.getObjectVersion("b", "k", "v1"))!,
      (await b.getObjectVersion("b", "k", "v1"))!,
    ];
    for (const part of ["tags", "acl", "legalHold", "stamps"] as const) {
      assertEquals(va[part], vb[part], part);
    }
    const tagsWinner = newerStamp(fromA.tags!.stamp, fromB.tags!.stamp) ? "a" : "b";
    assertEquals(va.tags, { by: tagsWinner });
    const aclWinner = newerStamp(fromA.acl!.stamp, fromB.acl!.stamp) ? "a" : "b";
    assertEquals(va.acl, `{"owner":"${aclWinner}"}`);
    assertEquals(vb.legalHold, true);
    // The same millisecond: the higher node id wins, in either order.
    const ms = Date.now() + 60_000;
    await a.mergeVersionParts(v1, { tags: { stamp: { ms, node: "y" }, value: { by: "y" } } });
    await a.mergeVersionParts(v1, { tags: { stamp: { ms, node: "x" }, value: { by: "x" } } });
    await b.mergeVersionParts(v1, { tags: { stamp: { ms, node: "x" }, value: { by: "x" } } });
    await b.mergeVersionParts(v1, { tags: { stamp: { ms, node: "y" }, value: { by: "y" } } });
    assertEquals((await a.getObjectVersion("b", "k", "v1"))?.tags, { by: "y" });
    assertEquals((await b.getObjectVersion("b", "k", "v1"))?.tags, { by: "y" });
    // The version's own write sent again (a retry after a crash) keeps the later changes here.
    const source = (await a.getObjectVersion("b", "k", "v1"))!;
    await b.putObjectVersion({
      ...written,
      replication: "REPLICA",
      tags: { stale: "1" },
      stamps: { tags: { ms: 1, node: "a" } },
    });
    const again = (await b.getObjectVersion("b", "k", "v1"))!;
    assertEquals(again.tags, source.tags);
    assertEquals(again.stamps, source.stamps);
    await a.close();
    await b.close();
  });

  test("cursors only move forward; the backlog counts what lies after one", async () => {
    const meta = await open({ clusterNode: "a" });
    await meta.createBucket(bucket("b"));
    for (const key of ["k1", "k2", "k3"]) await meta.putObjectVersion(version(key));
    const [first, , third] = await meta.objectChanges(0, 10);
    assertEquals(await meta.objectReplicationCursor("n1"), 0);
    await meta.setObjectReplicationCursor("n1", third.seq);
    await meta.setObjectReplicationCursor("n1", first.seq);
    assertEquals(await meta.objectReplicationCursor("n1"), third.seq);
    assertEquals(await meta.objectReplicationBacklog(third.seq), { depth: 0, oldest: undefined });
    const backlog = await meta.objectReplicationBacklog(0);
    assertEquals(backlog, { depth: 3, oldest: first.queuedAt });
    await meta.close();
  });

  test("changes every node has received are pruned; the newest is kept", async () => {
    const meta = await open({ clusterNode: "a" });
    await meta.createBucket(bucket("b"));
    for (const key of ["k1", "k2", "k3", "k4"]) await meta.putObjectVersion(version(key));
    const [, c2, c3, c4] = await meta.objectChanges(0, 10);
    await meta.setObjectReplicationCursor("n1", c3.seq);
    // n2 has received nothing yet: nothing goes.
    assertEquals(await meta.pruneObjectChanges(["n1", "n2"]), 0);
    await meta.setObjectReplicationCursor("n2", c2.seq);
    assertEquals(await meta.pruneObjectChanges(["n1", "n2"]), 2);
    // A node with a cursor holds the queue even when it is not named (e.g. after a restart).
    await meta.setObjectReplicationCursor("n1", c4.seq);
    assertEquals(await meta.pruneObjectChanges(["n1"]), 0);
    assertEquals(ops(await meta.objectChanges(0, 10)), ["put k3 null", "put k4 null"]);
    await meta.setObjectReplicationCursor("n2", c4.seq);
    // Everything received: all but the newest, which keeps positions growing.
    assertEquals(await meta.pruneObjectChanges(["n1", "n2"]), 1);
    assertEquals(ops(await meta.objectChanges(0, 10)), ["put k4 null"]);
    await meta.putObjectVersion(version("k5"));
    const next = await meta.objectChanges(c4.seq, 10);
    assertEquals(next.map((c) => c.seq), [c4.seq + 1]);
    assertEquals(await meta.objectReplicationBacklog(c4.seq), {
      depth: 1,
      oldest: next[0].queuedAt,
    });
    await meta.close();
  });

  test("a PENDING version ends COMPLETED or FAILED once", async () => {
    const meta = await open({ clusterNode: "a" });
    await meta.createBucket(bucket("b"));
    await meta.putObjectVersion(version("k"));
    await meta.putObjectVersion(version("r", { replication: "REPLICA" }));
    const k = { bucket: "b", key: "k", versionId: "null" };
    assertEquals(await meta.setReplicationStatus(k, "COMPLETED"), true);
    assertEquals(await meta.setReplicationStatus(k, "FAILED"), false);
    assertEquals((await meta.getObjectVersion("b", "k"))?.replication, "COMPLETED");
    const r = { bucket: "b", key: "r", versionId: "null" };
    assertEquals(await meta.setReplicationStatus(r, "COMPLETED"), false);
    assertEquals((await meta.getObjectVersion("b", "r"))?.replication, "REPLICA");
    // Left out by the bucket's rules: no status at all.
    await meta.putObjectVersion(version("x"));
    const x = { bucket: "b", key: "x", versionId: "null" };
    assertEquals(await meta.setReplicationStatus(x, null), true);
    assertEquals((await meta.getObjectVersion("b", "x"))?.replication, undefined);
    await meta.close();
  });

  test("a replica takes its place by its date: below newer versions, stale when older", async () => {
    const meta = await open({ clusterNode: "a" });
    await meta.createBucket(bucket("b", { versioning: "Enabled" }));
    await meta.putObjectVersion(version("k", { versionId: "v1", lastModified: 100 }));
    await meta.putObjectVersion(
      version("k", { versionId: "m3", lastModified: 300, deleteMarker: true }),
    );
    // Written on another node between the two: it stays below the marker.
    await meta.putObjectVersion(
      version("k", { versionId: "v2", lastModified: 200, replication: "REPLICA" }),
    );
    const page = await meta.listVersions("b", {
      prefix: "",
      delimiter: "",
      keyMarker: "",
      versionIdMarker: "",
      maxKeys: 10,
    });
    assertEquals(page.versions.map((e) => [e.versionId, e.isLatest]), [
      ["m3", true],
      ["v2", false],
      ["v1", false],
    ]);
    // A newer one goes on top; an older copy of a version here changes nothing.
    await meta.putObjectVersion(
      version("k", { versionId: "v4", lastModified: 400, replication: "REPLICA" }),
    );
    await meta.putObjectVersion(
      version("k", { versionId: "v4", lastModified: 50, size: 9, replication: "REPLICA" }),
    );
    assertEquals((await meta.getObjectVersion("b", "k"))?.versionId, "v4");
    assertEquals((await meta.getObjectVersion("b", "k", "v4"))?.size, 1);
    await meta.deleteObjects([{ bucket: "b", key: "k", versionId: "v4", replica: true }]);
    assertEquals((await meta.getObjectVersion("b", "k"))?.versionId, "m3");
    await meta.close();
  });

  test("the queue and the cursors survive a restart", async () => {
    const meta = await open({ clusterNode: "a", data: "objects-restart" });
    await meta.createBucket(bucket("b"));
    await meta.putObjectVersion(version("k"));
    await meta.setObjectReplicationCursor("n1", 1);
    await meta.close();
    const again = await open({ clusterNode: "a", data: "objects-restart" });
    assertEquals(ops(await again.objectChanges(0, 10)), ["put k null"]);
    assertEquals(await again.objectReplicationCursor("n1"), 1);
    await again.close();
  });
}
