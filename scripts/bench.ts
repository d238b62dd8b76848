// Benchmark: PUT, multipart upload (MPU), GET, ranged GET (GETRANGE), HEAD, LIST
// (ListObjectsV2, max-keys 1000) and DELETE at several object sizes, with N requests in flight,
// against a running server or one it starts on a temp dir.
//
//   deno task bench [--url URL --access-key KEY --secret-key SECRET] [--concurrency 8]
//                   [--sizes 4k,1m,64m] [--ops put,mpu,get,getrange,head,list,delete]
//                   [--part-size 8m] [--count N] [--count-large N] [--duration SECONDS]
//                   [--region us-east-1] [--keep] [--server-env FILE] [--postgres]
//                   [--data random|text]
//
// URL and credentials may also come from BENCH_URL, BENCH_ACCESS_KEY, BENCH_SECRET_KEY (and
// BENCH_REGION). Without a URL the benchmark starts `deno run -A main.ts` itself with
// STORE_PORT=0 on a temporary data directory and stops it at the end. Request bodies are views
// of one buffer per size: random bytes (stored as they are), or with --data text random letters
// of a 16-letter alphabet (about 2:1 under zstd: stored compressed, in segments).
import { randomFillSync } from "node:crypto";
import { type Endpoint, objectPath } from "./bench_client.ts";
import { benchMultipart, rangedGet } from "./bench_multipart.ts";
import {
  countFor,
  MiB,
  type Op,
  type Options,
  parseArgs,
  partLength,
  selected,
  sizeLabel,
} from "./bench_options.ts";
import { Client, measure, MemoryProbe, type Result, startLocalServer } from "./bench_run.ts";
import { mergeRounds, percentile, printComparison, printTableOf } from "./bench_compare.ts";
import { createPostgres } from "../tests/services/postgres.ts";

/** How long the idle RSS waits after start-up (as long as each load's settled RSS). */
const IDLE_SETTLE_MS = 1000;

function keyOf(size: number, i: number): string {
  return `bench/${size}/${String(i).padStart(6, "0")}`;
}

/** PUT (measured, or unmeasured to prepare objects for reading); returns the objects written. */
async function putObjects(
  client: Client,
  opts: Options,
  size: number,
  buffer: Uint8Array,
  results: Result[],
): Promise<number> {
  const objects = countFor(opts, size, "put");
  const r = await measure(opts, { op: "put", size, count: objects }, async (i) => {
    await client.ok({
      method: "PUT",
      path: objectPath(opts.bucket, keyOf(size, i)),
      headers: { "content-type": "application/octet-stream" },
      body: { buffer, size },
    }, `PUT ${keyOf(size, i)}`);
    return size;
  });
  if (selected(opts, "put", size)) results.push(r);
  else if (r.errors > 0) throw new Error(`Preparing ${sizeLabel(size)} objects: ${r.firstError}`);
  return r.ops;
}

/** GET, GETRANGE, HEAD and LIST over the `written` objects, as selected. */
async function readObjects(
  client: Client,
  opts: Options,
  size: number,
  written: number,
): Promise<Result[]> {
  const results: Result[] = [];
  const spec = (op: Op) => ({ op, size, count: countFor(opts, size, op) });
  const target = (i: number) => objectPath(opts.bucket, keyOf(size, i % Math.max(1, written)));
  const run = async (op: Op, fn: (i: number) => Promise<number>) => {
    if (selected(opts, op, size)) results.push(await measure(opts, spec(op), fn));
  };
  await run("get", async (i) => {
    const n = (await client.ok({ method: "GET", path: target(i) }, "GET")).length;
    if (n !== size) throw new Error(`GET returned ${n} bytes, expected ${size}`);
    return n;
  });
  const length = partLength(opts, size);
  await run("getrange", (i) => rangedGet(client, target(i), size, length));
  await run("head", async (i) => {
    await client.ok({ method: "HEAD", path: target(i) }, "HEAD");
    return 0;
  });
  const query: [string, string][] = [["list-type", "2"], ["max-keys", "1000"]];
  await run("list", async () => {
    await client.ok({ method: "GET", path: objectPath(opts.bucket), query }, "List");
    return 0;
  });
  return results;
}

