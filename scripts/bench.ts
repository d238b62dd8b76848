// Benchmark: PUT, GET, HEAD, LIST (ListObjectsV2, max-keys 1000) and DELETE at several object
// sizes, with N requests in flight, against a running server or one it starts on a temp dir.
//
//   deno task bench [--url URL --access-key KEY --secret-key SECRET] [--concurrency 8]
//                   [--sizes 4k,1m,64m] [--ops put,get,head,list,delete] [--count N]
//                   [--count-large N] [--duration SECONDS] [--region us-east-1] [--keep]
//
// URL and credentials may also come from BENCH_URL, BENCH_ACCESS_KEY, BENCH_SECRET_KEY (and
// BENCH_REGION). Without a URL the benchmark starts `deno run -A main.ts` itself with
// STORE_PORT=0 on a temporary data directory and stops it at the end.
import { randomFillSync } from "node:crypto";
import { Connection, type Endpoint, objectPath, type Request, Signer } from "./bench_client.ts";

const KiB = 1024;
const MiB = 1024 * KiB;
const LARGE = 16 * MiB;
const OPS = ["put", "get", "head", "list", "delete"] as const;
type Op = typeof OPS[number];

const HELP = `Usage: deno task bench [options]
  --url URL            server to test (env BENCH_URL); omitted: start one on a temp dir
  --access-key KEY     (env BENCH_ACCESS_KEY)
  --secret-key SECRET  (env BENCH_SECRET_KEY)
  --region REGION      (env BENCH_REGION, default us-east-1)
  --concurrency N      requests in flight (default 8)
  --sizes LIST         object sizes, e.g. 4k,1m,64m (default)
  --ops LIST           any of put,get,head,list,delete (default all)
  --count N            operations per op for sizes under 16 MiB (default 2000 up to 64 KiB,
                       200 above); LIST runs a tenth as many (at least 10)
  --count-large N      operations per op for sizes of 16 MiB and more (default 16)
  --duration S         also stop each op after S seconds
  --bucket NAME        bucket to create and use (default bench-<random>)
  --keep               leave the objects and the bucket in place
MB/s counts 1 MB = 1,000,000 bytes of object data (PUT and GET only).`;

interface Options {
  endpoint?: Endpoint;
  region: string;
  concurrency: number;
  sizes: number[];
  ops: Op[];
  count?: number;
  countLarge: number;
  duration?: number;
  bucket: string;
  keep: boolean;
}

function parseSize(text: string): number {
  const m = /^(\d+)\s*(b|k|kib|kb|m|mib|mb|g|gib|gb)?$/i.exec(text.trim());
  if (!m) throw new Error(`Not a size: "${text}"`);
  const unit = (m[2] ?? "b").toLowerCase()[0];
  return Number(m[1]) * ({ b: 1, k: KiB, m: MiB, g: 1024 * MiB } as Record<string, number>)[unit];
}

function sizeLabel(size: number): string {
  if (size >= MiB && size % MiB === 0) return `${size / MiB} MiB`;
  if (size >= KiB && size % KiB === 0) return `${size / KiB} KiB`;
  return `${size} B`;
}

