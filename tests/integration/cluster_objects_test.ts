// Object replication between three nodes on loopback: puts, copies, multipart completions,
// delete markers and version deletions made on any node reach the others with the same bytes,
// metadata and version ids; REPLICA writes need a valid cluster signature; a node that was down
// catches up, and a sender killed with SIGKILL loses nothing it acknowledged.
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectTaggingCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutBucketEncryptionCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { assert, assertEquals } from "./assert.ts";
import {
  clusterAuthorization,
  type ClusterNodeProcess,
  clusterStatus,
  eventually,
  queuedObjectChanges,
  restartNode,
  seenBy,
  startNode,
  stopAll,
  withNodeWarnings,
} from "./cluster_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, randomBytes, s3Client } from "./server.ts";
import { startPgMeta } from "./postgres_meta_helpers.ts";
import { adminApi } from "./access_helpers.ts";

const ADMIN = { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) };
import { signedFetch } from "./signer.ts";

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

interface Seen {
  sha: string;
  versionId?: string;
  status?: string;
  type?: string;
  meta?: Record<string, string>;
  cacheControl?: string;
  etag?: string;
}

/** The object as `s3` serves it, or "missing". */
async function seen(s3: S3Client, bucket: string, key: string): Promise<Seen | "missing"> {
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const bytes = await out.Body!.transformToByteArray();
    return {
      sha: sha(bytes),
      versionId: out.VersionId,
      status: out.ReplicationStatus,
      type: out.ContentType,
      meta: out.Metadata,
      cacheControl: out.CacheControl,
      etag: out.ETag,
    };
  } catch (err) {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 404) return "missing";
    throw err;
  }
}

async function versions(s3: S3Client, bucket: string, key: string): Promise<string[]> {
  const out = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: key }));
  const all = [
    ...(out.Versions ?? []).map((v) => ({ id: v.VersionId!, at: v.IsLatest, kind: "v" })),
    ...(out.DeleteMarkers ?? []).map((v) => ({ id: v.VersionId!, at: v.IsLatest, kind: "m" })),
  ];
  return all.map((v) => `${v.kind}:${v.id}${v.at ? ":latest" : ""}`).sort();
}

async function keys(s3: S3Client, bucket: string): Promise<number> {
  let count = 0;
  let token: string | undefined;
  do {
    const out = await s3.send(
      new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }),
    );
    count += out.KeyCount ?? 0;
    token = out.NextContinuationToken;
  } while (token);
  return count;
}

async function clusterOf3(
  env: () => Promise<Record<string, string>> = () => Promise.resolve({}),
): Promise<ClusterNodeProcess[]> {
  const a = await startNode("node-a", { env: await env() });
  const b = await startNode("node-b", { seeds: [a.url], env: await env() });
  const c = await startNode("node-c", { seeds: [a.url], env: await env() });
  for (const n of [a, b, c]) {
    await eventually(`${n.id} sees the others`, () => seenBy(n), (s) =>
      s.length === 2 &&
      s.every((x) => x.endsWith(":alive")));
  }
  return [a, b, c];
}

