// Serving a bucket's website: GET and HEAD at `/website/{bucket}/...`, or at `{bucket}.{domain}`
// by Host when STORE_WEBSITE_DOMAIN is set. Requests are anonymous: an object is served when the
// same access decision as an anonymous GetObject allows it (a public bucket). Folders serve their
// index document, errors the error document with the error's status, and routing rules redirect;
// nothing is ever listed. Answers are HTML, as a website's are, never the protocol's XML.
import type { HandlerResult, RequestContext } from "../api/context.ts";
import { HANDLERS } from "../api/handlers.ts";
import { ANONYMOUS } from "../auth/principal.ts";
import { currentAudit } from "../audit/scope.ts";
import { requestBody } from "../http/body.ts";
import { DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { isSecureRequest } from "../http/secure_transport.ts";
import type { BucketRecord } from "../meta/store.ts";
import type { AppDeps } from "../protocol.ts";
import { markup } from "../web/html.ts";
import type { WebsiteConfig } from "./config.ts";
import {
  encodeKey,
  redirectAfterError,
  type RedirectAnswer,
  redirectBeforeLookup,
  servedKey,
  type SiteAddress,
} from "./rules.ts";

/** Request headers a website read passes on to GetObject; nothing else reaches it. */
const PASSED_HEADERS = [
  "range",
  "if-match",
  "if-none-match",
  "if-modified-since",
  "if-unmodified-since",
];

const REASONS: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  500: "Internal Server Error",
};

export interface WebsiteRequest {
  req: Request;
  deps: AppDeps;
  client: string;
  bucket: string;
  /** The object key the path names, decoded. */
  key: string;
  /** `/website/{bucket}/` or `/`. */
  root: string;
}

/** Where a request is addressed: `/website/{bucket}/{key}`; undefined for a bad encoding. */
export function parseWebsitePath(url: string): { bucket: string; key: string } | undefined {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  let path = url.slice(pathStart);
  const q = path.indexOf("?");
  if (q >= 0) path = path.slice(0, q);
  const rest = path.slice("/website/".length);
  const slash = rest.indexOf("/");
  try {
    const bucket = decodeURIComponent(slash < 0 ? rest : rest.slice(0, slash));
    const key = slash < 0 ? "" : decodeURIComponent(rest.slice(slash + 1));
    return { bucket, key };
  } catch {
    return undefined;
  }
}

/** The bucket a Host names under the website domain (`{bucket}.{domain}[:port]`). */
export function websiteBucketOfHost(host: string | null, domain: string): string | undefined {
  if (host === null) return undefined;
  const name = host.toLowerCase().replace(/:\d+$/, "");
  const suffix = "." + domain;
  if (!name.endsWith(suffix) || name.length === suffix.length) return undefined;
  return name.slice(0, -suffix.length);
}

class WebsiteError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

function errorPage(err: WebsiteError, key: string, requestId: string, head: boolean): Response {
  const title = `${err.status} ${REASONS[err.status] ?? "Error"}`;
  const body = markup`<!DOCTYPE html>
<html><head><title>${title}</title></head><body><h1>${title}</h1><ul><li>Code: ${err.code}</li>` +
    markup`<li>Message: ${err.message}</li><li>Key: ${key}</li><li>RequestId: ${requestId}</li>` +
    "</ul><hr/></body></html>\n";
  return new Response(head ? null : body, {
    status: err.status,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });
}

function redirect(answer: RedirectAnswer): Response {
  return new Response(null, { status: answer.status, headers: { location: answer.location } });
}

/** A protocol error as a page; 304 Not Modified passes through to be answered as such. */
function toWebsiteError(err: unknown): WebsiteError {
  if (!(err instanceof S3Error) || err.status === 304) throw err;
  return new WebsiteError(err.status, err.code, err.message);
}

