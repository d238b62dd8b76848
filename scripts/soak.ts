// Soak test: well-behaved, signed traffic (PUT, GET, HEAD, LIST, DELETE) while attackers hold
// slow-header connections (slowloris), stall downloads of a large object and send oversized
// bodies, for a bounded time, all to 127.0.0.1. Reports the server's peak RSS and the latency of
// the well-behaved requests. Usage: deno task soak [--duration 60] [--slowloris 1000]
// [--stalled 200] [--stall-seconds 45] [--oversized 4] [--clients 8] [--server-env FILE]
import { type Endpoint, objectPath, Signer } from "./bench_client.ts";
import { readEnvFile } from "./bench_options.ts";
import { Client, peakRssOf, startLocalServer } from "./bench_run.ts";

const MiB = 1024 * 1024;
const enc = new TextEncoder();

interface Options {
  /** Environment of the server (--server-env FILE, KEY=value lines, e.g. scripts/small-box.env). */
  serverEnv: Record<string, string>;
  duration: number;
  slowloris: number;
  stalled: number;
  oversized: number;
  clients: number;
  stallSeconds: number;
}

function parseOptions(args: string[]): Options {
  const opts: Options = {
    serverEnv: {},
    duration: 60,
    slowloris: 1000,
    stalled: 200,
    oversized: 4,
    clients: 8,
    stallSeconds: 45,
  };
  for (let i = 0; i < args.length; i += 2) {
    if (args[i] === "--server-env" && args[i + 1] !== undefined) {
      opts.serverEnv = readEnvFile(args[i + 1]);
      continue;
    }
    const name = args[i].replace(/^--/, "").replace(
      /-(\w)/g,
      (_, c) => c.toUpperCase(),
    ) as Exclude<keyof Options, "serverEnv">;
    const value = Number(args[i + 1]);
    if (
      !(name in opts) || name as string === "serverEnv" || !Number.isInteger(value) || value < 0
    ) {
      throw new Error(`Unknown option or bad value: ${args[i]} ${args[i + 1] ?? ""}`);
    }
    opts[name] = value;
  }
  return opts;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.byteLength) offset += await conn.write(bytes.subarray(offset));
}

/** Counters of what the attackers saw. */
const seen = {
  slowClosed: 0,
  stalled: 0,
  stalledClosed: 0,
  oversizedRefused: 0,
  oversizedBytes: 0,
};

/** Reads until the server closes the connection, discarding what arrives. */
async function drainUntilClosed(conn: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(64 * 1024);
  try {
    while ((await conn.read(buf)) !== null) { /* discard */ }
  } catch { /* reset */ }
}

