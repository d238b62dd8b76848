// The key management's administration API (HTTP Basic, checked by the caller), JSON in and out:
//   GET  /admin/kms/keys                 -> {keys, total}
//   POST /admin/kms/keys {id, description} -> 201 the key
//   GET  /admin/kms/keys/{id}            -> the key
//   POST /admin/kms/keys/{id}/rotate     -> the key with a new newest version
//   POST /admin/kms/keys/{id}/disable    -> the key, disabled (its objects unreadable)
//   POST /admin/kms/keys/{id}/enable     -> the key, enabled again
// Keys are never deleted: the objects sealed under them would be lost for good.
import { ApiError, jsonResponse, readJsonObject } from "../api/json.ts";
import { DuplicateError, type KmsKeyRecord } from "../meta/store.ts";
import type { AppDeps } from "../protocol.ts";
import { KmsError } from "./kms.ts";

function view(k: KmsKeyRecord): Record<string, unknown> {
  const newest = k.versions[k.versions.length - 1];
  return {
    id: k.id,
    description: k.description,
    state: k.enabled ? "enabled" : "disabled",
    created_at: new Date(k.createdAt).toISOString(),
    current_version: newest.version,
    versions: k.versions.map((v) => ({
      version: v.version,
      created_at: new Date(v.createdAt).toISOString(),
    })),
  };
}

async function create(req: Request, deps: AppDeps): Promise<Response> {
  const body = await readJsonObject(req);
  const { id, description = "" } = body;
  for (const name of Object.keys(body)) {
    if (name !== "id" && name !== "description") {
      throw new ApiError(400, "invalid_field", `Unknown field ${name}.`);
    }
  }
  if (typeof id !== "string") throw new ApiError(400, "invalid_field", "id must be a string.");
  if (typeof description !== "string" || description.length > 256) {
    throw new ApiError(400, "invalid_field", "description must be a string of at most 256.");
  }
  try {
    return jsonResponse(201, view(await deps.kms.create(id, description)));
  } catch (err) {
    if (err instanceof DuplicateError) {
      throw new ApiError(409, "key_exists", `A KMS key ${id} exists already.`);
    }
    throw err;
  }
}

async function keyAction(
  req: Request,
  deps: AppDeps,
  id: string,
  action: string | undefined,
): Promise<Response> {
  if (action === undefined) {
    if (req.method !== "GET") throw new ApiError(405, "method_not_allowed", "Use GET.");
    return jsonResponse(200, view(await deps.kms.get(id)));
  }
  if (req.method !== "POST") throw new ApiError(405, "method_not_allowed", "Use POST.");
  if (action === "rotate") return jsonResponse(200, view(await deps.kms.rotate(id)));
  if (action === "disable") return jsonResponse(200, view(await deps.kms.setEnabled(id, false)));
  if (action === "enable") return jsonResponse(200, view(await deps.kms.setEnabled(id, true)));
  throw new ApiError(404, "not_found", "No such administration resource.");
}

/** `segments`: the path after /admin/kms. */
export async function kmsRoute(
  req: Request,
  deps: AppDeps,
  segments: string[],
): Promise<Response> {
  const [resource, id, action, ...rest] = segments;
  if (resource !== "keys" || rest.length > 0) {
    throw new ApiError(404, "not_found", "No such administration resource.");
  }
  try {
    if (id !== undefined) return await keyAction(req, deps, id, action);
    if (req.method === "POST") return await create(req, deps);
    if (req.method !== "GET") throw new ApiError(405, "method_not_allowed", "Use GET or POST.");
    const keys = await deps.kms.list();
    return jsonResponse(200, { keys: keys.map(view), total: keys.length });
  } catch (err) {
    if (err instanceof KmsError) throw new ApiError(err.status, err.code, err.message);
    throw err;
  }
}
