// A whole anti-entropy pass (anti_entropy.ts) between two SQLite stores in one process: the other
// node's answers come from AntiEntropyAnswers on its store, bucket states are applied to it, and
// the versions sent are copied into it as replicas, so what a pass sends can be counted exactly.
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { AntiEntropy, type VersionTarget } from "./anti_entropy.ts";
import { AntiEntropyAnswers } from "./anti_entropy_answer.ts";
import { Membership } from "./membership.ts";
import { SqliteMetaStore } from "../meta/sqlite.ts";
import { PgMetaStore } from "../meta/pg/store.ts";
import postgres from "postgres";
import { createPostgres } from "../../tests/services/postgres.ts";
import { bucket, version } from "../meta/contract/helpers.ts";
import type { BucketState, MetaStore, ObjectVersion } from "../meta/store.ts";
import { type ReplicationConfig, ruleFor } from "./rules.ts";
import { stampedParts } from "../meta/version_stamps.ts";

const wire = <T>(value: T): T => JSON.parse(JSON.stringify(value));

type Open = (node: string) => Promise<MetaStore>;
const sqlite: Open = (node) =>
  Promise.resolve(new SqliteMetaStore(":memory:", { clusterNode: node }));

async function pair(rate = 0, open = sqlite) {
  const here = await open("a");
  const there = await open("b");
  const membership = new Membership({ id: "a", url: "http://a" }, {
    suspectMs: 60_000,
    deadMs: 120_000,
  });
  membership.heardFrom({ id: "b", url: "http://b" });
  const answers = new AntiEntropyAnswers(there);
  const sent: string[] = [];
  const pass = new AntiEntropy({
    meta: here,
    membership,
    ask: async (_url, body) =>
      wire(await answers.answer("a", wire(body) as Record<string, unknown>)) as Record<
        string,
        unknown
      >,
    sendBuckets: (_url, states: BucketState[]) =>
      Promise.all(wire(states).map((s) => there.applyBucketState(s))),
    // What the object sender does, at the metadata level: the version as a replica there, in
    // its rule's destination bucket.
    sendVersion: async (_node, _url, t: VersionTarget, what) => {
      const v = await here.getObjectVersion(t.bucket, t.key, t.versionId);
      if (!v) return "skipped";
      if (what === "parts") {
        sent.push(`parts ${t.bucket}/${t.key}/${t.versionId}`);
        await there.mergeVersionParts(t, wire(stampedParts(v)));
        return "delivered";
      }
      sent.push(`${t.bucket}/${t.key}/${t.versionId}`);
      const rules = await here.getBucketConfig(t.bucket, "replication");
      const destination = rules ? ruleFor(JSON.parse(rules), v)!.destination : t.bucket;
      await there.putObjectVersion({ ...v, bucket: destination, replication: "REPLICA" });
      return "delivered";
    },
    // What the node does with a version the other removed: a replica's removal here.
    dropVersion: async (t, at) => {
      const v = await here.getObjectVersion(t.bucket, t.key, t.versionId);
      if (!v || v.lastModified > at) return "kept";
      sent.push(`removed ${t.bucket}/${t.key}/${t.versionId}`);
      await here.deleteObjects([{ ...t, replica: true }]);
      return "deleted";
    },
  }, { rate });
  return { here, there, pass, sent };
}

const v = (b: string, key: string, over: Partial<ObjectVersion> = {}) =>
  version(key, {
    bucket: b,
    versionId: `${key}-v`,
    etag: `"${key}"`,
    lastModified: 1_700_000_000_000,
    ...over,
  });

async function putBoth(here: MetaStore, there: MetaStore, item: ObjectVersion) {
  await here.putObjectVersion(item);
  await there.putObjectVersion({ ...item, replication: "REPLICA" });
}

async function exactSends(open: Open) {
  const { here, there, pass, sent } = await pair(0, open);
  try {
    await here.createBucket(bucket("one", { versioning: "Enabled" }));
    await there.applyBucketState(wire((await here.bucketChanges(0, 10))[0]));
    // 1,000 keys on both (four ranges of 256), three missing there, one there only.
    // Started together: the group commit writes them in a few transactions.
    await Promise.all(Array.from({ length: 1000 }, (_, i) => {
      const item = v("one", `k${String(i).padStart(4, "0")}`);
      return [5, 500, 999].includes(i) ? here.putObjectVersion(item) : putBoth(here, there, item);
    }));
    await there.putObjectVersion(v("one", "k0500b"));
    // A bucket (with a configuration) the other node lacks altogether.
    await here.createBucket(bucket("two"));
    await here.putBucketConfig("two", "tagging", '{"t":"1"}');
    await here.putObjectVersion(v("two", "only"));
    const first = await pass.runNow();
    assertEquals(sent.sort(), [
      "one/k0005/k0005-v",
      "one/k0500/k0500-v",
      "one/k0999/k0999-v",
      "two/only/only-v",
    ]);
    assertEquals([first.repaired, first.failed, first.buckets, first.bucketStatesSent], [
      4,
      0,
      2,
      1,
    ]);
    assertEquals(await there.getBucketConfig("two", "tagging"), '{"t":"1"}');
    assertEquals(first.nodes, ["b"]);
    // Ranges differing in "one": the two with a missing key, the one with k0500b, the last.
    assert(first.rangesDiffering >= 3 && first.rangesDiffering <= 5, JSON.stringify(first));
    sent.length = 0;
    const second = await pass.runNow();
    // k0500b is there only: its range still differs, and nothing is sent or deleted.
    assertEquals([second.repaired, second.bucketStatesSent, second.rangesDiffering], [0, 0, 1]);
    assertEquals(sent, []);
    assert(await there.getObjectVersion("one", "k0500b", "k0500b-v"));
    assertEquals(pass.status().passes, 2);
    assertEquals(pass.status().repairedTotal, 4);
  } finally {
    await here.close();
    await there.close();
  }
}

