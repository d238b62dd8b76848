// The administration interface under /admin/users: HTTP Basic with the administrator's
// credentials, JSON in and out.
import { createHash, timingSafeEqual } from "node:crypto";
import { KEY_ALPHABET, randomString, SECRET_ALPHABET } from "../auth/admin_credentials.ts";
import { log } from "../log.ts";
import { DuplicateError, type UserRecord } from "../meta/store.ts";
import type { AppDeps } from "../protocol.ts";
import { parseUserInput, validateBucketAccess } from "./admin_input.ts";
import { uploadsRoute } from "./admin_uploads.ts";
import { auditRoute } from "../audit/admin.ts";
import { currentAudit } from "../audit/scope.ts";
import { errorsRoute } from "../errorlog/admin.ts";
import { adminSharesRoute } from "../share/api.ts";
import { ldapRoute } from "./admin_ldap.ts";
import { kmsRoute } from "../kms/admin.ts";
import { antiEntropyRoute, opsRoute } from "./admin_ops.ts";
import { forgetNode } from "../cluster/admin.ts";
import {
  ApiError,
  apiErrorResponse,
  jsonResponse,
  limitedSignIn,
  pathSegments,
  readJsonObject,
} from "./json.ts";

/** Every user access key starts with this; 16 random characters follow. */
export const USER_KEY_PREFIX = "STUS";

function digest(text: string): Uint8Array {
  return createHash("sha256").update(text).digest();
}

export function checkBasicAuth(req: Request, deps: AppDeps): void {
  const header = req.headers.get("authorization") ?? "";
  const unauthorized = new ApiError(
    401,
    "unauthorized",
    "Administrator credentials are required.",
    {
      "www-authenticate": 'Basic realm="store admin", charset="UTF-8"',
    },
  );
  if (!header.startsWith("Basic ")) throw unauthorized;
  let decoded: string;
  try {
    decoded = new TextDecoder().decode(
      Uint8Array.from(atob(header.slice(6).trim()), (c) => c.charCodeAt(0)),
    );
  } catch {
    throw unauthorized;
  }
  const admin = deps.credentials.admin;
  const expected = digest(`${admin.user}:${admin.password}`);
  if (!timingSafeEqual(digest(decoded), expected)) throw unauthorized;
}

/** The user as the API shows it; the secret only when just issued. */
function userView(user: UserRecord, secret?: string): Record<string, unknown> {
  return {
    name: user.name,
    access_key: user.accessKey,
    ...(secret !== undefined ? { secret_key: secret } : {}),
    email: user.email,
    description: user.description,
    created_at: new Date(user.createdAt).toISOString(),
    enabled: user.enabled,
    is_admin: false,
    bucket_access: user.bucketAccess,
  };
}

function newKeyPair(): { accessKey: string; secret: string } {
  return {
    accessKey: USER_KEY_PREFIX + randomString(16, KEY_ALPHABET),
    secret: randomString(40, SECRET_ALPHABET),
  };
}

async function requireUser(deps: AppDeps, accessKey: string): Promise<UserRecord> {
  const user = await deps.layer.meta.getUser({ accessKey });
  if (!user) throw new ApiError(404, "no_such_user", "No user has that access key.");
  return user;
}

async function createUser(req: Request, deps: AppDeps): Promise<Response> {
  const input = parseUserInput(await readJsonObject(req));
  const { accessKey, secret } = newKeyPair();
  const id = crypto.randomUUID();
  const now = Date.now();
  const user: UserRecord = {
    id,
    ...input,
    accessKey,
    sealedSecret: deps.sealer.seal(secret, id),
    enabled: true,
    createdAt: now,
    keyCreatedAt: now,
  };
  try {
    await deps.layer.meta.createUser(user);
  } catch (err) {
    if (err instanceof DuplicateError) {
      throw new ApiError(409, "user_exists", `A user with that ${err.field} already exists.`);
    }
    throw err;
  }
  log("info", "User created", { name: user.name, accessKey });
  return jsonResponse(201, userView(user, secret));
}

async function update(
  deps: AppDeps,
  user: UserRecord,
  change: Partial<UserRecord>,
): Promise<UserRecord> {
  // Applied to the user as stored at the change (another node's change may have arrived since
  // `user` was read).
  const next = await deps.layer.meta.changeUser(user.id, change);
  if (!next) throw new ApiError(404, "no_such_user", "No user has that access key.");
  return next;
}

