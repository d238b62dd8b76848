// Later changes of a version between three nodes on loopback: ACL, retention and legal hold
// changed on any node reach the others for the same version id, and concurrent changes of one
// version on several nodes converge on one value everywhere; a replicated deletion is refused
// where the version is under Object Lock (governance retention yields when the source bypassed
// it; compliance and legal holds never); the source's replication outcomes reach a webhook
// through the event outbox.
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectAclCommand,
  GetObjectLegalHoldCommand,
  GetObjectRetentionCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  PutObjectAclCommand,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  PutObjectRetentionCommand,
  PutObjectTaggingCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { assert, assertEquals } from "./assert.ts";
import { createHash } from "node:crypto";
import {
  bucketExists,
  clusterAuthorization,
  type ClusterNodeProcess,
  eventually,
  seenBy,
  startNode,
  stopAll,
} from "./cluster_helpers.ts";
import { s3Client } from "./server.ts";
import { putConfig, webhookConfig } from "./notify_helpers.ts";
import { type EventRecord, WebhookReceiver } from "./webhook_receiver.ts";

async function clusterOf3(): Promise<ClusterNodeProcess[]> {
  const a = await startNode("node-a");
  const b = await startNode("node-b", { seeds: [a.url] });
  const c = await startNode("node-c", { seeds: [a.url] });
  for (const n of [a, b, c]) {
    await eventually(`${n.id} sees the others`, () => seenBy(n), (s) =>
      s.length === 2 &&
      s.every((x) => x.endsWith(":alive")));
  }
  return [a, b, c];
}

/** An object change sent to a node as node-a would send it (no body), signed. */
function objectCall(node: ClusterNodeProcess, message: Record<string, unknown>) {
  const header = btoa(JSON.stringify(message));
  const path = `/cluster/object?meta=${createHash("sha256").update(header).digest("hex")}`;
  return fetch(node.url + path, {
    method: "POST",
    headers: {
      authorization: clusterAuthorization({ method: "POST", path, body: "", node: "node-a" }),
      "x-cluster-object": header,
      "x-store-replication-status": "REPLICA",
    },
  });
}

/**
 * Puts a version under COMPLIANCE retention on one node only, as a later change from node-a with
 * a newer stamp would: its source keeps it under GOVERNANCE.
 */
async function complianceOn(
  node: ClusterNodeProcess,
  bucket: string,
  key: string,
  versionId: string,
  until: Date,
) {
  const res = await objectCall(node, {
    op: "lock",
    bucket,
    key,
    versionId,
    parts: {
      retention: {
        value: { mode: "COMPLIANCE", until: until.getTime() },
        stamp: { ms: Date.now(), node: "node-a" },
      },
    },
  });
  assertEquals(res.status, 200, await res.text());
  const s3 = s3Client(node.server);
  const r = await s3.send(
    new GetObjectRetentionCommand({ Bucket: bucket, Key: key, VersionId: versionId }),
  );
  assertEquals(r.Retention?.Mode, "COMPLIANCE");
}

const statusOf = (err: unknown) =>
  (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

async function hasVersion(s3: S3Client, bucket: string, key: string, versionId: string) {
  try {
    await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }));
    return true;
  } catch (err) {
    if (statusOf(err) === 404) return false;
    throw err;
  }
}

/** The version's ACL, retention, legal hold and tags as one node serves them. */
async function partsOn(s3: S3Client, bucket: string, key: string, versionId: string) {
  const target = { Bucket: bucket, Key: key, VersionId: versionId };
  const acl = await s3.send(new GetObjectAclCommand(target));
  const grants = (acl.Grants ?? [])
    .map((g) => `${g.Grantee?.URI ?? g.Grantee?.ID}:${g.Permission}`)
    .sort();
  let retention: string | undefined;
  try {
    const r = await s3.send(new GetObjectRetentionCommand(target));
    retention = `${r.Retention?.Mode} ${r.Retention?.RetainUntilDate?.toISOString()}`;
  } catch (err) {
    if (statusOf(err) !== 404) throw err;
  }
  const hold = await s3.send(new GetObjectLegalHoldCommand(target));
  const tags = await s3.send(new GetObjectTaggingCommand(target));
  return {
    grants,
    retention,
    legalHold: hold.LegalHold?.Status,
    tags: (tags.TagSet ?? []).map((t) => `${t.Key}=${t.Value}`).sort(),
  };
}

