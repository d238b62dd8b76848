// Shared plumbing of the real services the tests start: free ports, temp directories, running a
// server process (as another user when the tests run as root), waiting until it listens.
import { createServer } from "node:net";

/** Ports this process handed out already (two services of one test never share one). */
const handedOut = new Set<number>();

/**
 * A port nobody listens on right now, for a service that may be stopped and started again on it.
 * It is picked below the kernel's ephemeral range, so while the service is down no `listen(0)` or
 * outgoing connection of another process on the machine can take it over.
 */
export async function freePort(): Promise<number> {
  const [ephemeralLow] = (await Deno.readTextFile("/proc/sys/net/ipv4/ip_local_port_range")
    .catch(() => "32768 60999")).trim().split(/\s+/).map(Number);
  const low = 10_000;
  const high = Math.max(low + 1_000, ephemeralLow - 1);
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(port) || !(await canListen(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`No free port found between ${low} and ${high}`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

export function isRoot(): boolean {
  return Deno.uid() === 0;
}

/** uid and gid of a system account (for servers that refuse to run as root). */
export async function accountIds(user: string): Promise<{ uid: number; gid: number }> {
  const run = async (flag: string) => {
    const out = await new Deno.Command("id", { args: [flag, user], stdout: "piped" }).output();
    if (!out.success) throw new Error(`No system account ${user}`);
    return Number(new TextDecoder().decode(out.stdout).trim());
  };
  return { uid: await run("-u"), gid: await run("-g") };
}

/** Resolves once a TCP connection to 127.0.0.1:port succeeds; rejects after timeoutMs. */
export async function waitForPort(
  port: number,
  timeoutMs: number,
  exited?: () => boolean,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited?.()) throw new Error(`The service for port ${port} exited while starting`);
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      conn.close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  throw new Error(`Nothing listened on port ${port} within ${timeoutMs} ms`);
}

export interface ServiceProcess {
  readonly pid: number;
  /** True once the process has exited. */
  exited(): boolean;
  /** Sends a signal (SIGTERM by default) and waits for the exit. */
  stop(signal?: Deno.Signal): Promise<void>;
}

export interface SpawnOptions {
  cmd: string;
  args: string[];
  cwd: string;
  env?: Record<string, string>;
  /** Run as this system account when the tests run as root (setpriv keeps the pid). */
  user?: string;
}

/** Starts a server process; its output is discarded (each server logs into its temp dir). */
export function spawnService(opts: SpawnOptions): ServiceProcess {
  let cmd = opts.cmd;
  let args = opts.args;
  if (opts.user && isRoot()) {
    args = [`--reuid=${opts.user}`, `--regid=${opts.user}`, "--init-groups", "--", cmd, ...args];
    cmd = "setpriv";
  }
  const child = new Deno.Command(cmd, {
    args,
    cwd: opts.cwd,
    env: opts.env,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  let done = false;
  const status = child.status.then((s) => {
    done = true;
    return s;
  });
  return {
    pid: child.pid,
    exited: () => done,
    async stop(signal: Deno.Signal = "SIGTERM") {
      if (!done) {
        try {
          child.kill(signal);
        } catch {
          // Exited between the check and the signal.
        }
      }
      await status;
    },
  };
}

/** The last lines of a log file, for an error message. */
export async function logTail(path: string, lines = 30): Promise<string> {
  try {
    return (await Deno.readTextFile(path)).split("\n").slice(-lines).join("\n");
  } catch {
    return `(no log at ${path})`;
  }
}

/** Milliseconds since `start`, rounded. */
export function elapsed(start: number): number {
  return Math.round(performance.now() - start);
}
