// The service API under /api/v1: bearer tokens and the presigned-URL service.
//
//   POST   /api/v1/tokens   {access_key, secret_key, expires_in?} -> 201 {token, expires_at, ...}
//                            or {ldap_username, ldap_password, expires_in?} (directory users)
//   DELETE /api/v1/tokens   (Authorization: Bearer <token>)        -> 204, the token is revoked
//   GET    /api/v1/presigned/{download|upload|delete|upload-part}/{bucket}/{key}?expires_in=N
//          (Authorization: Bearer <token>) -> {url, expires_at, bucket, key, method}
import { createHash, timingSafeEqual } from "node:crypto";
import { ADMIN_ID } from "../auth/admin_credentials.ts";
import { userPrincipal } from "../auth/credentials.ts";
import type { Principal } from "../auth/principal.ts";
import { presignUrl } from "../auth/presign_url.ts";
import { MAX_PRESIGN_EXPIRES_S } from "../auth/sigv4.ts";
import { DIALECTS, q } from "../http/dialect.ts";
import { DirectoryError } from "../auth/ldap/directory_error.ts";
import { ldapSignIn, SignInThrottled } from "../auth/ldap/sign_in.ts";
import type { AppDeps } from "../protocol.ts";
import { ApiError, apiErrorResponse, jsonResponse, limitedSignIn, readJsonObject } from "./json.ts";
import { currentAudit } from "../audit/scope.ts";
import { principalName } from "../audit/recorder.ts";
import { sharesRoute } from "../share/api.ts";
import { transformRoute } from "../transform/api.ts";

const TOKEN_PREFIX = "stt_";
const DEFAULT_EXPIRES_S = 3600;

function tokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

function sameText(a: string, b: string): boolean {
  const x = createHash("sha256").update(a).digest();
  const y = createHash("sha256").update(b).digest();
  return timingSafeEqual(x, y);
}

/** A sign-in is two short strings and a number: nobody needs more before being known. */
const MAX_TOKEN_REQUEST = 4 * 1024;

/** Bearer tokens of directory users name the session issued with them: `sts:<access key>`. */
const SESSION_TOKEN_OWNER = "sts:";

function newToken(): string {
  return TOKEN_PREFIX +
    btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))
      .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function saveToken(
  deps: AppDeps,
  owner: { userId: string; accessKey: string },
  ttl: number,
): Promise<Response> {
  const token = newToken();
  const now = Date.now();
  const expiresAt = now + ttl * 1000;
  await deps.layer.meta.createToken({
    hash: tokenHash(token),
    userId: owner.userId,
    createdAt: now,
    expiresAt,
    // The key it was issued for: rotating a user's key ends the token (tokenPrincipal).
    accessKey: owner.accessKey,
  });
  return jsonResponse(201, {
    token,
    token_type: "Bearer",
    expires_at: new Date(expiresAt).toISOString(),
    access_key: owner.accessKey,
  });
}

/** A directory user's token: a sign-in at the directory and a session living as long. */
async function issueLdapToken(
  deps: AppDeps,
  client: string,
  body: Record<string, unknown>,
  ttl: number,
): Promise<Response> {
  const { ldap_username: username, ldap_password: password } = body;
  if (typeof username !== "string" || typeof password !== "string") {
    throw new ApiError(
      400,
      "invalid_field",
      "ldap_username and ldap_password are required strings.",
    );
  }
  const scope = currentAudit();
  if (scope) scope.principal = `ldap:${username.slice(0, 256)}`;
  const ldap = deps.credentials.ldap;
  if (!ldap) throw new ApiError(400, "ldap_disabled", "LDAP sign-in is not enabled.");
  let identity;
  try {
    identity = await ldapSignIn(ldap, undefined, client, { username, password });
  } catch (err) {
    if (err instanceof SignInThrottled) {
      throw new ApiError(429, "too_many_attempts", err.message, {
        "retry-after": String(err.retryAfter),
      });
    }
    if (err instanceof DirectoryError) {
      if (err.reason === "unavailable") {
        throw new ApiError(503, "directory_unavailable", "The directory is unreachable.");
      }
      if (err.reason === "disabled") throw new ApiError(403, "user_disabled", err.message);
      throw new ApiError(401, "invalid_credentials", "The user name or password is wrong.");
    }
    throw err;
  }
  const now = Date.now();
  const session = await deps.credentials.sessions.issue({
    parentKind: "ldap",
    parentId: identity.username,
    ldapDn: identity.dn,
    ldapGroups: identity.groups,
    createdAt: now,
    expiresAt: now + ttl * 1000,
  });
  return await saveToken(
    deps,
    { userId: SESSION_TOKEN_OWNER + session.accessKey, accessKey: session.accessKey },
    ttl,
  );
}

