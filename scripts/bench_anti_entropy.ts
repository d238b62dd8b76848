// Anti-entropy over one bucket between two nodes on loopback: how long a pass takes (and how many
// versions it compares a second) when the other node holds everything, and when it lacks some
// versions that its queue lost (rows deleted from the sender's queue while it was down), spread
// over the whole bucket; with --changed and --deleted, the tags of that many keys change and that
// many keys are deleted on the sender at the same time (their queue rows lost too): the sender's
// pass sends the tag changes, and the other node's pass removes its copies of the deleted keys.
//   deno task bench:anti-entropy [--keys=10000] [--missing=1000] [--rate=5000] [--changed=0]
//     [--deleted=0]
// --rate is STORE_CLUSTER_ANTI_ENTROPY_RATE of the node that runs the passes (0: no limit).
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { DatabaseSync } from "node:sqlite";
import {
  clusterStatus,
  eventually,
  seenBy,
  startNode,
  stopAll,
} from "../tests/integration/cluster_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, s3Client } from "../tests/integration/server.ts";

const arg = (name: string, fallback: number) =>
  Number(Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);
const KEYS = arg("keys", 10_000);
const MISSING = arg("missing", 1000);
const RATE = arg("rate", 5000);
const CHANGED = arg("changed", 0);
const DELETED = arg("deleted", 0);
const BODY = new Uint8Array(100).fill(7);
const ADMIN = { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) };

const pad = (i: number) => String(i).padStart(6, "0");

/** Keys `from` to `to`; the missing ones sort between the others, spread over the whole bucket. */
async function put(s3: S3Client, from: number, to: number, missing = false): Promise<void> {
  const PARALLEL = 16;
  for (let i = from; i < to; i += PARALLEL) {
    await Promise.all(
      Array.from({ length: Math.min(PARALLEL, to - i) }, (_, j) =>
        s3.send(
          new PutObjectCommand({
            Bucket: "entropy",
            Key: missing ? `key-${pad(((i + j) * KEYS) / MISSING | 0)}-late` : `key-${pad(i + j)}`,
            Body: BODY,
          }),
        )),
    );
  }
}

/** `count` keys spread over the bucket, starting at `offset` (changed and deleted ones apart). */
function spread(count: number, offset: number): string[] {
  return Array.from(
    { length: count },
    (_, i) => `key-${pad(Math.min(KEYS - 1, ((i * KEYS) / count | 0) + offset))}`,
  );
}

/** Runs `op` on each key, 16 at a time. */
async function each(keys: string[], op: (key: string) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < keys.length; i += 16) await Promise.all(keys.slice(i, i + 16).map(op));
}

async function depthTowards(node: { url: string }, id: string): Promise<number> {
  const view = (await clusterStatus(node)).nodes.find((n) => n.id === id) as unknown as {
    object_queue_depth?: number;
  } | undefined;
  return view?.object_queue_depth ?? -1;
}

async function pass(node: { url: string }, label: string): Promise<void> {
  const started = performance.now();
  const res = await fetch(`${node.url}/admin/cluster/anti-entropy`, {
    method: "POST",
    headers: ADMIN,
  });
  const report = await res.json();
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${label}: ${seconds.toFixed(2)} s, ${report.versions_compared} versions read ` +
      `(${Math.round(report.versions_compared / seconds)}/s), ${report.ranges_differing} ranges ` +
      `differing, ${report.repaired} repaired, ${report.deleted} deleted, ${report.failed} failed`,
  );
}

const env = { STORE_CLUSTER_ANTI_ENTROPY: "off", STORE_CLUSTER_ANTI_ENTROPY_RATE: String(RATE) };
let a = await startNode("node-a", { env });
let b = await startNode("node-b", { seeds: [a.url], env });
const nodes = [a, b];
try {
  await eventually("all alive", () => seenBy(a), (s) => s.join() === "node-b:alive");
  await s3Client(a.server).send(new CreateBucketCommand({ Bucket: "entropy" }));
  const started = performance.now();
  await put(s3Client(a.server), 0, KEYS);
  await eventually("b has every key", () => depthTowards(a, "node-b"), (d) => d === 0, 600_000);
  console.log(
    `${KEYS} keys put and replicated in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  await pass(a, `pass over ${KEYS} keys, nothing to repair (rate ${RATE || "unlimited"})`);

  // b misses MISSING more: put while it is down, then the rows are deleted from a's queue.
  await b.server.stop();
  const s3a = s3Client(a.server);
  await put(s3a, 0, MISSING, true);
  await each(spread(CHANGED, 1), (Key) =>
    s3a.send(
      new PutObjectTaggingCommand({
        Bucket: "entropy",
        Key,
        Tagging: { TagSet: [{ Key: "changed", Value: "yes" }] },
      }),
    ));
  await each(
    spread(DELETED, 2),
    (Key) => s3a.send(new DeleteObjectCommand({ Bucket: "entropy", Key })),
  );
  await a.server.stop();
  const db = new DatabaseSync(`${a.dataDir}/meta.db`);
  db.prepare("DELETE FROM cluster_object_changes").run();
  db.close();
  a = await startNode("node-a", { port: a.port, dataDir: a.dataDir, env });
  b = await startNode("node-b", { port: b.port, dataDir: b.dataDir, seeds: [a.url], env });
  nodes.splice(0, 2, a, b);
  await eventually("all alive", () => seenBy(a), (s) => s.join() === "node-b:alive");
  const lost = [
    `${MISSING} missing on the other node`,
    ...(CHANGED ? [`${CHANGED} tag changes lost`] : []),
    ...(DELETED ? [`${DELETED} deletions lost`] : []),
  ].join(", ");
  await pass(a, `pass over ${KEYS + MISSING - DELETED} keys, ${lost}`);
  if (DELETED) await pass(b, `the other node's pass over ${KEYS + MISSING} keys`);
  await pass(a, `pass over ${KEYS + MISSING - DELETED} keys again, nothing to repair`);
} finally {
  await stopAll(nodes);
}
