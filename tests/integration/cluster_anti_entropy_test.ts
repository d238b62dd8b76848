// Anti-entropy between three nodes on loopback: a pass finds what a node lacks although the
// queues no longer hold it (a node that joined after its changes were pruned; queue rows deleted
// while a node was down) and sends it through the object sender, so every node ends with the same
// versions, version ids and bytes; what a node already holds is not sent again, nothing a node
// holds extra is deleted, and bucket replication rules decide what goes where.
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetBucketTaggingCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  ListObjectVersionsCommand,
  PutBucketReplicationCommand,
  PutBucketTaggingCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  PutObjectTaggingCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "./assert.ts";
import {
  CLUSTER_SECRET,
  clusterAuthorization,
  type ClusterNodeProcess,
  clusterStatus,
  eventually,
  queuedObjectChanges,
  rawCall,
  seenBy,
  startNode,
  stopAll,
} from "./cluster_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, randomBytes, s3Client } from "./server.ts";

const ADMIN = { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) };
const OFF = { STORE_CLUSTER_ANTI_ENTROPY: "off" };
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

interface Pass {
  nodes: string[];
  buckets: number;
  versions_compared: number;
  ranges_differing: number;
  bucket_states_sent: number;
  repaired: number;
  deleted: number;
  failed: number;
}

async function runPass(node: ClusterNodeProcess): Promise<Pass> {
  const res = await fetch(`${node.url}/admin/cluster/anti-entropy`, {
    method: "POST",
    headers: ADMIN,
  });
  assertEquals(res.status, 200);
  return await res.json();
}

async function antiEntropyStatus(node: ClusterNodeProcess) {
  return ((await clusterStatus(node)) as unknown as {
    anti_entropy: {
      interval_seconds: number | null;
      passes: number;
      repaired_total: number;
      deleted_total: number;
      last_pass: Pass | null;
    };
  }).anti_entropy;
}

/** Every version of a bucket as `version id, latest, marker, SHA-256 of its bytes`, sorted. */
async function contents(s3: S3Client, bucket: string): Promise<string[]> {
  const out: string[] = [];
  let KeyMarker: string | undefined;
  let VersionIdMarker: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectVersionsCommand({ Bucket: bucket, KeyMarker, VersionIdMarker }),
    );
    for (const m of page.DeleteMarkers ?? []) {
      out.push(`${m.Key} ${m.VersionId} ${m.IsLatest ? "latest" : "-"} marker`);
    }
    for (const v of page.Versions ?? []) {
      const got = await s3.send(
        new GetObjectCommand({ Bucket: bucket, Key: v.Key, VersionId: v.VersionId }),
      );
      const bytes = await got.Body!.transformToByteArray();
      out.push(`${v.Key} ${v.VersionId} ${v.IsLatest ? "latest" : "-"} ${v.ETag} ${sha(bytes)}`);
    }
    KeyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
    VersionIdMarker = page.NextVersionIdMarker;
  } while (KeyMarker);
  return out.sort();
}

/**
 * Stops a, drops its queued object changes of `op` as a lost write would (`expected` of them),
 * and starts a and b again with anti-entropy off: the two restarted nodes.
 */
async function restartLosing(
  a: ClusterNodeProcess,
  b: ClusterNodeProcess,
  op: string,
  expected: number,
): Promise<[ClusterNodeProcess, ClusterNodeProcess]> {
  await a.server.stop();
  const db = new DatabaseSync(`${a.dataDir}/meta.db`);
  const lost = db.prepare("DELETE FROM cluster_object_changes WHERE op = ?").run(op);
  assertEquals(Number(lost.changes), expected);
  db.close();
  const a2 = await startNode("node-a", { port: a.port, dataDir: a.dataDir, env: OFF });
  const b2 = await startNode("node-b", {
    port: b.port,
    dataDir: b.dataDir,
    seeds: [a2.url],
    env: OFF,
  });
  return [a2, b2];
}

async function allAlive(nodes: ClusterNodeProcess[]): Promise<void> {
  for (const n of nodes) {
    await eventually(
      `${n.id} sees the others`,
      () => seenBy(n),
      (s) => s.length === nodes.length - 1 && s.every((x) => x.endsWith(":alive")),
    );
  }
}

const versioned = (Bucket: string) =>
  new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status: "Enabled" } });

