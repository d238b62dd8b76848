// Creating, listing and revoking shares:
//   POST   /api/v1/shares        (Bearer) {bucket, prefix?, permissions, expires_in,
//                                max_downloads?, password?} -> 201 {id, token, url, ...}
//   GET    /api/v1/shares        (Bearer) the caller's shares with their use counts
//   DELETE /api/v1/shares/{id}   (Bearer) revokes one of the caller's shares
//   POST|GET /admin/shares, DELETE /admin/shares/{id}: the same for the administrator (every share)
import type { RequestFacts } from "../auth/access.ts";
import type { Principal } from "../auth/principal.ts";
import { ApiError, jsonResponse, readJsonObject } from "../api/json.ts";
import { tokenPrincipal } from "../api/service.ts";
import { currentAudit } from "../audit/scope.ts";
import type { SharePermission, ShareRecord } from "../meta/store.ts";
import type { AppDeps } from "../protocol.ts";
import { decideForCreator, ShareRefusal } from "./access.ts";
import { hashPassword, newShareToken, shareTokenHash } from "./token.ts";

/** The longest a share may live. */
export const MAX_SHARE_SECONDS = 30 * 86_400;
const PERMISSIONS: SharePermission[] = ["read", "write", "list"];
/** The operation each permission stands for, decided for the creator. */
export const PERMISSION_OPERATION: Record<SharePermission, string> = {
  read: "GetObject",
  write: "PutObject",
  list: "ListObjectsV2",
};

interface ShareInput {
  bucket: string;
  prefix: string;
  permissions: SharePermission[];
  expiresIn: number;
  maxDownloads?: number;
  password?: string;
}

function invalid(message: string): ApiError {
  return new ApiError(400, "invalid_field", message);
}

function parseInput(body: Record<string, unknown>): ShareInput {
  const { bucket, prefix = "", permissions, expires_in, max_downloads, password } = body;
  if (typeof bucket !== "string" || bucket === "") throw invalid("bucket is a required string.");
  if (typeof prefix !== "string" || new TextEncoder().encode(prefix).length > 1024) {
    throw invalid("prefix must be a string of at most 1024 bytes.");
  }
  if (prefix.split("/").some((s) => s === "." || s === "..")) {
    throw invalid("prefix must not contain . or .. segments.");
  }
  if (
    !Array.isArray(permissions) || permissions.length === 0 ||
    !permissions.every((p) => PERMISSIONS.includes(p)) ||
    new Set(permissions).size !== permissions.length
  ) {
    throw invalid('permissions must be a non-empty subset of ["read", "write", "list"].');
  }
  if (
    typeof expires_in !== "number" || !Number.isInteger(expires_in) || expires_in < 1 ||
    expires_in > MAX_SHARE_SECONDS
  ) {
    throw invalid(`expires_in must be 1 to ${MAX_SHARE_SECONDS} seconds (30 days).`);
  }
  if (
    max_downloads !== undefined &&
    (typeof max_downloads !== "number" || !Number.isInteger(max_downloads) || max_downloads < 1 ||
      max_downloads > 1_000_000_000)
  ) {
    throw invalid("max_downloads must be an integer from 1 to 1000000000.");
  }
  if (
    password !== undefined &&
    (typeof password !== "string" || password.length < 4 || password.length > 256)
  ) {
    throw invalid("password must be a string of 4 to 256 characters.");
  }
  return {
    bucket,
    prefix,
    permissions: permissions as SharePermission[],
    expiresIn: expires_in,
    maxDownloads: max_downloads as number | undefined,
    password: password as string | undefined,
  };
}

function facts(client: string, prefix: string): RequestFacts {
  return { sourceIp: client, secureTransport: false, now: new Date(), prefix };
}

export function shareView(s: ShareRecord, now = Date.now()): Record<string, unknown> {
  return {
    id: s.id,
    bucket: s.bucket,
    prefix: s.prefix,
    permissions: s.permissions,
    created_at: new Date(s.createdAt).toISOString(),
    expires_at: new Date(s.expiresAt).toISOString(),
    max_downloads: s.maxDownloads ?? null,
    downloads: s.downloads,
    uploads: s.uploads,
    password: s.passwordHash !== undefined,
    creator: s.creator,
    state: s.revokedAt !== undefined ? "revoked" : s.expiresAt <= now ? "expired" : "active",
  };
}