/** Every op the options select, at one size; objects are prepared and cleaned up unmeasured. */
async function benchSize(client: Client, opts: Options, size: number): Promise<Result[]> {
  const results: Result[] = [];
  const buffer = new Uint8Array(size);
  randomFillSync(buffer);
  if (opts.data === "text") { for (let i = 0; i < size; i++) buffer[i] = 97 + (buffer[i] & 15); }
  const reads = ["get", "getrange", "head", "list", "delete"] as const;
  const prepare = selected(opts, "put", size) || reads.some((op) => selected(opts, op, size));
  const written = prepare ? await putObjects(client, opts, size, buffer, results) : 0;
  if (selected(opts, "mpu", size)) results.push(await benchMultipart(client, opts, size, buffer));
  results.push(...await readObjects(client, opts, size, written));
  const del = async (i: number) => {
    await client.ok({ method: "DELETE", path: objectPath(opts.bucket, keyOf(size, i)) }, "DELETE");
    return 0;
  };
  if (selected(opts, "delete", size)) {
    results.push(await measure(opts, { op: "delete", size, count: written }, del));
  } else if (prepare && !opts.keep) {
    await measure(opts, { op: "delete", size, count: countFor(opts, size, "put") }, del);
  }
  return results;
}

/** The server's CPU time per operation and, for loads that move data, per GB moved. */
function cpuCells(r: Result, moves: boolean): string[] {
  if (r.cpuSeconds === undefined || r.ops === 0) return ["-", "-"];
  return [
    (r.cpuSeconds * 1000 / r.ops).toFixed(2),
    moves && r.bytes > 0 ? (r.cpuSeconds / (r.bytes / 1e9)).toFixed(2) : "-",
  ];
}

function printTable(results: Result[]): void {
  const memory = results.some((r) => r.peakRss !== undefined);
  const header = ["op", "size", "ops", "ops/s", "MB/s", "p50 ms", "p99 ms", "errors"];
  if (memory) header.push("cpu ms/op", "cpu s/GB", "peak MiB", "settled MiB");
  const mib = (n?: number) => n === undefined ? "-" : (n / MiB).toFixed(0);
  const rows = results.map((r) => {
    const sorted = [...r.latencies].sort((a, b) => a - b);
    const moves = ["put", "mpu", "get", "getrange"].includes(r.op);
    return [
      r.op.toUpperCase(),
      sizeLabel(r.size),
      String(r.ops),
      (r.ops / r.seconds).toFixed(1),
      moves ? (r.bytes / 1e6 / r.seconds).toFixed(1) : "-",
      percentile(sorted, 50).toFixed(2),
      percentile(sorted, 99).toFixed(2),
      String(r.errors),
      ...(memory ? [...cpuCells(r, moves), mib(r.peakRss), mib(r.settledRss)] : []),
    ];
  });
  printTableOf(header, rows);
  for (const r of results) {
    if (r.firstError) console.log(`${r.op.toUpperCase()} ${sizeLabel(r.size)}: ${r.firstError}`);
  }
}

/** A server the loads run against: its client, bucket and memory probe. */
interface Target {
  label: string;
  client: Client;
  opts: Options;
  results: Result[];
}

function target(label: string, endpoint: Endpoint, opts: Options, pid?: number): Target {
  const memory = pid === undefined ? undefined : new MemoryProbe(pid);
  return {
    label,
    client: new Client(endpoint, opts.concurrency),
    opts: { ...opts, memory },
    results: [],
  };
}

/**
 * Unmeasured 4 KiB PUT, GET, HEAD and DELETE rounds (`opts.warmup` requests in all), so that the
 * loads measure a server whose code is compiled, not its first requests.
 */
async function warmUp(t: Target): Promise<void> {
  const body = { buffer: new Uint8Array(4 * 1024), size: 4 * 1024 };
  const keys = Array.from({ length: Math.ceil(t.opts.warmup / 4) }, (_, i) => `warmup/${i}`);
  const each = (method: string, withBody = false) =>
    Promise.all(keys.map((key) =>
      t.client.ok({
        method,
        path: objectPath(t.opts.bucket, key),
        body: withBody ? body : undefined,
      }, `warm-up ${method}`)
    ));
  for (const method of ["PUT", "GET", "HEAD", "DELETE"]) await each(method, method === "PUT");
}