Deno.test("anti-entropy: a node that joined after the queue was pruned gets everything", async (t) => {
  const a = await startNode("node-a", { env: OFF });
  const b = await startNode("node-b", { seeds: [a.url], env: OFF });
  const nodes = [a, b];
  const s3a = s3Client(a.server);
  const s3b = s3Client(b.server);
  try {
    await allAlive([a, b]);
    await s3a.send(new CreateBucketCommand({ Bucket: "aent" }));
    await s3a.send(versioned("aent"));
    await s3a.send(new CreateBucketCommand({ Bucket: "ruled" }));
    await s3a.send(versioned("ruled"));
    await eventually("buckets on b", async () => {
      try {
        await s3b.send(new ListObjectVersionsCommand({ Bucket: "ruled" }));
        return true;
      } catch {
        return false;
      }
    }, (ok) => ok);
    await s3a.send(
      new PutBucketReplicationCommand({
        Bucket: "ruled",
        ReplicationConfiguration: {
          Role: "",
          Rules: [{
            ID: "keep",
            Status: "Enabled",
            Priority: 1,
            Filter: { Prefix: "keep/" },
            Destination: { Bucket: "arn:aws:s3:::ruled" },
            DeleteMarkerReplication: { Status: "Disabled" },
          }],
        },
      }),
    );
    // 40 keys (one of 300 KiB, stored in chunks), 10 with a second version, one delete marker;
    // written on both nodes. In "ruled", only keep/ goes to the other nodes.
    for (let i = 0; i < 40; i++) {
      const Body = i === 7 ? randomBytes(300 * 1024) : `value ${i}`;
      await (i % 2 ? s3b : s3a).send(new PutObjectCommand({ Bucket: "aent", Key: `k/${i}`, Body }));
    }
    for (let i = 0; i < 10; i++) {
      await s3a.send(new PutObjectCommand({ Bucket: "aent", Key: `k/${i}`, Body: `second ${i}` }));
    }
    await s3b.send(new DeleteObjectCommand({ Bucket: "aent", Key: "k/39" }));
    for (const p of ["keep", "skip"]) {
      for (let i = 0; i < 3; i++) {
        await s3a.send(new PutObjectCommand({ Bucket: "ruled", Key: `${p}/${i}`, Body: p }));
      }
    }
    const expected = await eventually(
      "a has every version",
      () => contents(s3a, "aent"),
      (c) => c.length === 51,
    );
    await eventually(
      "b has every version",
      () => contents(s3b, "aent"),
      (c) => JSON.stringify(c) === JSON.stringify(expected),
      60_000,
    );
    // Every node has received everything: the queues are pruned (every 5 heartbeats here).
    await eventually(
      "queues pruned",
      () => Promise.resolve([queuedObjectChanges(a), queuedObjectChanges(b)]),
      (q) => q.every((n) => n <= 1),
      30_000,
    );

    const c = await startNode("node-c", { seeds: [a.url], env: OFF });
    nodes.push(c);
    const s3c = s3Client(c.server);
    await allAlive(nodes);
    // The buckets reach c through the bucket queue (never pruned); the objects do not.
    await eventually("buckets on c", async () => {
      try {
        return (await s3c.send(new ListObjectVersionsCommand({ Bucket: "aent" }))).Versions ?? [];
      } catch {
        return undefined;
      }
    }, (v) => v !== undefined && v.length === 0);
    // The newest row of each queue is never pruned: c gets those from the queues (at most one
    // from each of a and b), and nothing else.
    for (const node of [a, b]) {
      await eventually(
        `${node.id}'s queue towards c drained`,
        async () =>
          ((await clusterStatus(node)).nodes.find((n) => n.id === "node-c") as unknown as {
            object_queue_depth?: number;
          })?.object_queue_depth,
        (d) => d === 0,
      );
    }
    const before = (await contents(s3c, "aent")).length + (await contents(s3c, "ruled")).length;
    assert(before <= 2, String(before));

    await t.step("a pass on a sends c what it lacks, and nothing to b", async () => {
      const pass = await runPass(a);
      assertEquals(pass.nodes.sort(), ["node-b", "node-c"]);
      assertEquals(pass.failed, 0);
      // 51 versions of "aent" and the three keep/ objects of "ruled".
      assertEquals(pass.repaired, 54 - before);
      assertEquals(pass.buckets, 2);
      assertEquals(await contents(s3c, "aent"), expected);
      const ruled = await contents(s3c, "ruled");
      assertEquals(ruled.map((l) => l.split(" ")[0]), ["keep/0", "keep/1", "keep/2"]);
      const onA = await contents(s3a, "ruled");
      assertEquals(ruled, onA.filter((l) => l.startsWith("keep/")));
    });

    await t.step("what a node holds is not sent again; nothing extra is deleted", async () => {
      const again = await runPass(a);
      assertEquals([again.repaired, again.failed], [0, 0]);
      // b and c hold no skip/ objects: those ranges differ, and stay as the rules have them.
      assert(again.ranges_differing >= 2, JSON.stringify(again));
      for (const node of [b, c]) {
        const pass = await runPass(node);
        assertEquals([pass.repaired, pass.failed], [0, 0], JSON.stringify(pass));
      }
      assertEquals((await contents(s3a, "ruled")).length, 6);
      const status = await antiEntropyStatus(a);
      assertEquals(status.interval_seconds, null);
      assertEquals(status.passes, 2);
      assertEquals(status.repaired_total, 54 - before);
      assertEquals(status.last_pass?.repaired, 0);
      const metrics = await (await fetch(`${a.url}/metrics`, { headers: ADMIN })).text();
      const repaired = /^store_cluster_anti_entropy_repaired_total (\d+)$/m.exec(metrics);
      assertEquals(Number(repaired?.[1]), 54 - before);
      assert(/^store_cluster_anti_entropy_passes_total 2$/m.test(metrics), metrics);
    });

    await t.step("the admin trigger is the administrator's, POST only", async () => {
      const path = `${a.url}/admin/cluster/anti-entropy`;
      const wrong = { authorization: "Basic " + btoa(`${ADMIN_USER}:wrong-password`) };
      const denied = await fetch(path, { method: "POST", headers: wrong });
      await denied.body?.cancel();
      assertEquals(denied.status, 401);
      const get = await fetch(path, { headers: ADMIN });
      assertEquals([get.status, (await get.json()).error.code], [405, "method_not_allowed"]);
      const started = await fetch(`${path}?wait=false`, { method: "POST", headers: ADMIN });
      assertEquals([started.status, await started.json()], [202, { running: true }]);
      await eventually("the pass ends", () => antiEntropyStatus(a), (s) => s.passes === 3);
    });

    await t.step(
      "the cluster call is signed; unsigned, forged and replayed calls refused",
      async () => {
        const body = JSON.stringify({ op: "buckets", after: 0 });
        const call = {
          method: "POST",
          path: "/cluster/anti-entropy",
          body,
          nonce: "ab".repeat(16),
        };
        const unsigned = await fetch(`${a.url}/cluster/anti-entropy`, { method: "POST", body });
        assertEquals([unsigned.status, (await unsigned.json()).error.code], [
          403,
          "cluster_unsigned",
        ]);
        const forged = await rawCall(a.url, { ...call, secret: "x".repeat(CLUSTER_SECRET.length) });
        assertEquals([forged.status, (await forged.json()).error.code], [
          403,
          "cluster_bad_signature",
        ]);
        const authorization = clusterAuthorization(call);
        const ok = await rawCall(a.url, call, authorization);
        assertEquals(ok.status, 200);
        const answer = await ok.json();
        assertEquals(answer.buckets.map((x: { bucket: string }) => x.bucket).sort(), [
          "aent",
          "ruled",
        ]);
        const replayed = await rawCall(a.url, call, authorization);
        assertEquals([replayed.status, (await replayed.json()).error.code], [
          403,
          "cluster_replayed",
        ]);
      },
    );
  } finally {
    await stopAll(nodes);
  }
});

