// The token service (STS) at `POST /`: AssumeRoleWithLDAPIdentity signs a directory user in with
// name and password; AssumeRole, signed with a user's own keys, issues session keys no stronger
// than that user. Both answer the protocol's XML with temporary credentials; an optional session
// Policy narrows them further. Parameters come in the form body or the query string.
import { currentAudit } from "../audit/scope.ts";
import { principalName } from "../audit/recorder.ts";
import { createHash } from "node:crypto";
import { DirectoryError } from "../auth/ldap/directory_error.ts";
import { ldapSignIn, SignInThrottled } from "../auth/ldap/sign_in.ts";
import { parseSessionPolicy } from "../auth/policy.ts";
import type { IssuedSession } from "../auth/sts/sessions.ts";
import type { Dialect } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { BodyStalledError, readAtMost } from "../http/progress.ts";
import { el, escapeXml, text, xmlDocument } from "../http/xml.ts";
import { log } from "../log.ts";
import type { SessionRecord } from "../meta/store.ts";
import { type AppDeps, authenticate, type Target } from "../protocol.ts";

export const STS_VERSION = "2011-06-15";
/** A form of names, a password and a policy of at most 2 KiB (packed) fits easily. */
const MAX_STS_BODY = 64 * 1024;
const MAX_SESSION_POLICY = 2048;
const MIN_DURATION_S = 900;
const MAX_DURATION_S = 43200;
const DEFAULT_DURATION_S = 3600;

/** An error in the token service's own shape (ErrorResponse/Error/Type, Code, Message). */
class StsError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** Whether a request is for the token service: a POST to `/` with an Action or a form body. */
export function isStsRequest(req: Request, path: string, query: URLSearchParams): boolean {
  if (req.method !== "POST" || path !== "/") return false;
  return query.has("Action") ||
    /^application\/x-www-form-urlencoded\b/i.test(req.headers.get("content-type") ?? "");
}

async function readForm(req: Request): Promise<{ form: URLSearchParams; sha256: string }> {
  let body: Uint8Array | null;
  try {
    body = await readAtMost(req.body, req.headers, MAX_STS_BODY);
  } catch (err) {
    if (err instanceof BodyStalledError) throw new StsError(408, "RequestTimeout", err.message);
    throw new StsError(400, "IncompleteBody", "The request body ended before it was complete.");
  }
  if (body === null) {
    throw new StsError(
      413,
      "RequestEntityTooLarge",
      `The body must be at most ${MAX_STS_BODY} bytes.`,
    );
  }
  const sha256 = createHash("sha256").update(body).digest("hex");
  return { form: new URLSearchParams(new TextDecoder().decode(body)), sha256 };
}

function duration(params: URLSearchParams): number {
  const raw = params.get("DurationSeconds");
  if (raw === null) return DEFAULT_DURATION_S;
  if (!/^\d+$/.test(raw) || +raw < MIN_DURATION_S || +raw > MAX_DURATION_S) {
    throw new StsError(
      400,
      "ValidationError",
      `DurationSeconds must be from ${MIN_DURATION_S} to ${MAX_DURATION_S}.`,
    );
  }
  return Number(raw);
}

/** The session policy text, validated; undefined when none was given. */
function sessionPolicy(params: URLSearchParams): string | undefined {
  const text = params.get("Policy");
  if (text === null || text === "") return undefined;
  if (new TextEncoder().encode(text).byteLength > MAX_SESSION_POLICY) {
    throw new StsError(400, "PackedPolicyTooLarge", "The session policy is too large.");
  }
  try {
    parseSessionPolicy(text);
  } catch (err) {
    throw new StsError(400, "MalformedPolicyDocument", (err as Error).message);
  }
  return text;
}

function required(params: URLSearchParams, name: string): string {
  const value = params.get(name);
  if (value === null) throw new StsError(400, "MissingParameter", `${name} is required.`);
  return value;
}

function credentialsXml(issued: IssuedSession): string {
  return el(
    "Credentials",
    text("AccessKeyId", issued.accessKey),
    text("SecretAccessKey", issued.secret),
    text("SessionToken", issued.token),
    text("Expiration", new Date(issued.expiresAt).toISOString().replace(/\.\d{3}Z$/, "Z")),
  );
}

function answer(action: string, dialect: Dialect, requestId: string, result: string): Response {
  const body = xmlDocument(
    `${action}Response`,
    dialect.stsXmlns,
    el(`${action}Result`, result) + el("ResponseMetadata", text("RequestId", requestId)),
  );
  return new Response(body, { status: 200, headers: { "content-type": "text/xml" } });
}

type Issue = Omit<
  SessionRecord,
  "accessKey" | "sealedSecret" | "sealedToken" | "createdAt" | "expiresAt"
>;

async function issue(deps: AppDeps, params: URLSearchParams, base: Issue) {
  const seconds = duration(params);
  const policy = sessionPolicy(params);
  const now = Date.now();
  return await deps.credentials.sessions.issue({
    ...base,
    ...(policy !== undefined ? { policy } : {}),
    createdAt: now,
    expiresAt: now + seconds * 1000,
  });
}

