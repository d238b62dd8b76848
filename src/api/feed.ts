// The change feed: GET /feed (every bucket the caller may list; all for the administrator) and
// GET /feed/{bucket}, as Server-Sent Events; and the listen request of `mc watch`
// (GET /{bucket}?events=...), one JSON message per line. Callers authenticate with SigV4 (header
// or presigned query) or a bearer token of /api/v1/tokens; every bucket goes through the same
// access decision as ListObjects.
import type { RequestFacts } from "../auth/access.ts";
import type { Principal } from "../auth/principal.ts";
import { detectDialect, type Dialect, DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { type FeedFilter, openFeed } from "../events/feed.ts";
import {
  type AppDeps,
  authenticate,
  errorResponse,
  newRequestId,
  parseTarget,
  requestFacts,
} from "../protocol.ts";
import { tokenPrincipal } from "./service.ts";
import { eventFilter, feedSource } from "./listen.ts";
import { ApiError, apiErrorResponse } from "./json.ts";
import { log } from "../log.ts";

/** How long a bucket's access verdict is reused by one stream. */
const ACCESS_TTL_MS = 10_000;

/** The caller may read `bucket`'s events: the ListObjects decision, cached per stream. */
function accessChecker(deps: AppDeps, principal: Principal, facts: RequestFacts) {
  const cache = new Map<string, { ok: boolean; at: number }>();
  return async (bucket: string): Promise<boolean> => {
    if (principal.kind === "admin") return true;
    const hit = cache.get(bucket);
    if (hit && Date.now() - hit.at < ACCESS_TTL_MS) return hit.ok;
    let ok = false;
    const record = await deps.layer.meta.getBucket(bucket);
    if (record) {
      ok = await deps.access.decide(principal, "ListObjects", { bucket: record, facts })
        .then(() => true, () => false);
    }
    if (cache.size > 1000) cache.clear();
    cache.set(bucket, { ok, at: Date.now() });
    return ok;
  };
}

function lastEventId(req: Request, query: URLSearchParams): number | undefined {
  const raw = req.headers.get("last-event-id") ?? query.get("last_event_id");
  if (raw === null || raw === "") return undefined;
  if (!/^\d{1,15}$/.test(raw)) {
    throw new S3Error("InvalidArgument", "Last-Event-ID must be an event id.");
  }
  return Number(raw);
}

async function feedPrincipal(req: Request, deps: AppDeps, dialect: Dialect) {
  const target = parseTarget(req.url);
  // Bearer token failures answer as the token API does (JSON, 401 or 403).
  if (/^Bearer\s/i.test(req.headers.get("authorization") ?? "")) {
    return (await tokenPrincipal(req, deps)).principal;
  }
  return (await authenticate(req, target, dialect, deps)).principal;
}

/** GET /feed and /feed/{bucket}. */
export async function handleFeed(
  req: Request,
  info: Deno.ServeHandlerInfo,
  deps: AppDeps,
): Promise<Response> {
  const requestId = newRequestId();
  const fallback = DIALECTS[deps.config.dialect];
  let dialect = fallback;
  let resource = "/feed";
  try {
    const target = parseTarget(req.url);
    resource = target.path;
    dialect = detectDialect(req.headers, target.query, fallback);
    if (req.method !== "GET") {
      throw new S3Error("MethodNotAllowed", "The feed is read with GET.");
    }
    const rest = target.path.slice("/feed".length).replace(/^\//, "");
    if (rest.includes("/")) throw new S3Error("InvalidURI", "Use /feed or /feed/{bucket}.");
    const principal = await feedPrincipal(req, deps, dialect);
    const facts = requestFacts(info, target, {
      headers: req.headers,
      dialect,
      trustProxy: deps.config.trustProxy,
    });
    const mayRead = accessChecker(deps, principal, facts);
    if (rest !== "") {
      const bucket = await deps.layer.requireBucket(rest);
      await deps.access.decide(principal, "ListObjects", { bucket, facts });
    } else if (principal.kind === "anonymous") {
      throw new S3Error("AccessDenied", "Access Denied");
    }
    const filter: FeedFilter = {
      bucket: rest || undefined,
      prefix: target.query.get("prefix") ?? undefined,
      suffix: target.query.get("suffix") ?? undefined,
      events: eventFilter(target.query.getAll("events"), false),
    };
    const body = openFeed(feedSource(deps, mayRead), filter, {
      framing: "sse",
      dialect,
      region: deps.config.region,
      keepAliveMs: deps.config.feedKeepAlive * 1000,
      bufferBytes: deps.config.feedBuffer,
      lastEventId: lastEventId(req, target.query),
    });
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
      },
    });
  } catch (err) {
    if (err instanceof ApiError) return apiErrorResponse(err, requestId);
    if (!(err instanceof S3Error)) {
      log("error", "Feed request failed", { requestId, error: String(err) });
    }
    const s3err = err instanceof S3Error
      ? err
      : new S3Error("InternalError", "We encountered an internal error. Please try again.");
    return errorResponse(s3err, { dialect, requestId, resource, head: false });
  }
}
