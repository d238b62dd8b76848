// One real service (a broker or database from its Debian package) run by the tests: started on
// free ports with a temp directory, as the service's own system account when the tests run as
// root, stopped and started again on the same ports (outage tests), removed at the end.
import {
  accountIds,
  elapsed,
  isRoot,
  logTail,
  type ServiceProcess,
  spawnService,
} from "./process.ts";

export interface LaunchPlan {
  cmd: string;
  args: string[];
  env?: Record<string, string>;
  /** The file the server logs into (shown when it fails to start). */
  logFile: string;
}

export interface ServiceDefinition {
  name: string;
  /** The Debian system account the server runs as when the tests run as root. */
  user: string;
  /** How long a start may take before the test fails. */
  startTimeoutMs: number;
  /**
   * Creates config files and data directories in `dir` (once, before the first start; `dir`
   * already belongs to the service's account, and whatever this creates is given to it after).
   */
  prepare(dir: string): Promise<void>;
  /** The command that runs the server in the foreground. */
  launch(dir: string): LaunchPlan;
  /** Resolves once the server accepts work; rejects after timeoutMs. */
  ready(timeoutMs: number, exited: () => boolean): Promise<void>;
  /** The signal that shuts it down quickly and cleanly. */
  stopSignal: Deno.Signal;
  /**
   * The pid to freeze when the launched process is a wrapper (RabbitMQ's start script runs the
   * Erlang VM as its child); the launched pid by default.
   */
  serverPid?(launchedPid: number): Promise<number>;
  /** Extra clean-up after the final stop (e.g. a port mapper daemon). */
  cleanup?(dir: string): Promise<void>;
}

export class RealService {
  readonly dir: string;
  /** Milliseconds each start took, from spawning to ready. */
  readonly startupsMs: number[] = [];
  /** Milliseconds the one-time preparation took (config files; initdb for PostgreSQL). */
  prepareMs = 0;
  #def: ServiceDefinition;
  #process?: ServiceProcess;
  #prepared = false;

  constructor(def: ServiceDefinition, dir: string) {
    this.#def = def;
    this.dir = dir;
  }

  get running(): boolean {
    return this.#process !== undefined && !this.#process.exited();
  }

  /** Starts the server (again, on the same ports and data) and waits until it is ready. */
  async start(): Promise<void> {
    if (this.running) return;
    if (!this.#prepared) {
      const prepared = performance.now();
      const ids = isRoot() ? await accountIds(this.#def.user) : undefined;
      if (ids) await Deno.chown(this.dir, ids.uid, ids.gid);
      await this.#def.prepare(this.dir);
      if (ids) await chownTree(this.dir, ids);
      this.prepareMs = elapsed(prepared);
      this.#prepared = true;
    }
    const plan = this.#def.launch(this.dir);
    const began = performance.now();
    const proc = spawnService({ ...plan, cwd: this.dir, user: this.#def.user });
    this.#process = proc;
    try {
      await this.#def.ready(this.#def.startTimeoutMs, () => proc.exited());
    } catch (err) {
      await proc.stop("SIGKILL");
      throw new Error(`${this.#def.name} did not start: ${err}\n${await logTail(plan.logFile)}`);
    }
    this.startupsMs.push(elapsed(began));
  }

  /** Shuts the server down and waits for it to exit (its data stays for a later start). */
  async stop(): Promise<void> {
    await this.#process?.stop(this.#def.stopSignal);
    this.#process = undefined;
  }

  /**
   * Freezes (SIGSTOP) or thaws (SIGCONT) the server process: its connections stay open but
   * nothing answers, the hardest outage for a client. Not for PostgreSQL (one process per
   * connection).
   */
  async freeze(frozen: boolean): Promise<void> {
    const proc = this.#process;
    if (!proc) throw new Error(`${this.#def.name} is not running`);
    const pid = (await this.#def.serverPid?.(proc.pid)) ?? proc.pid;
    Deno.kill(pid, frozen ? "SIGSTOP" : "SIGCONT");
    // A signal takes effect when each thread is next scheduled: wait until the kernel shows
    // every thread stopped (state T), or none, so nothing slips through in between.
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline) {
      const states = await threadStates(pid);
      if (states.every((state) => (state === "T") === frozen)) return;
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(`${this.#def.name} did not ${frozen ? "stop" : "continue"}`);
  }

  /** Stops the server for good and removes its directory. */
  async dispose(): Promise<void> {
    await this.stop();
    await this.#def.cleanup?.(this.dir);
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }
}

/** The scheduler state letter of each thread of a process (Linux /proc). */
async function threadStates(pid: number): Promise<string[]> {
  const states: string[] = [];
  for await (const task of Deno.readDir(`/proc/${pid}/task`)) {
    const stat = await Deno.readTextFile(`/proc/${pid}/task/${task.name}/stat`).catch(() => "");
    const end = stat.lastIndexOf(")");
    if (end > 0) states.push(stat.slice(end + 2, end + 3));
  }
  return states;
}

/** The child processes of a process (Linux /proc). */
export async function childPids(pid: number): Promise<number[]> {
  const text = await Deno.readTextFile(`/proc/${pid}/task/${pid}/children`);
  return text.trim().split(/\s+/).filter(Boolean).map(Number);
}

async function chownTree(path: string, ids: { uid: number; gid: number }): Promise<void> {
  await Deno.chown(path, ids.uid, ids.gid);
  for await (const entry of Deno.readDir(path)) {
    const child = `${path}/${entry.name}`;
    if (entry.isDirectory) await chownTree(child, ids);
    else await Deno.chown(child, ids.uid, ids.gid);
  }
}

/** A temp directory the service's account can enter (makeTempDir creates it mode 0700). */
export async function serviceDir(name: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: `store-${name}-` });
  await Deno.chmod(dir, 0o755);
  return dir;
}
