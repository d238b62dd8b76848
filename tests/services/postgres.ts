// PostgreSQL for the tests: a fresh cluster (initdb) in a temp directory, run as the `postgres`
// account when the tests run as root (the server refuses root), on a free port, trust auth on
// 127.0.0.1 only, fsync off.
import postgres from "postgres";
import { freePort, isRoot, waitForPort } from "./process.ts";
import { RealService, serviceDir } from "./service.ts";

export interface Postgres extends RealService {
  /** postgres://store@127.0.0.1:<port>/postgres */
  readonly url: string;
}

export interface PostgresOptions {
  /** fsync on (benchmarks); off by default. */
  durable?: boolean;
  /** Serve TLS with this certificate and key (PEM files, copied into the service directory). */
  tls?: { certFile: string; keyFile: string };
}

export async function createPostgres(opts: PostgresOptions = {}): Promise<Postgres> {
  const bin = await postgresBinDir();
  const port = await freePort();
  const dir = await serviceDir("postgres");
  const service = new RealService({
    name: "PostgreSQL",
    user: "postgres",
    startTimeoutMs: 30_000,
    // SIGINT is the "fast" shutdown: it does not wait for clients to disconnect.
    stopSignal: "SIGINT",
    prepare: async (dir) => {
      await initdb(bin, dir);
      if (opts.tls) {
        await Deno.copyFile(opts.tls.certFile, `${dir}/server.crt`);
        await Deno.copyFile(opts.tls.keyFile, `${dir}/server.key`);
        // PostgreSQL refuses a key others can read.
        await Deno.chmod(`${dir}/server.key`, 0o600);
      }
    },
    launch: (dir) => ({
      cmd: `${bin}/postgres`,
      args: [
        ...["-D", `${dir}/data`, "-p", String(port), "-k", dir],
        ...["-c", "listen_addresses=127.0.0.1"],
        ...(opts.durable ? [] : ["-c", "fsync=off", "-c", "full_page_writes=off"]),
        ...(opts.tls
          ? ["-c", "ssl=on", "-c", `ssl_cert_file=${dir}/server.crt`]
            .concat(["-c", `ssl_key_file=${dir}/server.key`])
          : []),
        ...["-c", "logging_collector=on", "-c", `log_directory=${dir}`],
        ...["-c", "log_filename=postgres.log"],
      ],
      logFile: `${dir}/postgres.log`,
    }),
    ready: async (timeoutMs, exited) => {
      const deadline = Date.now() + timeoutMs;
      await waitForPort(port, timeoutMs, exited);
      // The port opens before recovery ends ("the database system is starting up").
      await acceptsQueries(`postgres://store@127.0.0.1:${port}/postgres`, deadline);
    },
  }, dir);
  Object.defineProperty(service, "url", { value: `postgres://store@127.0.0.1:${port}/postgres` });
  return service as Postgres;
}

async function acceptsQueries(url: string, deadline: number): Promise<void> {
  for (;;) {
    const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
    try {
      await sql`SELECT 1`;
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 25));
    } finally {
      await sql.end({ timeout: 0 });
    }
  }
}

/** initdb runs as the account the server will run as (the directory already belongs to it). */
async function initdb(bin: string, dir: string): Promise<void> {
  const args = ["-D", `${dir}/data`, "-U", "store", "--auth=trust", "-E", "UTF8", "--no-sync"];
  const [cmd, fullArgs] = isRoot()
    ? ["setpriv", [
      "--reuid=postgres",
      "--regid=postgres",
      "--init-groups",
      "--",
      `${bin}/initdb`,
      ...args,
    ]]
    : [`${bin}/initdb`, args];
  const out = await new Deno.Command(cmd, {
    args: fullArgs,
    cwd: dir,
    stdout: "null",
    stderr: "piped",
  })
    .output();
  if (!out.success) throw new Error(`initdb failed:\n${new TextDecoder().decode(out.stderr)}`);
}

async function postgresBinDir(): Promise<string> {
  const versions: number[] = [];
  for await (const entry of Deno.readDir("/usr/lib/postgresql")) {
    const server = await Deno.stat(`/usr/lib/postgresql/${entry.name}/bin/postgres`).catch(() =>
      null
    );
    if (server) versions.push(Number(entry.name));
  }
  versions.sort((a, b) => b - a);
  if (!versions.length) throw new Error("PostgreSQL is not installed (scripts/install/brokers.sh)");
  return `/usr/lib/postgresql/${versions[0]}/bin`;
}
