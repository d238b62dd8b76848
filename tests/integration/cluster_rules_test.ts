// Bucket replication rules on a three-node cluster: Get/Put/DeleteBucketReplication, the
// configuration reaching every node, and the rules limiting which object changes go where.
import {
  CreateBucketCommand,
  DeleteBucketReplicationCommand,
  DeleteObjectCommand,
  GetBucketReplicationCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  PutBucketEncryptionCommand,
  PutBucketReplicationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { assert, assertEquals } from "./assert.ts";
import { eventually, seenBy, startNode, stopAll } from "./cluster_helpers.ts";
import { s3Client } from "./server.ts";

async function status(s3: S3Client, bucket: string, key: string): Promise<string> {
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    await out.Body!.transformToByteArray();
    return out.ReplicationStatus ?? "none";
  } catch (err) {
    const code = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (code === 404) return "missing";
    throw err;
  }
}

async function failure(p: Promise<unknown>): Promise<string> {
  return await p.then(() => "ok", (err) => (err as { name?: string }).name ?? String(err));
}

const RULES = {
  Role: "",
  Rules: [
    {
      ID: "docs",
      Priority: 2,
      Status: "Enabled" as const,
      Filter: { Prefix: "docs/" },
      Destination: { Bucket: "arn:aws:s3:::dst" },
      DeleteMarkerReplication: { Status: "Enabled" as const },
    },
    {
      ID: "private",
      Priority: 3,
      Status: "Disabled" as const,
      Filter: { Prefix: "docs/private/" },
      Destination: { Bucket: "arn:aws:s3:::dst" },
      DeleteMarkerReplication: { Status: "Disabled" as const },
    },
    {
      ID: "ops",
      Priority: 1,
      Status: "Enabled" as const,
      Filter: { And: { Prefix: "", Tags: [{ Key: "team", Value: "ops" }] } },
      Destination: { Bucket: "arn:aws:s3:::src" },
      DeleteMarkerReplication: { Status: "Disabled" as const },
    },
  ],
};

