// The error log under /admin/errors (HTTP Basic, checked by the caller):
//   GET    /admin/errors?since&until&level&bucket&code&source&after_id&limit
//          -> {errors, next_after_id}
//   DELETE /admin/errors[?older_than=ISO time]  -> {deleted}
import { ApiError, jsonResponse } from "../api/json.ts";
import { intParam, timeParam } from "../audit/params.ts";
import type { ErrorRecord } from "../meta/store.ts";
import type { AppDeps } from "../protocol.ts";

const MAX_LIMIT = 1000;

function view(e: ErrorRecord): Record<string, unknown> {
  return {
    id: e.id,
    time: new Date(e.at).toISOString(),
    level: e.level,
    source: e.source,
    code: e.code,
    bucket: e.bucket,
    request_id: e.requestId,
    operation: e.operation,
    message: e.message,
    detail: e.detail === "" ? null : parsed(e.detail),
  };
}

/** The detail is JSON unless it was cut at the size limit. */
function parsed(detail: string): unknown {
  try {
    return JSON.parse(detail);
  } catch {
    return detail;
  }
}

export async function errorsRoute(req: Request, deps: AppDeps): Promise<Response> {
  const p = new URL(req.url).searchParams;
  if (req.method === "GET") {
    const level = p.get("level") ?? undefined;
    if (level !== undefined && level !== "warn" && level !== "error") {
      throw new ApiError(400, "invalid_field", "level must be warn or error.");
    }
    const limit = intParam(p, "limit", 1, MAX_LIMIT) ?? 100;
    const errors = await deps.layer.meta.queryErrors({
      afterId: intParam(p, "after_id", 0, Number.MAX_SAFE_INTEGER) ?? 0,
      limit,
      since: timeParam(p, "since"),
      until: timeParam(p, "until"),
      level,
      bucket: p.get("bucket") ?? undefined,
      code: p.get("code") ?? undefined,
      source: p.get("source") ?? undefined,
    });
    return jsonResponse(200, {
      errors: errors.map(view),
      next_after_id: errors.length === limit ? errors[errors.length - 1].id : null,
    });
  }
  if (req.method === "DELETE") {
    const deleted = await deps.layer.meta.clearErrors(timeParam(p, "older_than"));
    return jsonResponse(200, { deleted });
  }
  throw new ApiError(405, "method_not_allowed", "Use GET to read, DELETE to clear.");
}