Deno.test("cluster: objects written on any node appear on all", async (t) => {
  // SSE-C objects: cluster_sse_c_test.ts.
  const nodes = await clusterOf3();
  const [a, b, c] = nodes;
  const s3 = { a: s3Client(a.server), b: s3Client(b.server), c: s3Client(c.server) };
  const all = [s3.a, s3.b, s3.c];
  try {
    await s3.a.send(new CreateBucketCommand({ Bucket: "objs" }));
    await s3.a.send(new CreateBucketCommand({ Bucket: "vers" }));
    await s3.a.send(
      new PutBucketVersioningCommand({
        Bucket: "vers",
        VersioningConfiguration: { Status: "Enabled" },
      }),
    );

    await t.step("a put with its metadata and tags, REPLICA on the others", async () => {
      const body = randomBytes(1000);
      await s3.a.send(
        new PutObjectCommand({
          Bucket: "objs",
          Key: "small.txt",
          Body: body,
          ContentType: "text/x-test",
          CacheControl: "max-age=60",
          Metadata: { colour: "blue" },
          Tagging: "team=ops&tier=1",
        }),
      );
      for (const [name, s] of [["b", s3.b], ["c", s3.c]] as const) {
        const got = await eventually(
          `small.txt on ${name}`,
          () => seen(s, "objs", "small.txt"),
          (x) => x !== "missing",
        );
        assert(got !== "missing");
        assertEquals(got.sha, sha(body));
        assertEquals(got.status, "REPLICA");
        assertEquals(got.type, "text/x-test");
        assertEquals(got.cacheControl, "max-age=60");
        assertEquals(got.meta, { colour: "blue" });
        const tags = await s.send(
          new GetObjectTaggingCommand({ Bucket: "objs", Key: "small.txt" }),
        );
        assertEquals(tags.TagSet?.map((x) => `${x.Key}=${x.Value}`).sort(), ["team=ops", "tier=1"]);
      }
      const head = await eventually(
        "COMPLETED on a",
        () => s3.a.send(new HeadObjectCommand({ Bucket: "objs", Key: "small.txt" })),
        (h) => h.ReplicationStatus === "COMPLETED",
      );
      assertEquals(head.ReplicationStatus, "COMPLETED");
      // The replica's write is in b's audit chain under the sending node.
      const res = await fetch(`${b.url}/admin/audit?operation=Cluster:object&limit=100`, {
        headers: ADMIN,
      });
      const { entries } = await res.json() as {
        entries: { principal: string; bucket: string; key: string }[];
      };
      assert(
        entries.some((e) =>
          e.principal === "node:node-a" && e.bucket === "objs" && e.key === "small.txt"
        ),
        JSON.stringify(entries.slice(0, 5)),
      );
    });

    await t.step("a large (chunked) object put on b, the same bytes everywhere", async () => {
      const body = randomBytes(3 * 1024 * 1024 + 17);
      await s3.b.send(new PutObjectCommand({ Bucket: "objs", Key: "big.bin", Body: body }));
      for (const s of [s3.a, s3.c]) {
        const got = await eventually(
          "big.bin",
          () => seen(s, "objs", "big.bin"),
          (x) => x !== "missing",
        );
        assert(got !== "missing");
        assertEquals(got.sha, sha(body));
      }
    });

    await t.step("versions, delete markers and version deletes keep their ids", async () => {
      const v1 = await s3.c.send(
        new PutObjectCommand({ Bucket: "vers", Key: "doc", Body: "one" }),
      );
      const v2 = await s3.c.send(
        new PutObjectCommand({ Bucket: "vers", Key: "doc", Body: "two" }),
      );
      const marker = await s3.a.send(new DeleteObjectCommand({ Bucket: "vers", Key: "doc" }));
      assert(marker.DeleteMarker && marker.VersionId);
      const want = [`m:${marker.VersionId}:latest`, `v:${v1.VersionId}`, `v:${v2.VersionId}`]
        .sort();
      for (const s of all) {
        await eventually(
          "versions of doc",
          () => versions(s, "vers", "doc"),
          (x) => x.join() === want.join(),
        );
      }
      await s3.b.send(
        new DeleteObjectCommand({ Bucket: "vers", Key: "doc", VersionId: marker.VersionId }),
      );
      await s3.b.send(
        new DeleteObjectCommand({ Bucket: "vers", Key: "doc", VersionId: v1.VersionId }),
      );
      for (const s of all) {
        await eventually(
          "doc back at v2",
          () => versions(s, "vers", "doc"),
          (x) => x.join() === `v:${v2.VersionId}:latest`,
        );
        const got = await seen(s, "vers", "doc");
        assert(got !== "missing" && got.versionId === v2.VersionId);
      }
    });

    await t.step("copies and multipart completions replicate, ETags included", async () => {
      await s3.b.send(
        new CopyObjectCommand({
          Bucket: "objs",
          Key: "copy.txt",
          CopySource: "objs/small.txt",
        }),
      );
      const up = await s3.a.send(
        new CreateMultipartUploadCommand({ Bucket: "objs", Key: "multi.bin" }),
      );
      const part1 = randomBytes(5 * 1024 * 1024);
      const part2 = randomBytes(1000);
      const etags = [];
      for (const [i, part] of [part1, part2].entries()) {
        const out = await s3.a.send(
          new UploadPartCommand({
            Bucket: "objs",
            Key: "multi.bin",
            UploadId: up.UploadId,
            PartNumber: i + 1,
            Body: part,
          }),
        );
        etags.push({ PartNumber: i + 1, ETag: out.ETag });
      }
      const done = await s3.a.send(
        new CompleteMultipartUploadCommand({
          Bucket: "objs",
          Key: "multi.bin",
          UploadId: up.UploadId,
          MultipartUpload: { Parts: etags },
        }),
      );
      const whole = new Uint8Array([...part1, ...part2]);
      for (const s of [s3.b, s3.c]) {
        const multi = await eventually(
          "multi.bin",
          () => seen(s, "objs", "multi.bin"),
          (x) => x !== "missing",
        );
        assert(multi !== "missing");
        assertEquals([multi.sha, multi.etag], [sha(whole), done.ETag]);
      }
      const src = await seen(s3.a, "objs", "small.txt");
      for (const s of [s3.a, s3.c]) {
        const copy = await eventually(
          "copy.txt",
          () => seen(s, "objs", "copy.txt"),
          (x) => x !== "missing",
        );
        assert(copy !== "missing" && src !== "missing");
        assertEquals(copy.sha, src.sha);
      }
    });

    await t.step(
      "SSE-S3 and SSE-KMS objects replicate, re-encrypted with each node's keys",
      async () => {
        // Each node has its own master key (its own data directory): the replicas' data keys are
        // sealed there, so a replica that reads back proves it was re-encrypted.
        const body = randomBytes(200_000);
        await s3.a.send(
          new PutObjectCommand({
            Bucket: "objs",
            Key: "sse-s3.bin",
            Body: body,
            ServerSideEncryption: "AES256",
          }),
        );
        for (const s of [s3.b, s3.c]) {
          const got = await eventually(
            "sse-s3.bin replicated",
            () => seen(s, "objs", "sse-s3.bin"),
            (g) => g !== "missing",
          );
          assert(got !== "missing");
          assertEquals(got.sha, sha(body));
          assertEquals(got.status, "REPLICA");
          const head = await s.send(new HeadObjectCommand({ Bucket: "objs", Key: "sse-s3.bin" }));
          assertEquals(head.ServerSideEncryption, "AES256");
        }
        await eventually(
          "COMPLETED on a",
          () => s3.a.send(new HeadObjectCommand({ Bucket: "objs", Key: "sse-s3.bin" })),
          (h) => h.ReplicationStatus === "COMPLETED",
        );
        // A multipart SSE-S3 object (its parts under one data key): the same bytes and ETag.
        const up = await s3.a.send(
          new CreateMultipartUploadCommand({
            Bucket: "objs",
            Key: "sse-multi.bin",
            ServerSideEncryption: "AES256",
          }),
        );
        const parts = [randomBytes(5 * 1024 * 1024), randomBytes(700)];
        const etags = [];
        for (const [i, part] of parts.entries()) {
          const out = await s3.a.send(
            new UploadPartCommand({
              Bucket: "objs",
              Key: "sse-multi.bin",
              UploadId: up.UploadId,
              PartNumber: i + 1,
              Body: part,
            }),
          );
          etags.push({ PartNumber: i + 1, ETag: out.ETag });
        }
        const done = await s3.a.send(
          new CompleteMultipartUploadCommand({
            Bucket: "objs",
            Key: "sse-multi.bin",
            UploadId: up.UploadId,
            MultipartUpload: { Parts: etags },
          }),
        );
        for (const s of [s3.b, s3.c]) {
          const got = await eventually(
            "sse-multi.bin replicated",
            () => seen(s, "objs", "sse-multi.bin"),
            (g) => g !== "missing",
          );
          assert(got !== "missing");
          assertEquals([got.sha, got.etag], [
            sha(new Uint8Array([...parts[0], ...parts[1]])),
            done.ETag,
          ]);
        }
        // A named KMS key on every node (each with its own key material).
        for (const n of nodes) {
          assertEquals(
            (await adminApi(n.server, "POST", "/kms/keys", { id: "shared" })).status,
            201,
          );
        }
        const kmsBody = randomBytes(3000);
        await s3.b.send(
          new PutObjectCommand({
            Bucket: "objs",
            Key: "sse-kms.bin",
            Body: kmsBody,
            ServerSideEncryption: "aws:kms",
            SSEKMSKeyId: "shared",
          }),
        );
        for (const s of [s3.a, s3.c]) {
          const got = await eventually(
            "sse-kms.bin replicated",
            () => seen(s, "objs", "sse-kms.bin"),
            (g) => g !== "missing",
          );
          assert(got !== "missing");
          assertEquals(got.sha, sha(kmsBody));
          const head = await s.send(new HeadObjectCommand({ Bucket: "objs", Key: "sse-kms.bin" }));
          assertEquals(head.ServerSideEncryption, "aws:kms");
          assertEquals(head.SSEKMSKeyId, "shared");
        }
      },
    );

    await t.step(
      "a KMS key missing on a node: FAILED, not replicated there",
      async () => {
        // Only a and b know "only-ab": c refuses the change for good.
        for (const n of [a, b]) {
          assertEquals(
            (await adminApi(n.server, "POST", "/kms/keys", { id: "only-ab" })).status,
            201,
          );
        }
        await s3.a.send(
          new PutObjectCommand({
            Bucket: "objs",
            Key: "kms-ab.txt",
            Body: "ab",
            ServerSideEncryption: "aws:kms",
            SSEKMSKeyId: "only-ab",
          }),
        );
        const head = await eventually(
          "kms-ab.txt FAILED on a",
          () => s3.a.send(new HeadObjectCommand({ Bucket: "objs", Key: "kms-ab.txt" })),
          (h) => h.ReplicationStatus !== "PENDING",
        );
        assertEquals(head.ReplicationStatus, "FAILED");
        const onB = await seen(s3.b, "objs", "kms-ab.txt");
        assert(onB !== "missing");
        assertEquals(onB.status, "REPLICA");
        assertEquals(await seen(s3.c, "objs", "kms-ab.txt"), "missing");
      },
    );

    await t.step(
      "an unencrypted object gets the receiving bucket's default encryption",
      async () => {
        // Default encryption is a node's own (it may name its keys): set on b only.
        await s3.b.send(
          new PutBucketEncryptionCommand({
            Bucket: "objs",
            ServerSideEncryptionConfiguration: {
              Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }],
            },
          }),
        );
        const body = randomBytes(500);
        await s3.a.send(new PutObjectCommand({ Bucket: "objs", Key: "plain.bin", Body: body }));
        for (const s of [s3.b, s3.c]) {
          await eventually(
            "plain.bin replicated",
            () => seen(s, "objs", "plain.bin"),
            (g) => g !== "missing" && g.sha === sha(body),
          );
        }
        const onB = await s3.b.send(new HeadObjectCommand({ Bucket: "objs", Key: "plain.bin" }));
        assertEquals(onB.ServerSideEncryption, "AES256");
        const onC = await s3.c.send(new HeadObjectCommand({ Bucket: "objs", Key: "plain.bin" }));
        assertEquals(onC.ServerSideEncryption, undefined);
        const onA = await s3.a.send(new HeadObjectCommand({ Bucket: "objs", Key: "plain.bin" }));
        assertEquals(onA.ServerSideEncryption, undefined);
      },
    );

    await t.step(
      "tag changes of an existing version reach every node, on that version",
      async () => {
        const put = (body: string) =>
          s3.a.send(
            new PutObjectCommand({ Bucket: "vers", Key: "tagged.txt", Body: body, Tagging: "x=1" }),
          );
        const v1 = (await put("one")).VersionId!;
        const v2 = (await put("two")).VersionId!;
        const tagsOf = async (s: S3Client, versionId: string) => {
          try {
            const out = await s.send(
              new GetObjectTaggingCommand({
                Bucket: "vers",
                Key: "tagged.txt",
                VersionId: versionId,
              }),
            );
            return (out.TagSet ?? []).map((t) => `${t.Key}=${t.Value}`).sort().join("&");
          } catch {
            return "missing";
          }
        };
        for (const s of [s3.b, s3.c]) {
          await eventually("both versions replicated", () => tagsOf(s, v2), (t) => t === "x=1");
        }
        // Changed on b (where v1 is a replica), removed on c: each reaches the two others.
        await s3.b.send(
          new PutObjectTaggingCommand({
            Bucket: "vers",
            Key: "tagged.txt",
            VersionId: v1,
            Tagging: { TagSet: [{ Key: "team", Value: "b" }, { Key: "tier", Value: "2" }] },
          }),
        );
        for (const s of all) {
          await eventually("v1 retagged", () => tagsOf(s, v1), (t) => t === "team=b&tier=2");
          assertEquals(await tagsOf(s, v2), "x=1");
        }
        await s3.c.send(
          new DeleteObjectTaggingCommand({ Bucket: "vers", Key: "tagged.txt", VersionId: v2 }),
        );
        for (const s of all) {
          await eventually("v2 untagged", () => tagsOf(s, v2), (t) => t === "");
          assertEquals(await tagsOf(s, v1), "team=b&tier=2");
        }
      },
    );

    await t.step("an unversioned delete removes the object everywhere", async () => {
      await s3.c.send(new DeleteObjectCommand({ Bucket: "objs", Key: "small.txt" }));
      for (const s of all) {
        await eventually(
          "small.txt gone",
          () => seen(s, "objs", "small.txt"),
          (x) => x === "missing",
        );
      }
    });
  } finally {
    await stopAll(nodes);
  }
});

