// Starts the real server as a child process on a random port with a temp data directory.
import { SERVER_ENV } from "../../src/memory/server_env.ts";
import { S3Client } from "@aws-sdk/client-s3";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import postgres from "postgres";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

export const ADMIN_USER = "testadmin";
export const ADMIN_PASSWORD = "testadmin-secret-0123456789";
export const REGION = "us-east-1";

export interface TestServer {
  url: string;
  port: number;
  dataDir: string;
  /** Process id of the server (of the `prefix` command when one is given). */
  pid: number;
  /** The PostgreSQL database of its metadata (STORE_META_URL), when not the SQLite file. */
  metaUrl?: string;
  /** Everything the server wrote to stderr so far. */
  logs(): string;
  /** SIGTERM and wait for exit. */
  stop(): Promise<Deno.CommandStatus>;
  /** SIGKILL and wait for exit (crash simulation). */
  kill(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  /** Reuse a data directory (restart after a crash). */
  dataDir?: string;
  /** Start without STORE_ADMIN_* so credentials are generated. */
  generatedAdmin?: boolean;
  /** A command that execs the server, e.g. ["prlimit", "--nofile=512", "--"]. */
  prefix?: string[];
}

/** Where servers started without STORE_META_URL keep their metadata: a fresh database each. */
let metaDatabase: (() => Promise<string>) | undefined;

/**
 * Makes every server started from now on keep its metadata in PostgreSQL, in a database `fresh`
 * creates for it (postgres_core_test.ts runs existing suites this way).
 */
export function useMetaDatabase(fresh: () => Promise<string>): void {
  metaDatabase = fresh;
}

/**
 * Data directories `startServer` made, removed when the test module unloads: a test may stop a
 * server and start another on its directory, so stopping does not remove it.
 */
const madeDataDirs = new Set<string>();
globalThis.addEventListener("unload", () => {
  for (const dir of madeDataDirs) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* removed by the test */ }
  }
});

export async function startServer(opts: StartOptions = {}): Promise<TestServer> {
  const metaUrl = opts.env?.STORE_META_URL ??
    (metaDatabase && !opts.dataDir ? await metaDatabase() : undefined);
  let dataDir = opts.dataDir;
  if (!dataDir) {
    dataDir = await Deno.makeTempDir({ prefix: "store-test-" });
    madeDataDirs.add(dataDir);
  }
  const env: Record<string, string> = {
    STORE_ADDRESS: "127.0.0.1",
    STORE_PORT: "0",
    STORE_DATA_DIR: dataDir,
    STORE_REGION: REGION,
    // A small disk reserve keeps start-up cheap for the many test servers.
    STORE_DISK_RESERVE: String(1024 * 1024),
    ...(opts.generatedAdmin
      ? {}
      : { STORE_ADMIN_USER: ADMIN_USER, STORE_ADMIN_PASSWORD: ADMIN_PASSWORD }),
    ...(metaUrl ? { STORE_META_URL: metaUrl } : {}),
    // As the start script runs it (src/memory/server_env.ts).
    ...SERVER_ENV,
    ...opts.env,
  };
  const [program, ...prefixArgs] = [...(opts.prefix ?? []), Deno.execPath()];
  const child = new Deno.Command(program, {
    args: [...prefixArgs, "run", "-A", MAIN],
    env,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  let stderr = "";
  let stdout = "";
  let scheme = "http";
  const port = await new Promise<number>((resolve, reject) => {
    const decoder = new TextDecoder();
    const timer = setTimeout(() => reject(new Error(`Server did not start:\n${stderr}`)), 30_000);
    (async () => {
      for await (const chunk of child.stderr) {
        stderr += decoder.decode(chunk, { stream: true });
        const m = /"Listening","url":"(https?):\/\/[^:]+:(\d+)"/.exec(stderr);
        if (m) {
          clearTimeout(timer);
          scheme = m[1];
          resolve(Number(m[2]));
        }
      }
      clearTimeout(timer);
      reject(new Error(`Server exited before listening:\n${stderr}`));
    })().catch(reject);
    (async () => {
      for await (const chunk of child.stdout) stdout += decoder.decode(chunk, { stream: true });
    })();
  });
  let exited: Promise<Deno.CommandStatus> | undefined;
  const status = () => (exited ??= child.status);
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    port,
    dataDir,
    metaUrl,
    pid: child.pid,
    logs: () => stdout + stderr,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      return await status();
    },
    async kill() {
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
      await status();
    },
  };
}

export function s3Client(
  server: TestServer,
  credentials?: { user: string; password: string },
): S3Client {
  return new S3Client({
    endpoint: server.url,
    region: REGION,
    forcePathStyle: true,
    credentials: {
      accessKeyId: credentials?.user ?? ADMIN_USER,
      secretAccessKey: credentials?.password ?? ADMIN_PASSWORD,
    },
    maxAttempts: 1,
  });
}

/** Runs `fn` against a fresh server and always stops it and removes its data. */
export async function withServer(
  fn: (server: TestServer) => Promise<void>,
  opts: StartOptions = {},
): Promise<void> {
  const server = await startServer(opts);
  try {
    await fn(server);
  } finally {
    await server.stop();
    if (!opts.dataDir) await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
  }
}

export function randomBytes(size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i += 65536) {
    crypto.getRandomValues(out.subarray(i, Math.min(size, i + 65536)));
  }
  return out;
}

export async function sha256Hex(data: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Rows of the chunks table in a server's metadata (SQLite opened read-only, or PostgreSQL). */
export async function chunkCount(server: TestServer): Promise<number> {
  if (server.metaUrl) {
    const sql = postgres(server.metaUrl, { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql`SELECT count(*)::int AS n FROM chunks`;
      return row.n;
    } finally {
      await sql.end();
    }
  }
  const db = new DatabaseSync(join(server.dataDir, "meta.db"), { readOnly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM chunks").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** Shard files under a data directory's chunks/ tree (0 when there is none). */
export async function shardFileCount(dataDir: string): Promise<number> {
  let n = 0;
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isDirectory) await walk(join(dir, entry.name));
      else n++;
    }
  };
  await walk(join(dataDir, "chunks")).catch(() => {});
  return n;
}

/** A process's resident memory from /proc: now (VmRSS) and at its peak (VmHWM), in bytes. */
export async function memoryOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1]);
  return { rss: kb("VmRSS") * 1024, peak: kb("VmHWM") * 1024 };
}

/** A gauge or counter without labels from the server's /metrics (admin credentials). */
export async function metric(server: TestServer, name: string): Promise<number> {
  const res = await fetch(`${server.url}/metrics`, {
    headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) },
  });
  const line = (await res.text()).split("\n").find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`${name} is not reported`);
  return Number(line.slice(name.length + 1));
}

/**
 * Waits until the server has removed the shard files of every chunk freed so far (its
 * `store_chunks_reclaim_pending` metric is 0).
 */
export async function reclaimed(server: TestServer, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const pending = await metric(server, "store_chunks_reclaim_pending");
    if (pending === 0) return;
    if (Date.now() > deadline) throw new Error(`${pending} chunks still pending after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