async function create(
  req: Request,
  deps: AppDeps,
  creator: Principal,
  client: string,
): Promise<Response> {
  const input = parseInput(await readJsonObject(req, 4096));
  const bucket = await deps.layer.meta.getBucket(input.bucket);
  if (!bucket) throw new ApiError(404, "no_such_bucket", "The bucket does not exist.");
  // The creator must hold every permission passed on (the same rules decide it again at use).
  for (const permission of input.permissions) {
    try {
      const verdict = await decideForCreator(
        deps.access,
        creator,
        PERMISSION_OPERATION[permission],
        {
          bucket,
          key: permission === "list" ? undefined : input.prefix,
          facts: facts(client, input.prefix),
        },
      );
      if (verdict === "object-acl") throw new ShareRefusal(403, "", "");
    } catch (err) {
      if (!(err instanceof ShareRefusal)) throw err;
      throw new ApiError(403, "access_denied", `You may not share ${permission} access here.`);
    }
  }
  const token = newShareToken();
  const now = Date.now();
  const share: ShareRecord = {
    id: crypto.randomUUID(),
    tokenHash: shareTokenHash(token),
    creator: creator.id,
    bucket: input.bucket,
    bucketCreatedAt: bucket.createdAt,
    prefix: input.prefix,
    permissions: input.permissions,
    passwordHash: input.password === undefined ? undefined : hashPassword(input.password),
    createdAt: now,
    expiresAt: now + input.expiresIn * 1000,
    maxDownloads: input.maxDownloads,
    downloads: 0,
    uploads: 0,
  };
  const scope = currentAudit();
  if (scope) {
    scope.bucket = share.bucket;
    scope.key = share.prefix;
    scope.detail = { share: share.id };
  }
  await deps.layer.meta.createShare(share);
  const url = new URL(req.url);
  return jsonResponse(201, {
    ...shareView(share, now),
    token,
    url: `${url.origin}/share/${token}/`,
  });
}

async function revoke(deps: AppDeps, id: string, creator?: string): Promise<Response> {
  const share = await deps.layer.meta.getShare({ id });
  // Another user's share is answered as missing: ids are not probed.
  if (!share || (creator !== undefined && share.creator !== creator)) {
    throw new ApiError(404, "no_such_share", "You have no share with that id.");
  }
  const scope = currentAudit();
  if (scope) {
    scope.bucket = share.bucket;
    scope.key = share.prefix;
    scope.detail = { share: share.id };
  }
  await deps.layer.meta.revokeShare(id);
  return jsonResponse(204, null);
}

async function list(deps: AppDeps, creator?: string): Promise<Response> {
  const shares = await deps.layer.meta.listShares(creator);
  const now = Date.now();
  return jsonResponse(200, { shares: shares.map((s) => shareView(s, now)), total: shares.length });
}

function operationName(method: string, id: string | undefined): string {
  if (method === "POST") return "CreateShare";
  if (method === "DELETE") return "RevokeShare";
  return id === undefined ? "ListShares" : "GetShare";
}

/** /api/v1/shares[/{id}] for a bearer token's principal; `rest` is "" or "/{id}". */
export async function sharesRoute(req: Request, deps: AppDeps, rest: string): Promise<Response> {
  const id = rest === "" || rest === "/" ? undefined : rest.slice(1);
  const scope = currentAudit();
  if (scope) scope.operation = operationName(req.method, id);
  const { principal } = await tokenPrincipal(req, deps);
  return await principalSharesRoute(req, deps, principal, id);
}

/** The same for a principal known otherwise (the web console's session). */
export async function principalSharesRoute(
  req: Request,
  deps: AppDeps,
  principal: Principal,
  id: string | undefined,
): Promise<Response> {
  const scope = currentAudit();
  if (scope) scope.operation = operationName(req.method, id);
  const client = scope?.source ?? "";
  if (id === undefined) {
    if (req.method === "POST") return await create(req, deps, principal, client);
    if (req.method === "GET") return await list(deps, principal.id);
    throw new ApiError(405, "method_not_allowed", "Use POST to share, GET to list.");
  }
  if (req.method === "DELETE") return await revoke(deps, id, principal.id);
  throw new ApiError(405, "method_not_allowed", "Use DELETE to revoke a share.");
}

/** /admin/shares[/{id}]: the administrator's view of every share. */
export async function adminSharesRoute(
  req: Request,
  deps: AppDeps,
  id: string | undefined,
): Promise<Response> {
  const scope = currentAudit();
  if (id === undefined) {
    if (req.method === "POST") {
      return await create(req, deps, deps.credentials.adminPrincipal(), scope?.source ?? "");
    }
    if (req.method === "GET") return await list(deps);
    throw new ApiError(405, "method_not_allowed", "Use POST to share, GET to list.");
  }
  if (req.method === "DELETE") return await revoke(deps, id);
  throw new ApiError(405, "method_not_allowed", "Use DELETE to revoke a share.");
}
