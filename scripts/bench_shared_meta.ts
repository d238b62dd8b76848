// Three cluster nodes on loopback sharing one PostgreSQL metadata database (a PostgreSQL started
// for the run): how long after a PUT on one node every node holds its bytes (p50/p99), how fast a
// node that was down pulls the bytes written meanwhile, and a first GET on another node (bytes
// fetched from the writer) against a later one (bytes held there).
//   deno run -A scripts/bench_shared_meta.ts [--objects=100] [--rate=10] [--backlog=300]
//     [--size=262144]
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import {
  type ClusterNodeProcess,
  eventually,
  seenBy,
  startNode,
  stopAll,
} from "../tests/integration/cluster_helpers.ts";
import { randomBytes, s3Client } from "../tests/integration/server.ts";
import { startPgMeta } from "../tests/integration/postgres_meta_helpers.ts";

const arg = (name: string, fallback: number) =>
  Number(Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);
const OBJECTS = arg("objects", 100);
const RATE = arg("rate", 10);
const BACKLOG = arg("backlog", 300);
const SIZE = arg("size", 256 * 1024);

const pg = await startPgMeta();
const url = await pg.database();
const sql = pg.query(url);
const env = { STORE_META_URL: url, STORE_MASTER_KEY: "cd".repeat(32), STORE_INLINE_MAX: "0" };
const nodes: ClusterNodeProcess[] = [];

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/** Whether every chunk of the key's current version is held by `count` nodes. */
async function heldBy(key: string, count: number): Promise<boolean> {
  const [row] = await sql`
    SELECT count(*) FILTER (WHERE n < ${count})::int AS short, count(*)::int AS chunks FROM (
      SELECT vc.chunk_id, (SELECT count(*) FROM chunk_holdings h
        WHERE h.chunk_id = vc.chunk_id) AS n
      FROM versions v JOIN version_chunks vc ON vc.version_id = v.vid
      WHERE v.bucket = 'bench' AND v.key = ${key} AND v.is_latest) t`;
  return row.chunks > 0 && row.short === 0;
}

async function heldAfter(key: string, since: number): Promise<number> {
  while (!(await heldBy(key, 3))) await new Promise((r) => setTimeout(r, 5));
  return performance.now() - since;
}

try {
  const a = await startNode("a", { env });
  nodes.push(a);
  nodes.push(await startNode("b", { seeds: [a.url], env }));
  nodes.push(await startNode("c", { seeds: [a.url], env }));
  for (const n of nodes) {
    await eventually("all alive", () => seenBy(n), (s) => s.every((x) => x.endsWith(":alive")));
  }
  const [sa, sb] = [s3Client(nodes[0].server), s3Client(nodes[1].server)];
  await sa.send(new CreateBucketCommand({ Bucket: "bench" }));

  const lags: number[] = [];
  const pending: Promise<void>[] = [];
  const began = performance.now();
  for (let i = 0; i < OBJECTS; i++) {
    const key = `o-${i}`;
    await sa.send(new PutObjectCommand({ Bucket: "bench", Key: key, Body: randomBytes(SIZE) }));
    const acked = performance.now();
    pending.push(heldAfter(key, acked).then((ms) => void lags.push(ms)));
    const next = began + ((i + 1) * 1000) / RATE;
    await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
  }
  await Promise.all(pending);
  lags.sort((x, y) => x - y);
  console.log(
    `bytes held by all three nodes after ${OBJECTS} PUTs (${SIZE} B) at ${RATE}/s, from the ` +
      `acknowledgement (ms): p50 ${percentile(lags, 0.5).toFixed(0)}, p99 ` +
      `${percentile(lags, 0.99).toFixed(0)}, max ${lags[lags.length - 1].toFixed(0)}`,
  );

  const c = nodes[2];
  await c.server.kill();
  for (let i = 0; i < BACKLOG; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, BACKLOG - i) }, (_, j) =>
        sa.send(
          new PutObjectCommand({ Bucket: "bench", Key: `b-${i + j}`, Body: randomBytes(SIZE) }),
        )),
    );
  }
  nodes[2] = await startNode("c", { port: c.port, dataDir: c.dataDir, seeds: c.seeds, env });
  const listening = performance.now();
  const [{ n }] = await sql`SELECT count(*)::int AS n FROM chunk_holdings WHERE node = 'b'`;
  await eventually(
    "c holds everything b holds",
    async () =>
      (await sql`SELECT count(*)::int AS n FROM chunk_holdings WHERE node = 'c'`)[0].n as number,
    (held) => held >= n,
    300_000,
  );
  const seconds = (performance.now() - listening) / 1000;
  console.log(
    `catch-up: the bytes of ${BACKLOG} PUTs (${SIZE} B) made while a node was down were held ` +
      `there ${seconds.toFixed(2)} s after it listened ` +
      `(${(BACKLOG / seconds).toFixed(0)} objects/s, ${
        (BACKLOG * SIZE / seconds / 1048576).toFixed(1)
      } MiB/s)`,
  );

  const big = randomBytes(32 * 1024 * 1024);
  await sa.send(new PutObjectCommand({ Bucket: "bench", Key: "big", Body: big }));
  const timeGet = async () => {
    const t0 = performance.now();
    const out = await sb.send(new GetObjectCommand({ Bucket: "bench", Key: "big" }));
    const got = await out.Body!.transformToByteArray();
    if (got.byteLength !== big.byteLength) throw new Error("short read");
    return performance.now() - t0;
  };
  const first = await timeGet();
  await eventually("big held", () => heldBy("big", 3), (x) => x, 120_000);
  const later = await timeGet();
  console.log(
    `GET of 32 MiB on another node right after its PUT: ${first.toFixed(0)} ms; once held ` +
      `there: ${later.toFixed(0)} ms`,
  );
} finally {
  await stopAll(nodes);
  await pg.dispose();
}