async function slowloris(port: number, until: number): Promise<void> {
  while (Date.now() < until) {
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      await writeAll(conn, enc.encode("GET / HTTP/1.1\r\nhost: x\r\n"));
      const drip = setInterval(
        () => writeAll(conn, enc.encode("x-a: b\r\n")).catch(() => {}),
        1000,
      );
      const closed = drainUntilClosed(conn);
      await Promise.race([closed, new Promise((r) => setTimeout(r, until - Date.now()))]);
      clearInterval(drip);
      if (Date.now() < until) seen.slowClosed++;
      try {
        conn.close();
      } catch { /* closed */ }
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * GETs the large object and reads nothing for `stallSeconds`; then reads what is buffered to see
 * whether the server ended the connection, and starts over.
 */
async function stalledReader(
  port: number,
  signer: Signer,
  path: string,
  until: number,
  stallSeconds: number,
): Promise<void> {
  while (Date.now() < until) {
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      const { target, headers } = signer.sign({ method: "GET", path });
      let head = `GET ${target} HTTP/1.1\r\n`;
      for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
      await writeAll(conn, enc.encode(head + "\r\n"));
      const wait = Math.min(stallSeconds * 1000, until - Date.now());
      await new Promise((r) => setTimeout(r, Math.max(0, wait)));
      if (wait >= stallSeconds * 1000) seen.stalled++;
      const closed = await Promise.race([
        drainUntilClosed(conn).then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 3000)),
      ]);
      if (closed && wait >= stallSeconds * 1000) seen.stalledClosed++;
      try {
        conn.close();
      } catch { /* closed */ }
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Sends a token request with a body that would grow to 1 GiB, until the server refuses it. */
async function oversized(port: number, until: number): Promise<void> {
  const piece = new Uint8Array(256 * 1024).fill(0x20);
  while (Date.now() < until) {
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      await writeAll(
        conn,
        enc.encode(
          "POST /api/v1/tokens HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n" +
            `content-length: ${1024 * MiB}\r\n\r\n`,
        ),
      );
      let answered = false;
      const reading = conn.read(new Uint8Array(1024)).then(() => (answered = true), () => {
        answered = true;
      });
      try {
        for (let sent = 0; !answered && sent < 1024 * MiB; sent += piece.byteLength) {
          await writeAll(conn, piece);
          seen.oversizedBytes += piece.byteLength;
        }
      } catch { /* closed by the server */ }
      await reading;
      seen.oversizedRefused++;
      try {
        conn.close();
      } catch { /* closed */ }
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Mixed signed traffic; returns the latencies (ms) of every request and the failures. */
async function wellBehaved(client: Client, bucket: string, until: number, worker: number) {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const small = crypto.getRandomValues(new Uint8Array(64 * 1024));
  const medium = new Uint8Array(MiB).fill(worker);
  let i = 0;
  while (Date.now() < until) {
    const key = `w${worker}-${i++ % 20}`;
    const body = i % 4 === 0 ? { buffer: medium, size: MiB } : { buffer: small, size: 64 * 1024 };
    const steps = [
      { method: "PUT", path: objectPath(bucket, key), body },
      { method: "GET", path: objectPath(bucket, key) },
      { method: "HEAD", path: objectPath(bucket, key) },
      {
        method: "GET",
        path: objectPath(bucket),
        query: [["list-type", "2"]] as [string, string][],
      },
      ...(i % 3 === 0 ? [{ method: "DELETE", path: objectPath(bucket, key) }] : []),
    ];
    for (const step of steps) {
      const t0 = performance.now();
      try {
        await client.ok(step, `${step.method} ${step.path}`);
        latencies.push(performance.now() - t0);
      } catch (err) {
        errors++;
        firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  }
  return { latencies, errors, firstError };
}

/** The main thread's V8 heap and ArrayBuffer bytes, from /metrics (0 when it does not answer). */
async function v8Memory(endpoint: Endpoint): Promise<{ heap: number; external: number }> {
  const gauge = (text: string, name: string) =>
    Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? 0);
  try {
    const res = await fetch(`${endpoint.url}/metrics`, {
      headers: { authorization: `Basic ${btoa(`${endpoint.accessKey}:${endpoint.secretKey}`)}` },
    });
    const text = await res.text();
    return {
      heap: gauge(text, "store_heap_total_bytes"),
      external: gauge(text, "store_external_memory_bytes"),
    };
  } catch {
    return { heap: 0, external: 0 };
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0
    ? NaN
    : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function main(): Promise<void> {
  const opts = parseOptions(Deno.args);
  const server = await startLocalServer("us-east-1", opts.serverEnv);
  const port = Number(new URL(server.endpoint.url).port);
  const client = new Client(server.endpoint, opts.clients + 2);
  const signer = new Signer(server.endpoint);
  const bucket = "soak";
  try {
    await client.ok({ method: "PUT", path: objectPath(bucket) }, "CreateBucket");
    const big = crypto.getRandomValues(new Uint8Array(64 * 1024)).slice();
    const large = new Uint8Array(32 * MiB);
    for (let o = 0; o < large.byteLength; o += big.byteLength) large.set(big, o);
    const largePath = objectPath(bucket, "large");
    await client.ok({
      method: "PUT",
      path: largePath,
      body: { buffer: large, size: large.byteLength },
    }, "PUT large");
    console.log(
      `Soak for ${opts.duration} s: ${opts.clients} well-behaved clients, ${opts.slowloris} ` +
        `slowloris, ${opts.stalled} stalled readers, ${opts.oversized} oversized-body senders`,
    );
    const until = Date.now() + opts.duration * 1000;
    let rssSamples = 0;
    let maxRss = 0;
    const v8Peaks = { heap: 0, external: 0 };
    const sampler = setInterval(async () => {
      const status = await Deno.readTextFile(`/proc/${server.pid}/status`).catch(() => "");
      const rss = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0) * 1024;
      maxRss = Math.max(maxRss, rss);
      rssSamples++;
      const v8 = await v8Memory(server.endpoint);
      v8Peaks.heap = Math.max(v8Peaks.heap, v8.heap);
      v8Peaks.external = Math.max(v8Peaks.external, v8.external);
    }, 500);
    const attackers = [
      ...Array.from({ length: opts.slowloris }, () => slowloris(port, until)),
      ...Array.from(
        { length: opts.stalled },
        () => stalledReader(port, signer, largePath, until, opts.stallSeconds),
      ),
      ...Array.from({ length: opts.oversized }, () => oversized(port, until)),
    ];
    const results = await Promise.all(
      Array.from({ length: opts.clients }, (_, w) => wellBehaved(client, bucket, until, w)),
    );
    await Promise.all(attackers);
    clearInterval(sampler);
    const latencies = results.flatMap((r) => r.latencies).sort((a, b) => a - b);
    const errors = results.reduce((n, r) => n + r.errors, 0);
    const peak = await peakRssOf(server.pid);
    if (peak === undefined) console.log(`The server is gone. Its last words:\n${server.logTail()}`);
    console.log(`well-behaved requests: ${latencies.length} ok, ${errors} failed`);
    console.log(
      `latency ms: p50 ${percentile(latencies, 0.5).toFixed(1)}, ` +
        `p99 ${percentile(latencies, 0.99).toFixed(1)}, max ${latencies.at(-1)?.toFixed(1)}`,
    );
    console.log(
      `server RSS: peak (VmHWM) ${((peak ?? 0) / MiB).toFixed(0)} MiB, ` +
        `highest sampled VmRSS ${(maxRss / MiB).toFixed(0)} MiB (${rssSamples} samples); ` +
        `sampled peaks of the main thread's V8 heap ${(v8Peaks.heap / MiB).toFixed(0)} MiB, ` +
        `ArrayBuffers ${(v8Peaks.external / MiB).toFixed(0)} MiB`,
    );
    console.log(
      `attackers: ${seen.slowClosed} slowloris connections closed by the server, ` +
        `${seen.stalledClosed} of ${seen.stalled} readers stalled for --stall-seconds found ` +
        `disconnected, ${seen.oversizedRefused} oversized ` +
        `bodies refused after ${(seen.oversizedBytes / MiB).toFixed(1)} MiB sent in all`,
    );
    const firstError = results.find((r) => r.firstError)?.firstError;
    if (firstError) console.log(`first failure: ${firstError}`);
  } finally {
    client.close();
    await server.stop();
  }
}

if (import.meta.main) await main();