async function assumeRoleWithLdap(
  deps: AppDeps,
  params: URLSearchParams,
  ctx: { client: string; dialect: Dialect; requestId: string },
): Promise<Response> {
  const ldap = deps.credentials.ldap;
  if (!ldap) {
    throw new StsError(400, "InvalidParameterValue", "LDAP sign-in is not enabled on this server.");
  }
  const username = required(params, "LDAPUsername");
  const password = required(params, "LDAPPassword");
  // Validated before the directory is asked: a bad request costs it nothing.
  duration(params);
  sessionPolicy(params);
  let identity;
  try {
    identity = await ldapSignIn(ldap, deps.signIns, ctx.client, { username, password });
  } catch (err) {
    if (err instanceof SignInThrottled) {
      throw new StsError(400, "Throttling", err.message, { "retry-after": String(err.retryAfter) });
    }
    if (err instanceof DirectoryError) {
      if (err.reason === "unavailable") {
        log("warn", "LDAP sign-in failed: directory unreachable", { error: err.message });
        throw new StsError(
          503,
          "ServiceUnavailable",
          "The directory is unreachable; try again later.",
        );
      }
      throw new StsError(
        403,
        "AccessDenied",
        err.reason === "disabled"
          ? "The account is disabled."
          : "LDAP sign-in failed: unknown user or wrong password.",
      );
    }
    throw err;
  }
  const issued = await issue(deps, params, {
    parentKind: "ldap",
    parentId: identity.username,
    ldapDn: identity.dn,
    ldapGroups: identity.groups,
  });
  return answer(
    "AssumeRoleWithLDAPIdentity",
    ctx.dialect,
    ctx.requestId,
    credentialsXml(issued),
  );
}

async function assumeRole(
  req: Request,
  deps: AppDeps,
  params: URLSearchParams,
  ctx: {
    target: Target;
    dialect: Dialect;
    requestId: string;
    sha256: string;
  },
): Promise<Response> {
  const { principal } = await authenticate(req, ctx.target, ctx.dialect, deps, {
    services: ["sts"],
    payloadSha256: ctx.sha256,
  });
  const scope = currentAudit();
  if (scope) scope.principal = principalName(principal);
  if (principal.kind === "anonymous") {
    throw new StsError(403, "MissingAuthenticationToken", "AssumeRole must be signed.");
  }
  if (principal.session) {
    throw new StsError(403, "AccessDenied", "Temporary credentials cannot issue sessions.");
  }
  if (!principal.enabled) throw new StsError(403, "AccessDenied", "The user is disabled.");
  const sessionName = params.get("RoleSessionName") ?? "session";
  if (!/^[\w+=,.@-]{2,64}$/.test(sessionName)) {
    throw new StsError(400, "ValidationError", "RoleSessionName must be 2-64 of [\\w+=,.@-].");
  }
  const issued = await issue(deps, params, {
    parentKind: "user",
    parentId: principal.id,
    // The key this request was signed with: rotating it ends the session (credentials.ts).
    ...(principal.accessKey !== undefined ? { parentKey: principal.accessKey } : {}),
  });
  const arn = `${ctx.dialect.userArnPrefix}${principal.displayName}/${sessionName}`;
  return answer(
    "AssumeRole",
    ctx.dialect,
    ctx.requestId,
    credentialsXml(issued) +
      el(
        "AssumedRoleUser",
        text("AssumedRoleId", `${principal.id}:${sessionName}`),
        text("Arn", arn),
      ),
  );
}

function errorResponse(err: StsError, dialect: Dialect, requestId: string): Response {
  const type = err.status >= 500 ? "Receiver" : "Sender";
  const body = xmlDocument(
    "ErrorResponse",
    dialect.stsXmlns,
    el(
      "Error",
      text("Type", type),
      text("Code", err.code),
      `<Message>${escapeXml(err.message)}</Message>`,
    ) + text("RequestId", requestId),
  );
  return new Response(body, {
    status: err.status,
    headers: { "content-type": "text/xml", ...err.headers },
  });
}

/** The protocol's errors (from signature checks) in the token service's shape. */
function fromS3Error(err: S3Error): StsError {
  const code = err.code === "InvalidAccessKeyId" ? "InvalidClientTokenId" : err.code;
  return new StsError(err.status, code, err.message);
}

export async function handleSts(
  req: Request,
  deps: AppDeps,
  ctx: {
    client: string;
    target: Target;
    dialect: Dialect;
    requestId: string;
  },
): Promise<Response> {
  try {
    const { form, sha256 } = await readForm(req);
    const params = new URLSearchParams(ctx.target.query);
    for (const [k, v] of form) params.set(k, v);
    const version = params.get("Version");
    if (version !== null && version !== STS_VERSION) {
      throw new StsError(400, "InvalidParameterValue", `Version must be ${STS_VERSION}.`);
    }
    const action = params.get("Action");
    const scope = currentAudit();
    if (scope) {
      // A sign-in: recorded whatever its outcome, under the name it asked for.
      scope.always = true;
      scope.operation = `TokenService:${action ?? ""}`.slice(0, 64);
      const username = params.get("LDAPUsername");
      if (username !== null) scope.principal = `ldap:${username.slice(0, 256)}`;
    }
    if (action === "AssumeRoleWithLDAPIdentity") {
      return await assumeRoleWithLdap(deps, params, ctx);
    }
    if (action === "AssumeRole") return await assumeRole(req, deps, params, { ...ctx, sha256 });
    throw new StsError(400, "InvalidAction", `Unknown or missing Action: ${action ?? "(none)"}.`);
  } catch (err) {
    if (err instanceof StsError) return errorResponse(err, ctx.dialect, ctx.requestId);
    if (err instanceof S3Error) return errorResponse(fromS3Error(err), ctx.dialect, ctx.requestId);
    throw err;
  }
}