function positive(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} needs a positive number`);
  return n;
}

function parseArgs(args: string[]): Options {
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--help" || arg === "-h") {
      console.log(HELP);
      Deno.exit(0);
    }
    if (!arg.startsWith("--")) throw new Error(`Unexpected argument "${arg}"`);
    const eq = arg.indexOf("=");
    if (eq > 0) flags.set(arg.slice(2, eq), arg.slice(eq + 1));
    else if (arg === "--keep") flags.set("keep", "true");
    else flags.set(arg.slice(2), args[++i] ?? "");
  }
  const known = [
    "url",
    "access-key",
    "secret-key",
    "region",
    "concurrency",
    "sizes",
    "ops",
    "count",
    "count-large",
    "duration",
    "bucket",
    "keep",
  ];
  for (const name of flags.keys()) {
    if (!known.includes(name)) throw new Error(`Unknown option --${name}\n\n${HELP}`);
  }
  const url = flags.get("url") ?? Deno.env.get("BENCH_URL");
  const region = flags.get("region") ?? Deno.env.get("BENCH_REGION") ?? "us-east-1";
  let endpoint: Endpoint | undefined;
  if (url) {
    const accessKey = flags.get("access-key") ?? Deno.env.get("BENCH_ACCESS_KEY");
    const secretKey = flags.get("secret-key") ?? Deno.env.get("BENCH_SECRET_KEY");
    if (!accessKey || !secretKey) throw new Error("A URL needs an access key and a secret key");
    endpoint = { url: url.replace(/\/+$/, ""), accessKey, secretKey, region };
  }
  const ops = (flags.get("ops") ?? OPS.join(",")).split(",").map((s) => s.trim().toLowerCase());
  for (const op of ops) {
    if (!(OPS as readonly string[]).includes(op)) throw new Error(`Unknown operation "${op}"`);
  }
  return {
    endpoint,
    region,
    concurrency: Math.floor(positive("--concurrency", flags.get("concurrency") ?? "8")),
    sizes: (flags.get("sizes") ?? "4k,1m,64m").split(",").map(parseSize),
    ops: OPS.filter((op) => ops.includes(op)),
    count: flags.has("count") ? Math.floor(positive("--count", flags.get("count"))) : undefined,
    countLarge: Math.floor(positive("--count-large", flags.get("count-large") ?? "16")),
    duration: flags.has("duration") ? positive("--duration", flags.get("duration")) : undefined,
    bucket: flags.get("bucket") ?? `bench-${crypto.randomUUID().slice(0, 8)}`,
    keep: flags.has("keep"),
  };
}

function countFor(opts: Options, size: number, op: Op): number {
  let n = size >= LARGE ? opts.countLarge : opts.count ?? (size <= 64 * KiB ? 2000 : 200);
  if (op === "list") n = Math.max(10, Math.ceil(n / 10));
  return n;
}

interface LocalServer {
  endpoint: Endpoint;
  stop(): Promise<void>;
}

/** Starts main.ts on a temp data directory and waits for its "Listening" log line. */
async function startLocalServer(region: string): Promise<LocalServer> {
  const dataDir = await Deno.makeTempDir({ prefix: "store-bench-" });
  const accessKey = "bench-admin";
  const secretKey = crypto.randomUUID();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../main.ts", import.meta.url).pathname],
    env: {
      STORE_ADDRESS: "127.0.0.1",
      STORE_PORT: "0",
      STORE_DATA_DIR: dataDir,
      STORE_REGION: region,
      STORE_ADMIN_USER: accessKey,
      STORE_ADMIN_PASSWORD: secretKey,
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let log = "";
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Server did not start:\n${log}`)), 30_000);
    (async () => {
      const decoder = new TextDecoder();
      let found = false;
      for await (const chunk of child.stderr) {
        if (found) continue; // keep draining so the server never blocks on a full pipe
        log += decoder.decode(chunk, { stream: true });
        const m = /"Listening","url":"http:\/\/[^:]+:(\d+)"/.exec(log);
        if (m) {
          found = true;
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      }
      clearTimeout(timer);
      if (!found) reject(new Error(`Server exited before listening:\n${log}`));
    })().catch(reject);
  });
  return {
    endpoint: { url: `http://127.0.0.1:${port}`, accessKey, secretKey, region },
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.status;
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
}

interface Result {
  op: Op;
  size: number;
  ops: number;
  errors: number;
  seconds: number;
  bytes: number;
  latencies: number[];
  firstError?: string;
}

/** Signs requests and sends them on one keep-alive connection per worker. */
class Client {
  readonly #signer: Signer;
  readonly #connections: Connection[];

  constructor(endpoint: Endpoint, workers: number) {
    this.#signer = new Signer(endpoint);
    this.#connections = Array.from({ length: workers }, () => new Connection(endpoint.url));
  }

  /** Sends the request on the worker's connection; anything but 2xx is an error. */
  async ok(worker: number, r: Request, what: string): Promise<number> {
    const res = await this.#connections[worker].send(this.#signer, r);
    if (res.status >= 300) {
      throw new Error(`${what} answered ${res.status}: ${(res.text ?? "").slice(0, 300)}`);
    }
    return res.length;
  }