Deno.test("a pass sends exactly what the other node lacks, buckets first; the next sends nothing", () =>
  exactSends(sqlite));

/**
 * Versions removed on the other node (their removals lost to this one) are removed here, not sent
 * back, while the tombstones are kept; one written after the removal is sent.
 */
async function removals(open: Open) {
  const { here, there, pass, sent } = await pair(0, open);
  try {
    await here.createBucket(bucket("gone", { versioning: "Enabled" }));
    await there.applyBucketState(wire((await here.bucketChanges(0, 10))[0]));
    for (const key of ["r1", "r2", "r4"]) await putBoth(here, there, v("gone", key));
    // r3: a later copy here (written again under the same id) than the one removed there.
    await here.putObjectVersion(v("gone", "r3", { lastModified: Date.now() + 60_000 }));
    await there.putObjectVersion({ ...v("gone", "r3"), replication: "REPLICA" });
    const target = (key: string) => ({ bucket: "gone", key, versionId: `${key}-v` });
    // Removed there, by a request (r1) and as a replica (r2): both leave a tombstone.
    const [one] = await there.deleteObjects([target("r1")]);
    const [two] = await there.deleteObjects([{ ...target("r2"), replica: true }]);
    assert(one.ok && one.removed && two.ok && two.removed);
    assert((await there.versionTombstone(target("r1")))! >= 1_700_000_000_000);
    assertEquals(await there.versionTombstone(target("r3")), undefined);
    // Removals whose queue rows were lost: replicas' removals queue nothing (a queued removal not
    // yet delivered keeps the version from being reported lacking at all).
    await there.deleteObjects([{ ...target("r3"), replica: true }]);
    const first = await pass.runNow();
    assertEquals(sent.sort(), ["gone/r3/r3-v", "removed gone/r1/r1-v", "removed gone/r2/r2-v"]);
    assertEquals([first.deleted, first.repaired, first.failed], [2, 1, 0]);
    assertEquals(await here.getObjectVersion("gone", "r1", "r1-v"), undefined);
    // Removed here as a replica: not queued for the other nodes (it is their removal).
    const queued = await here.objectChanges(0, 100);
    assertEquals(queued.filter((c) => c.op === "delete"), []);
    sent.length = 0;
    const second = await pass.runNow();
    assertEquals([sent, second.rangesDiffering], [[], 0]);
    assertEquals(pass.status().deletedTotal, 2);
    // Once the tombstones are pruned, a removal the queue lost is undone (the setting's limit).
    assertEquals(await there.pruneTombstones(Date.now() + 120_000), 3);
    await there.deleteObjects([{ ...target("r4"), replica: true }]);
    await there.pruneTombstones(Date.now() + 120_000);
    await pass.runNow();
    assertEquals(sent, ["gone/r4/r4-v"]);
  } finally {
    await here.close();
    await there.close();
  }
}

Deno.test("versions removed on the other node are removed here while their tombstones last", () =>
  removals(sqlite));

Deno.test("the same between two nodes with their metadata in PostgreSQL", async () => {
  const pg = await createPostgres();
  await pg.start();
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
  try {
    await exactSends(async (node) => {
      await admin.unsafe(`CREATE DATABASE ae_${node}`);
      const url = pg.url.replace(/\/postgres$/, `/ae_${node}`);
      return await PgMetaStore.open({ url, pool: 2, clusterNode: node });
    });
    await removals(async (node) => {
      await admin.unsafe(`CREATE DATABASE ae2_${node}`);
      const url = pg.url.replace(/\/postgres$/, `/ae2_${node}`);
      return await PgMetaStore.open({ url, pool: 2, clusterNode: node });
    });
  } finally {
    await admin.end({ timeout: 1 });
    await pg.dispose();
  }
});

