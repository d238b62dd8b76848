// A write and a deletion of one unversioned key made on two nodes before either reaches the other
// node: all three nodes end with the later of the two. Each node advertises a gate in front of
// it (a small proxy of this test) that holds the object calls of chosen senders, so the order in
// which each node receives the two changes is the test's choice, not the scheduler's. Run with
// SQLite metadata and with each node's metadata in its own PostgreSQL database.
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { assertEquals } from "./assert.ts";
import { createHash } from "node:crypto";
import {
  bucketExists,
  clusterAuthorization,
  type ClusterNodeProcess,
  clusterStatus,
  eventually,
  freePort,
  seenBy,
  startNode,
  stopAll,
} from "./cluster_helpers.ts";
import { s3Client } from "./server.ts";
import { startPgMeta } from "./postgres_meta_helpers.ts";

/** A proxy in front of one node that can hold the object calls of some senders. */
class Gate {
  readonly #held = new Set<string>();
  #waiters: (() => void)[] = [];
  readonly #waiting = new Map<string, number>();
  /** Object calls forwarded, by sender, with the node's status. */
  readonly passed: { from: string; status: number }[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly url: string;

  constructor(target: string) {
    this.#server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      const u = new URL(req.url);
      const from = /Node=([^,]+)/.exec(req.headers.get("authorization") ?? "")?.[1] ?? "";
      const object = u.pathname === "/cluster/object";
      if (object && this.#held.has(from)) {
        this.#waiting.set(from, (this.#waiting.get(from) ?? 0) + 1);
        while (this.#held.has(from)) await new Promise<void>((r) => this.#waiters.push(r));
        this.#waiting.set(from, this.#waiting.get(from)! - 1);
      }
      const headers = new Headers(req.headers);
      headers.delete("host");
      headers.delete("content-length");
      const body = req.method === "GET" || req.method === "HEAD"
        ? undefined
        : new Uint8Array(await req.arrayBuffer());
      const res = await fetch(target + u.pathname + u.search, {
        method: req.method,
        headers,
        body,
      });
      const bytes = new Uint8Array(await res.arrayBuffer());
      if (object) this.passed.push({ from, status: res.status });
      const out = new Headers(res.headers);
      for (const h of ["content-length", "content-encoding", "transfer-encoding"]) out.delete(h);
      return new Response(bytes, { status: res.status, headers: out });
    });
    this.url = `http://127.0.0.1:${this.#server.addr.port}`;
  }

  hold(...senders: string[]): void {
    for (const s of senders) this.#held.add(s);
  }

  release(sender?: string): void {
    if (sender === undefined) this.#held.clear();
    else this.#held.delete(sender);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /** Object calls of `from` held now. */
  waiting(from: string): number {
    return this.#waiting.get(from) ?? 0;
  }

  delivered(from: string): number {
    return this.passed.filter((p) => p.from === from && p.status === 200).length;
  }

  stop(): Promise<void> {
    return this.#server.shutdown();
  }
}

async function bodyOf(s3: S3Client, bucket: string, key: string): Promise<string | undefined> {
  try {
    const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return await res.Body!.transformToString();
  } catch (err) {
    if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) {
      return undefined;
    }
    throw err;
  }
}

