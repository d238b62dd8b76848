// Replication between three nodes on loopback: how long a bucket made on one node takes to exist
// on the two others (p50/p99), how fast a node that was down catches up, and the same for objects
// put at a steady rate (4 KiB each; with --sse-c encrypted with a customer key, so they travel as
// stored chunks).
//   deno task bench:cluster [--buckets=200] [--backlog=500] [--objects=200] [--rate=20]
//     [--object-backlog=500] [--sse-c] [--inline-max=<bytes>]
// (--inline-max=0 keeps even small objects in chunk files, as SSE-C objects always are.)
import {
  CreateBucketCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import type { S3Client } from "@aws-sdk/client-s3";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import {
  type ClusterNodeProcess,
  eventually,
  seenBy,
  startNode,
  stopAll,
} from "../tests/integration/cluster_helpers.ts";
import { s3Client } from "../tests/integration/server.ts";

const arg = (name: string, fallback: number) =>
  Number(Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);
const BUCKETS = arg("buckets", 200);
const BACKLOG = arg("backlog", 500);
const OBJECTS = arg("objects", 200);
const RATE = arg("rate", 20);
const OBJECT_BACKLOG = arg("object-backlog", 500);
const BODY = new Uint8Array(4096).fill(7);
// SSE-C: the customer key on every PUT and HEAD (over plain HTTP on loopback).
const SSE_C = Deno.args.includes("--sse-c");
const INLINE_MAX = Deno.args.find((a) => a.startsWith("--inline-max="))?.split("=")[1];
const ENV: Record<string, string> = {
  ...(SSE_C ? { STORE_ALLOW_INSECURE_SSE_C: "true" } : {}),
  ...(INLINE_MAX !== undefined ? { STORE_INLINE_MAX: INLINE_MAX } : {}),
};
const CUSTOMER_KEY = crypto.getRandomValues(new Uint8Array(32));
const SSE = SSE_C
  ? {
    SSECustomerAlgorithm: "AES256",
    SSECustomerKey: Buffer.from(CUSTOMER_KEY).toString("base64"),
    SSECustomerKeyMD5: createHash("md5").update(CUSTOMER_KEY).digest("base64"),
  }
  : {};

/** The same node again (id, port, data directory, seeds and settings) after it stopped. */
const restartNode = (n: ClusterNodeProcess) =>
  startNode(n.id, { port: n.port, dataDir: n.dataDir, seeds: n.seeds, env: ENV });

async function exists(s3: S3Client, bucket: string): Promise<boolean> {
  return await s3.send(new HeadBucketCommand({ Bucket: bucket })).then(() => true, () => false);
}

async function visibleAfter(s3: S3Client, bucket: string, since: number): Promise<number> {
  while (!(await exists(s3, bucket))) await new Promise((r) => setTimeout(r, 5));
  return performance.now() - since;
}

async function objectAfter(s3: S3Client, key: string, since: number): Promise<number> {
  while (
    !(await s3.send(new HeadObjectCommand({ Bucket: "objlag", Key: key, ...SSE })).then(
      () => true,
      () => false,
    ))
  ) await new Promise((r) => setTimeout(r, 5));
  return performance.now() - since;
}

async function objectCount(s3: S3Client): Promise<number> {
  let count = 0;
  let token: string | undefined;
  do {
    const out = await s3.send(
      new ListObjectsV2Command({ Bucket: "objlag", ContinuationToken: token }),
    );
    count += out.KeyCount ?? 0;
    token = out.NextContinuationToken;
  } while (token);
  return count;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

const a = await startNode("node-a", { env: ENV });
const b = await startNode("node-b", { seeds: [a.url], env: ENV });
let c = await startNode("node-c", { seeds: [a.url], env: ENV });
try {
  await eventually("all alive", () => seenBy(a), (s) => s.join() === "node-b:alive,node-c:alive");
  const [sa, sb] = [s3Client(a.server), s3Client(b.server)];
  let sc = s3Client(c.server);
  const lags: number[] = [];
  for (let i = 0; i < BUCKETS; i++) {
    const name = `lag-${i}`;
    const started = performance.now();
    await sa.send(new CreateBucketCommand({ Bucket: name }));
    const [onB, onC] = await Promise.all([
      visibleAfter(sb, name, started),
      visibleAfter(sc, name, started),
    ]);
    lags.push(Math.max(onB, onC));
  }
  lags.sort((x, y) => x - y);
  console.log(
    `replication lag of ${BUCKETS} bucket creations (on both other nodes, ms): ` +
      `p50 ${percentile(lags, 0.5).toFixed(0)}, p99 ${percentile(lags, 0.99).toFixed(0)}, ` +
      `max ${lags[lags.length - 1].toFixed(0)}`,
  );

  await c.server.kill();
  for (let i = 0; i < BACKLOG; i++) await sa.send(new CreateBucketCommand({ Bucket: `up-${i}` }));
  const total = BUCKETS + BACKLOG;
  const restarted = performance.now();
  c = await restartNode(c);
  sc = s3Client(c.server);
  const startedUp = performance.now();
  await eventually(
    "c caught up",
    async () => {
      const out = await sc.send(new ListBucketsCommand({}));
      return out.Buckets?.length ?? 0;
    },
    (n) => n === total,
    120_000,
  );
  const seconds = (performance.now() - startedUp) / 1000;
  console.log(
    `catch-up: ${BACKLOG} bucket changes made while a node was down reached it ` +
      `${seconds.toFixed(2)} s after it listened (${(BACKLOG / seconds).toFixed(0)} buckets/s; ` +
      `restart took ${((startedUp - restarted) / 1000).toFixed(2)} s)`,
  );

  // Objects: PUTs on a at a steady rate; each one's lag runs from its acknowledgement until both
  // other nodes answer HeadObject for it.
  await sa.send(new CreateBucketCommand({ Bucket: "objlag" }));
  await Promise.all([sb, sc].map((s) => visibleAfter(s, "objlag", performance.now())));
  const objectLags: number[] = [];
  const pending: Promise<void>[] = [];
  const began = performance.now();
  for (let i = 0; i < OBJECTS; i++) {
    const key = `o-${i}`;
    await sa.send(new PutObjectCommand({ Bucket: "objlag", Key: key, Body: BODY, ...SSE }));
    const acked = performance.now();
    pending.push(
      Promise.all([objectAfter(sb, key, acked), objectAfter(sc, key, acked)]).then(([x, y]) => {
        objectLags.push(Math.max(x, y));
      }),
    );
    const next = began + ((i + 1) * 1000) / RATE;
    await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
  }
  await Promise.all(pending);
  objectLags.sort((x, y) => x - y);
  console.log(
    `object replication lag of ${OBJECTS} PUTs (4 KiB${
      SSE_C ? ", SSE-C" : ""
    }) at ${RATE}/s (from the acknowledgement ` +
      `until both other nodes have it, ms): p50 ${percentile(objectLags, 0.5).toFixed(0)}, ` +
      `p99 ${percentile(objectLags, 0.99).toFixed(0)}, max ` +
      `${objectLags[objectLags.length - 1].toFixed(0)}`,
  );

  await c.server.kill();
  for (let i = 0; i < OBJECT_BACKLOG; i += 10) {
    await Promise.all(
      Array.from(
        { length: Math.min(10, OBJECT_BACKLOG - i) },
        (_, j) =>
          sa.send(
            new PutObjectCommand({ Bucket: "objlag", Key: `b-${i + j}`, Body: BODY, ...SSE }),
          ),
      ),
    );
  }
  c = await restartNode(c);
  sc = s3Client(c.server);
  const objectsFrom = performance.now();
  await eventually(
    "c caught up with the objects",
    () => objectCount(sc),
    (n) => n === OBJECTS + OBJECT_BACKLOG,
    300_000,
  );
  const objectSeconds = (performance.now() - objectsFrom) / 1000;
  console.log(
    `object catch-up: ${OBJECT_BACKLOG} PUTs (4 KiB${
      SSE_C ? ", SSE-C" : ""
    }) made while a node was down reached it ` +
      `${objectSeconds.toFixed(2)} s after it listened ` +
      `(${(OBJECT_BACKLOG / objectSeconds).toFixed(0)} objects/s)`,
  );
} finally {
  await stopAll([a, b, c]);
}