Deno.test("cluster: the REPLICA header alone grants nothing", async (t) => {
  const nodes = await clusterOf3();
  const [a] = nodes;
  const s3 = s3Client(a.server);
  try {
    await s3.send(new CreateBucketCommand({ Bucket: "forge" }));
    const exists = async (key: string) => (await seen(s3, "forge", key)) !== "missing";

    await t.step("on the protocol routes, unsigned or signed by a user", async () => {
      for (const prefix of ["x-store", "x-amz"]) {
        const res = await fetch(`${a.url}/forge/unsigned`, {
          method: "PUT",
          headers: { [`${prefix}-replication-status`]: "REPLICA" },
          body: "x",
        });
        assertEquals(res.status, 403, await res.text());
      }
      const res = await signedFetch(a.server, {
        method: "PUT",
        path: "/forge/signed",
        headers: { "x-store-replication-status": "REPLICA" },
        body: "x",
      });
      const text = await res.text();
      assertEquals(res.status, 403, text);
      assert(text.includes("AccessDenied"), text);
      assertEquals([await exists("unsigned"), await exists("signed")], [false, false]);
    });

    const header = (key: string, size: number, at = Date.now()) =>
      Buffer.from(JSON.stringify({
        op: "put",
        bucket: "forge",
        key,
        versionId: "null",
        version: {
          deleteMarker: false,
          size,
          etag: '"e"',
          lastModified: at,
          contentType: "text/plain",
          userMeta: {},
          headers: {},
          owner: "admin",
        },
      })).toString("base64");
    const post = (
      key: string,
      body: string,
      opts: {
        secret?: string;
        signedBody?: string;
        metaOf?: string;
        unsigned?: boolean;
        nonce?: string;
        timestamp?: number;
      } = {},
    ) => {
      const h = header(key, body.length, opts.timestamp);
      const path = `/cluster/object?meta=${sha(new TextEncoder().encode(opts.metaOf ?? h))}`;
      const auth = clusterAuthorization({
        method: "POST",
        path,
        body,
        secret: opts.secret,
        signedBody: opts.signedBody,
        nonce: opts.nonce,
        timestamp: opts.timestamp,
      });
      return fetch(a.url + path, {
        method: "POST",
        headers: {
          ...(opts.unsigned ? {} : { authorization: auth }),
          "x-cluster-object": h,
          "x-store-replication-status": "REPLICA",
        },
        body,
      });
    };

    await t.step("on /cluster/object: no, a wrong or a mismatched signature", async () => {
      const cases: [string, Promise<Response>, string][] = [
        ["unsigned", post("c1", "data", { unsigned: true }), "cluster_unsigned"],
        [
          "other secret",
          post("c2", "data", { secret: "another-secret-0123456789abcdef-xyz" }),
          "cluster_bad_signature",
        ],
        [
          "header swapped",
          post("c3", "data", { metaOf: "something else" }),
          "cluster_bad_signature",
        ],
        ["bytes changed", post("c4", "data", { signedBody: "atad" }), "cluster_bad_signature"],
      ];
      for (const [what, pending, code] of cases) {
        const res = await pending;
        const json = await res.json();
        assertEquals([what, res.status, json.error?.code], [what, 403, code]);
      }
      for (const key of ["c1", "c2", "c3", "c4"]) assertEquals(await exists(key), false, key);
    });

    await t.step("a validly signed change is written as REPLICA, once per nonce", async () => {
      const once = { nonce: "0123456789abcdef0123456789abcdef", timestamp: Date.now() };
      const res = await post("good", "data", once);
      assertEquals(res.status, 200, await res.text());
      const again = await post("good", "data", once);
      assertEquals([again.status, (await again.json()).error?.code], [403, "cluster_replayed"]);
      const got = await seen(s3, "forge", "good");
      assert(got !== "missing");
      assertEquals([got.sha, got.status], [sha(new TextEncoder().encode("data")), "REPLICA"]);
    });
  } finally {
    await stopAll(nodes);
  }
});

