// Foreground latency during a drive heal: p50/p99 of small GETs (16 KiB objects, stored as one
// chunk each so every GET reads shards) with no heal running, then while a drive replaced by an
// empty one is healed, at several STORE_HEAL_THROTTLE settings (0 = unthrottled).
//
//   deno task bench:heal [--large 80] [--throttles 0,100]
import { join } from "node:path";
import { memoryOf, startServer, type TestServer } from "../tests/integration/server.ts";
import { ADMIN_PASSWORD, ADMIN_USER } from "../tests/integration/server.ts";
import { createBucket, get, put, textBytes } from "../tests/integration/storage_helpers.ts";

function arg(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : fallback;
}

const LARGE = Number(arg("large", "80"));
const THROTTLES = arg("throttles", "0,100").split(",").map(Number);
const SMALL = 100;
const CONCURRENCY = 2;
const BASELINE_MS = 10_000;
const BUCKET = "heal-bench";

const root = await Deno.makeTempDir({ prefix: "store-bench-heal-" });
const drives = [0, 1, 2].map((i) => join(root, `drive-${i}`));

function start(throttle: number): Promise<TestServer> {
  return startServer({
    dataDir: root,
    env: {
      STORE_DATA_DIRS: drives.join(","),
      STORE_EC: "2+1",
      STORE_CHUNK_SIZE: String(64 * 1024),
      STORE_INLINE_MAX: "4096",
      STORE_COMPRESSION: "off",
      STORE_SCRUB_INTERVAL: "0",
      STORE_HEAL_THROTTLE: String(throttle),
    },
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Small GETs from CONCURRENCY loops until `until` resolves; latencies in ms. */
async function getLoop(server: TestServer, until: Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  let done = false;
  until.finally(() => (done = true));
  await Promise.all(Array.from({ length: CONCURRENCY }, async (_, w) => {
    for (let i = w; !done; i += CONCURRENCY) {
      const t = performance.now();
      const r = await get(server, BUCKET, `small-${i % SMALL}`);
      if (r.status !== 200) throw new Error(`GET: ${r.status}`);
      times.push(performance.now() - t);
    }
  }));
  return times.sort((a, b) => a - b);
}

async function healFinished(server: TestServer): Promise<Record<string, unknown>> {
  const auth = { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) };
  while (true) {
    const body = await (await fetch(`${server.url}/admin/heal`, { headers: auth })).json();
    if (body.state === "finished") return body;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function report(label: string, times: number[], extra: Record<string, unknown> = {}) {
  const row = {
    phase: label,
    gets: times.length,
    p50_ms: +percentile(times, 50).toFixed(2),
    p99_ms: +percentile(times, 99).toFixed(2),
    ...extra,
  };
  console.log(JSON.stringify(row));
  return row;
}

try {
  let server = await start(100);
  await createBucket(server, BUCKET);
  for (let i = 0; i < SMALL; i++) await put(server, BUCKET, `small-${i}`, textBytes(16 * 1024, i));
  const big = textBytes(1024 * 1024, 7);
  for (let i = 0; i < LARGE; i++) {
    big[0] = i; // distinct chunks (no dedup)
    big[65536 * 3] = i;
    const r = await put(server, BUCKET, `large-${i}`, big.map((b, j) => j % 65536 === 5 ? i : b));
    if (r.status !== 200) throw new Error(`PUT: ${r.status}`);
  }
  // The baseline runs on a fresh start, as the heal runs do (page cache warm for all).
  await server.stop();
  server = await start(100);
  await new Promise((r) => setTimeout(r, 1000));
  const baseline = await getLoop(server, new Promise((r) => setTimeout(r, BASELINE_MS)));
  report("no heal", baseline, {
    peakRssMiB: Math.round((await memoryOf(server.pid)).peak / 2 ** 20),
  });
  await server.stop();

  for (const throttle of THROTTLES) {
    await Deno.remove(drives[1], { recursive: true });
    await Deno.mkdir(drives[1]);
    server = await start(throttle);
    const healed = healFinished(server);
    const times = await getLoop(server, healed);
    const h = await healed;
    const seconds = (Date.parse(h.finishedAt as string) - Date.parse(h.startedAt as string)) / 1000;
    report(`heal, STORE_HEAL_THROTTLE=${throttle}`, times, {
      healSeconds: seconds,
      chunks: h.chunksDone,
      healedShards: h.healedShards,
      peakRssMiB: Math.round((await memoryOf(server.pid)).peak / 2 ** 20),
    });
    await server.stop();
  }
} finally {
  await Deno.remove(root, { recursive: true }).catch(() => {});
}