Deno.test("cluster: later ACL, retention and legal hold changes replicate and converge; locks hold replicated deletions", async (t) => {
  const nodes = await clusterOf3();
  const s3 = nodes.map((n) => s3Client(n.server));
  try {
    await s3[0].send(
      new CreateBucketCommand({ Bucket: "locked", ObjectLockEnabledForBucket: true }),
    );
    for (const x of s3) {
      await eventually("bucket everywhere", () => bucketExists(x, "locked"), Boolean);
    }
    const put = await s3[0].send(
      new PutObjectCommand({ Bucket: "locked", Key: "doc.txt", Body: "hello" }),
    );
    const versionId = put.VersionId!;
    for (const x of s3) {
      await eventually(
        "version everywhere",
        () => hasVersion(x, "locked", "doc.txt", versionId),
        Boolean,
      );
    }
    const target = { Bucket: "locked", Key: "doc.txt", VersionId: versionId };

    await t.step("each change made on one node reaches the others", async () => {
      const until = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_600_000);
      await s3[1].send(new PutObjectAclCommand({ ...target, ACL: "public-read" }));
      await s3[2].send(
        new PutObjectRetentionCommand({
          ...target,
          Retention: { Mode: "GOVERNANCE", RetainUntilDate: until },
        }),
      );
      await s3[0].send(new PutObjectLegalHoldCommand({ ...target, LegalHold: { Status: "ON" } }));
      for (const [i, x] of s3.entries()) {
        const parts = await eventually(
          `${nodes[i].id} has every change`,
          () => partsOn(x, "locked", "doc.txt", versionId),
          (p) =>
            p.grants.some((g) => g.endsWith("AllUsers:READ")) && p.retention !== undefined &&
            p.legalHold === "ON",
        );
        assertEquals(parts.retention, `GOVERNANCE ${until.toISOString()}`);
      }
      // The changes left the version's replication status alone.
      const head = await s3[0].send(new HeadObjectCommand(target));
      assertEquals(head.ReplicationStatus, "COMPLETED");
      const replica = await s3[1].send(new HeadObjectCommand(target));
      assertEquals(replica.ReplicationStatus, "REPLICA");
    });

    await t.step("changes of one version made on all three nodes at once converge", async () => {
      for (let round = 0; round < 3; round++) {
        await Promise.all(s3.map((x, i) =>
          Promise.all([
            x.send(
              new PutObjectTaggingCommand({
                ...target,
                Tagging: {
                  TagSet: [{ Key: "by", Value: nodes[i].id }, {
                    Key: "round",
                    Value: String(round),
                  }],
                },
              }),
            ),
            x.send(
              new PutObjectAclCommand({ ...target, ACL: i === 1 ? "private" : "public-read" }),
            ),
            x.send(
              new PutObjectLegalHoldCommand({
                ...target,
                LegalHold: { Status: i === 2 ? "OFF" : "ON" },
              }),
            ),
          ])
        ));
        const views = await eventually(
          `round ${round}: every node ends with the same parts`,
          () => Promise.all(s3.map((x) => partsOn(x, "locked", "doc.txt", versionId))),
          (v) =>
            JSON.stringify(v[0]) === JSON.stringify(v[1]) &&
            JSON.stringify(v[1]) === JSON.stringify(v[2]) &&
            v[0].tags.includes(`round=${round}`),
        );
        // One of the writers won each part, the same one on every node.
        assert(nodes.some((n) => views[0].tags.includes(`by=${n.id}`)), JSON.stringify(views[0]));
        assert(["ON", "OFF"].includes(views[0].legalHold!));
      }
      // Nothing keeps changing once the writes stop.
      const settled = await Promise.all(s3.map((x) => partsOn(x, "locked", "doc.txt", versionId)));
      await new Promise((r) => setTimeout(r, 1500));
      const later = await Promise.all(s3.map((x) => partsOn(x, "locked", "doc.txt", versionId)));
      assertEquals(later, settled);
    });

    await t.step("a replicated deletion is refused where the version is locked", async () => {
      const until = new Date(Date.now() + 3_600_000);
      const gov = await s3[0].send(
        new PutObjectCommand({
          Bucket: "locked",
          Key: "gov.txt",
          Body: "kept",
          ObjectLockMode: "GOVERNANCE",
          ObjectLockRetainUntilDate: until,
        }),
      );
      const govId = gov.VersionId!;
      for (const x of s3) {
        await eventually(
          "gov.txt everywhere",
          () => hasVersion(x, "locked", "gov.txt", govId),
          Boolean,
        );
      }
      // The source may bypass governance retention: the flag travels, and the receivers delete it.
      await s3[0].send(
        new DeleteObjectCommand({
          Bucket: "locked",
          Key: "gov.txt",
          VersionId: govId,
          BypassGovernanceRetention: true,
        }),
      );
      assertEquals(await hasVersion(s3[0], "locked", "gov.txt", govId), false);
      for (const x of s3.slice(1)) {
        await eventually(
          "gov.txt gone everywhere",
          () => hasVersion(x, "locked", "gov.txt", govId),
          (has) => !has,
        );
      }
      // Never COMPLIANCE: a version the receivers hold under compliance retention (its source
      // under governance) is kept there, whatever the source could bypass.
      const comp = await s3[0].send(
        new PutObjectCommand({
          Bucket: "locked",
          Key: "comp.txt",
          Body: "kept",
          ObjectLockMode: "GOVERNANCE",
          ObjectLockRetainUntilDate: until,
        }),
      );
      const compId = comp.VersionId!;
      for (const x of s3) {
        await eventually(
          "comp.txt everywhere",
          () => hasVersion(x, "locked", "comp.txt", compId),
          Boolean,
        );
      }
      for (const n of nodes.slice(1)) {
        await complianceOn(n, "locked", "comp.txt", compId, until);
      }
      await s3[0].send(
        new DeleteObjectCommand({
          Bucket: "locked",
          Key: "comp.txt",
          VersionId: compId,
          BypassGovernanceRetention: true,
        }),
      );
      assertEquals(await hasVersion(s3[0], "locked", "comp.txt", compId), false);
      const logs = await eventually(
        "node-a logs both refusals",
        () => Promise.resolve(nodes[0].server.logs()),
        (l) =>
          l.split("\n").filter((line) =>
            line.includes("A node refused a replicated object change") && line.includes(compId)
          ).length === 2,
      );
      assert(logs.includes("object protected by object lock"), "the reason is logged");
      for (const x of s3.slice(1)) {
        assertEquals(await hasVersion(x, "locked", "comp.txt", compId), true);
      }
      // Refused for good: the queue goes on with the next change.
      const next = await s3[0].send(
        new PutObjectCommand({ Bucket: "locked", Key: "next.txt", Body: "n" }),
      );
      for (const x of s3.slice(1)) {
        await eventually(
          "the next change arrives",
          () => hasVersion(x, "locked", "next.txt", next.VersionId!),
          Boolean,
        );
      }
      // A deletion of a version under legal hold, sent as a node would send it: refused, signed.
      await s3[1].send(
        new PutObjectLegalHoldCommand({ ...target, LegalHold: { Status: "ON" } }),
      );
      // The governance bypass does not lift a legal hold.
      const res = await objectCall(nodes[1], {
        op: "delete",
        bucket: "locked",
        key: "doc.txt",
        versionId,
        deletedAt: Date.now(),
        bypassGovernance: true,
      });
      assertEquals(res.status, 403);
      assertEquals((await res.json()).error.code, "AccessDenied");
      assertEquals(await hasVersion(s3[1], "locked", "doc.txt", versionId), true);
    });
  } finally {
    await stopAll(nodes);
  }
});