Deno.test("cluster: a node that was down catches up; kill -9 loses nothing", async (t) => {
  const nodes = await clusterOf3();
  let [a, b, c] = nodes;
  const s3 = { a: s3Client(a.server), b: s3Client(b.server), c: () => s3Client(c.server) };
  const WRITES = 200;
  try {
    await s3.a.send(new CreateBucketCommand({ Bucket: "catch" }));
    await eventually("catch on c", () => keys(s3.c(), "catch").catch(() => -1), (n) => n === 0);

    await t.step(`c stopped for ${WRITES} writes converges after its restart`, async () => {
      await c.server.kill();
      await eventually("c dead on a", () => seenBy(a), (s) => s.includes("node-c:dead"));
      for (let i = 0; i < WRITES; i += 20) {
        await Promise.all(
          Array.from({ length: 20 }, (_, j) =>
            (j % 2 ? s3.a : s3.b).send(
              new PutObjectCommand({ Bucket: "catch", Key: `k-${i + j}`, Body: `v-${i + j}` }),
            )),
        );
      }
      await s3.a.send(new DeleteObjectCommand({ Bucket: "catch", Key: "k-0" }));
      // a's backlog towards c: what a took (half the puts and the deletion) waits for it.
      const waiting = (await clusterStatus(a)).nodes.find((n) => n.id === "node-c") as unknown as {
        object_queue_depth: number;
        object_lag_seconds: number;
      };
      assert(waiting.object_queue_depth >= WRITES / 2 + 1, JSON.stringify(waiting));
      assert(waiting.object_lag_seconds > 0, JSON.stringify(waiting));
      const metrics = await (await fetch(`${a.url}/metrics`, { headers: ADMIN })).text();
      const depth = /^store_cluster_object_queue_depth\{node="node-c"\} (\d+)$/m.exec(metrics);
      assert(depth && Number(depth[1]) >= WRITES / 2 + 1, metrics);
      // Pruned every 5 heartbeats (5 s here) while c was down: what c has not received stays.
      assert(queuedObjectChanges(a) >= WRITES / 2 + 1);
      c = await restartNode(c);
      nodes[2] = c;
      await eventually(
        "c has every write",
        () => keys(s3.c(), "catch"),
        (n) => n === WRITES - 1,
        90_000,
      );
      const got = await seen(s3.c(), "catch", `k-${WRITES - 1}`);
      assert(got !== "missing");
      assertEquals(got.sha, sha(new TextEncoder().encode(`v-${WRITES - 1}`)));
      assertEquals(await seen(s3.c(), "catch", "k-0"), "missing");
      await eventually(
        "a's backlog towards c drained",
        async () =>
          ((await clusterStatus(a)).nodes.find((n) => n.id === "node-c") as unknown as {
            object_queue_depth: number;
          }).object_queue_depth,
        (n) => n === 0,
      );
      // Once every node has everything, a's queue is pruned down to its newest row.
      await eventually(
        "a's queue pruned",
        () => Promise.resolve(queuedObjectChanges(a)),
        (n) => n <= 1,
        30_000,
      );
    });

    await t.step("kill -9 of the sender right after its acknowledgements", async () => {
      const names = Array.from({ length: 30 }, (_, i) => `burst-${i}`);
      await Promise.all(
        names.map((Key) => s3.a.send(new PutObjectCommand({ Bucket: "catch", Key, Body: Key }))),
      );
      await a.server.kill();
      a = await restartNode(a);
      nodes[0] = a;
      for (const [name, s] of [["b", s3.b], ["c", s3.c()]] as const) {
        await eventually(
          `every burst object on ${name}`,
          async () =>
            (await s.send(new ListObjectsV2Command({ Bucket: "catch", Prefix: "burst-" })))
              .KeyCount,
          (n) => n === names.length,
          60_000,
        );
      }
    });
  } finally {
    await stopAll(nodes);
  }
});

