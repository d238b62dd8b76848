// Bucket replication between three nodes on loopback: creation, deletion and configurations made
// on any node reach the others, and a node that was down catches up after its restart.
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  GetBucketCorsCommand,
  GetBucketPolicyCommand,
  GetBucketTaggingCommand,
  GetBucketVersioningCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  PutBucketCorsCommand,
  PutBucketPolicyCommand,
  PutBucketTaggingCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { assert, assertEquals } from "./assert.ts";
import {
  bucketExists,
  type ClusterNodeProcess,
  clusterStatus,
  eventually,
  rawCall,
  restartNode,
  seenBy,
  startNode,
  stopAll,
} from "./cluster_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, s3Client, startServer } from "./server.ts";

async function tags(s3: S3Client, bucket: string): Promise<string> {
  try {
    const out = await s3.send(new GetBucketTaggingCommand({ Bucket: bucket }));
    return (out.TagSet ?? []).map((t) => `${t.Key}=${t.Value}`).join(",");
  } catch {
    return "";
  }
}

async function versioning(s3: S3Client, bucket: string): Promise<string> {
  try {
    return (await s3.send(new GetBucketVersioningCommand({ Bucket: bucket }))).Status ?? "";
  } catch {
    return "";
  }
}

/** Milliseconds until `bucket` exists on `s3`, polled every 20 ms. */
async function timeUntilExists(s3: S3Client, bucket: string, since: number): Promise<number> {
  await eventually(`${bucket} exists`, () => bucketExists(s3, bucket), (x) => x, 15_000);
  return Date.now() - since;
}

