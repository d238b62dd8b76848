// Three cluster nodes on loopback sharing one PostgreSQL metadata database, each with its own
// data directory: a write on one node is listed and readable on the others at once (bytes fetched
// from the writer until they are replicated), every node ends holding the bytes itself, user
// metadata and tags stay as written, a read whose bytes are on no reachable node answers 503
// ServiceUnavailable, and deletions on any node remove the shard files on every node.
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import type postgres from "postgres";
import { assert, assertEquals } from "./assert.ts";
import {
  type ClusterNodeProcess,
  clusterStatus,
  eventually,
  rawCall,
  seenBy,
  startNode,
  stopAll,
} from "./cluster_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, randomBytes, s3Client, shardFileCount } from "./server.ts";
import { startPgMeta } from "./postgres_meta_helpers.ts";
import { signedFetch } from "./signer.ts";

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const MASTER_KEY = "ab".repeat(32);
const ADMIN = { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) };

async function get(s3: S3Client, key: string) {
  const out = await s3.send(new GetObjectCommand({ Bucket: "shared", Key: key }));
  return {
    sha: sha(await out.Body!.transformToByteArray()),
    etag: out.ETag,
    meta: out.Metadata,
    type: out.ContentType,
  };
}

/** Chunk ids of a key's current version and the nodes holding each. */
async function holders(sql: postgres.Sql, key: string): Promise<Map<string, string[]>> {
  const rows = await sql`
    SELECT vc.chunk_id, array_remove(array_agg(h.node ORDER BY h.node), NULL) AS nodes
    FROM versions v JOIN version_chunks vc ON vc.version_id = v.vid
    LEFT JOIN chunk_holdings h ON h.chunk_id = vc.chunk_id
    WHERE v.bucket = 'shared' AND v.key = ${key} AND v.is_latest
    GROUP BY vc.chunk_id`;
  return new Map(rows.map((r) => [r.chunk_id as string, r.nodes as string[]]));
}

/** Removes every shard file under a data directory; how many. */
async function removeShards(dataDir: string): Promise<number> {
  let n = 0;
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await walk(path);
      else {
        await Deno.remove(path);
        n++;
      }
    }
  };
  await walk(`${dataDir}/chunks`);
  return n;
}

const everywhere = (m: Map<string, string[]>) =>
  m.size > 0 && [...m.values()].every((n) => n.join() === "a,b,c");