Deno.test("anti-entropy: queue rows lost while a node was down are repaired by the periodic pass", async () => {
  // b passes every 2 s; a and c never do.
  const B_ENV = { STORE_CLUSTER_ANTI_ENTROPY: "2s" };
  let a = await startNode("node-a", { env: OFF });
  let b = await startNode("node-b", { seeds: [a.url], env: B_ENV });
  let c = await startNode("node-c", { seeds: [a.url], env: OFF });
  const nodes = [a, b, c];
  try {
    await allAlive(nodes);
    await c.server.stop();
    // Made while c is down: a bucket with tags and 20 objects.
    const s3a = s3Client(a.server);
    await s3a.send(new CreateBucketCommand({ Bucket: "lost" }));
    await s3a.send(
      new PutBucketTaggingCommand({
        Bucket: "lost",
        Tagging: { TagSet: [{ Key: "team", Value: "blue" }] },
      }),
    );
    for (let i = 0; i < 20; i++) {
      await s3a.send(new PutObjectCommand({ Bucket: "lost", Key: `x${i}`, Body: `lost ${i}` }));
    }
    const expected = await contents(s3a, "lost");
    await eventually(
      "b has them",
      () => contents(s3Client(b.server), "lost").catch(() => []),
      (got) => JSON.stringify(got) === JSON.stringify(expected),
      30_000,
    );
    // The changes for c are lost while a and b are stopped: a's queue rows are deleted, and b's
    // bucket queue (which queued the bucket again when it took it) counts them as delivered to c.
    await Promise.all([a.server.stop(), b.server.stop()]);
    const dbA = new DatabaseSync(`${a.dataDir}/meta.db`);
    assert(Number(dbA.prepare("DELETE FROM cluster_object_changes").run().changes) >= 20);
    assert(Number(dbA.prepare("DELETE FROM cluster_changes").run().changes) >= 1);
    dbA.close();
    const dbB = new DatabaseSync(`${b.dataDir}/meta.db`);
    dbB.prepare(
      "INSERT INTO cluster_cursors (node, seq) SELECT 'node-c', max(seq) FROM cluster_changes " +
        "WHERE true ON CONFLICT(node) DO UPDATE SET seq = excluded.seq",
    ).run();
    dbB.close();
    a = await startNode("node-a", { port: a.port, dataDir: a.dataDir, env: OFF });
    b = await startNode("node-b", { port: b.port, dataDir: b.dataDir, seeds: [a.url], env: B_ENV });
    c = await startNode("node-c", { port: c.port, dataDir: c.dataDir, seeds: [a.url], env: OFF });
    nodes.splice(0, 3, a, b, c);
    // b holds the bucket's state and the versions as replicas, and repairs c on its own schedule.
    const s3c = s3Client(c.server);
    await eventually(
      "c has the bucket and every version",
      () => contents(s3c, "lost").catch(() => []),
      (got) => JSON.stringify(got) === JSON.stringify(expected),
      60_000,
    );
    const tags = await s3c.send(new GetBucketTaggingCommand({ Bucket: "lost" }));
    assertEquals(tags.TagSet, [{ Key: "team", Value: "blue" }]);
    const status = await antiEntropyStatus(b);
    assertEquals(status.interval_seconds, 2);
    assertEquals(status.repaired_total, 20);
    assert(status.passes >= 1);
    // The bucket's state reached c from b's passes too (each pass that sent something logs it).
    const passes = b.server.logs().split("\n").filter((l) => l.includes('"Anti-entropy pass"'))
      .map((l) => JSON.parse(l) as { bucketStatesSent: number; repaired: number });
    assert(passes.some((p) => p.bucketStatesSent >= 1), b.server.logs());
    assertEquals(passes.reduce((n, p) => n + p.repaired, 0), 20);
    // c's copies are replicas, with the same version ids (in `expected`) as on a.
    const head = await s3c.send(new GetObjectCommand({ Bucket: "lost", Key: "x3" }));
    await head.Body!.transformToByteArray();
    assertEquals(head.ReplicationStatus, "REPLICA");
  } finally {
    await stopAll(nodes);
  }
});