Deno.test("cluster: buckets and their configurations reach every node", async (t) => {
  let a = await startNode("node-a");
  const b = await startNode("node-b", { seeds: [a.url] });
  let c = await startNode("node-c", { seeds: [a.url] });
  let d: ClusterNodeProcess | undefined;
  const s3 = { a: s3Client(a.server), b: s3Client(b.server), c: () => s3Client(c.server) };
  try {
    await eventually(
      "all see all",
      () => seenBy(c),
      (s) => s.join() === "node-a:alive,node-b:alive",
    );
    await eventually(
      "a sees all",
      () => seenBy(a),
      (s) => s.join() === "node-b:alive,node-c:alive",
    );

    await t.step("a bucket made on one node exists on all", async () => {
      const started = Date.now();
      await s3.a.send(new CreateBucketCommand({ Bucket: "rep-one" }));
      const lags = await Promise.all([
        timeUntilExists(s3.b, "rep-one", started),
        timeUntilExists(s3.c(), "rep-one", started),
      ]);
      console.log(`bucket creation visible on b and c after ${lags.join(" and ")} ms`);
      const listed = await s3.c().send(new ListBucketsCommand({}));
      assert(listed.Buckets?.some((x) => x.Name === "rep-one"), "listed on c");
      // The replicated bucket is a real one there: it takes objects.
      await s3.c().send(new PutObjectCommand({ Bucket: "rep-one", Key: "k", Body: "v" }));
    });

    await t.step("configurations made on any node reach the others", async () => {
      await s3.b.send(
        new PutBucketVersioningCommand({
          Bucket: "rep-one",
          VersioningConfiguration: { Status: "Enabled" },
        }),
      );
      await s3.c().send(
        new PutBucketTaggingCommand({
          Bucket: "rep-one",
          Tagging: { TagSet: [{ Key: "team", Value: "blue" }] },
        }),
      );
      await s3.a.send(
        new PutBucketCorsCommand({
          Bucket: "rep-one",
          CORSConfiguration: {
            CORSRules: [{ AllowedMethods: ["GET"], AllowedOrigins: ["https://x.example"] }],
          },
        }),
      );
      const policy = JSON.stringify({
        Version: "2012-10-17",
        Statement: [{
          Effect: "Allow",
          Principal: "*",
          Action: "s3:GetObject",
          Resource: "arn:aws:s3:::rep-one/*",
        }],
      });
      await s3.a.send(new PutBucketPolicyCommand({ Bucket: "rep-one", Policy: policy }));
      for (const [name, s] of [["a", s3.a], ["b", s3.b], ["c", s3.c()]] as const) {
        await eventually(
          `versioning on ${name}`,
          () => versioning(s, "rep-one"),
          (v) => v === "Enabled",
        );
        await eventually(`tags on ${name}`, () => tags(s, "rep-one"), (v) => v === "team=blue");
        await eventually(
          `cors on ${name}`,
          () =>
            s.send(new GetBucketCorsCommand({ Bucket: "rep-one" })).then(
              (o) => o.CORSRules?.[0]?.AllowedOrigins?.join() ?? "",
              () => "",
            ),
          (v) => v === "https://x.example",
        );
        const got = await eventually(
          `policy on ${name}`,
          () =>
            s.send(new GetBucketPolicyCommand({ Bucket: "rep-one" })).then(
              (o) => o.Policy ?? "",
              () => "",
            ),
          (v) => v !== "",
        );
        assertEquals(JSON.parse(got).Statement[0].Resource, "arn:aws:s3:::rep-one/*");
      }
    });

    await t.step(
      "bucket messages unsigned, wrongly signed or malformed change nothing",
      async () => {
        const stamp = { ms: Date.now() + 60_000, node: "node-x" };
        const create = (bucket: string) =>
          JSON.stringify({
            type: "buckets",
            changes: [{
              bucket,
              record: { stamp, value: { owner: "intruder", createdAt: 1, region: "us-east-1" } },
              configs: {},
            }],
          });
        const call = (body: string) => ({ method: "POST", path: "/cluster/message", body });
        const unsigned = await rawCall(a.url, call(create("evil-one")), "");
        assertEquals(unsigned.status, 403);
        await unsigned.body?.cancel();
        const wrong = await rawCall(a.url, { ...call(create("evil-one")), secret: "x".repeat(40) });
        assertEquals(wrong.status, 403);
        await wrong.body?.cancel();
        const malformed = JSON.stringify({
          type: "buckets",
          changes: [JSON.parse(create("evil-two")).changes[0], { bucket: "evil-three" }],
        });
        const bad = await rawCall(a.url, call(malformed));
        assertEquals([bad.status, (await bad.json()).error.code], [400, "invalid_message"]);
        for (const name of ["evil-one", "evil-two", "evil-three"]) {
          assertEquals(await bucketExists(s3.a, name), false, name);
        }
        // Correctly signed, it is applied (and passed on): the secret is what is trusted.
        const ok = await rawCall(a.url, call(create("signed-one")));
        assertEquals(await ok.json(), { applied: 1, stale: 0, kept: 0 });
        await eventually("passed on to b", () => bucketExists(s3.b, "signed-one"), (x) => x);
      },
    );

    await t.step(
      "each replicated change is in the audit chain, naming node and bucket",
      async () => {
        const res = await fetch(`${b.url}/admin/audit?operation=Cluster:message&limit=1000`, {
          headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) },
        });
        const { entries } = await res.json() as {
          entries: { principal: string; bucket: string; status: number }[];
        };
        assert(
          entries.some((e) => e.principal === "node:node-a" && e.bucket === "rep-one"),
          JSON.stringify(entries.slice(0, 5)),
        );
        // Messages themselves (many come back around all stale) leave no entry of their own.
        assert(entries.every((e) => e.bucket !== ""), JSON.stringify(entries.slice(0, 5)));
      },
    );

    await t.step("a node that was down catches up: creations, deletions, changes", async () => {
      await s3.a.send(new CreateBucketCommand({ Bucket: "rep-gone" }));
      await eventually("rep-gone on c", () => bucketExists(s3.c(), "rep-gone"), (x) => x);
      await c.server.kill();
      await eventually("c dead on a", () => seenBy(a), (s) => s.includes("node-c:dead"));
      await s3.b.send(new DeleteBucketCommand({ Bucket: "rep-gone" }));
      await s3.a.send(new CreateBucketCommand({ Bucket: "rep-two" }));
      await eventually("rep-two on b", () => bucketExists(s3.b, "rep-two"), (x) => x);
      await s3.b.send(
        new PutBucketTaggingCommand({
          Bucket: "rep-two",
          Tagging: { TagSet: [{ Key: "made", Value: "while-c-was-down" }] },
        }),
      );
      await eventually("rep-two tagged on a", () => tags(s3.a, "rep-two"), (v) => v !== "");
      // a holds what c has not received yet, and says how long it has waited. Waited for, not
      // read once: on a loaded machine both changes can reach a in one message just before the
      // tag is seen there, their wait still under the 0.1 s the status rounds to (a clean-clone
      // CI run read 0 once).
      await eventually(
        "a's queue for c, with its wait",
        async () =>
          (await clusterStatus(a)).nodes.find((n) => n.id === "node-c") as unknown as {
            queue_depth: number;
            lag_seconds: number;
          },
        (n) => n.queue_depth === 2 && n.lag_seconds > 0,
      );
      c = await restartNode(c);
      await eventually(
        "rep-two on c",
        () => tags(s3.c(), "rep-two"),
        (v) => v === "made=while-c-was-down",
      );
      await eventually("rep-gone deleted on c", () => bucketExists(s3.c(), "rep-gone"), (x) => !x);
      assertEquals(await bucketExists(s3.c(), "rep-one"), true);
      await eventually(
        "a's queue for c drained",
        async () =>
          (await clusterStatus(a)).nodes.find((n) => n.id === "node-c") as unknown as {
            queue_depth: number;
          },
        (n) => n.queue_depth === 0,
      );
    });

    await t.step("a bucket holding an object made on another node is not deleted", async () => {
      // rep-one's object was put on c; it reaches a (cluster_objects_test.ts), where DeleteBucket
      // is then refused. (A deletion that crosses a replicated object on its way is kept by the
      // node holding the object: the contract case "a deletion is applied to an empty bucket,
      // kept where objects remain".)
      await eventually(
        "rep-one/k on a",
        () => s3.a.send(new HeadObjectCommand({ Bucket: "rep-one", Key: "k" })).then(() => true),
        (x) => x,
      );
      const refused = await s3.a.send(new DeleteBucketCommand({ Bucket: "rep-one" })).then(
        () => "deleted",
        (err) => (err as { name?: string }).name,
      );
      assertEquals(refused, "BucketNotEmpty");
      await new Promise((r) => setTimeout(r, 500));
      assertEquals([await bucketExists(s3.b, "rep-one"), await bucketExists(s3.c(), "rep-one")], [
        true,
        true,
      ]);
    });

    await t.step(
      "kill -9 of the sender right after its acknowledgements loses nothing",
      async () => {
        const names = Array.from({ length: 30 }, (_, i) => `burst-${i}`);
        await Promise.all(names.map((Bucket) => s3.a.send(new CreateBucketCommand({ Bucket }))));
        await a.server.kill();
        a = await restartNode(a);
        s3.a = s3Client(a.server);
        for (const [name, s] of [["b", s3.b], ["c", s3.c()]] as const) {
          await eventually(
            `every burst bucket on ${name}`,
            async () => {
              const out = await s.send(new ListBucketsCommand({}));
              return out.Buckets?.filter((x) => x.Name?.startsWith("burst-")).length ?? 0;
            },
            (n) => n === names.length,
          );
        }
      },
    );

    await t.step("a node that held buckets before it joined sends them to all", async () => {
      const alone = await startServer();
      await s3Client(alone).send(new CreateBucketCommand({ Bucket: "from-before" }));
      await s3Client(alone).send(
        new PutBucketTaggingCommand({
          Bucket: "from-before",
          Tagging: { TagSet: [{ Key: "age", Value: "old" }] },
        }),
      );
      await alone.stop();
      d = await startNode("node-d", { dataDir: alone.dataDir, seeds: [b.url] });
      for (const [name, s] of [["a", s3.a], ["b", s3.b], ["c", s3.c()]] as const) {
        await eventually(
          `from-before on ${name}`,
          () => tags(s, "from-before"),
          (v) => v === "age=old",
        );
      }
      // And d received every bucket the others hold.
      await eventually(
        "rep-two on d",
        () => tags(s3Client(d!.server), "rep-two"),
        (v) => v === "made=while-c-was-down",
      );
    });
  } finally {
    await stopAll([a, b, c, ...(d ? [d] : [])]);
  }
});