Deno.test("cluster: bucket replication rules limit what goes where", async (t) => {
  const a = await startNode("node-a");
  const b = await startNode("node-b", { seeds: [a.url] });
  const c = await startNode("node-c", { seeds: [a.url] });
  const nodes = [a, b, c];
  const s3 = { a: s3Client(a.server), b: s3Client(b.server), c: s3Client(c.server) };
  try {
    for (const n of nodes) {
      await eventually(
        `${n.id} sees the others`,
        () => seenBy(n),
        (s) => s.length === 2 && s.every((x) => x.endsWith(":alive")),
      );
    }
    await s3.a.send(new CreateBucketCommand({ Bucket: "src" }));
    await s3.a.send(new CreateBucketCommand({ Bucket: "dst" }));
    await s3.a.send(new CreateBucketCommand({ Bucket: "plain" }));

    await t.step("Get/Put/DeleteBucketReplication and their refusals", async () => {
      assertEquals(
        await failure(s3.a.send(new GetBucketReplicationCommand({ Bucket: "src" }))),
        "ReplicationConfigurationNotFoundError",
      );
      const put = (Bucket: string, config = RULES) =>
        s3.a.send(new PutBucketReplicationCommand({ Bucket, ReplicationConfiguration: config }));
      assertEquals(await failure(put("plain")), "InvalidRequest");
      for (const Bucket of ["src", "dst", "plain"]) {
        await s3.a.send(
          new PutBucketVersioningCommand({
            Bucket,
            VersioningConfiguration: { Status: "Enabled" },
          }),
        );
      }
      const missing = {
        ...RULES,
        Rules: [{ ...RULES.Rules[0], Destination: { Bucket: "arn:aws:s3:::nowhere" } }],
      };
      assertEquals(await failure(put("src", missing)), "InvalidRequest");
      await put("plain");
      await s3.a.send(new DeleteBucketReplicationCommand({ Bucket: "plain" }));
      assertEquals(
        await failure(s3.a.send(new GetBucketReplicationCommand({ Bucket: "plain" }))),
        "ReplicationConfigurationNotFoundError",
      );
      await put("src");
      // The configuration is a bucket configuration: it reaches the other nodes.
      for (const s of [s3.b, s3.c]) {
        const got = await eventually(
          "rules on the others",
          () => s.send(new GetBucketReplicationCommand({ Bucket: "src" })).catch(() => undefined),
          (x) => x !== undefined,
        );
        const rules = got!.ReplicationConfiguration?.Rules ?? [];
        assertEquals(rules.map((r) => `${r.ID}:${r.Priority}:${r.Status}`), [
          "docs:2:Enabled",
          "private:3:Disabled",
          "ops:1:Enabled",
        ]);
        assertEquals(rules[0].Destination?.Bucket, "arn:aws:s3:::dst");
        assertEquals(rules[2].Filter?.And?.Tags?.[0], { Key: "team", Value: "ops" });
      }
    });

    await t.step(
      "a bucket document that stays on its node does not hold the others up",
      async () => {
        // Default encryption names this node's keys: it is not sent, and what follows still is.
        await s3.a.send(
          new PutBucketEncryptionCommand({
            Bucket: "plain",
            ServerSideEncryptionConfiguration: {
              Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }],
            },
          }),
        );
        await s3.a.send(new CreateBucketCommand({ Bucket: "after-encryption" }));
        await eventually(
          "after-encryption on b",
          () =>
            s3.b.send(new HeadBucketCommand({ Bucket: "after-encryption" })).then(
              () => true,
              () => false,
            ),
          (x) => x,
        );
      },
    );

    await t.step("only what a rule takes is replicated, into its destination", async () => {
      await s3.a.send(new PutObjectCommand({ Bucket: "src", Key: "docs/a", Body: "a" }));
      await s3.a.send(new PutObjectCommand({ Bucket: "src", Key: "docs/private/p", Body: "p" }));
      await s3.a.send(new PutObjectCommand({ Bucket: "src", Key: "other", Body: "o" }));
      await s3.a.send(
        new PutObjectCommand({ Bucket: "src", Key: "tagged", Body: "t", Tagging: "team=ops" }),
      );
      for (const s of [s3.b, s3.c]) {
        await eventually("docs/a in dst", () => status(s, "dst", "docs/a"), (x) => x === "REPLICA");
        await eventually("tagged in src", () => status(s, "src", "tagged"), (x) => x === "REPLICA");
      }
      await eventually(
        "docs/a COMPLETED",
        () => status(s3.a, "src", "docs/a"),
        (x) => x === "COMPLETED",
      );
      // Left out: no status on the source once each node was passed, and nothing elsewhere.
      for (const key of ["docs/private/p", "other"]) {
        await eventually(
          `${key} without status`,
          () => status(s3.a, "src", key),
          (x) => x === "none",
        );
        for (const s of [s3.b, s3.c]) {
          assertEquals(await status(s, "src", key), "missing");
          assertEquals(await status(s, "dst", key), "missing");
        }
      }
      assertEquals(await status(s3.b, "src", "docs/a"), "missing");
    });

    await t.step("delete markers as the rule says; version deletions stay", async () => {
      const marker = await s3.a.send(new DeleteObjectCommand({ Bucket: "src", Key: "docs/a" }));
      assert(marker.DeleteMarker);
      await s3.a.send(new DeleteObjectCommand({ Bucket: "src", Key: "tagged" }));
      for (const s of [s3.b, s3.c]) {
        await eventually(
          "marker in dst",
          async () => {
            const out = await s.send(new ListObjectVersionsCommand({ Bucket: "dst" }));
            return (out.DeleteMarkers ?? []).map((m) => m.VersionId);
          },
          (ids) => ids.includes(marker.VersionId),
        );
      }
      // Removing the marker version on the source is a version deletion: not replicated.
      await s3.a.send(
        new DeleteObjectCommand({ Bucket: "src", Key: "docs/a", VersionId: marker.VersionId }),
      );
      assertEquals(await status(s3.a, "src", "docs/a"), "COMPLETED");
      // The tagged object's marker has no tags and DeleteMarkerReplication is off for "ops".
      await new Promise((r) => setTimeout(r, 1000));
      assertEquals(await status(s3.b, "src", "tagged"), "REPLICA");
      const head = await s3.b.send(new HeadObjectCommand({ Bucket: "src", Key: "tagged" }));
      assertEquals(head.ReplicationStatus, "REPLICA");
      const dst = await s3.b.send(new ListObjectVersionsCommand({ Bucket: "dst" }));
      assertEquals(dst.DeleteMarkers?.map((m) => m.VersionId), [marker.VersionId]);
    });
  } finally {
    await stopAll(nodes);
  }
});