/** GetObject or HeadObject of `key` as an anonymous caller, after the same access decision. */
async function readObject(
  w: WebsiteRequest,
  bucket: BucketRecord,
  key: string,
  status = 200,
): Promise<Response> {
  const head = w.req.method === "HEAD";
  const operation = head ? "HeadObject" : "GetObject";
  const facts = {
    sourceIp: w.client,
    secureTransport: isSecureRequest(w.req.headers, w.deps.config.trustProxy),
    now: new Date(),
  };
  const deps = w.deps;
  const verdict = await deps.access.decide(ANONYMOUS, operation, {
    bucket,
    bucketName: bucket.name,
    key,
    facts,
  });
  const headers = new Headers();
  // The error document is sent whole, whatever the request's range and conditions.
  if (status === 200) {
    for (const name of PASSED_HEADERS) {
      const value = w.req.headers.get(name);
      if (value !== null) headers.set(name, value);
    }
  }
  const dialect = DIALECTS[deps.config.dialect];
  const ctx: RequestContext = {
    requestId: currentAudit()?.requestId ?? crypto.randomUUID(),
    operation,
    method: w.req.method,
    dialect,
    bucket: bucket.name,
    key,
    query: new URLSearchParams(),
    headers,
    body: requestBody(null, { headers, dialect }),
    principal: ANONYMOUS,
    config: deps.config,
    layer: deps.layer,
    access: deps.access,
    verdict,
    facts,
    credentials: deps.credentials,
    sseKeys: deps.sseKeys,
    kms: deps.kms,
    bucketLog: deps.bucketLog,
    notifier: deps.notifier,
    bucketRecord: bucket,
    answer: { dialect },
  };
  const result: HandlerResult = await HANDLERS[operation]!(ctx);
  const body = head ? null : (result.body ?? null) as BodyInit | null;
  return new Response(body, {
    status: status === 200 ? result.status : status,
    headers: result.headers,
  });
}

/** Whether `key` exists and may be read (the folder check of an address without its slash). */
async function readable(w: WebsiteRequest, bucket: BucketRecord, key: string): Promise<boolean> {
  try {
    await w.deps.access.decide(ANONYMOUS, "HeadObject", {
      bucket,
      bucketName: bucket.name,
      key,
      facts: { sourceIp: w.client, secureTransport: false, now: new Date() },
    });
    await w.deps.layer.headObject(bucket.name, key);
    return true;
  } catch (err) {
    if (err instanceof S3Error) return false;
    throw err;
  }
}

async function serveSite(
  w: WebsiteRequest,
  bucket: BucketRecord,
  config: WebsiteConfig,
  site: SiteAddress,
): Promise<Response> {
  const before = redirectBeforeLookup(config, w.key, site);
  if (before) return redirect(before);
  let failure: WebsiteError;
  try {
    return await readObject(w, bucket, servedKey(config, w.key));
  } catch (err) {
    failure = toWebsiteError(err);
  }
  // `folder` without its slash, when `folder/` has a readable index document: a redirect to the
  // folder. Without ListBucket a missing key is 403, as the protocol answers it.
  const absent = failure.status === 404 || failure.status === 403;
  if (absent && w.key !== "" && !w.key.endsWith("/")) {
    if (await readable(w, bucket, servedKey(config, w.key + "/"))) {
      return redirect({
        status: 302,
        location: `${site.root}${encodeKey(w.key)}/`,
      });
    }
  }
  const after = redirectAfterError(config, w.key, failure.status, site);
  if (after) return redirect(after);
  if (config.errorKey !== undefined && (failure.status === 403 || failure.status === 404)) {
    try {
      return await readObject(w, bucket, config.errorKey, failure.status);
    } catch (err) {
      toWebsiteError(err);
    }
  }
  throw failure;
}

export async function handleWebsite(w: WebsiteRequest): Promise<Response> {
  const scope = currentAudit();
  if (scope) {
    scope.operation = `Website:${w.req.method}`;
    scope.principal = "anonymous";
    scope.bucket = w.bucket;
    scope.key = w.key;
  }
  const head = w.req.method === "HEAD";
  const requestId = scope?.requestId ?? "";
  w.req.body?.cancel().catch(() => {});
  try {
    if (w.req.method !== "GET" && !head) {
      throw new WebsiteError(405, "MethodNotAllowed", "The website answers GET and HEAD only.");
    }
    if (w.key.split("/").some((s) => s === "." || s === "..")) {
      throw new WebsiteError(400, "InvalidURI", "The path must not contain . or .. segments.");
    }
    const bucket = await w.deps.layer.meta.getBucket(w.bucket);
    if (!bucket) {
      throw new WebsiteError(404, "NoSuchBucket", "The specified bucket does not exist");
    }
    const stored = await w.deps.layer.meta.getBucketConfig(bucket.name, "website");
    if (stored === undefined) {
      throw new WebsiteError(
        404,
        "NoSuchWebsiteConfiguration",
        "The specified bucket does not have a website configuration",
      );
    }
    const site: SiteAddress = {
      scheme: isSecureRequest(w.req.headers, w.deps.config.trustProxy) ? "https" : "http",
      host: w.req.headers.get("host") ?? "",
      root: w.root,
    };
    return await serveSite(w, bucket, JSON.parse(stored) as WebsiteConfig, site);
  } catch (err) {
    if (err instanceof S3Error && err.status === 304) {
      return new Response(null, { status: 304, headers: err.headers });
    }
    const failure = err instanceof WebsiteError ? err : toWebsiteError(err);
    if (scope) scope.errorCode = failure.code;
    return errorPage(failure, w.key, requestId, head);
  }
}