Deno.test("cluster: replication outcomes reach a webhook as Replication events", async () => {
  const hook = new WebhookReceiver().start();
  const env = { STORE_NOTIFY_WEBHOOK_ALLOW: "127.0.0.1", STORE_NOTIFY_RETRY_MAX: "1" };
  const a = await startNode("node-a", { env });
  const b = await startNode("node-b", { seeds: [a.url], env });
  const c = await startNode("node-c", { seeds: [a.url], env });
  const nodes = [a, b, c];
  try {
    for (const n of nodes) {
      await eventually(`${n.id} sees the others`, () => seenBy(n), (s) =>
        s.length === 2 &&
        s.every((x) => x.endsWith(":alive")));
    }
    const s3 = nodes.map((n) => s3Client(n.server));
    await s3[0].send(new CreateBucketCommand({ Bucket: "evts", ObjectLockEnabledForBucket: true }));
    for (const x of s3) {
      await eventually("bucket everywhere", () => bucketExists(x, "evts"), Boolean);
    }
    const config = webhookConfig([
      { id: "all", url: `${hook.url}/all`, events: ["store:Replication:*"] },
      // Object notifications go on beside them, through the same outbox.
      { id: "created", url: `${hook.url}/created`, events: ["store:ObjectCreated:Put"] },
    ]);
    const res = await putConfig(a.server, "evts", config);
    assertEquals(res.status, 200, await res.text());
    const put = await s3[0].send(
      new PutObjectCommand({
        Bucket: "evts",
        Key: "kept.txt",
        Body: "kept",
        ObjectLockMode: "GOVERNANCE",
        ObjectLockRetainUntilDate: new Date(Date.now() + 3_600_000),
      }),
    );
    const versionId = put.VersionId!;
    const data = (r: EventRecord) =>
      (r as EventRecord & { replicationEventData: Record<string, string> }).replicationEventData;
    await hook.until(() => hook.records("/all").length >= 2);
    const completed = hook.records("/all");
    assertEquals(
      completed.map((r) => r.eventName),
      Array(2).fill("store:Replication:OperationCompletedReplication"),
    );
    assertEquals(completed.map((r) => data(r).destinationNode).sort(), ["node-b", "node-c"]);
    for (const r of completed) {
      assertEquals(r.s3.bucket.name, "evts");
      assertEquals(r.s3.object.key, "kept.txt");
      assertEquals(r.s3.object.versionId, versionId);
      assertEquals(r.s3.object.size, 4);
      assertEquals(r.s3.configurationId, "all");
      assertEquals(data(r).replicationStatus, "COMPLETED");
      assertEquals(data(r).destinationBucket, "evts");
      assertEquals(data(r).s3Operation, "OBJECT_PUT");
      assertEquals(r.eventVersion, "2.2");
      assertEquals(r.userIdentity.principalId, "node:node-a");
    }
    await hook.until(() => hook.records("/created").length >= 1);
    assertEquals(hook.records("/created").map((r) => r.eventName), ["store:ObjectCreated:Put"]);
    // The receivers' Object Lock refuses the deletion: the version is under COMPLIANCE retention
    // there (node-a bypasses its own governance retention, which does not lift that).
    for (const n of [b, c]) {
      await complianceOn(n, "evts", "kept.txt", versionId, new Date(Date.now() + 3_600_000));
    }
    await s3[0].send(
      new DeleteObjectCommand({
        Bucket: "evts",
        Key: "kept.txt",
        VersionId: versionId,
        BypassGovernanceRetention: true,
      }),
    );
    await hook.until(() => hook.records("/all").length >= 4);
    const failed = hook.records("/all").slice(2);
    assertEquals(failed.map((r) => data(r).destinationNode).sort(), ["node-b", "node-c"]);
    for (const r of failed) {
      assertEquals(r.eventName, "store:Replication:OperationFailedReplication");
      assertEquals(r.s3.object.versionId, versionId);
      assertEquals(data(r).replicationStatus, "FAILED");
      assertEquals(data(r).s3Operation, "OBJECT_DELETE");
      assert(data(r).failureReason.includes("object lock"), data(r).failureReason);
    }
    // Nothing more: one event per version and node, only from the node that wrote it (the
    // replicas' nodes learn no outcomes and record no events of their writes).
    await new Promise((r) => setTimeout(r, 1000));
    assertEquals(hook.records("/all").length, 4);
    assertEquals(hook.records("/created").length, 1);
  } finally {
    await stopAll(nodes);
    await hook.stop();
  }
});