/** A version's tags as `key=value`, sorted. */
async function tagsOf(s3: S3Client, Bucket: string, Key: string): Promise<string[]> {
  const out = await s3.send(new GetObjectTaggingCommand({ Bucket, Key }));
  return (out.TagSet ?? []).map((t) => `${t.Key}=${t.Value}`).sort();
}

Deno.test("anti-entropy: a tag change whose queue row was lost is repaired, the newer stamp kept", async () => {
  let a = await startNode("node-a", { env: OFF });
  let b = await startNode("node-b", { seeds: [a.url], env: OFF });
  const nodes = [a, b];
  try {
    await allAlive(nodes);
    const s3a = s3Client(a.server);
    await s3a.send(new CreateBucketCommand({ Bucket: "later" }));
    for (const Key of ["t1", "t2"]) {
      await s3a.send(new PutObjectCommand({ Bucket: "later", Key, Body: Key }));
    }
    await eventually(
      "b has both",
      () => contents(s3Client(b.server), "later").catch(() => []),
      (got) => got.length === 2,
    );
    // While b is down, t1's tags change on a, and a's queue row of the change is lost.
    await b.server.stop();
    await s3a.send(
      new PutObjectTaggingCommand({
        Bucket: "later",
        Key: "t1",
        Tagging: { TagSet: [{ Key: "team", Value: "red" }] },
      }),
    );
    [a, b] = await restartLosing(a, b, "tags", 1);
    nodes.splice(0, 2, a, b);
    await allAlive(nodes);
    const s3b = s3Client(b.server);
    // Meanwhile t2's tags change on b (delivered to a by b's queue): a later stamp there.
    await s3b.send(
      new PutObjectTaggingCommand({
        Bucket: "later",
        Key: "t2",
        Tagging: { TagSet: [{ Key: "team", Value: "blue" }] },
      }),
    );
    await eventually(
      "a has t2's tags",
      () => tagsOf(s3Client(a.server), "later", "t2"),
      (t) => t.join() === "team=blue",
    );
    assertEquals(await tagsOf(s3b, "later", "t1"), []);
    const pass = await runPass(a);
    assertEquals([pass.repaired, pass.failed, pass.ranges_differing], [1, 0, 1]);
    for (const s of [s3Client(a.server), s3b]) {
      assertEquals(await tagsOf(s, "later", "t1"), ["team=red"]);
      assertEquals(await tagsOf(s, "later", "t2"), ["team=blue"]);
    }
    // The stamps agree now: nothing differs in either direction.
    for (const node of [a, b]) {
      const again = await runPass(node);
      assertEquals([again.repaired, again.ranges_differing], [0, 0]);
    }
  } finally {
    await stopAll(nodes);
  }
});