/** Every size on every target; with two, their order alternates from round to round. */
async function runLoads(targets: Target[], opts: Options): Promise<void> {
  for (const t of targets) {
    await t.client.ok({ method: "PUT", path: objectPath(t.opts.bucket) }, "CreateBucket");
    if (opts.warmup > 0) await warmUp(t);
  }
  for (let round = 0; round < opts.rounds; round++) {
    for (const size of opts.sizes) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) t.results.push(...await benchSize(t.client, t.opts, size));
    }
  }
  if (opts.keep) return;
  for (const t of targets) {
    await t.client.ok({ method: "DELETE", path: objectPath(t.opts.bucket) }, "DeleteBucket");
  }
}

async function main(): Promise<void> {
  let opts: Options;
  try {
    opts = parseArgs(Deno.args);
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    Deno.exit(2);
  }
  const pg = opts.postgres && !opts.endpoint ? await createPostgres({ durable: true }) : undefined;
  if (pg) {
    await pg.start();
    opts.serverEnv = { ...opts.serverEnv, STORE_META_URL: pg.url };
  }
  const local = opts.endpoint ? undefined : await startLocalServer(opts.region, opts.serverEnv);
  const endpoint = opts.endpoint ?? local!.endpoint;
  const onSignal = () => {
    (local ? local.stop() : Promise.resolve()).finally(() => Deno.exit(130));
  };
  Deno.addSignalListener("SIGINT", onSignal);
  const ours = target("ours", endpoint, opts, local?.pid);
  const targets = [ours];
  if (opts.compare) {
    targets.push(target("other", opts.compare.endpoint, opts, opts.compare.pid));
  }
  let peak: number | undefined;
  // Idle: once start-up has settled (the server gives its start-up garbage back when quiet).
  if (ours.opts.memory) await new Promise((resolve) => setTimeout(resolve, IDLE_SETTLE_MS));
  const idle = ours.opts.memory && (await ours.opts.memory.read()).rss;
  try {
    console.log(
      `Benchmarking ${endpoint.url}${local ? " (started here)" : ""}` +
        `${pg ? " with metadata in PostgreSQL" : ""}` +
        `${opts.compare ? ` against ${opts.compare.endpoint.url}, ${opts.rounds} round(s)` : ""}` +
        `: concurrency ` +
        `${opts.concurrency}, sizes ${opts.sizes.map(sizeLabel).join(", ")}, ` +
        `ops ${opts.ops.join(", ")}, part size ${sizeLabel(opts.partSize)}`,
    );
    await runLoads(targets, opts);
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    for (const t of targets) t.client.close();
    const last = await local?.peakRss();
    peak = last === undefined
      ? undefined
      : Math.max(last, ...ours.results.map((r) => r.peakRss ?? 0));
    await local?.stop();
    await pg?.dispose();
  }
  for (const t of targets) {
    console.log(targets.length > 1 ? `\n${t.label === "ours" ? endpoint.url : t.label}:` : "");
    printTable(mergeRounds(t.results));
  }
  if (idle !== undefined) {
    console.log(
      `Server RSS idle, ${IDLE_SETTLE_MS / 1000} s after start: ${(idle / MiB).toFixed(0)} MiB`,
    );
  }
  if (peak !== undefined) {
    console.log(`Server peak RSS over all loads: ${(peak / MiB).toFixed(0)} MiB`);
  }
  if (targets.some((t) => t.opts.memory)) {
    console.log(
      "cpu: the server's user + system time for the load; peak MiB: its highest RSS during the " +
        "load; settled MiB: its RSS 1 s after",
    );
  }
  if (targets.length > 1) {
    console.log("");
    printComparison(mergeRounds(ours.results), mergeRounds(targets[1].results));
  }
}

if (import.meta.main) {
  await main().catch((err) => {
    console.error(`Benchmark failed: ${err instanceof Error ? err.message : String(err)}`);
    Deno.exit(1);
  });
}
