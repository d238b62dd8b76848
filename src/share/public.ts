// The public side of shares, /share/{token}/...: read-only listing (HTML for browsers, JSON
// otherwise), downloads and, when granted, uploads, always inside the share's bucket and prefix.
// A key is the share's prefix followed by the path after the token, decoded once: `..` and `.`
// segments are refused, an encoded slash is just a slash inside the key, a double-encoded one
// stays literal. Each use re-decides the creator's access (src/share/access.ts) and is audited.
import type { RequestFacts } from "../auth/access.ts";
import type { Principal } from "../auth/principal.ts";
import { HANDLERS } from "../api/handlers.ts";
import type { HandlerResult, RequestContext } from "../api/context.ts";
import { currentAudit } from "../audit/scope.ts";
import { requestBody } from "../http/body.ts";
import { DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import type { BucketRecord, SharePermission, ShareRecord } from "../meta/store.ts";
import type { AppDeps } from "../protocol.ts";
import { pageHeaders, styleHash } from "../web/html.ts";
import { PAGE_CSS } from "../web/browse_page.ts";
import { creatorOf, decideForCreator, ShareRefusal, shareState } from "./access.ts";
import { PERMISSION_OPERATION } from "./api.ts";
import { listingPage, passwordPage, refusalPage } from "./page.ts";
import { checkPassword, looksLikeToken, shareTokenHash } from "./token.ts";

const HTML_HEADERS = pageHeaders(styleHash(PAGE_CSS));
const LIST_BATCH = 1000;
/** Request headers a download or upload passes on; nothing else reaches the handler. */
const PASSED_HEADERS = [
  "range",
  "if-match",
  "if-none-match",
  "if-modified-since",
  "if-unmodified-since",
  "content-type",
  "content-length",
  "content-md5",
];

interface Use {
  req: Request;
  deps: AppDeps;
  client: string;
  share: ShareRecord;
  token: string;
  /** The path after the token, decoded: relative to the share's prefix. */
  rest: string;
  html: boolean;
  password?: string;
}

function wantsHtml(req: Request): boolean {
  return /\btext\/html\b/.test(req.headers.get("accept") ?? "");
}

function refusalResponse(err: ShareRefusal, html: boolean, head: boolean): Response {
  const headers = { ...err.headers, "cache-control": "no-store" };
  if (html) {
    const body = err.code === "password_required" || err.code === "wrong_password"
      ? passwordPage(err.code === "wrong_password")
      : refusalPage(err.status === 404 ? "Not found" : "Not available", err.message);
    return new Response(head ? null : body, {
      status: err.status,
      headers: { ...HTML_HEADERS, ...headers },
    });
  }
  return new Response(
    head ? null : JSON.stringify({ error: { code: err.code, message: err.message } }),
    { status: err.status, headers: { "content-type": "application/json", ...headers } },
  );
}

/** Splits `/share/{token}/{rest}`; the rest decoded once, with no dot segments. */
function parsePath(url: string): { token: string; rest: string } {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  let path = url.slice(pathStart);
  const q = path.indexOf("?");
  if (q >= 0) path = path.slice(0, q);
  const after = path.slice("/share/".length);
  const slash = after.indexOf("/");
  const token = slash < 0 ? after : after.slice(0, slash);
  const rawRest = slash < 0 ? "" : after.slice(slash + 1);
  let rest: string;
  try {
    rest = decodeURIComponent(rawRest);
  } catch {
    throw new ShareRefusal(400, "invalid_path", "The path is not properly encoded.");
  }
  if (rest.split("/").some((s) => s === "." || s === "..") || rest.includes("\\")) {
    throw new ShareRefusal(400, "invalid_path", "The path must not contain . or .. segments.");
  }
  return { token, rest };
}

function checkSharePassword(use: Use): void {
  const stored = use.share.passwordHash;
  if (stored === undefined) return;
  // Counted per share and address: guessing one share's password locks neither other shares
  // nor the address's sign-ins.
  const signIns = use.deps.sharePasswords;
  const who = `${use.share.id} ${use.client}`;
  const wait = signIns.retryAfter(who);
  if (wait > 0) {
    throw new ShareRefusal(429, "too_many_attempts", "Too many wrong passwords; try later.", {
      "retry-after": String(wait),
    });
  }
  if (use.password === undefined) {
    throw new ShareRefusal(401, "password_required", "This share needs its password.");
  }
  if (!checkPassword(use.password, stored)) {
    signIns.failed(who);
    throw new ShareRefusal(401, "wrong_password", "The password is wrong.");
  }
  signIns.succeeded(who);
}

function require(share: ShareRecord, permission: SharePermission): void {
  if (!share.permissions.includes(permission)) {
    throw new ShareRefusal(403, "not_permitted", `This share does not grant ${permission}.`);
  }
}

function factsOf(use: Use, key: string): RequestFacts {
  return { sourceIp: use.client, secureTransport: false, now: new Date(), prefix: key };
}

async function listing(use: Use, bucket: BucketRecord, creator: Principal, head: boolean) {
  require(use.share, "list");
  const folder = use.rest;
  if (folder !== "" && !folder.endsWith("/")) {
    throw new ShareRefusal(404, "not_found", "Folders end in /.");
  }
  const prefix = use.share.prefix + folder;
  await decideForCreator(use.deps.access, creator, PERMISSION_OPERATION.list, {
    bucket,
    facts: factsOf(use, prefix),
  });
  const after = new URL(use.req.url).searchParams.get("after") ?? "";
  const page = await use.deps.layer.listObjects(bucket.name, {
    prefix,
    delimiter: "/",
    after: after === "" ? "" : use.share.prefix + after,
    maxKeys: LIST_BATCH,
  });
  const cut = (k: string) => k.slice(use.share.prefix.length);
  const next = page.isTruncated && page.lastReturned ? cut(page.lastReturned) : undefined;
  if (use.html) {
    const body = listingPage({
      token: use.token,
      bucket: bucket.name,
      folder,
      prefix: use.share.prefix,
      objects: page.objects,
      folders: page.commonPrefixes.map(cut),
      readable: use.share.permissions.includes("read"),
      next,
      password: use.password,
    });
    return new Response(head ? null : body, { status: 200, headers: HTML_HEADERS });
  }
  const body = {
    bucket: bucket.name,
    prefix: use.share.prefix,
    folder,
    permissions: use.share.permissions,
    expires_at: new Date(use.share.expiresAt).toISOString(),
    objects: page.objects.map((o) => ({
      name: cut(o.key),
      size: o.size,
      etag: o.etag,
      last_modified: new Date(o.lastModified).toISOString(),
    })),
    folders: page.commonPrefixes.map(cut),
    next_after: next ?? null,
  };
  return new Response(head ? null : JSON.stringify(body), {
    status: 200,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}

/** Runs the protocol's own handler for the creator, with only the passed-on headers. */
async function runHandler(
  use: Use,
  operation: "GetObject" | "HeadObject" | "PutObject",
  bucket: BucketRecord,
  creator: Principal,
  key: string,
): Promise<HandlerResult> {
  const permission = operation === "PutObject" ? "write" : "read";
  const verdict = await decideForCreator(
    use.deps.access,
    creator,
    PERMISSION_OPERATION[permission],
    { bucket, key, facts: factsOf(use, key) },
  );
  const headers = new Headers();
  for (const name of PASSED_HEADERS) {
    const value = use.req.headers.get(name);
    if (value !== null) headers.set(name, value);
  }
  const dialect = DIALECTS[use.deps.config.dialect];
  const deps = use.deps;
  const ctx: RequestContext = {
    requestId: currentAudit()?.requestId ?? crypto.randomUUID(),
    operation,
    method: use.req.method,
    dialect,
    bucket: bucket.name,
    key,
    query: new URLSearchParams(),
    headers,
    body: requestBody(operation === "PutObject" ? use.req.body : null, { headers, dialect }),
    principal: creator,
    config: deps.config,
    layer: deps.layer,
    access: deps.access,
    verdict,
    facts: factsOf(use, key),
    credentials: deps.credentials,
    sseKeys: deps.sseKeys,
    kms: deps.kms,
    bucketLog: deps.bucketLog,
    notifier: deps.notifier,
    bucketRecord: bucket,
    answer: { dialect },
  };
  try {
    return await HANDLERS[operation]!(ctx);
  } catch (err) {
    if (err instanceof S3Error) {
      const status = err.code === "AccessDenied" ? 403 : err.status;
      throw new ShareRefusal(status, err.code, err.message);
    }
    throw err;
  }
}

/** Downloads never render in the server's origin: attachment, sandboxed. */
function downloadHeaders(result: HandlerResult, key: string): Headers {
  const headers = new Headers(result.headers);
  const name = key.slice(key.lastIndexOf("/") + 1) || "download";
  headers.set("content-disposition", `attachment; filename*=UTF-8''${encodeURIComponent(name)}`);
  headers.set("content-security-policy", "sandbox");
  headers.set("x-content-type-options", "nosniff");
  headers.set("cache-control", "no-store");
  return headers;
}

async function object(use: Use, bucket: BucketRecord, creator: Principal): Promise<Response> {
  const key = use.share.prefix + use.rest;
  const method = use.req.method;
  if (method === "PUT") {
    require(use.share, "write");
    const result = await runHandler(use, "PutObject", bucket, creator, key);
    await use.deps.layer.meta.countShareUpload(use.share.id);
    return new Response(null, {
      status: result.status,
      headers: { etag: result.headers?.etag ?? "" },
    });
  }
  require(use.share, "read");
  const head = method === "HEAD";
  const result = await runHandler(use, head ? "HeadObject" : "GetObject", bucket, creator, key);
  const body = result.body as BodyInit | null | undefined;
  if (!head && result.status < 300) {
    // Counted once the object is known to exist; one UPDATE, so concurrent downloads never
    // pass the limit.
    if (!(await use.deps.layer.meta.countShareDownload(use.share.id))) {
      if (result.body instanceof ReadableStream) await result.body.cancel().catch(() => {});
      throw new ShareRefusal(410, "download_limit_reached", "This share's downloads are used up.");
    }
  }
  return new Response(head ? null : body ?? null, {
    status: result.status,
    headers: downloadHeaders(result, key),
  });
}

async function serve(use: Use): Promise<Response> {
  const method = use.req.method;
  if (!["GET", "HEAD", "PUT"].includes(method)) {
    throw new ShareRefusal(405, "method_not_allowed", "Use GET, HEAD or PUT.", {
      allow: "GET, HEAD, PUT",
    });
  }
  checkSharePassword(use);
  const creator = await creatorOf(use.share, use.deps.layer.meta, use.deps.credentials);
  const bucket = await use.deps.layer.meta.getBucket(use.share.bucket);
  // A bucket deleted and created again under the name (by anyone) is another bucket: the share
  // was of the one it was made for. Shares made before the time was recorded go by name.
  const recreated = bucket !== undefined && use.share.bucketCreatedAt !== undefined &&
    bucket.createdAt !== use.share.bucketCreatedAt;
  if (!bucket || recreated) {
    throw new ShareRefusal(404, "no_such_bucket", "The shared bucket is gone.");
  }
  const isFolder = use.rest === "" || use.rest.endsWith("/");
  if (isFolder && method !== "PUT") return await listing(use, bucket, creator, method === "HEAD");
  if (isFolder) throw new ShareRefusal(400, "invalid_path", "Uploads need a file name.");
  return await object(use, bucket, creator);
}

export async function handleShare(
  req: Request,
  _info: Deno.ServeHandlerInfo,
  deps: AppDeps,
  client: string,
): Promise<Response> {
  const html = wantsHtml(req);
  const scope = currentAudit();
  if (scope) {
    scope.always = true;
    scope.operation = `Share:${req.method}`;
    scope.principal = "share";
  }
  try {
    const { token, rest } = parsePath(req.url);
    if (!looksLikeToken(token)) {
      throw new ShareRefusal(404, "no_such_share", "There is no share at this address.");
    }
    const share = shareState(
      await deps.layer.meta.getShare({ tokenHash: shareTokenHash(token) }),
      Date.now(),
    );
    if (scope) {
      scope.principal = `share:${share.id}`;
      scope.bucket = share.bucket;
      scope.key = share.prefix + rest;
      scope.detail = { share: share.id, creator: share.creator };
    }
    const password = req.headers.get("x-share-password") ??
      new URL(req.url).searchParams.get("password") ?? undefined;
    return await serve({ req, deps, client, share, token, rest, html, password });
  } catch (err) {
    if (!(err instanceof ShareRefusal)) throw err;
    if (scope) scope.errorCode = err.code;
    if (req.body && !req.body.locked) req.body.cancel().catch(() => {});
    return refusalResponse(err, html, req.method === "HEAD");
  }
}