async function userAction(
  req: Request,
  deps: AppDeps,
  accessKey: string,
  action: string,
): Promise<Response> {
  const user = await requireUser(deps, accessKey);
  if (action === "buckets" && req.method === "PUT") {
    const body = await readJsonObject(req);
    const bucketAccess = validateBucketAccess(body.bucket_access);
    return jsonResponse(200, userView(await update(deps, user, { bucketAccess })));
  }
  if (req.method !== "POST") throw new ApiError(405, "method_not_allowed", "Method not allowed.");
  if (action === "disable" || action === "enable") {
    const changed = await update(deps, user, { enabled: action === "enable" });
    if (action === "disable") await deps.layer.meta.deleteUserTokens(user.id);
    return jsonResponse(200, userView(changed));
  }
  if (action === "keys") {
    const { accessKey: newKey, secret } = newKeyPair();
    const now = Date.now();
    await update(deps, user, {
      accessKey: newKey,
      sealedSecret: deps.sealer.seal(secret, user.id),
      keyCreatedAt: now,
    });
    await deps.layer.meta.deleteUserTokens(user.id);
    log("info", "User keys rotated", { name: user.name, accessKey: newKey });
    return jsonResponse(200, {
      access_key: newKey,
      secret_key: secret,
      created_at: new Date(now).toISOString(),
    });
  }
  throw new ApiError(404, "not_found", "No such administration resource.");
}

/** The administration resources, for a caller already known to be the administrator. */
export async function adminRoute(req: Request, deps: AppDeps): Promise<Response> {
  const [resource, accessKey, action, ...rest] = pathSegments(req.url, "/admin");
  const ops = accessKey === undefined ? opsRoute(req, deps, resource) : undefined;
  if (ops) return await ops;
  if (resource === "cluster" && accessKey === "nodes" && action && rest.length === 0) {
    return await forgetNode(req, deps.cluster, action);
  }
  if (resource === "cluster" && accessKey === "anti-entropy" && action === undefined) {
    return await antiEntropyRoute(req, deps);
  }
  if (resource === "notify" && accessKey === "targets" && action === undefined) {
    if (req.method !== "GET") throw new ApiError(405, "method_not_allowed", "Use GET.");
    const targets = await deps.notifier.status();
    return jsonResponse(200, { targets, total: targets.length });
  }
  if (resource === "lifecycle" && accessKey === undefined) {
    return await lifecycleRoute(req, deps);
  }
  if (resource === "audit") return await auditRoute(req, deps, accessKey, action);
  if (resource === "errors" && accessKey === undefined) return await errorsRoute(req, deps);
  if (resource === "shares" && action === undefined) {
    return await adminSharesRoute(req, deps, accessKey);
  }
  if (resource === "ldap") {
    return await ldapRoute(req, deps, pathSegments(req.url, "/admin/ldap"));
  }
  if (resource === "kms") {
    return await kmsRoute(req, deps, pathSegments(req.url, "/admin/kms"));
  }
  if (resource === "uploads") {
    return await uploadsRoute(req, deps, pathSegments(req.url, "/admin/uploads"));
  }
  if (resource !== "users" || rest.length > 0) {
    throw new ApiError(404, "not_found", "No such administration resource.");
  }
  if (accessKey === undefined) {
    if (req.method === "POST") return await createUser(req, deps);
    if (req.method === "GET") {
      const users = await deps.layer.meta.listUsers();
      return jsonResponse(200, { users: users.map((u) => userView(u)), total: users.length });
    }
    throw new ApiError(405, "method_not_allowed", "Method not allowed.");
  }
  if (action !== undefined) return await userAction(req, deps, accessKey, action);
  if (req.method === "GET") return jsonResponse(200, userView(await requireUser(deps, accessKey)));
  if (req.method === "DELETE") {
    const user = await requireUser(deps, accessKey);
    await deps.layer.meta.deleteUser(user.id);
    log("info", "User deleted", { name: user.name });
    return jsonResponse(204, null);
  }
  throw new ApiError(405, "method_not_allowed", "Method not allowed.");
}

/** POST runs lifecycle now and answers its report; GET answers the last report. */
async function lifecycleRoute(req: Request, deps: AppDeps): Promise<Response> {
  if (req.method === "POST") return jsonResponse(200, await deps.lifecycle.runNow());
  if (req.method === "GET") {
    const last = deps.lifecycle.last();
    if (!last) {
      throw new ApiError(404, "no_lifecycle_run_yet", "No lifecycle run since the server started.");
    }
    return jsonResponse(200, last);
  }
  throw new ApiError(
    405,
    "method_not_allowed",
    "Use POST to run lifecycle, GET for the last report.",
  );
}

export async function handleAdmin(
  req: Request,
  deps: AppDeps,
  client: string,
): Promise<Response> {
  const scope = currentAudit();
  const requestId = scope?.requestId ?? crypto.randomUUID();
  try {
    if (scope) {
      // Every administration request is a sign-in with the administrator's credentials.
      scope.always = true;
      const [resource, target, action] = pathSegments(req.url, "/admin");
      scope.operation = `Admin:${req.method} ${[resource, action].filter(Boolean).join("/")}`;
      scope.key = target ?? "";
    }
    await limitedSignIn(deps.signIns, client, () => checkBasicAuth(req, deps));
    if (scope) scope.principal = `admin:${deps.credentials.admin.user}`;
    const res = await adminRoute(req, deps);
    res.headers.set("x-request-id", requestId);
    return res;
  } catch (err) {
    return apiErrorResponse(err, requestId);
  }
}
