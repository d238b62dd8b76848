// The benchmark's machinery: a local server to test, a pooled client and the measuring loop.
import { SERVER_DENO_FLAGS, SERVER_ENV } from "../src/memory/server_env.ts";
import { Connection, type Endpoint, type Request, type Response, Signer } from "./bench_client.ts";
import type { Op, Options } from "./bench_options.ts";

export interface LocalServer {
  endpoint: Endpoint;
  pid: number;
  /** The last lines the server logged. */
  logTail(): string;
  /** The server's peak resident memory so far (VmHWM), in bytes; undefined off Linux. */
  peakRss(): Promise<number | undefined>;
  stop(): Promise<void>;
}

/** VmHWM of a process from /proc (Linux), in bytes. */
export async function peakRssOf(pid: number): Promise<number | undefined> {
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const m = /^VmHWM:\s+(\d+) kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Starts main.ts on a temp data directory and waits for its "Listening" log line. */
export async function startLocalServer(
  region: string,
  env: Record<string, string> = {},
): Promise<LocalServer> {
  const dataDir = await Deno.makeTempDir({ prefix: "store-bench-" });
  const accessKey = "bench-admin";
  const secretKey = crypto.randomUUID();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...SERVER_DENO_FLAGS, "-A", new URL("../main.ts", import.meta.url).pathname],
    env: {
      STORE_ADDRESS: "127.0.0.1",
      STORE_PORT: "0",
      STORE_DATA_DIR: dataDir,
      STORE_REGION: region,
      STORE_ADMIN_USER: accessKey,
      STORE_ADMIN_PASSWORD: secretKey,
      ...SERVER_ENV,
      ...env,
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let log = "";
  const listening = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Server did not start:\n${log}`)), 30_000);
    (async () => {
      const decoder = new TextDecoder();
      let found = false;
      for await (const chunk of child.stderr) {
        // Keep draining so the server never blocks on a full pipe; keep the log's tail.
        log = (log + decoder.decode(chunk, { stream: true })).slice(-16_000);
        if (found) continue;
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
  let port: number;
  try {
    port = await listening;
  } catch (err) {
    // A server that never said where it listens (e.g. STORE_LOG_LEVEL=warn hides the line) is
    // stopped here: nothing else would.
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    throw err;
  }
  return {
    endpoint: { url: `http://127.0.0.1:${port}`, accessKey, secretKey, region },
    pid: child.pid,
    logTail: () => log,
    peakRss: () => peakRssOf(child.pid),
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.status;
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * The server's resident memory per load (Linux /proc): before each load the peak (VmHWM) is reset
 * to the current RSS by writing 5 to clear_refs; where the kernel refuses, the peak is the highest
 * RSS sampled every 50 ms instead. After the load, the RSS is read again once it has settled.
 */
/** USER_HZ: the unit of /proc/<pid>/stat times (100 on Linux for x86 and ARM). */
const CLOCK_TICKS = 100;

export class MemoryProbe {
  #sampled = 0;
  #cpuAtStart = 0;
  #timer?: ReturnType<typeof setInterval>;
  #resets = true;

  constructor(readonly pid: number, readonly settleMs = 1000) {}

  /** Current RSS and peak (VmHWM), in bytes. */
  async read(): Promise<{ rss: number; peak: number }> {
    const status = await Deno.readTextFile(`/proc/${this.pid}/status`);
    const kb = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1]);
    return { rss: kb("VmRSS") * 1024, peak: kb("VmHWM") * 1024 };
  }

  /** CPU seconds the process has used (user + system, /proc/<pid>/stat). */
  async cpuSeconds(): Promise<number> {
    const stat = await Deno.readTextFile(`/proc/${this.pid}/stat`);
    // Fields after the command name (which may hold spaces) start at ")"; utime, stime are 14, 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  }

  async start(): Promise<void> {
    this.#cpuAtStart = await this.cpuSeconds();
    if (this.#resets) {
      try {
        await Deno.writeTextFile(`/proc/${this.pid}/clear_refs`, "5");
      } catch {
        this.#resets = false;
      }
    }
    this.#sampled = (await this.read()).rss;
    this.#timer = setInterval(() => {
      this.read().then((m) => this.#sampled = Math.max(this.#sampled, m.rss), () => {});
    }, 50);
  }

  /** Ends a load: its CPU time and peak, then (after settleMs) the RSS the server keeps. */
  async stop(): Promise<{ cpu: number; peak: number; settled: number }> {
    clearInterval(this.#timer);
    const cpu = await this.cpuSeconds() - this.#cpuAtStart;
    const { rss, peak } = await this.read();
    const top = Math.max(this.#sampled, rss, this.#resets ? peak : 0);
    await new Promise((resolve) => setTimeout(resolve, this.settleMs));
    return { cpu, peak: top, settled: (await this.read()).rss };
  }
}

export interface Result {
  op: Op;
  size: number;
  ops: number;
  errors: number;
  seconds: number;
  bytes: number;
  latencies: number[];
  firstError?: string;
  /** CPU seconds the server used for the load (when its process is known). */
  cpuSeconds?: number;
  /** The server's peak RSS during the load and its RSS a moment after, in bytes (local only). */
  peakRss?: number;
  settledRss?: number;
}

/**
 * Signs requests and sends each on an idle keep-alive connection of a fixed pool, waiting (in
 * order) when all are busy: the pool's size bounds the requests in flight.
 */
export class Client {
  readonly #signer: Signer;
  readonly #connections: Connection[];
  readonly #idle: Connection[];
  readonly #waiting: ((c: Connection) => void)[] = [];

  constructor(endpoint: Endpoint, connections: number) {
    this.#signer = new Signer(endpoint);
    this.#connections = Array.from({ length: connections }, () => new Connection(endpoint.url));
    this.#idle = [...this.#connections];
  }

  async send(r: Request): Promise<Response> {
    const c = this.#idle.pop() ??
      await new Promise<Connection>((resolve) => this.#waiting.push(resolve));
    try {
      return await c.send(this.#signer, r);
    } finally {
      const next = this.#waiting.shift();
      if (next) next(c);
      else this.#idle.push(c);
    }
  }

  /** Sends the request; anything but 2xx is an error. */
  async ok(r: Request, what: string): Promise<Response> {
    const res = await this.send(r);
    if (res.status >= 300) {
      throw new Error(`${what} answered ${res.status}: ${(res.text ?? "").slice(0, 300)}`);
    }
    return res;
  }

  close(): void {
    for (const c of this.#connections) c.close();
  }
}

export interface Spec {
  op: Op;
  size: number;
  count: number;
  /** Operations in flight (default --concurrency). */
  parallel?: number;
}

/** Runs `run(i)` for i = 0..count-1, `parallel` at a time; each returns the bytes it moved. */
export async function measure(
  opts: Options,
  spec: Spec,
  run: (i: number) => Promise<number>,
): Promise<Result> {
  const { op, size, count } = spec;
  const result: Result = { op, size, ops: 0, errors: 0, seconds: 0, bytes: 0, latencies: [] };
  await opts.memory?.start();
  const started = performance.now();
  const deadline = opts.duration ? started + opts.duration * 1000 : Infinity;
  let next = 0;
  const worker = async () => {
    while (next < count && performance.now() < deadline) {
      const i = next++;
      const t0 = performance.now();
      try {
        const moved = await run(i);
        result.bytes += moved;
        result.latencies.push(performance.now() - t0);
        result.ops++;
      } catch (err) {
        result.errors++;
        result.firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  };
  const workers = Math.max(1, Math.min(spec.parallel ?? opts.concurrency, count));
  await Promise.all(Array.from({ length: workers }, () => worker()));
  result.seconds = (performance.now() - started) / 1000;
  if (opts.memory) {
    const { cpu, peak, settled } = await opts.memory.stop();
    result.cpuSeconds = cpu;
    result.peakRss = peak;
    result.settledRss = settled;
  }
  return result;
}