async function issueToken(req: Request, deps: AppDeps, client: string): Promise<Response> {
  const body = await readJsonObject(req, MAX_TOKEN_REQUEST);
  const { access_key: accessKey, secret_key: secret, expires_in: expiresIn } = body;
  const ttl = expiresIn === undefined ? deps.config.tokenTtl : expiresIn;
  if (typeof ttl !== "number" || !Number.isInteger(ttl) || ttl < 1 || ttl > deps.config.tokenTtl) {
    throw new ApiError(
      400,
      "invalid_field",
      `expires_in must be 1 to ${deps.config.tokenTtl} seconds.`,
    );
  }
  if (body.ldap_username !== undefined) return await issueLdapToken(deps, client, body, ttl);
  if (typeof accessKey !== "string" || typeof secret !== "string") {
    throw new ApiError(400, "invalid_field", "access_key and secret_key are required strings.");
  }
  const scope = currentAudit();
  if (scope) scope.principal = `key:${accessKey.slice(0, 128)}`;
  const found = await deps.credentials.lookup(accessKey);
  const principal = found?.principal;
  if (scope && principal) scope.principal = principalName(principal);
  if (!found || !principal || !sameText(found.secret, secret)) {
    throw new ApiError(401, "invalid_credentials", "The access key or secret key is wrong.");
  }
  if (!principal.enabled) throw new ApiError(403, "user_disabled", "The user is disabled.");
  // Session keys sign in with their session token, never here.
  if (principal.session) {
    throw new ApiError(401, "invalid_credentials", "The access key or secret key is wrong.");
  }
  return await saveToken(deps, { userId: principal.id, accessKey }, ttl);
}

function bearer(req: Request): string {
  const header = req.headers.get("authorization") ?? "";
  const m = /^Bearer\s+(\S+)$/.exec(header);
  if (!m) {
    throw new ApiError(401, "unauthorized", "A bearer token is required.", {
      "www-authenticate": 'Bearer realm="store"',
    });
  }
  return m[1];
}

/** The enabled principal behind a valid, unexpired bearer token. */
export async function tokenPrincipal(
  req: Request,
  deps: AppDeps,
): Promise<{ principal: Principal; hash: string }> {
  const hash = tokenHash(bearer(req));
  const record = await deps.layer.meta.getToken(hash);
  const invalid = new ApiError(401, "invalid_token", "The token is unknown, revoked or expired.", {
    "www-authenticate": 'Bearer realm="store", error="invalid_token"',
  });
  if (!record || record.expiresAt <= Date.now()) throw invalid;
  const scope = currentAudit();
  if (record.userId === ADMIN_ID) {
    const principal = deps.credentials.adminPrincipal();
    if (scope) scope.principal = principalName(principal);
    return { principal, hash };
  }
  if (record.userId.startsWith(SESSION_TOKEN_OWNER)) {
    const found = await deps.credentials.sessions.lookup(
      record.userId.slice(SESSION_TOKEN_OWNER.length),
    );
    if (!found || found.principal.session!.expiresAt <= Date.now()) throw invalid;
    if (scope) scope.principal = principalName(found.principal);
    if (!found.principal.enabled) throw new ApiError(403, "user_disabled", "The user is disabled.");
    return { principal: found.principal, hash };
  }
  const user = await deps.layer.meta.getUser({ id: record.userId });
  // A token issued for keys since rotated is as dead as the keys: by the key it names, also when
  // issued in the moment before the rotation committed, and (older tokens, which do not name it,
  // or one that reached this node from another after the rotation did) by time.
  if (!user || record.createdAt < user.keyCreatedAt) throw invalid;
  if (record.accessKey !== undefined && record.accessKey !== user.accessKey) throw invalid;
  const principal = userPrincipal(user);
  if (scope) scope.principal = principalName(principal);
  if (!user.enabled) throw new ApiError(403, "user_disabled", "The user is disabled.");
  return { principal, hash };
}

const KINDS: Record<string, string> = {
  download: "GET",
  upload: "PUT",
  delete: "DELETE",
  "upload-part": "PUT",
};

function intParam(
  params: URLSearchParams,
  name: string,
  range: [number, number],
  fallback?: number,
): number {
  const raw = params.get(name);
  if (raw === null && fallback !== undefined) return fallback;
  if (raw === null || !/^\d+$/.test(raw) || +raw < range[0] || +raw > range[1]) {
    throw new ApiError(
      400,
      "invalid_field",
      `${name} must be an integer from ${range[0]} to ${range[1]}.`,
    );
  }
  return Number(raw);
}