Deno.test("cluster: object replication with each node's metadata in PostgreSQL", async () => {
  const pg = await startPgMeta();
  let nodes: ClusterNodeProcess[] = [];
  try {
    nodes = await clusterOf3(async () => ({ STORE_META_URL: await pg.database() }));
    const [a, b, c] = nodes.map((n) => s3Client(n.server));
    await b.send(new CreateBucketCommand({ Bucket: "pgv" }));
    await b.send(
      new PutBucketVersioningCommand({
        Bucket: "pgv",
        VersioningConfiguration: { Status: "Enabled" },
      }),
    );
    // The nodes start together on their own databases: a sender whose calls failed while its
    // peers came up backs off (doubling, up to 60 s: src/cluster/backoff.ts), which on a loaded
    // machine can outlast the default 20 s wait; this one covers the cap.
    // It timed out in clean-clone CI runs (the bucket there, its versioning never): a sender read
    // the bucket and its stamps apart, a value of before the change under the change's stamp
    // (fixed by the snapshot read in src/meta/pg/tx.ts). A failure shows the nodes' warnings.
    await withNodeWarnings(nodes, async () => {
      for (const s of [a, c]) {
        await eventually(
          "pgv versioned everywhere",
          () =>
            s.send(new GetBucketVersioningCommand({ Bucket: "pgv" })).then(
              (o) => o.Status,
              () => "",
            ),
          (x) => x === "Enabled",
          65_000,
        );
      }
    });
    const body = randomBytes(200_000);
    const put = await a.send(
      new PutObjectCommand({ Bucket: "pgv", Key: "k", Body: body, Metadata: { m: "1" } }),
    );
    await eventually("k on c", () => seen(c, "pgv", "k"), (x) => x !== "missing");
    const marker = await c.send(new DeleteObjectCommand({ Bucket: "pgv", Key: "k" }));
    const want = [`m:${marker.VersionId}:latest`, `v:${put.VersionId}`].sort().join();
    for (const s of [a, b, c]) {
      await eventually("versions of k", () => versions(s, "pgv", "k"), (x) => x.join() === want);
      const old = await s.send(
        new GetObjectCommand({ Bucket: "pgv", Key: "k", VersionId: put.VersionId }),
      );
      assertEquals(sha(await old.Body!.transformToByteArray()), sha(body));
      assertEquals(old.Metadata, { m: "1" });
    }
    const head = await eventually(
      "COMPLETED on a",
      () => a.send(new HeadObjectCommand({ Bucket: "pgv", Key: "k", VersionId: put.VersionId })),
      (h) => h.ReplicationStatus === "COMPLETED",
    );
    assertEquals(head.ReplicationStatus, "COMPLETED");
  } finally {
    await stopAll(nodes);
    await pg.dispose();
  }
});
