// Forgetting a node that is gone for good (DELETE /admin/cluster/nodes/{id}) with three real
// nodes on loopback: refused while the node is alive, then it leaves every member list, gossip
// does not bring it back, its cursors are released so both change queues prune again, and it
// comes back only by starting again. A node away during the forget learns of it on its return.
// Every node restarted, the member lists and the forget come back from disk.
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "./assert.ts";
import {
  bucketExists,
  type ClusterNodeProcess,
  eventually,
  rawCall,
  restartNode,
  seenBy,
  startNode,
  stopAll,
} from "./cluster_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, s3Client } from "./server.ts";

const ADMIN = { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) };

function forget(node: ClusterNodeProcess, id: string, method = "DELETE"): Promise<Response> {
  return fetch(`${node.url}/admin/cluster/nodes/${id}`, { method, headers: ADMIN });
}

/** Rows of a table in a node's SQLite metadata, read beside the running server. */
function rows(node: ClusterNodeProcess, sql: string): Record<string, unknown>[] {
  const db = new DatabaseSync(`${node.dataDir}/meta.db`, { readOnly: true });
  try {
    return db.prepare(sql).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

const objectQueue = (n: ClusterNodeProcess) =>
  Number(rows(n, "SELECT count(*) AS n FROM cluster_object_changes")[0].n);
const bucketQueue = (n: ClusterNodeProcess) =>
  rows(n, "SELECT bucket FROM cluster_changes ORDER BY seq").map((r) => r.bucket as string);
const cursors = (n: ClusterNodeProcess) =>
  rows(
    n,
    "SELECT node FROM cluster_cursors UNION ALL SELECT node FROM cluster_object_cursors",
  ).map((r) => r.node as string);

async function has(s3: S3Client, key: string): Promise<boolean> {
  try {
    await s3.send(new HeadObjectCommand({ Bucket: "keep", Key: key }));
    return true;
  } catch (err) {
    if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) {
      return false;
    }
    throw err;
  }
}

Deno.test("cluster: a node gone for good is forgotten everywhere and releases the queues", async (t) => {
  let a = await startNode("node-a");
  let b = await startNode("node-b", { seeds: [a.url] });
  let c = await startNode("node-c", { seeds: [a.url] });
  // node-d is away while node-c is forgotten, and learns of it from the heartbeats after.
  let d = await startNode("node-d", { seeds: [a.url] });
  const nodes = [a, b, c, d];
  let forgottenAt = 0;
  try {
    for (const n of nodes) {
      await eventually(`${n.id} sees the others`, () => seenBy(n), (s) =>
        s.length === 3 &&
        s.every((x) => x.endsWith(":alive")));
    }
    const [sa, sb] = [s3Client(a.server), s3Client(b.server)];
    await sa.send(new CreateBucketCommand({ Bucket: "keep" }));
    for (const n of [b, c, d]) {
      await eventually(`keep on ${n.id}`, () => bucketExists(s3Client(n.server), "keep"), Boolean);
    }

    await t.step(
      "refused for a node that is alive, for itself, and for an unknown one",
      async () => {
        let res = await forget(a, "node-c");
        assertEquals(res.status, 409);
        assertEquals((await res.json()).error.code, "node_alive");
        res = await forget(a, "node-a");
        assertEquals(res.status, 409);
        assertEquals((await res.json()).error.code, "node_is_self");
        res = await forget(a, "node-z");
        assertEquals(res.status, 404);
        assertEquals((await res.json()).error.code, "no_such_node");
        res = await forget(a, "node-c", "POST");
        assertEquals(res.status, 405);
        await res.body?.cancel();
        res = await fetch(`${a.url}/admin/cluster/nodes/node-c`, { method: "DELETE" });
        assertEquals(res.status, 401);
        await res.body?.cancel();
        assertEquals(await seenBy(a), ["node-b:alive", "node-c:alive", "node-d:alive"]);
      },
    );

    await t.step("a stopped node holds both queues back until it is forgotten", async () => {
      await c.server.stop();
      await eventually("node-c dead on node-a", () => seenBy(a), (s) => s.includes("node-c:dead"));
      for (let i = 0; i < 5; i++) {
        await sa.send(new PutObjectCommand({ Bucket: "keep", Key: `a${i}`, Body: "x" }));
      }
      await sb.send(new PutObjectCommand({ Bucket: "keep", Key: "b0", Body: "x" }));
      await s3Client(d.server).send(
        new PutObjectCommand({ Bucket: "keep", Key: "d0", Body: "x" }),
      );
      await sa.send(new CreateBucketCommand({ Bucket: "gone-soon" }));
      await sa.send(new DeleteBucketCommand({ Bucket: "gone-soon" }));
      // The newest row always stays: another bucket after the deleted one.
      await sa.send(new CreateBucketCommand({ Bucket: "later" }));
      await eventually("node-b has every object", () => has(sb, "a4"), Boolean);
      // Two pruning rounds (5 heartbeats each): node-c's cursors keep what it has not received.
      await new Promise((r) => setTimeout(r, 11_000));
      assert(objectQueue(a) >= 5, `node-a's object queue: ${objectQueue(a)}`);
      assert(bucketQueue(a).includes("gone-soon"), `node-a's bucket queue: ${bucketQueue(a)}`);
      assert(cursors(a).includes("node-c"));
      assert(cursors(d).includes("node-c"));
    });

    await t.step("forgotten: gone from every list, cursors released, queues pruned", async () => {
      await d.server.stop();
      await eventually("node-d dead on node-a", () => seenBy(a), (s) => s.includes("node-d:dead"));
      const res = await forget(a, "node-c");
      assertEquals(res.status, 200);
      const body = await res.json();
      assertEquals(body.forgotten.id, "node-c");
      forgottenAt = body.forgotten.at;
      assertEquals(body.told, ["node-b"]);
      assertEquals(await seenBy(a), ["node-b:alive", "node-d:dead"]);
      await eventually(
        "node-b forgot node-c",
        () => seenBy(b),
        (s) => !s.join().includes("node-c"),
      );
      assertEquals(cursors(a).includes("node-c"), false);
      // node-d comes back (its cursors on disk still naming node-c) and learns of the forget.
      d = await restartNode(d);
      nodes[3] = d;
      await eventually(
        "node-d forgot node-c",
        () => Promise.resolve(cursors(d)),
        (c) => !c.includes("node-c"),
      );
      // No node names node-c to another any more, however many heartbeats go by.
      await new Promise((r) => setTimeout(r, 3000));
      assertEquals(await seenBy(a), ["node-b:alive", "node-d:alive"]);
      assertEquals(await seenBy(b), ["node-a:alive", "node-d:alive"]);
      assertEquals(await seenBy(d), ["node-a:alive", "node-b:alive"]);
      await eventually(
        "node-a's object queue pruned",
        () => Promise.resolve(objectQueue(a)),
        (n) => n === 1,
        15_000,
      );
      for (const n of [b, d]) {
        await eventually(
          `${n.id}'s object queue pruned`,
          () => Promise.resolve(objectQueue(n)),
          (count) => count === 1,
          15_000,
        );
      }
      await eventually(
        "node-a's bucket queue pruned of the deleted bucket",
        () => Promise.resolve(bucketQueue(a)),
        (q) => !q.includes("gone-soon"),
        15_000,
      );
      // Live buckets stay queued: a node that joins later learns them from there.
      assertEquals(bucketQueue(a), ["keep", "later"]);
      assertEquals(cursors(b).includes("node-c"), false);
    });

    await t.step("every node restarted: the lists from disk, node-c still forgotten", async () => {
      await Promise.all([a, b, d].map((n) => n.server.stop()));
      // node-d alone, its seed (node-a) down: it knows the others from the list it saved.
      d = await restartNode(d);
      nodes[3] = d;
      assertEquals((await seenBy(d)).map((s) => s.split(":")[0]), ["node-a", "node-b"]);
      b = await restartNode(b);
      nodes[1] = b;
      a = await restartNode(a);
      nodes[0] = a;
      for (const n of [a, b, d]) {
        await eventually(`${n.id} sees the others again`, () => seenBy(n), (s) =>
          s.length === 2 &&
          s.every((x) => x.endsWith(":alive")));
      }
      // A process of node-c started before the forget is refused by every node, as before.
      for (const n of [a, b, d]) {
        const res = await rawCall(n.url, {
          method: "POST",
          path: "/cluster/heartbeat",
          node: "node-c",
          body: JSON.stringify({
            node: { id: "node-c", url: c.url, started: forgottenAt - 1 },
            members: [],
            forgotten: [],
          }),
        });
        assertEquals(res.status, 410, n.id);
        assertEquals((await res.json()).error.code, "node_forgotten");
      }
      assertEquals(await seenBy(a), ["node-b:alive", "node-d:alive"]);
    });

    await t.step("it comes back only by starting again", async () => {
      c = await restartNode(c);
      nodes[2] = c;
      for (const n of [a, b, d]) {
        await eventually(
          `${n.id} sees node-c again`,
          () => seenBy(n),
          (s) => s.includes("node-c:alive"),
        );
      }
      await sa.send(new PutObjectCommand({ Bucket: "keep", Key: "after", Body: "y" }));
      await eventually(
        "node-c receives new writes",
        () => has(s3Client(c.server), "after"),
        Boolean,
      );
    });
  } finally {
    await stopAll(nodes);
  }
});
