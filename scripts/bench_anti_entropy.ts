// Anti-entropy over one bucket between two nodes on loopback: how long a pass takes (and how many
// versions it compares a second) when the other node holds everything, and when it lacks some
// versions that its queue lost (rows deleted from the sender's queue while it was down), spread
// over the whole bucket.
//   deno task bench:anti-entropy [--keys=10000] [--missing=1000] [--rate=5000]
// --rate is STORE_CLUSTER_ANTI_ENTROPY_RATE of the node that runs the passes (0: no limit).
import { CreateBucketCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
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
      `differing, ${report.repaired} repaired, ${report.failed} failed`,
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
  await put(s3Client(a.server), 0, MISSING, true);
  await a.server.stop();
  const db = new DatabaseSync(`${a.dataDir}/meta.db`);
  db.prepare("DELETE FROM cluster_object_changes").run();
  db.close();
  a = await startNode("node-a", { port: a.port, dataDir: a.dataDir, env });
  b = await startNode("node-b", { port: b.port, dataDir: b.dataDir, seeds: [a.url], env });
  nodes.splice(0, 2, a, b);
  await eventually("all alive", () => seenBy(a), (s) => s.join() === "node-b:alive");
  await pass(a, `pass over ${KEYS + MISSING} keys, ${MISSING} missing on the other node`);
  await pass(a, `pass over ${KEYS + MISSING} keys again, nothing to repair`);
} finally {
  await stopAll(nodes);
}