  close(): void {
    for (const c of this.#connections) c.close();
  }
}

/** Runs `run(i, worker)` for i = 0..count-1, `concurrency` at a time; each returns bytes moved. */
async function measure(
  opts: Options,
  spec: { op: Op; size: number; count: number },
  run: (i: number, worker: number) => Promise<number>,
): Promise<Result> {
  const result: Result = { ...spec, ops: 0, errors: 0, seconds: 0, bytes: 0, latencies: [] };
  const started = performance.now();
  const deadline = opts.duration ? started + opts.duration * 1000 : Infinity;
  let next = 0;
  const worker = async (w: number) => {
    while (next < spec.count && performance.now() < deadline) {
      const i = next++;
      const t0 = performance.now();
      try {
        const moved = await run(i, w);
        result.bytes += moved;
        result.latencies.push(performance.now() - t0);
        result.ops++;
      } catch (err) {
        result.errors++;
        result.firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  };
  const workers = Math.min(opts.concurrency, spec.count);
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

function keyOf(size: number, i: number): string {
  return `bench/${size}/${String(i).padStart(6, "0")}`;
}

/** Every op the options select, at one size; objects are prepared and cleaned up unmeasured. */
async function benchSize(client: Client, opts: Options, size: number): Promise<Result[]> {
  const results: Result[] = [];
  const buffer = new Uint8Array(size);
  randomFillSync(buffer);
  const path = (i: number) => objectPath(opts.bucket, keyOf(size, i));
  const put = async (i: number, w: number) => {
    await client.ok(w, {
      method: "PUT",
      path: path(i),
      headers: { "content-type": "application/octet-stream" },
      body: { buffer, size },
    }, `PUT ${keyOf(size, i)}`);
    return size;
  };
  const objects = countFor(opts, size, "put");
  let written = objects;
  if (opts.ops.includes("put")) {
    const r = await measure(opts, { op: "put", size, count: objects }, put);
    written = r.ops;
    results.push(r);
  } else {
    const r = await measure(opts, { op: "put", size, count: objects }, put);
    if (r.errors > 0) throw new Error(`Preparing ${sizeLabel(size)} objects: ${r.firstError}`);
  }
  const spec = (op: Op) => ({ op, size, count: countFor(opts, size, op) });
  const target = (i: number) => path(i % Math.max(1, written));
  if (opts.ops.includes("get")) {
    results.push(
      await measure(opts, spec("get"), async (i, w) => {
        const n = await client.ok(w, { method: "GET", path: target(i) }, "GET");
        if (n !== size) throw new Error(`GET returned ${n} bytes, expected ${size}`);
        return n;
      }),
    );
  }
  if (opts.ops.includes("head")) {
    results.push(
      await measure(opts, spec("head"), async (i, w) => {
        await client.ok(w, { method: "HEAD", path: target(i) }, "HEAD");
        return 0;
      }),
    );
  }
  if (opts.ops.includes("list")) {
    const query: [string, string][] = [["list-type", "2"], ["max-keys", "1000"]];
    results.push(
      await measure(opts, spec("list"), async (_, w) => {
        await client.ok(w, { method: "GET", path: objectPath(opts.bucket), query }, "List");
        return 0;
      }),
    );
  }
  const del = async (i: number, w: number) => {
    await client.ok(w, { method: "DELETE", path: path(i) }, "DELETE");
    return 0;
  };
  if (opts.ops.includes("delete")) {
    results.push(await measure(opts, { op: "delete", size, count: written }, del));
  } else if (!opts.keep) {
    await measure(opts, { op: "delete", size, count: objects }, del);
  }
  return results;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function printTable(results: Result[]): void {
  const header = ["op", "size", "ops", "ops/s", "MB/s", "p50 ms", "p99 ms", "errors"];
  const rows = results.map((r) => {
    const sorted = [...r.latencies].sort((a, b) => a - b);
    const moves = r.op === "put" || r.op === "get";
    return [
      r.op.toUpperCase(),
      sizeLabel(r.size),
      String(r.ops),
      (r.ops / r.seconds).toFixed(1),
      moves ? (r.bytes / 1e6 / r.seconds).toFixed(1) : "-",
      percentile(sorted, 50).toFixed(2),
      percentile(sorted, 99).toFixed(2),
      String(r.errors),
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
  const local = opts.endpoint ? undefined : await startLocalServer(opts.region);
  const endpoint = opts.endpoint ?? local!.endpoint;
  const onSignal = () => {
    (local ? local.stop() : Promise.resolve()).finally(() => Deno.exit(130));
  };
  Deno.addSignalListener("SIGINT", onSignal);
  const client = new Client(endpoint, opts.concurrency);
  const results: Result[] = [];
  try {
    console.log(
      `Benchmarking ${endpoint.url}${local ? " (started here)" : ""}: concurrency ` +
        `${opts.concurrency}, sizes ${opts.sizes.map(sizeLabel).join(", ")}, ` +
        `ops ${opts.ops.join(", ")}`,
    );
    const bucketPath = objectPath(opts.bucket);
    await client.ok(0, { method: "PUT", path: bucketPath }, "CreateBucket");
    for (const size of opts.sizes) results.push(...await benchSize(client, opts, size));
    if (!opts.keep) {
      await client.ok(0, { method: "DELETE", path: bucketPath }, "DeleteBucket");
    }
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    client.close();
    await local?.stop();
  }
  console.log("");
  printTable(results);
}

if (import.meta.main) {
  await main().catch((err) => {
    console.error(`Benchmark failed: ${err instanceof Error ? err.message : String(err)}`);
    Deno.exit(1);
  });
}