Deno.test("a later change the other node lacks is sent as its stamped parts, once", async () => {
  const { here, there, pass, sent } = await pair();
  try {
    await here.createBucket(bucket("later", { versioning: "Enabled" }));
    await there.applyBucketState(wire((await here.bucketChanges(0, 10))[0]));
    for (const key of ["t1", "t2", "t3"]) await putBoth(here, there, v("later", key));
    const target = (key: string) => ({ bucket: "later", key, versionId: `${key}-v` });
    // t1's tags changed here (the queued change lost); t2's there (its own pass sends them).
    assert(await here.setObjectTags(target("t1"), { team: "red" }));
    assert(await there.setObjectTags(target("t2"), { team: "blue" }));
    const first = await pass.runNow();
    assertEquals(sent, ["parts later/t1/t1-v"]);
    assertEquals([first.repaired, first.rangesDiffering], [1, 1]);
    const t1 = await there.getObjectVersion("later", "t1", "t1-v");
    assertEquals(t1?.tags, { team: "red" });
    assertEquals(t1?.stamps, (await here.getObjectVersion("later", "t1", "t1-v"))?.stamps);
    assertEquals((await there.getObjectVersion("later", "t2", "t2-v"))?.tags, { team: "blue" });
    // t2 still differs (the other node holds the later change): nothing more to send from here.
    sent.length = 0;
    const second = await pass.runNow();
    assertEquals([sent.length, second.repaired, second.rangesDiffering], [0, 0, 1]);
    // Taken here too, both hold the same stamps: the ranges agree.
    await here.mergeVersionParts(
      target("t2"),
      wire(stampedParts((await there.getObjectVersion("later", "t2", "t2-v"))!)),
    );
    const third = await pass.runNow();
    assertEquals([sent.length, third.rangesDiffering], [0, 0]);
  } finally {
    await here.close();
    await there.close();
  }
});

Deno.test("under replication rules only this node's own versions that a rule sends are sent", async () => {
  const { here, there, pass, sent } = await pair();
  try {
    await here.createBucket(bucket("ruled", { versioning: "Enabled" }));
    await here.createBucket(bucket("dest", { versioning: "Enabled" }));
    const rules: ReplicationConfig = {
      role: "",
      rules: [
        { id: "k", enabled: true, prefix: "keep/", destination: "ruled", deleteMarkers: false },
        { id: "m", enabled: true, prefix: "moved/", destination: "dest", deleteMarkers: false },
      ],
    };
    await here.putBucketConfig("ruled", "replication", JSON.stringify(rules));
    await here.putObjectVersion(v("ruled", "keep/1"));
    await here.putObjectVersion(v("ruled", "skip/1"));
    await here.putObjectVersion(v("ruled", "moved/1"));
    await here.putObjectVersion(v("ruled", "moved/2"));
    // A replica received here is its source's to repair; a marker the rule leaves out stays.
    await here.putObjectVersion(v("ruled", "keep/replica", { replication: "REPLICA" }));
    await here.putObjectVersion(
      v("ruled", "keep/marker", { deleteMarker: true, size: 0, data: { kind: "none" } }),
    );
    const first = await pass.runNow();
    assertEquals(sent.sort(), [
      "ruled/keep/1/keep/1-v",
      "ruled/moved/1/moved/1-v",
      "ruled/moved/2/moved/2-v",
    ]);
    assertEquals([first.repaired, first.failed, first.bucketStatesSent], [3, 0, 2]);
    assert(await there.getObjectVersion("dest", "moved/1", "moved/1-v"));
    // Removed there (as replicas, not queued back): keep/1 from "ruled", moved/1 from "dest".
    sent.length = 0;
    await there.deleteObjects([
      { bucket: "ruled", key: "keep/1", versionId: "keep/1-v", replica: true },
      { bucket: "dest", key: "moved/1", versionId: "moved/1-v", replica: true },
    ]);
    const second = await pass.runNow();
    // moved/2 is in "dest" there, which is asked about for the moved/ versions.
    assertEquals(sent.sort(), ["ruled/keep/1/keep/1-v", "ruled/moved/1/moved/1-v"]);
    assertEquals(second.failed, 0);
  } finally {
    await here.close();
    await there.close();
  }
});

Deno.test("the pass reads at most `rate` versions a second; stop ends a running pass", async () => {
  const { here, there, pass } = await pair(2000);
  try {
    await here.createBucket(bucket("slow"));
    await there.applyBucketState(wire((await here.bucketChanges(0, 10))[0]));
    await Promise.all(
      Array.from({ length: 1500 }, (_, i) => putBoth(here, there, v("slow", `k${i}`))),
    );
    const started = Date.now();
    const report = await pass.runNow();
    const took = Date.now() - started;
    assertEquals([report.versionsCompared, report.rangesDiffering], [1500, 0]);
    // 1,500 versions at 2,000 a second.
    assert(took >= 600, String(took));
    const running = pass.runNow();
    await new Promise((r) => setTimeout(r, 100));
    await pass.stop();
    const stopped = await running;
    assertEquals(stopped.error, "stopped");
    assert(stopped.versionsCompared < 1500, JSON.stringify(stopped));
  } finally {
    await here.close();
    await there.close();
  }
});
