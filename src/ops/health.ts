// Health probes, unauthenticated and without details: liveness (the process answers) and
// readiness (the metadata takes a write and enough drives are online for the erasure layout).
// The same answers are served at the paths container health checks and `mc ready` use; only
// these exact paths are taken, so a bucket named "minio" keeps working.
import type { DriveMonitor } from "../storage/drive_monitor.ts";
import type { MetaStore } from "../meta/store.ts";

type Check = "live" | "ready" | "read";

const PATHS = new Map<string, Check>([
  ["/health/live", "live"],
  ["/health/ready", "ready"],
  ["/minio/health/live", "live"],
  ["/minio/health/ready", "ready"],
  ["/minio/health/cluster", "ready"],
  ["/minio/health/cluster/read", "read"],
]);

/** A probe result is reused this long, so probes cannot turn into a stream of disk writes. */
const PROBE_REUSE_MS = 1000;
/** A metadata write slower than this counts as not ready. */
const PROBE_TIMEOUT_MS = 2000;

export interface HealthDeps {
  meta: MetaStore;
  monitor: DriveMonitor;
  layout: { dataShards: number; parityShards: number };
}

/** The check a request asks for, or undefined when the path is not a health path. */
export function healthCheck(url: string): Check | undefined {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  if (pathStart < 0) return undefined;
  const query = url.indexOf("?", pathStart);
  return PATHS.get(url.slice(pathStart, query < 0 ? undefined : query));
}

export class Health {
  #probe?: { at: number; result: Promise<boolean> };

  constructor(readonly deps: HealthDeps) {}

  async answer(req: Request, check: Check): Promise<Response> {
    req.body?.cancel().catch(() => {});
    if (req.method !== "GET" && req.method !== "HEAD") {
      return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } });
    }
    const ok = check === "live" || await this.#ready(check);
    return new Response(null, {
      status: ok ? 200 : 503,
      headers: { "cache-control": "no-store" },
    });
  }

  async #ready(check: "ready" | "read"): Promise<boolean> {
    const { dataShards: k, parityShards: m } = this.deps.layout;
    const online = this.deps.monitor.onlineCount();
    if (online < (check === "read" ? k : k + (m > 0 ? 1 : 0))) return false;
    if (check === "read") return true;
    const now = Date.now();
    if (!this.#probe || now - this.#probe.at > PROBE_REUSE_MS) {
      this.#probe = { at: now, result: this.#writable() };
    }
    return await this.#probe.result;
  }

  async #writable(): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await Promise.race([
        this.deps.meta.probeWrite().then(() => true),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), PROBE_TIMEOUT_MS))),
      ]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}