Deno.test("cluster: three nodes sharing one PostgreSQL metadata database", async (t) => {
  const pg = await startPgMeta();
  const url = await pg.database();
  const sql = pg.query(url);
  // Small chunks so objects span several; the same master key on every node (the SSE data keys
  // and users' secrets in the shared rows are sealed with it).
  const env = {
    STORE_META_URL: url,
    STORE_MASTER_KEY: MASTER_KEY,
    STORE_CHUNK_SIZE: String(64 * 1024),
    STORE_INLINE_MAX: "0",
  };
  const nodes: ClusterNodeProcess[] = [];
  const start = async (id: string, from?: ClusterNodeProcess) => {
    const node = await startNode(id, {
      port: from?.port,
      dataDir: from?.dataDir,
      seeds: id === "a" ? [] : [nodes.find((n) => n.id === "a")?.url ?? from!.seeds[0]],
      env,
    });
    const i = nodes.findIndex((n) => n.id === id);
    if (i >= 0) nodes[i] = node;
    else nodes.push(node);
    return node;
  };
  const byId = (id: string) => nodes.find((n) => n.id === id)!;
  const s3 = (id: string) => s3Client(byId(id).server);
  const allAlive = async () => {
    for (const n of nodes) {
      await eventually(
        `${n.id} sees the others`,
        () => seenBy(n),
        (s) => s.length === nodes.length - 1 && s.every((x) => x.endsWith(":alive")),
      );
    }
  };
  try {
    await start("a");
    await start("b");
    await start("c");
    await allAlive();

    await t.step("a bucket made on one node exists on all at once", async () => {
      await s3("a").send(new CreateBucketCommand({ Bucket: "shared" }));
      for (const id of ["b", "c"]) {
        await s3(id).send(new HeadBucketCommand({ Bucket: "shared" }));
      }
      // Nothing is queued for nodes that share the rows.
      const [row] = await sql`SELECT count(*)::int AS n FROM cluster_shared_nodes`;
      assertEquals(row.n, 3);
    });

    await t.step("changes sent by a node sharing the database are not applied again", async () => {
      // Signed as node b (a node of this database): a bucket state, and an object change.
      const state = {
        bucket: "shared",
        record: { stamp: { ms: Date.now() + 60_000, node: "b" }, value: null },
        configs: {},
      };
      const message = JSON.stringify({ type: "buckets", changes: [state] });
      const res = await rawCall(byId("a").url, {
        method: "POST",
        path: "/cluster/message",
        body: message,
        node: "b",
      });
      assertEquals(await res.json(), { applied: 0, stale: 1, kept: 0 });
      await s3("a").send(new HeadBucketCommand({ Bucket: "shared" }));
      const object = await rawCall(byId("a").url, {
        method: "POST",
        path: "/cluster/object?meta=0",
        body: "",
        node: "b",
      });
      assertEquals(object.status, 503);
      assertEquals((await object.json()).error.code, "shared_metadata");
      // A chunk no node holds: a signed 404.
      const chunk = await rawCall(byId("a").url, {
        method: "GET",
        path: "/cluster/chunk?id=nothing",
        node: "b",
      });
      assertEquals(chunk.status, 404);
      assertEquals((await chunk.json()).error.code, "chunk_not_here");
    });

    const body = randomBytes(600_000);
    await t.step(
      "written on a: listed and read on b and c at once, same bytes and ETag",
      async () => {
        const put = await s3("a").send(
          new PutObjectCommand({
            Bucket: "shared",
            Key: "obj",
            Body: body,
            ContentType: "application/x-test",
            Metadata: { colour: "blue" },
            Tagging: "t=1",
          }),
        );
        const reads = await Promise.all(["b", "c"].map(async (id) => {
          const list = await s3(id).send(new ListObjectsV2Command({ Bucket: "shared" }));
          assertEquals(list.Contents?.map((o) => o.Key), ["obj"]);
          return await get(s3(id), "obj");
        }));
        for (const r of reads) {
          assertEquals(r, {
            sha: sha(body),
            etag: put.ETag,
            meta: { colour: "blue" },
            type: "application/x-test",
          });
        }
        for (const id of ["b", "c"]) {
          const tags = await s3(id).send(
            new GetObjectTaggingCommand({ Bucket: "shared", Key: "obj" }),
          );
          assertEquals(tags.TagSet, [{ Key: "t", Value: "1" }]);
        }
        // A range read on a node too.
        const part = await s3("c").send(
          new GetObjectCommand({ Bucket: "shared", Key: "obj", Range: "bytes=100000-299999" }),
        );
        assertEquals(
          sha(await part.Body!.transformToByteArray()),
          sha(body.subarray(100000, 300000)),
        );
      },
    );

    await t.step(
      "every node ends holding the bytes itself; the writer reports COMPLETED",
      async () => {
        await eventually("every chunk held by a, b and c", () => holders(sql, "obj"), everywhere);
        for (const n of nodes) assert((await shardFileCount(n.dataDir)) >= 10, `shards on ${n.id}`);
        const head = await eventually(
          "COMPLETED",
          () => s3("a").send(new HeadObjectCommand({ Bucket: "shared", Key: "obj" })),
          (h) => h.ReplicationStatus === "COMPLETED",
        );
        assertEquals(head.Metadata, { colour: "blue" });
        // a's view: nothing queued for the others, who have pulled everything.
        const view = await eventually(
          "queues empty in a's view",
          () => clusterStatus(byId("a")),
          (st) =>
            st.nodes.filter((n) => !n.self).every((n) => {
              const q = n as unknown as { queue_depth: number; object_queue_depth: number };
              return q.queue_depth === 0 && q.object_queue_depth === 0;
            }),
        );
        assertEquals(view.nodes.length, 3);
        // One version row: the other nodes wrote no copy of it.
        const [row] = await sql`SELECT count(*)::int AS n FROM versions WHERE key = 'obj'`;
        assertEquals(row.n, 1);
      },
    );

    await t.step("a node whose copies are lost fetches them again on read", async () => {
      const removed = await removeShards(byId("b").dataDir);
      assert(removed >= 10, `${removed} shard files removed`);
      assertEquals((await get(s3("b"), "obj")).sha, sha(body));
      assert((await shardFileCount(byId("b").dataDir)) >= 10, "shards on b again");
    });

    await t.step("the writer stopped after replication: the others still serve", async () => {
      await byId("a").server.stop();
      for (const id of ["b", "c"]) assertEquals((await get(s3(id), "obj")).sha, sha(body));
      await start("a", byId("a"));
      await allAlive();
    });

    const late = randomBytes(300_000);
    await t.step(
      "the writer stopped before replication: 503, then served once it is back",
      async () => {
        // b and c are down while a takes the write, so nothing has its bytes but a.
        await byId("b").server.stop();
        await byId("c").server.stop();
        await s3("a").send(new PutObjectCommand({ Bucket: "shared", Key: "late", Body: late }));
        await byId("a").server.stop();
        await start("b", byId("b"));
        for (const dialect of ["store", "amz"] as const) {
          const res = await signedFetch(byId("b").server, {
            method: "GET",
            path: "/shared/late",
            dialect,
          });
          assertEquals(res.status, 503);
          assertEquals(res.headers.get("retry-after"), "1");
          const text = await res.text();
          assert(text.includes("<Code>ServiceUnavailable</Code>"), text);
        }
        // The listing (metadata) is there all the same.
        const list = await s3("b").send(new ListObjectsV2Command({ Bucket: "shared" }));
        assertEquals(list.Contents?.map((o) => o.Key), ["late", "obj"]);
        await start("a", byId("a"));
        await start("c", byId("c"));
        await allAlive();
        const got = await eventually(
          "late readable on b",
          () => get(s3("b"), "late").catch(() => undefined),
          (r) => r !== undefined,
        );
        assertEquals(got!.sha, sha(late));
        assertEquals((await get(s3("c"), "late")).sha, sha(late));
        await eventually("late held everywhere", () => holders(sql, "late"), everywhere);
      },
    );

    await t.step("SSE-S3 and a multipart upload whose parts went to two nodes", async () => {
      const secret = randomBytes(200_000);
      await s3("a").send(
        new PutObjectCommand({
          Bucket: "shared",
          Key: "sealed",
          Body: secret,
          ServerSideEncryption: "AES256",
        }),
      );
      const sealed = await s3("b").send(new GetObjectCommand({ Bucket: "shared", Key: "sealed" }));
      assertEquals(sealed.ServerSideEncryption, "AES256");
      assertEquals(sha(await sealed.Body!.transformToByteArray()), sha(secret));
      const parts = [randomBytes(5 * 1024 * 1024), randomBytes(300_000)];
      const up = await s3("a").send(
        new CreateMultipartUploadCommand({ Bucket: "shared", Key: "multi" }),
      );
      const etags = [
        (await s3("a").send(
          new UploadPartCommand({
            Bucket: "shared",
            Key: "multi",
            UploadId: up.UploadId,
            PartNumber: 1,
            Body: parts[0],
          }),
        )).ETag,
        (await s3("c").send(
          new UploadPartCommand({
            Bucket: "shared",
            Key: "multi",
            UploadId: up.UploadId,
            PartNumber: 2,
            Body: parts[1],
          }),
        )).ETag,
      ];
      const done = await s3("b").send(
        new CompleteMultipartUploadCommand({
          Bucket: "shared",
          Key: "multi",
          UploadId: up.UploadId,
          MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        }),
      );
      const whole = new Uint8Array([...parts[0], ...parts[1]]);
      for (const id of ["a", "b", "c"]) {
        const got = await get(s3(id), "multi");
        assertEquals([got.sha, got.etag], [sha(whole), done.ETag]);
      }
      await eventually("multi held everywhere", () => holders(sql, "multi"), everywhere);
      await eventually("sealed held everywhere", () => holders(sql, "sealed"), everywhere);
      for (const key of ["sealed", "multi"]) {
        await s3("c").send(new DeleteObjectCommand({ Bucket: "shared", Key: key }));
      }
    });

    await t.step("the same bytes written on another node are shared, not lost", async () => {
      await s3("b").send(new PutObjectCommand({ Bucket: "shared", Key: "copy", Body: body }));
      await s3("c").send(new DeleteObjectCommand({ Bucket: "shared", Key: "obj" }));
      for (const id of ["a", "b", "c"]) assertEquals((await get(s3(id), "copy")).sha, sha(body));
    });

    await t.step("deletions on any node remove the shards on every node", async () => {
      await s3("b").send(new DeleteObjectCommand({ Bucket: "shared", Key: "late" }));
      await s3("a").send(new DeleteObjectCommand({ Bucket: "shared", Key: "copy" }));
      for (const n of nodes) {
        await eventually(
          `no shard left on ${n.id}`,
          () => shardFileCount(n.dataDir),
          (x) => x === 0,
        );
      }
      // A node's collector removes an orphan's shard files, then its holding row: the rows may
      // trail the files by a moment.
      await eventually(
        "no holding left",
        async () => (await sql`SELECT count(*)::int AS n FROM chunk_holdings`)[0].n,
        (n) => n === 0,
      );
    });

    await t.step(
      "a node forgotten loses its registration and holdings; statuses settle without it",
      async () => {
        await s3("a").send(new PutObjectCommand({ Bucket: "shared", Key: "before", Body: late }));
        await eventually("before held everywhere", () => holders(sql, "before"), everywhere);
        const c = byId("c");
        await c.server.stop();
        nodes.splice(nodes.indexOf(c), 1);
        await eventually("c dead on a", () => seenBy(byId("a")), (x) => x.includes("c:dead"));
        const res = await fetch(`${byId("a").url}/admin/cluster/nodes/c`, {
          method: "DELETE",
          headers: ADMIN,
        });
        assertEquals(res.status, 200);
        await res.body?.cancel();
        const registered = await sql`SELECT node FROM cluster_shared_nodes ORDER BY node`;
        assertEquals(registered.map((r) => r.node), ["a", "b"]);
        const [held] = await sql`SELECT count(*)::int AS n FROM chunk_holdings WHERE node = 'c'`;
        assertEquals(held.n, 0);
        const put = await s3("b").send(
          new PutObjectCommand({ Bucket: "shared", Key: "after", Body: randomBytes(100_000) }),
        );
        await eventually(
          "after COMPLETED with a and b",
          () =>
            s3("b").send(
              new HeadObjectCommand({ Bucket: "shared", Key: "after", VersionId: put.VersionId }),
            ),
          (h) => h.ReplicationStatus === "COMPLETED",
        );
        await Deno.remove(c.dataDir, { recursive: true }).catch(() => {});
      },
    );
  } finally {
    await stopAll(nodes);
    await pg.dispose();
  }
});