/** Whether every node has delivered every object change to every other. */
async function queuesEmpty(nodes: ClusterNodeProcess[]): Promise<boolean> {
  for (const n of nodes) {
    const status = await clusterStatus(n) as unknown as {
      nodes: { self: boolean; object_queue_depth?: number }[];
    };
    if (status.nodes.some((x) => !x.self && (x.object_queue_depth ?? 0) > 0)) return false;
  }
  return true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The races on three nodes, each with its metadata as `metaEnv` says (SQLite when it adds none). */
async function races(t: Deno.TestContext, metaEnv: () => Promise<Record<string, string>>) {
  const ids = ["node-a", "node-b", "node-c"];
  const ports = ids.map(() => freePort());
  const gates = ports.map((p) => new Gate(`http://127.0.0.1:${p}`));
  const nodes: ClusterNodeProcess[] = [];
  try {
    for (const [i, id] of ids.entries()) {
      nodes.push(
        await startNode(id, {
          port: ports[i],
          seeds: i === 0 ? [] : [gates[0].url],
          env: { STORE_CLUSTER_ADVERTISE_URL: gates[i].url, ...await metaEnv() },
        }),
      );
    }
    for (const n of nodes) {
      await eventually(`${n.id} sees the others`, () => seenBy(n), (s) =>
        s.length === 2 &&
        s.every((x) => x.endsWith(":alive")));
    }
    const s3 = nodes.map((n) => s3Client(n.server));
    await s3[0].send(new CreateBucketCommand({ Bucket: "race" }));
    for (const x of s3) {
      await eventually("bucket everywhere", () => bucketExists(x, "race"), Boolean);
    }
    const [a, b, c] = s3;

    /**
     * `key` is on every node; then node-a writes it again and node-b deletes it (in `order`, 30 ms
     * apart), each before the other's change reaches it; node-c receives `first`'s change first.
     */
    const race = async (
      key: string,
      order: "delete, then write" | "write, then delete",
      first: "node-a" | "node-b",
    ) => {
      await a.send(new PutObjectCommand({ Bucket: "race", Key: key, Body: "old" }));
      for (const x of s3) {
        await eventually(
          "the old copy everywhere",
          () => bodyOf(x, "race", key),
          (v) => v === "old",
        );
      }
      await eventually("queues empty", () => queuesEmpty(nodes), Boolean);
      gates[0].hold("node-b");
      gates[1].hold("node-a");
      gates[2].hold("node-a", "node-b");
      const write = () => a.send(new PutObjectCommand({ Bucket: "race", Key: key, Body: "new" }));
      const remove = () => b.send(new DeleteObjectCommand({ Bucket: "race", Key: key }));
      if (order === "delete, then write") {
        await remove();
        await sleep(30);
        await write();
      } else {
        await write();
        await sleep(30);
        await remove();
      }
      // Both changes are on their way to both other nodes (held, so a version removed on its
      // writer before it was sent does not make the sender skip it).
      for (const [gate, from] of [[0, "node-b"], [1, "node-a"], [2, "node-a"], [2, "node-b"]]) {
        await eventually(
          `a change of ${from} held for ${ids[gate as number]}`,
          () => Promise.resolve(gates[gate as number].waiting(from as string)),
          (n) => n === 1,
        );
      }
      // Neither change has reached the other nodes yet.
      assertEquals(await bodyOf(a, "race", key), "new");
      assertEquals(await bodyOf(b, "race", key), undefined);
      assertEquals(await bodyOf(c, "race", key), "old");
      // node-a and node-b each receive the other's change after making their own.
      gates[0].release("node-b");
      gates[1].release("node-a");
      // node-c receives `first`'s change, then the other's.
      const before = gates[2].delivered(first);
      gates[2].release(first);
      await eventually(
        "node-c took the first change",
        () => Promise.resolve(gates[2].delivered(first)),
        (n) => n > before,
      );
      gates[2].release(first === "node-a" ? "node-b" : "node-a");
      await eventually("queues empty", () => queuesEmpty(nodes), Boolean);
      const expected = order === "delete, then write" ? "new" : undefined;
      for (const [i, x] of s3.entries()) {
        assertEquals(await bodyOf(x, "race", key), expected, `${ids[i]} holds the later change`);
      }
    };

    await t.step("a deletion, then a newer write: the write stays everywhere", async () => {
      await race("k1", "delete, then write", "node-a");
      await race("k2", "delete, then write", "node-b");
    });
    await t.step("a write, then a newer deletion: the key is gone everywhere", async () => {
      await race("k3", "write, then delete", "node-a");
      await race("k4", "write, then delete", "node-b");
    });
    await t.step(
      "a deletion without a time (an older sender's) removes the copy as before",
      async () => {
        await a.send(new PutObjectCommand({ Bucket: "race", Key: "k5", Body: "v" }));
        await eventually("k5 on node-c", () => bodyOf(c, "race", "k5"), (v) => v === "v");
        const deletion = async (extra: Record<string, unknown>) => {
          const header = btoa(
            JSON.stringify({
              op: "delete",
              bucket: "race",
              key: "k5",
              versionId: "null",
              ...extra,
            }),
          );
          const path = `/cluster/object?meta=${createHash("sha256").update(header).digest("hex")}`;
          const res = await fetch(nodes[2].url + path, {
            method: "POST",
            headers: {
              authorization: clusterAuthorization({
                method: "POST",
                path,
                body: "",
                node: "node-b",
              }),
              "x-cluster-object": header,
              "x-store-replication-status": "REPLICA",
            },
          });
          assertEquals(res.status, 200, await res.text());
        };
        // One made before the copy was written spares it (and is answered as taken)...
        await deletion({ deletedAt: Date.now() - 60_000 });
        assertEquals(await bodyOf(c, "race", "k5"), "v");
        // ...one without a time removes it, as a node of the previous release sends it.
        await deletion({});
        assertEquals(await bodyOf(c, "race", "k5"), undefined);
      },
    );
    // Nothing was refused: every object call the gates passed was taken.
    for (const g of gates) assertEquals(g.passed.filter((p) => p.status !== 200), []);
  } finally {
    for (const g of gates) g.release();
    await stopAll(nodes);
    for (const g of gates) await g.stop();
  }
}

Deno.test("cluster: a write and a deletion of one unversioned key on two nodes converge on the later", async (t) => {
  await races(t, () => Promise.resolve({}));
});

Deno.test("cluster: the same races with each node's metadata in PostgreSQL", async (t) => {
  const pg = await startPgMeta();
  try {
    await races(t, async () => ({ STORE_META_URL: await pg.database() }));
  } finally {
    await pg.dispose();
  }
});
