// Administration of the storage and metadata (under /admin, behind its Basic auth): drive
// states, heal and scrub progress, metadata backups; and GET /metrics (admin credentials or the
// metrics token).
import { timingSafeEqual } from "node:crypto";
import type { AppDeps } from "../protocol.ts";
import { clusterView, passView } from "../cluster/admin.ts";
import { ApiError, apiErrorResponse, jsonResponse, limitedSignIn } from "./json.ts";

/** The /admin resources of this module, or undefined for others. */
export function opsRoute(
  req: Request,
  deps: AppDeps,
  resource: string,
): Promise<Response> | undefined {
  const url = new URL(req.url);
  switch (resource) {
    case "drives":
      return only(req, "GET", () => ({ drives: deps.ops.monitor.list() }));
    case "heal":
      if (req.method === "POST") {
        // Heals every online drive: everything each should hold is checked and rebuilt.
        for (const d of deps.ops.monitor.list()) {
          if (d.state === "online") deps.ops.healer.healDrive(d.id);
        }
        return Promise.resolve(jsonResponse(202, deps.ops.healer.status()));
      }
      return only(req, "GET", () => deps.ops.healer.status());
    case "scrub":
      return scrub(req, deps, url);
    case "backup":
      return backup(req, deps, url);
    case "cluster":
      if (req.method !== "GET") {
        return Promise.reject(new ApiError(405, "method_not_allowed", "Use GET."));
      }
      return clusterView(deps.cluster).then((view) => jsonResponse(200, view));
  }
  return undefined;
}

/**
 * POST /admin/cluster/anti-entropy: runs an anti-entropy pass now (or joins the running one) and
 * answers its report; with ?wait=false answers 202 at once.
 */
export async function antiEntropyRoute(req: Request, deps: AppDeps): Promise<Response> {
  if (req.method !== "POST") throw new ApiError(405, "method_not_allowed", "Use POST.");
  if (!deps.cluster) {
    throw new ApiError(409, "cluster_disabled", "Clustering is not configured on this node.");
  }
  const pass = deps.cluster.antiEntropy.runNow();
  if (new URL(req.url).searchParams.get("wait") === "false") {
    pass.catch(() => {});
    return jsonResponse(202, { running: true });
  }
  return jsonResponse(200, passView(await pass));
}

function only(req: Request, method: string, body: () => unknown): Promise<Response> {
  if (req.method !== method) {
    return Promise.reject(new ApiError(405, "method_not_allowed", `Use ${method}.`));
  }
  return Promise.resolve(jsonResponse(200, body()));
}

/**
 * GET: the running scrub's progress, else the last one's report (state "idle" before any).
 * POST: runs a scrub and answers its report; with ?wait=false answers 202 at once.
 */
async function scrub(req: Request, deps: AppDeps, url: URL): Promise<Response> {
  if (req.method === "GET") {
    return jsonResponse(200, deps.scrubber.current() ?? { state: "idle" });
  }
  if (req.method !== "POST") {
    throw new ApiError(405, "method_not_allowed", "Use POST to scrub, GET for its progress.");
  }
  if (url.searchParams.get("wait") === "false") {
    deps.scrubber.runNow().catch(() => {});
    // The scrub has started (synchronously) by now: its progress is the current report.
    return jsonResponse(202, deps.scrubber.current() ?? { state: "running" });
  }
  return jsonResponse(200, await deps.scrubber.runNow());
}

/** POST: a snapshot into STORE_BACKUP_DIR, or streamed with ?download=true. GET: the last. */
async function backup(req: Request, deps: AppDeps, url: URL): Promise<Response> {
  const backups = deps.ops.backups;
  if (req.method === "GET") {
    const last = backups.last();
    if (!last) throw new ApiError(404, "no_backup_yet", "No backup since the server started.");
    return jsonResponse(200, last);
  }
  if (req.method !== "POST") {
    throw new ApiError(405, "method_not_allowed", "Use POST to back up, GET for the last.");
  }
  if (deps.config.metaDb) {
    throw new ApiError(
      409,
      "metadata_in_postgres",
      "The metadata is in PostgreSQL (STORE_META_URL): back it up with pg_dump or " +
        "pg_basebackup (see the README, PostgreSQL metadata).",
    );
  }
  if (url.searchParams.get("download") === "true") {
    const { name, size, body } = await backups.download();
    return new Response(body, {
      status: 200,
      headers: {
        "content-type": "application/vnd.sqlite3",
        "content-length": String(size),
        "content-disposition": `attachment; filename="${name}"`,
      },
    });
  }
  if (!deps.config.backupDir) {
    throw new ApiError(
      409,
      "no_backup_dir",
      "STORE_BACKUP_DIR is not set: set it, or download the snapshot with ?download=true.",
    );
  }
  return jsonResponse(200, await backups.toDirectory());
}

function sameText(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  return x.byteLength === y.byteLength && timingSafeEqual(x, y);
}

/** GET /metrics: the administrator (Basic) or STORE_METRICS_TOKEN as a Bearer token. */
export async function handleMetrics(
  req: Request,
  deps: AppDeps,
  client: string,
  checkBasicAuth: (req: Request, deps: AppDeps) => void,
): Promise<Response> {
  try {
    await limitedSignIn(deps.signIns, client, () => {
      const header = req.headers.get("authorization") ?? "";
      const token = deps.config.metricsToken;
      if (token !== undefined && header.startsWith("Bearer ")) {
        if (sameText(header.slice(7).trim(), token)) return;
        throw new ApiError(401, "unauthorized", "The metrics token is not valid.");
      }
      checkBasicAuth(req, deps);
    });
    req.body?.cancel().catch(() => {});
    if (req.method !== "GET" && req.method !== "HEAD") {
      throw new ApiError(405, "method_not_allowed", "Use GET.");
    }
    const text = await deps.ops.metrics.render();
    return new Response(req.method === "HEAD" ? null : text, {
      headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
    });
  } catch (err) {
    return apiErrorResponse(err, crypto.randomUUID());
  }
}