/** Query parameters and headers the URL carries for each kind. */
function presignExtras(kind: string, params: URLSearchParams) {
  const query: [string, string][] = [];
  const headers: Record<string, string> = {};
  const versionId = params.get("version_id");
  if (versionId && (kind === "download" || kind === "delete")) query.push(["versionId", versionId]);
  if (kind === "upload" || kind === "upload-part") {
    const type = params.get("content_type");
    const md5 = params.get("content_md5");
    if (type) headers["content-type"] = type;
    if (md5) headers["content-md5"] = md5;
  }
  if (kind === "upload-part") {
    const uploadId = params.get("upload_id");
    if (!uploadId) throw new ApiError(400, "invalid_field", "upload_id is required.");
    query.push(["partNumber", String(intParam(params, "part_number", [1, 10000]))]);
    query.push(["uploadId", uploadId]);
  }
  return { query, headers };
}

async function presign(req: Request, deps: AppDeps, rest: string): Promise<Response> {
  if (req.method !== "GET") throw new ApiError(405, "method_not_allowed", "Use GET.");
  const { principal } = await tokenPrincipal(req, deps);
  const m = /^([^/]+)\/([^/]+)\/(.+)$/.exec(rest);
  if (!m || !(m[1] in KINDS)) {
    throw new ApiError(
      404,
      "not_found",
      "Use /api/v1/presigned/{download|upload|delete|upload-part}/{bucket}/{key}.",
    );
  }
  let bucket: string;
  let key: string;
  try {
    [bucket, key] = [decodeURIComponent(m[2]), decodeURIComponent(m[3])];
  } catch {
    throw new ApiError(400, "invalid_path", "The bucket or key is not properly encoded.");
  }
  const url = new URL(req.url);
  const expiresIn = intParam(
    url.searchParams,
    "expires_in",
    [1, MAX_PRESIGN_EXPIRES_S],
    DEFAULT_EXPIRES_S,
  );
  const now = Date.now();
  const secret = (await deps.credentials.lookup(principal.accessKey!))?.secret;
  const method = KINDS[m[1]];
  const extras = presignExtras(m[1], url.searchParams);
  const dialect = DIALECTS[deps.config.dialect];
  if (principal.session) extras.query.push([q(dialect, "Security-Token"), principal.session.token]);
  const signedUrl = presignUrl({
    dialect,
    method,
    origin: url.origin,
    bucket,
    key,
    query: extras.query,
    headers: extras.headers,
    accessKey: principal.accessKey!,
    secret: secret!,
    region: deps.config.region,
    now,
    expiresIn,
  });
  return jsonResponse(200, {
    url: signedUrl,
    expires_at: new Date(now + expiresIn * 1000).toISOString(),
    bucket,
    key,
    method,
    ...(Object.keys(extras.headers).length > 0 ? { headers: extras.headers } : {}),
  });
}

async function route(req: Request, deps: AppDeps, client: string): Promise<Response> {
  const url = req.url;
  const path = url.slice(url.indexOf("/", url.indexOf("//") + 2)).split("?")[0];
  const scope = currentAudit();
  if (path === "/api/v1/tokens") {
    if (scope) {
      // Token issuance is a sign-in; revocation a change of the caller's own.
      scope.always = true;
      scope.operation = req.method === "POST" ? "IssueToken" : "RevokeToken";
    }
    if (req.method === "POST") {
      return await limitedSignIn(deps.signIns, client, () => issueToken(req, deps, client));
    }
    if (req.method === "DELETE") {
      const { hash } = await tokenPrincipal(req, deps);
      await deps.layer.meta.deleteToken(hash);
      return jsonResponse(204, null);
    }
    throw new ApiError(
      405,
      "method_not_allowed",
      "Use POST to obtain a token, DELETE to revoke it.",
    );
  }
  const prefix = "/api/v1/presigned/";
  if (path.startsWith(prefix)) {
    if (scope) scope.operation = "Presign";
    return await presign(req, deps, path.slice(prefix.length));
  }
  if (path === "/api/v1/shares" || path.startsWith("/api/v1/shares/")) {
    return await sharesRoute(req, deps, path.slice("/api/v1/shares".length));
  }
  const transforms = await transformRoute(req, deps, path);
  if (transforms) return transforms;
  throw new ApiError(404, "not_found", "No such API resource.");
}

export async function handleServiceApi(
  req: Request,
  deps: AppDeps,
  client: string,
): Promise<Response> {
  try {
    return await route(req, deps, client);
  } catch (err) {
    return apiErrorResponse(err, currentAudit()?.requestId ?? crypto.randomUUID());
  }
}
