// The server's request handler: in-flight tracking for graceful shutdown, then dispatch to the
// administration API, the service API (/api/v1), the file browser (/browse), the web console
// (/console) or the storage protocol.
import { checkBasicAuth, handleAdmin } from "./api/admin.ts";
import { handleMetrics } from "./api/admin_ops.ts";
import { healthCheck } from "./ops/health.ts";
import { jsonResponse } from "./api/json.ts";
import { handleServiceApi } from "./api/service.ts";
import { handleFeed } from "./api/feed.ts";
import { type AppDeps, handleProtocol, newRequestId } from "./protocol.ts";
import { currentAudit, newScope, runAudited } from "./audit/scope.ts";
import { handleShare } from "./share/public.ts";
import { handleBrowse } from "./web/browse.ts";
import { handleWebsite, parseWebsitePath, websiteBucketOfHost } from "./website/serve.ts";
import { clusterOff } from "./cluster/node.ts";
import { Console } from "./console/handler.ts";

export type { AppDeps };

function isUnder(url: string, prefix: string): boolean {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  return pathStart >= 0 && url.startsWith(prefix, pathStart) &&
    [undefined, "/", "?"].includes(url[pathStart + prefix.length]);
}

function isExactly(url: string, path: string): boolean {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  return pathStart >= 0 && url.startsWith(path, pathStart) &&
    [undefined, "?"].includes(url[pathStart + path.length]);
}

/** Whether a JSON API request may run: reads and deletes always, writes while the reserve holds. */
function roomFor(method: string, deps: AppDeps): Promise<boolean> | boolean {
  if (method === "GET" || method === "HEAD" || method === "DELETE") return true;
  return deps.reserve.retry();
}

function diskFull(req: Request): Response {
  req.body?.cancel().catch(() => {});
  return jsonResponse(507, {
    error: {
      code: "insufficient_storage",
      message: "The disk is full: only reads and deletes work.",
    },
  });
}

export function createHandler(
  deps: AppDeps,
): (req: Request, info: Deno.ServeHandlerInfo) => Promise<Response> {
  const webConsole = deps.config.console.enabled ? new Console(deps) : undefined;
  return async (req, info) => {
    if (deps.inFlight.draining) {
      return new Response(null, {
        status: 503,
        headers: { connection: "close", "retry-after": "1" },
      });
    }
    deps.inFlight.enter();
    try {
      const client = (info.remoteAddr as Deno.NetAddr).hostname ?? "";
      // Health probes answer before anything else and are never audited.
      const check = healthCheck(req.url);
      if (check) return await deps.ops.health.answer(req, check);
      // Every request runs in an audit scope: its changes write their entries in their own
      // transactions; what else must be recorded is written when it ends.
      const scope = newScope({ requestId: newRequestId(), source: client });
      const res = await runAudited(scope, () => dispatch(req, info, deps, client, webConsole));
      await deps.audit.finish(scope, {
        method: req.method,
        status: res.status,
        bytes: Number(req.headers.get("content-length")) || 0,
      });
      return res;
    } finally {
      deps.inFlight.exit();
    }
  };
}

async function dispatch(
  req: Request,
  info: Deno.ServeHandlerInfo,
  deps: AppDeps,
  client: string,
  webConsole: Console | undefined,
): Promise<Response> {
  const domain = deps.config.websiteDomain;
  const siteBucket = domain ? websiteBucketOfHost(req.headers.get("host"), domain) : undefined;
  if (siteBucket !== undefined) return await websiteByHost(req, deps, client, siteBucket);
  if (isExactly(req.url, "/metrics")) return await handleMetrics(req, deps, client, checkBasicAuth);
  if (isUnder(req.url, "/cluster")) {
    return deps.cluster ? await deps.cluster.handle(req) : clusterOff(req);
  }
  const admin = isUnder(req.url, "/admin");
  if (admin || isUnder(req.url, "/api/v1")) {
    if (!(await roomFor(req.method, deps))) return diskFull(req);
    const res = admin
      ? await handleAdmin(req, deps, client)
      : await handleServiceApi(req, deps, client);
    if (res.status === 507) await deps.reserve.release();
    return res;
  }
  const scope = currentAudit();
  if (isUnder(req.url, "/feed")) {
    // Recorded when refused (401/403): the feed's own principal is not known here.
    if (scope) scope.operation = "Feed";
    return await handleFeed(req, info, deps);
  }
  if (isUnder(req.url, "/browse")) return await handleBrowse(req, info, deps);
  if (isUnder(req.url, "/website")) return await websiteByPath(req, deps, client);
  if (webConsole && isUnder(req.url, "/console")) {
    return await webConsole.handle(req, info, client);
  }
  if (isUnder(req.url, "/share")) return await handleShare(req, info, deps, client);
  return await handleProtocol(req, info, deps);
}

/** `{bucket}.{domain}/{key}`: the whole path is the key. */
function websiteByHost(
  req: Request,
  deps: AppDeps,
  client: string,
  bucket: string,
): Promise<Response> | Response {
  const pathStart = req.url.indexOf("/", req.url.indexOf("//") + 2);
  const path = req.url.slice(pathStart).split("?")[0];
  let key: string;
  try {
    key = decodeURIComponent(path.slice(1));
  } catch {
    return new Response("The path is not properly encoded.\n", { status: 400 });
  }
  return handleWebsite({ req, deps, client, bucket, key, root: "/" });
}

/** `/website/{bucket}/{key}`; `/website/{bucket}` is sent to its folder form first. */
function websiteByPath(req: Request, deps: AppDeps, client: string): Promise<Response> | Response {
  const where = parseWebsitePath(req.url);
  if (!where || where.bucket === "") return new Response("Not found\n", { status: 404 });
  const root = `/website/${encodeURIComponent(where.bucket)}/`;
  const pathStart = req.url.indexOf("/", req.url.indexOf("//") + 2);
  if (!req.url.slice(pathStart).split("?")[0].startsWith(root)) {
    return new Response(null, { status: 302, headers: { location: root } });
  }
  return handleWebsite({ req, deps, client, bucket: where.bucket, key: where.key, root });
}
