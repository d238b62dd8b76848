// JSON plumbing shared by the administration API and the service API (/api/v1).
import { BodyStalledError, readAtMost } from "../http/progress.ts";
import type { SignInLimiter } from "../auth/sign_in_limiter.ts";
import { log } from "../log.ts";
import { isDiskFull } from "../storage/disk_errors.ts";
import { metaUnavailable } from "../meta/store.ts";
import { currentAudit } from "../audit/scope.ts";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  if (status === 204) return new Response(null, { status, headers });
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/**
 * Counts a sign-in attempt of `client` against its limit: 429 with Retry-After while the client
 * is over it, else runs `check` and records its failure (a 401) or success.
 */
export async function limitedSignIn<T>(
  limiter: SignInLimiter,
  client: string,
  check: () => Promise<T> | T,
): Promise<T> {
  const wait = limiter.retryAfter(client);
  if (wait > 0) {
    throw new ApiError(429, "too_many_attempts", "Too many failed sign-ins; try again later.", {
      "retry-after": String(wait),
    });
  }
  try {
    const result = await check();
    limiter.succeeded(client);
    return result;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) limiter.failed(client);
    throw err;
  }
}

export function apiErrorResponse(err: unknown, requestId: string): Response {
  const scope = currentAudit();
  if (scope) {
    scope.errorCode = err instanceof ApiError
      ? err.code
      : isDiskFull(err)
      ? "insufficient_storage"
      : metaUnavailable(err)
      ? "service_unavailable"
      : "internal_error";
  }
  if (err instanceof ApiError) {
    return jsonResponse(err.status, { error: { code: err.code, message: err.message } }, {
      ...err.headers,
      "x-request-id": requestId,
    });
  }
  if (metaUnavailable(err)) {
    log("warn", "Metadata database unavailable", { requestId, error: String(err) });
    return jsonResponse(503, {
      error: { code: "service_unavailable", message: "The metadata database is unavailable." },
    }, { "retry-after": "1", "x-request-id": requestId });
  }
  if (isDiskFull(err)) {
    log("warn", "Disk full", { requestId, error: String(err) });
    return jsonResponse(507, {
      error: { code: "insufficient_storage", message: "The server has no space left." },
    }, { "x-request-id": requestId });
  }
  log("error", "API request failed", {
    requestId,
    error: err instanceof Error ? err.stack ?? err.message : String(err),
  });
  return jsonResponse(500, { error: { code: "internal_error", message: "Internal error." } }, {
    "x-request-id": requestId,
  });
}

const MAX_JSON_BODY = 64 * 1024;

/**
 * Reads a JSON object body of at most `limit` bytes; 415 for another content type, 413 as soon
 * as the body declares or delivers more than the limit (the rest is never read), 408 when it
 * stops arriving, 400 for bad JSON or a non-object.
 */
export async function readJsonObject(
  req: Request,
  limit = MAX_JSON_BODY,
): Promise<Record<string, unknown>> {
  const type = req.headers.get("content-type") ?? "";
  if (!/^application\/json\b/i.test(type)) {
    await req.body?.cancel().catch(() => {});
    throw new ApiError(415, "unsupported_media_type", "The body must be application/json.");
  }
  let buf: Uint8Array | null;
  try {
    buf = await readAtMost(req.body, req.headers, limit);
  } catch (err) {
    if (err instanceof BodyStalledError) {
      throw new ApiError(408, "request_timeout", err.message, { connection: "close" });
    }
    throw new ApiError(400, "incomplete_body", "The request body ended before it was complete.");
  }
  if (buf === null) {
    throw new ApiError(413, "body_too_large", `The body must be at most ${limit} bytes.`, {
      connection: "close",
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(buf));
  } catch {
    throw new ApiError(400, "invalid_json", "The body is not valid JSON.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ApiError(400, "invalid_json", "The body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}

/** The path after a prefix, split into decoded segments. */
export function pathSegments(url: string, prefix: string): string[] {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  let path = url.slice(pathStart);
  const q = path.indexOf("?");
  if (q >= 0) path = path.slice(0, q);
  const rest = path.slice(prefix.length);
  try {
    return rest.split("/").filter((s) => s !== "").map(decodeURIComponent);
  } catch {
    throw new ApiError(400, "invalid_path", "The path is not properly encoded.");
  }
}
