// Access for directory users under /admin/ldap (administrator only):
//
//   GET            /admin/ldap                     -> {mappings: [...], total}
//   GET/PUT/DELETE /admin/ldap/groups/{group}      {bucket_access: [...], is_admin?: boolean}
//   GET/PUT/DELETE /admin/ldap/users/{username}
//
// Names are matched without regard to case. A user's access is the union of its groups' and its
// own entries; `none` wins (see ldap/service.ts mergeAccess).
import type { LdapMapping } from "../meta/store.ts";
import type { AppDeps } from "../protocol.ts";
import { validateBucketAccess } from "./admin_input.ts";
import { ApiError, jsonResponse, readJsonObject } from "./json.ts";

const KINDS: Record<string, LdapMapping["kind"]> = { groups: "group", users: "user" };

function view(m: LdapMapping): Record<string, unknown> {
  return { kind: m.kind, name: m.name, bucket_access: m.bucketAccess, is_admin: m.isAdmin };
}

/** `segments`: the path after /admin/ldap, decoded. */
export async function ldapRoute(
  req: Request,
  deps: AppDeps,
  segments: string[],
): Promise<Response> {
  const ldap = deps.credentials.ldap;
  if (!ldap) {
    throw new ApiError(404, "ldap_disabled", "LDAP sign-in is not enabled (STORE_LDAP_ENABLED).");
  }
  const [collection, rawName, ...rest] = segments;
  if (collection === undefined) {
    if (req.method !== "GET") throw new ApiError(405, "method_not_allowed", "Use GET.");
    const mappings = await ldap.mappings();
    return jsonResponse(200, { mappings: mappings.map(view), total: mappings.length });
  }
  const kind = KINDS[collection];
  if (!kind || rawName === undefined || rest.length > 0) {
    throw new ApiError(
      404,
      "not_found",
      "Use /admin/ldap/groups/{group} or /admin/ldap/users/{name}.",
    );
  }
  const name = rawName.toLowerCase();
  if (name.length > 256) throw new ApiError(400, "invalid_field", "The name is too long.");
  const find = async () => (await ldap.mappings()).find((m) => m.kind === kind && m.name === name);
  if (req.method === "GET") {
    const found = await find();
    if (!found) throw new ApiError(404, "no_such_mapping", `No mapping for ${kind} ${name}.`);
    return jsonResponse(200, view(found));
  }
  if (req.method === "PUT") {
    const body = await readJsonObject(req);
    for (const field of Object.keys(body)) {
      if (field !== "bucket_access" && field !== "is_admin") {
        throw new ApiError(400, "invalid_field", `Unknown field ${field}.`);
      }
    }
    if (body.is_admin !== undefined && typeof body.is_admin !== "boolean") {
      throw new ApiError(400, "invalid_field", "is_admin must be true or false.");
    }
    const mapping: LdapMapping = {
      kind,
      name,
      bucketAccess: validateBucketAccess(body.bucket_access ?? []),
      isAdmin: body.is_admin === true,
    };
    await ldap.putMapping(mapping);
    return jsonResponse(200, view(mapping));
  }
  if (req.method === "DELETE") {
    if (!(await ldap.deleteMapping(kind, name))) {
      throw new ApiError(404, "no_such_mapping", `No mapping for ${kind} ${name}.`);
    }
    return jsonResponse(204, null);
  }
  throw new ApiError(405, "method_not_allowed", "Use GET, PUT or DELETE.");
}
