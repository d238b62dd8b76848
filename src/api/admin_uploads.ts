// Abandoned multipart uploads in the administration API: GET /admin/uploads lists the uploads
// initiated longer ago than `older_than` seconds, DELETE /admin/uploads/{bucket}/{upload_id}
// aborts one (its parts are dropped and chunks nothing else refers to are freed).
import { S3Error } from "../http/errors.ts";
import { log } from "../log.ts";
import { abortUpload } from "../object/multipart.ts";
import type { AppDeps } from "../protocol.ts";
import { ApiError, jsonResponse } from "./json.ts";

export const DEFAULT_OLDER_THAN_S = 24 * 3600;
export const MAX_UPLOADS_LISTED = 1000;
const MAX_OLDER_THAN_S = 100 * 365 * 24 * 3600;

function intParam(url: URL, name: string, opts: { def: number; min: number; max: number }): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return opts.def;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= opts.min && value <= opts.max)) {
    throw new ApiError(
      400,
      "invalid_argument",
      `${name} must be an integer from ${opts.min} to ${opts.max}.`,
    );
  }
  return value;
}

/** The oldest uploads initiated before now - older_than, with the count of all of them. */
async function listAbandoned(req: Request, deps: AppDeps): Promise<Response> {
  const url = new URL(req.url);
  const olderThan = intParam(url, "older_than", {
    def: DEFAULT_OLDER_THAN_S,
    min: 0,
    max: MAX_OLDER_THAN_S,
  });
  const limit = intParam(url, "limit", {
    def: MAX_UPLOADS_LISTED,
    min: 1,
    max: MAX_UPLOADS_LISTED,
  });
  const before = Date.now() - olderThan * 1000;
  const meta = deps.layer.meta;
  const [uploads, total] = await Promise.all([
    meta.listStaleUploads(before, limit),
    meta.countStaleUploads(before),
  ]);
  const names = new Map<string, string>();
  const view = [];
  for (const u of uploads) {
    let owner = names.get(u.owner);
    if (owner === undefined) {
      owner = await deps.credentials.ownerName(u.owner);
      names.set(u.owner, owner);
    }
    view.push({
      bucket: u.bucket,
      key: u.key,
      upload_id: u.uploadId,
      initiated: new Date(u.initiated).toISOString(),
      owner,
    });
  }
  return jsonResponse(200, { uploads: view, total: Math.max(total, view.length) });
}

async function abortAbandoned(deps: AppDeps, bucket: string, uploadId: string): Promise<Response> {
  const missing = new ApiError(404, "no_such_upload", "No upload with that id in that bucket.");
  const upload = await deps.layer.meta.getUploadById(uploadId);
  if (!upload || upload.bucket !== bucket) throw missing;
  try {
    await abortUpload(deps.layer, uploadId);
  } catch (err) {
    if (err instanceof S3Error && err.code === "NoSuchUpload") throw missing;
    throw err;
  }
  log("info", "Upload aborted by the administrator", { bucket, key: upload.key, uploadId });
  return jsonResponse(204, null);
}

/** Routes `/admin/uploads` and `/admin/uploads/{bucket}/{upload_id}` (segments after uploads). */
export async function uploadsRoute(
  req: Request,
  deps: AppDeps,
  segments: string[],
): Promise<Response> {
  if (segments.length === 0) {
    if (req.method !== "GET") {
      throw new ApiError(405, "method_not_allowed", "Use GET to list abandoned uploads.");
    }
    return await listAbandoned(req, deps);
  }
  if (segments.length === 2) {
    if (req.method !== "DELETE") {
      throw new ApiError(405, "method_not_allowed", "Use DELETE to abort an upload.");
    }
    return await abortAbandoned(deps, segments[0], segments[1]);
  }
  throw new ApiError(404, "not_found", "No such administration resource.");
}