/** The version ids of a key on a node, sorted. */
async function versionIds(s3: S3Client, Bucket: string, Key: string): Promise<string[]> {
  const out = await s3.send(new ListObjectVersionsCommand({ Bucket, Prefix: Key }));
  return (out.Versions ?? []).filter((v) => v.Key === Key).map((v) => v.VersionId!).sort();
}

Deno.test("anti-entropy: a version deletion whose queue row was lost is not undone", async () => {
  let a = await startNode("node-a", { env: OFF });
  let b = await startNode("node-b", { seeds: [a.url], env: OFF });
  const nodes = [a, b];
  try {
    await allAlive(nodes);
    const s3a = s3Client(a.server);
    await s3a.send(new CreateBucketCommand({ Bucket: "gone" }));
    await s3a.send(versioned("gone"));
    await s3a.send(new CreateBucketCommand({ Bucket: "held", ObjectLockEnabledForBucket: true }));
    const put = (Bucket: string, Key: string) =>
      s3a.send(new PutObjectCommand({ Bucket, Key, Body: Key }));
    const first = await put("gone", "d");
    const second = await put("gone", "d");
    const held = await put("held", "h");
    await eventually(
      "b has them",
      async () => [
        ...await versionIds(s3Client(b.server), "gone", "d").catch(() => []),
        ...await versionIds(s3Client(b.server), "held", "h").catch(() => []),
      ],
      (ids) => ids.length === 3,
    );
    // While b is down, a deletes the first version of d and the version of h; a's queue rows of
    // the deletions are lost.
    await b.server.stop();
    await s3a.send(
      new DeleteObjectCommand({ Bucket: "gone", Key: "d", VersionId: first.VersionId }),
    );
    await s3a.send(
      new DeleteObjectCommand({ Bucket: "held", Key: "h", VersionId: held.VersionId }),
    );
    [a, b] = await restartLosing(a, b, "delete", 2);
    nodes.splice(0, 2, a, b);
    await allAlive(nodes);
    const s3b = s3Client(b.server);
    // b's copy of h is under legal hold there (set after the deletion: a no longer holds h).
    await s3b.send(
      new PutObjectLegalHoldCommand({
        Bucket: "held",
        Key: "h",
        VersionId: held.VersionId,
        LegalHold: { Status: "ON" },
      }),
    );
    assertEquals(await versionIds(s3b, "gone", "d"), [first.VersionId!, second.VersionId!].sort());
    // b's pass would have sent them back to a; it removes its copy of d's first version instead,
    // and keeps h (its Object Lock decides, as for a replicated deletion).
    const pass = await runPass(b);
    assertEquals([pass.repaired, pass.deleted, pass.failed], [0, 1, 1]);
    for (const s of [s3a, s3b]) {
      assertEquals(await versionIds(s, "gone", "d"), [second.VersionId!]);
    }
    assertEquals(await versionIds(s3b, "held", "h"), [held.VersionId!]);
    assertEquals(await versionIds(s3a, "held", "h"), []);
    // a's pass has nothing to send or remove for d.
    const back = await runPass(a);
    assertEquals([back.repaired, back.deleted], [0, 0]);
    const status = await antiEntropyStatus(b);
    assertEquals(status.deleted_total, 1);
    const metrics = await (await fetch(`${b.url}/metrics`, { headers: ADMIN })).text();
    assert(/^store_cluster_anti_entropy_deleted_total 1$/m.test(metrics), metrics);
  } finally {
    await stopAll(nodes);
  }
});
