// Benchmark: PUT, multipart upload (MPU), GET, ranged GET (GETRANGE), HEAD, LIST
// (ListObjectsV2, max-keys 1000) and DELETE at several object sizes, with N requests in flight,
// against a running server or one it starts on a temp dir.
//
//   deno task bench [--url URL --access-key KEY --secret-key SECRET] [--concurrency 8]
//                   [--sizes 4k,1m,64m] [--ops put,mpu,get,getrange,head,list,delete]
//                   [--part-size 8m] [--count N] [--count-large N] [--duration SECONDS]
//                   [--region us-east-1] [--keep] [--server-env FILE] [--postgres]
//
// URL and credentials may also come from BENCH_URL, BENCH_ACCESS_KEY, BENCH_SECRET_KEY (and
// BENCH_REGION). Without a URL the benchmark starts `deno run -A main.ts` itself with
// STORE_PORT=0 on a temporary data directory and stops it at the end. Request bodies are views
// of one random buffer per size.
import { randomFillSync } from "node:crypto";
import { objectPath } from "./bench_client.ts";
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
import { createPostgres } from "../tests/services/postgres.ts";

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

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function printTable(results: Result[]): void {
  const memory = results.some((r) => r.peakRss !== undefined);
  const header = ["op", "size", "ops", "ops/s", "MB/s", "p50 ms", "p99 ms", "errors"];
  if (memory) header.push("peak MiB", "settled MiB");
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
      ...(memory ? [mib(r.peakRss), mib(r.settledRss)] : []),
    ];
  });
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((row) => row[c].length)));
  const line = (cells: string[]) =>
    cells.map((cell, c) => (c < 2 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])))
      .join("  ");
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of rows) console.log(line(row));
  for (const r of results) {
    if (r.firstError) console.log(`${r.op.toUpperCase()} ${sizeLabel(r.size)}: ${r.firstError}`);
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
  const client = new Client(endpoint, opts.concurrency);
  const results: Result[] = [];
  let peak: number | undefined;
  let idle: number | undefined;
  if (local) {
    opts.memory = new MemoryProbe(local.pid);
    idle = (await opts.memory.read()).rss;
  }
  try {
    console.log(
      `Benchmarking ${endpoint.url}${local ? " (started here)" : ""}` +
        `${pg ? " with metadata in PostgreSQL" : ""}: concurrency ` +
        `${opts.concurrency}, sizes ${opts.sizes.map(sizeLabel).join(", ")}, ` +
        `ops ${opts.ops.join(", ")}, part size ${sizeLabel(opts.partSize)}`,
    );
    const bucketPath = objectPath(opts.bucket);
    await client.ok({ method: "PUT", path: bucketPath }, "CreateBucket");
    for (const size of opts.sizes) results.push(...await benchSize(client, opts, size));
    if (!opts.keep) {
      await client.ok({ method: "DELETE", path: bucketPath }, "DeleteBucket");
    }
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    client.close();
    const last = await local?.peakRss();
    peak = last === undefined ? undefined : Math.max(last, ...results.map((r) => r.peakRss ?? 0));
    await local?.stop();
    await pg?.dispose();
  }
  console.log("");
  printTable(results);
  if (idle !== undefined) {
    console.log(`Server RSS idle after start: ${(idle / MiB).toFixed(0)} MiB`);
  }
  if (peak !== undefined) {
    console.log(`Server peak RSS over all loads: ${(peak / MiB).toFixed(0)} MiB`);
  }
  if (opts.memory) {
    console.log(
      "peak MiB: the server's highest RSS during the load; settled MiB: its RSS 1 s after",
    );
  }
}

if (import.meta.main) {
  await main().catch((err) => {
    console.error(`Benchmark failed: ${err instanceof Error ? err.message : String(err)}`);
    Deno.exit(1);
  });
}
