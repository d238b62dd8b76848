// What TLS and the access log cost: small PUTs and GETs (4 KiB, SDK, keep-alive) against a server
// on plain HTTP, on HTTPS (a certificate made for the run) and on HTTP with STORE_ACCESS_LOG=on
// (to a file), in alternating rounds; medians of ops/s and p99, and the servers' peak RSS.
//
//   deno task bench:serve [--count 1000] [--rounds 3] [--concurrency 8] [--size 4096]
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { Agent } from "node:https";
import { join } from "node:path";
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  memoryOf,
  randomBytes,
  REGION,
  startServer,
  type TestServer,
} from "../tests/integration/server.ts";
import { makeTestCa } from "../tests/integration/tls_certs.ts";

function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}

const COUNT = flag("count", 1000);
const ROUNDS = flag("rounds", 3);
const CONCURRENCY = flag("concurrency", 8);
const SIZE = flag("size", 4096);

function client(server: TestServer, ca?: string): S3Client {
  return new S3Client({
    endpoint: server.url,
    region: REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: ADMIN_USER, secretAccessKey: ADMIN_PASSWORD },
    maxAttempts: 1,
    requestHandler: ca ? { httpsAgent: new Agent({ ca, keepAlive: true }) } : undefined,
  });
}

/** Runs `op` COUNT times with CONCURRENCY in flight: ops/s and p99 ms. */
async function measure(op: (i: number) => Promise<unknown>) {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < COUNT) {
      const i = next++;
      const t = performance.now();
      await op(i);
      latencies.push(performance.now() - t);
    }
  }));
  latencies.sort((a, b) => a - b);
  return {
    opsPerSecond: COUNT / ((performance.now() - started) / 1000),
    p99: latencies[Math.floor(latencies.length * 0.99)],
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const ca = await makeTestCa();
const cert = await ca.issue("bench");
const caPem = await Deno.readTextFile(ca.caFile);
const servers = {
  http: await startServer(),
  https: await startServer({ env: { STORE_TLS_CERT: cert.certFile, STORE_TLS_KEY: cert.keyFile } }),
  "http+log": await startServer({
    env: { STORE_ACCESS_LOG: "on", STORE_ACCESS_LOG_FILE: join(ca.dir, "access.log") },
  }),
};
const body = randomBytes(SIZE);
const results: Record<
  string,
  { put: number[]; putP99: number[]; get: number[]; getP99: number[] }
> = {};
try {
  for (const [name, server] of Object.entries(servers)) {
    const s3 = client(server, name === "https" ? caPem : undefined);
    await s3.send(new CreateBucketCommand({ Bucket: "bench" }));
    s3.destroy();
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, server] of Object.entries(servers)) {
      const s3 = client(server, name === "https" ? caPem : undefined);
      const r = (results[name] ??= { put: [], putP99: [], get: [], getP99: [] });
      const put = await measure((i) =>
        s3.send(new PutObjectCommand({ Bucket: "bench", Key: `k${i}`, Body: body }))
      );
      const get = await measure(async (i) => {
        const res = await s3.send(new GetObjectCommand({ Bucket: "bench", Key: `k${i}` }));
        await res.Body!.transformToByteArray();
      });
      r.put.push(put.opsPerSecond);
      r.putP99.push(put.p99);
      r.get.push(get.opsPerSecond);
      r.getP99.push(get.p99);
      s3.destroy();
    }
  }
  console.log(
    `${COUNT} ops x ${ROUNDS} rounds, ${SIZE} bytes, concurrency ${CONCURRENCY} (medians)`,
  );
  console.log("server     PUT ops/s  PUT p99 ms  GET ops/s  GET p99 ms  peak RSS MB");
  for (const [name, r] of Object.entries(results)) {
    const peak = (await memoryOf(servers[name as keyof typeof servers].pid)).peak / 1e6;
    console.log(
      [
        name.padEnd(9),
        median(r.put).toFixed(0).padStart(10),
        median(r.putP99).toFixed(1).padStart(11),
        median(r.get).toFixed(0).padStart(10),
        median(r.getP99).toFixed(1).padStart(11),
        peak.toFixed(0).padStart(12),
      ].join(" "),
    );
  }
} finally {
  for (const server of Object.values(servers)) {
    await server.stop();
    await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
  }
  await Deno.remove(ca.dir, { recursive: true });
}
