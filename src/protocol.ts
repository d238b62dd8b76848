// The protocol request handler: request id, dialect, route, authentication, access decision,
// dispatch to an operation handler, and one responder for results and errors.
import type { HandlerResult, RequestContext } from "./api/context.ts";
import { HANDLERS, READS_BODY } from "./api/handlers.ts";
import { addCorsHeaders, preflight } from "./api/cors.ts";
import type { AccessControl, RequestFacts } from "./auth/access.ts";
import type { Credentials } from "./auth/credentials.ts";
import type { SignInLimiter } from "./auth/sign_in_limiter.ts";
import { ANONYMOUS, type Principal } from "./auth/principal.ts";
import type { SecretSealer } from "./auth/secrets.ts";
import { checkSessionToken } from "./auth/sts/sessions.ts";
import type { Scrubber } from "./workers/scrubber.ts";
import type { LifecycleWorker } from "./workers/lifecycle.ts";
import type { SseKeys } from "./object/sse.ts";
import type { Kms } from "./kms/kms.ts";
import type { BucketLogger } from "./bucketlog/logger.ts";
import type { Notifier } from "./events/notifier.ts";
import { type SignedRequest, verifyHeaderAuth, verifyPresigned } from "./auth/sigv4.ts";
import { sigV2Refused, usesSigV2, verifyV2Header, verifyV2Query } from "./auth/sigv2.ts";
import type { Config } from "./config.ts";
import { requestBody } from "./http/body.ts";
import { detectDialect, type Dialect, dialectErrorCode, DIALECTS, h, q } from "./http/dialect.ts";
import { S3Error } from "./http/errors.ts";
import { escapeXml } from "./http/xml.ts";
import { isSecureRequest, refuseInsecureCustomerKeys } from "./http/secure_transport.ts";
import type { InFlight } from "./http/in_flight.ts";
import { METHODS, route } from "./http/router.ts";
import { isDiskFull } from "./storage/disk_errors.ts";
import { metaUnavailable } from "./meta/store.ts";
import type { DiskReserve } from "./storage/disk_reserve.ts";
import { isDebug, log } from "./log.ts";
import { noteRequest } from "./ops/access_log.ts";
import { DeleteMarkerError, type ObjectLayer } from "./object/layer.ts";
import { checkExpectedOwner } from "./api/expected_owner.ts";
import { conditionFacts } from "./api/condition_facts.ts";
import { currentAudit } from "./audit/scope.ts";
import { type AuditRecorder, principalName } from "./audit/recorder.ts";
import { handleSts, isStsRequest } from "./api/sts.ts";
import type { Ops } from "./ops/ops.ts";
import type { ClusterNode } from "./cluster/node.ts";
import { declaredLength } from "./ops/metrics.ts";
import { type AccessRecord, operationName } from "./bucketlog/record.ts";

export interface AppDeps {
  config: Config;
  layer: ObjectLayer;
  credentials: Credentials;
  access: AccessControl;
  sealer: SecretSealer;
  inFlight: InFlight;
  scrubber: Scrubber;
  lifecycle: LifecycleWorker;
  sseKeys: SseKeys;
  kms: Kms;
  bucketLog: BucketLogger;
  notifier: Notifier;
  signIns: SignInLimiter;
  /** Wrong share passwords, per share and address (src/share/public.ts). */
  sharePasswords: SignInLimiter;
  /** Space kept back so deletes work on a full disk. */
  reserve: DiskReserve;
  /** Writes the request-level audit entries (src/audit/recorder.ts). */
  audit: AuditRecorder;
  /** Drive monitoring and healing, health probes, metrics, backups. */
  ops: Ops;
  /** The transformation workers (src/transform/): told of jobs queued by the API. */
  transforms: { notify(): void };
  /** Membership and node calls (src/cluster/); undefined when clustering is off. */
  cluster?: ClusterNode;
}

/** Served while the disk reserve is released (the disk is full): they read or free space. */
function servedWhenFull(method: string, operation: string): boolean {
  return method === "GET" || method === "HEAD" || method === "DELETE" ||
    operation === "DeleteObjects" || operation === "SelectObjectContent";
}

export interface Target {
  rawPath: string;
  rawQuery: string;
  path: string;
  query: URLSearchParams;
}

/** Splits the request target without URL normalisation (keys may contain `..` or `//`). */
export function parseTarget(url: string): Target {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  const target = pathStart < 0 ? "/" : url.slice(pathStart);
  const question = target.indexOf("?");
  const rawPath = question < 0 ? target : target.slice(0, question);
  const rawQuery = question < 0 ? "" : target.slice(question + 1);
  const query = new URLSearchParams();
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
    for (const part of rawQuery.split("&")) {
      if (part === "") continue;
      const eq = part.indexOf("=");
      query.append(
        decodeURIComponent(eq < 0 ? part : part.slice(0, eq)),
        eq < 0 ? "" : decodeURIComponent(part.slice(eq + 1)),
      );
    }
  } catch {
    throw new S3Error("InvalidURI", "Couldn't parse the specified URI.");
  }
  return { rawPath, rawQuery, path, query };
}

/** Request ids: a random start, then counting (unique per process; cheaper than 8 random bytes). */
let lastRequestId = Math.floor(Math.random() * 2 ** 52);

export function newRequestId(): string {
  lastRequestId = (lastRequestId + 1) % 2 ** 53;
  return lastRequestId.toString(16).toUpperCase().padStart(16, "0");
}

export async function authenticate(
  req: Request,
  target: Target,
  dialect: Dialect,
  deps: AppDeps,
  /** The token service's: its own scope service, and the body it has read already. */
  sts?: { services: readonly string[]; payloadSha256: string },
): Promise<{ principal: Principal; signed?: SignedRequest }> {
  const authorization = req.headers.get("authorization");
  const v2 = usesSigV2(dialect, { authorization, query: target.query });
  const presigned = target.query.has(q(dialect, "Signature")) ||
    target.query.has(q(dialect, "Algorithm")) || v2.query;
  if (authorization && presigned) {
    throw new S3Error("InvalidArgument", "Only one auth mechanism allowed.");
  }
  if (!authorization && !presigned) return { principal: ANONYMOUS };
  if ((v2.header || v2.query) && !deps.config.sigV2) throw sigV2Refused(dialect);
  // The signature check looks the key up; its principal is kept rather than read again.
  let found: { principal: Principal } | undefined;
  const input = {
    method: req.method,
    rawPath: target.rawPath,
    rawQuery: target.rawQuery,
    headers: req.headers,
    dialect,
    region: deps.config.region,
    now: Date.now(),
    secretFor: async (key: string) => (found = await deps.credentials.lookup(key))?.secret,
    ...sts,
  };
  const signed = v2.header
    ? await verifyV2Header(input, authorization!)
    : v2.query
    ? await verifyV2Query(input, target.query)
    : authorization
    ? await verifyHeaderAuth(input, authorization)
    : await verifyPresigned(input, target.query);
  const principal = found?.principal;
  if (!principal) {
    throw new S3Error(
      "InvalidAccessKeyId",
      "The access key Id you provided does not exist in our records.",
    );
  }
  const token = req.headers.get(h(dialect, "security-token")) ??
    target.query.get(q(dialect, "Security-Token"));
  checkSessionToken(principal, token, input.now);
  return { principal, signed };
}

export function requestFacts(
  info: Deno.ServeHandlerInfo,
  target: Target,
  req: { headers: Headers; dialect: Dialect; trustProxy: boolean },
): RequestFacts {
  const addr = info.remoteAddr as Deno.NetAddr;
  const maxKeys = target.query.get("max-keys");
  return {
    sourceIp: addr.hostname ?? "",
    secureTransport: isSecureRequest(req.headers, req.trustProxy),
    now: new Date(),
    prefix: target.query.get("prefix") ?? undefined,
    maxKeys: maxKeys !== null && /^\d+$/.test(maxKeys) ? Number(maxKeys) : undefined,
    ...conditionFacts(req.headers, target.query, req.dialect),
  };
}

export function errorResponse(
  err: S3Error,
  opts: { dialect: Dialect; requestId: string; resource: string; head: boolean },
): Response {
  const headers = new Headers(err.headers);
  if (err.status === 304) return new Response(null, { status: 304, headers });
  if (opts.head) return new Response(null, { status: err.status, headers });
  headers.set("content-type", "application/xml");
  const details = Object.entries(err.details)
    .map(([k, v]) => `<${k}>${escapeXml(v)}</${k}>`).join("");
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${
    dialectErrorCode(opts.dialect, err.code)
  }</Code><Message>${escapeXml(err.message)}</Message>${details}<Resource>${
    escapeXml(opts.resource)
  }</Resource><RequestId>${opts.requestId}</RequestId></Error>`;
  return new Response(body, { status: err.status, headers });
}

function toResponse(result: HandlerResult, head: boolean): Response {
  const body = head ? null : (result.body ?? null) as BodyInit | null;
  return new Response(body, { status: result.status, headers: result.headers });
}

/** What is known about a request so far; the responder uses it for errors and logs. */
interface RequestState {
  requestId: string;
  dialect: Dialect;
  resource: string;
  operation: string;
  /** The bucket named by the path: its CORS rules apply to the response, errors included. */
  corsBucket: string;
  key?: string;
  /** Who signed the request (access key), for the access log. */
  principal?: string;
  /** For bucket access records: the requester's id and how the request was signed. */
  requester?: string;
  auth?: { signatureVersion: string; authType: string };
  errorCode?: string;
}

function bucketOfPath(path: string): string {
  const slash = path.indexOf("/", 1);
  return slash < 0 ? path.slice(1) : path.slice(1, slash);
}

function methodNotAllowed(): S3Error {
  return new S3Error(
    "MethodNotAllowed",
    "The specified method is not allowed against this resource.",
  );
}

/**
 * A request whose caller is already known: the web console's, signed in by its session. It skips
 * signature checks and the token service; everything after (access decision, handlers) is the same.
 */
export interface Authenticated {
  principal: Principal;
}

/** Route, authenticate, decide, run the handler. */
/** The replication status header of both dialects (refused on protocol requests). */
const REPLICATION_HEADERS = [
  h(DIALECTS.store, "replication-status"),
  h(DIALECTS.amz, "replication-status"),
];

async function dispatch(
  req: Request,
  info: Deno.ServeHandlerInfo,
  deps: AppDeps,
  state: RequestState,
  known?: Authenticated,
): Promise<Response> {
  const target = parseTarget(req.url);
  state.resource = target.path;
  state.corsBucket = bucketOfPath(target.path);
  const dialect = state.dialect = detectDialect(req.headers, target.query, state.dialect);
  if (!known && isStsRequest(req, target.path, target.query)) {
    state.operation = "TokenService";
    const client = (info.remoteAddr as Deno.NetAddr).hostname ?? "";
    return await handleSts(req, deps, { client, target, dialect, requestId: state.requestId });
  }
  if (!METHODS.includes(req.method)) throw methodNotAllowed();
  const copySource = req.headers.has(h(dialect, "copy-source"));
  const found = route(req.method, target.path, target.query, copySource);
  if (!found) throw methodNotAllowed();
  state.operation = found.operation;
  const scope = currentAudit();
  if (scope) {
    scope.operation = found.operation;
    scope.bucket = found.bucket ?? "";
    scope.key = found.key ?? "";
  }
  state.key = found.key;
  // Replicated writes arrive only as signed cluster calls (POST /cluster/object): the header on
  // a protocol request grants nothing, whoever signed it.
  if (REPLICATION_HEADERS.some((name) => req.headers.has(name))) {
    req.body?.cancel().catch(() => {});
    throw new S3Error(
      "AccessDenied",
      "Replicated writes are accepted only as signed cluster calls.",
    );
  }
  if (found.operation === "OptionsObject") {
    // Preflights are never signed: the answer depends only on the bucket's CORS rules.
    req.body?.cancel().catch(() => {});
    const headers = await preflight(req.headers, {
      meta: deps.layer.meta,
      bucket: state.corsBucket,
      key: found.key,
    });
    return new Response(null, { status: 200, headers });
  }
  const operation = found.operation;
  const { principal, signed } = known
    ? { principal: known.principal, signed: undefined }
    : await authenticate(req, target, dialect, deps);
  if (scope) scope.principal = principalName(principal);
  state.principal = principal.accessKey ?? principal.displayName;
  if (principal.kind !== "anonymous") {
    state.requester = principal.id;
    const v2 = usesSigV2(dialect, {
      authorization: req.headers.get("authorization"),
      query: target.query,
    });
    state.auth = {
      signatureVersion: v2.header || v2.query ? "SigV2" : "SigV4",
      authType: req.headers.has("authorization") ? "AuthHeader" : "QueryString",
    };
  }
  const bucket = found.bucket ? await deps.layer.meta.getBucket(found.bucket) : undefined;
  checkExpectedOwner(req.headers, dialect, "expected-bucket-owner", bucket);
  const facts = requestFacts(info, target, {
    headers: req.headers,
    dialect,
    trustProxy: deps.config.trustProxy,
  });
  refuseInsecureCustomerKeys(req.headers, facts.secureTransport || deps.config.allowInsecureSseC);
  const verdict = await deps.access.decide(principal, operation, {
    bucket,
    bucketName: found.bucket,
    key: found.key,
    versionId: found.key === undefined ? undefined : target.query.get("versionId") ?? undefined,
    facts,
  });
  const handler = HANDLERS[operation];
  if (!handler) throw new S3Error("NotImplemented", `${operation} is not implemented yet.`);
  if (!servedWhenFull(req.method, operation) && !(await deps.reserve.retry())) {
    throw new S3Error("InsufficientStorage", "The disk is full: only reads and deletes work.");
  }
  const body = requestBody(req.body, { headers: req.headers, dialect, signed });
  if (!READS_BODY.has(operation)) await body.discard();
  const ctx: RequestContext = {
    requestId: state.requestId,
    operation,
    method: req.method,
    dialect,
    bucket: found.bucket ?? "",
    key: found.key ?? "",
    query: target.query,
    headers: req.headers,
    body,
    principal,
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
    // A handler may change the dialect of the answer (the responder reads it from the state).
    answer: state,
  };
  return toResponse(await handler(ctx), req.method === "HEAD");
}

async function failure(
  err: unknown,
  req: Request,
  state: RequestState,
  deps: AppDeps,
): Promise<Response> {
  let s3err: S3Error;
  if (err instanceof S3Error) {
    s3err = err;
  } else if (isDiskFull(err)) {
    log("warn", "Disk full: the disk reserve is released for deletes", {
      requestId: state.requestId,
      operation: state.operation,
      error: String(err),
    });
    await deps.reserve.release();
    s3err = new S3Error("InsufficientStorage", "The server has no space left for this request.");
  } else if (metaUnavailable(err)) {
    log("warn", "Metadata database unavailable", {
      requestId: state.requestId,
      operation: state.operation,
      code: "ServiceUnavailable",
      error: metaUnavailable(err)!.message,
    });
    s3err = new S3Error(
      "ServiceUnavailable",
      "The metadata database is unavailable. Please retry.",
      { headers: { "retry-after": "1" } },
    );
  } else {
    log("error", "Request failed", {
      requestId: state.requestId,
      operation: state.operation,
      bucket: state.corsBucket,
      code: "InternalError",
      error: err instanceof Error ? err.stack ?? err.message : String(err),
    });
    s3err = new S3Error("InternalError", "We encountered an internal error. Please try again.");
  }
  const scope = currentAudit();
  if (scope) scope.errorCode = s3err.code;
  state.errorCode = s3err.code;
  const response = errorResponse(s3err, {
    dialect: state.dialect,
    requestId: state.requestId,
    resource: state.resource,
    head: req.method === "HEAD",
  });
  if (s3err instanceof DeleteMarkerError) {
    response.headers.set(h(state.dialect, "delete-marker"), "true");
    response.headers.set(h(state.dialect, "version-id"), s3err.versionId);
  }
  // Whatever the handler left unread is discarded (the reader was released on error).
  if (req.body && !req.body.locked) req.body.cancel().catch(() => {});
  return response;
}

/** CORS headers of an actual request; a failure to read the rules never fails the request. */
async function applyCors(req: Request, response: Response, deps: AppDeps, state: RequestState) {
  const origin = req.headers.get("origin");
  if (origin === null || state.corsBucket === "" || state.operation === "OptionsObject") return;
  try {
    await addCorsHeaders(response.headers, {
      meta: deps.layer.meta,
      bucket: state.corsBucket,
      origin,
      method: req.method,
    });
  } catch (err) {
    log("warn", "CORS rules could not be read", {
      requestId: state.requestId,
      error: err instanceof Error ? err.message : String(err),
    });
  }
}

export async function handleProtocol(
  req: Request,
  info: Deno.ServeHandlerInfo,
  deps: AppDeps,
  known?: Authenticated & { dialect: Dialect },
): Promise<Response> {
  const started = performance.now();
  const state: RequestState = {
    requestId: currentAudit()?.requestId ?? newRequestId(),
    dialect: known?.dialect ?? DIALECTS[deps.config.dialect],
    resource: "/",
    operation: "Unknown",
    corsBucket: "",
  };
  let response: Response;
  try {
    response = await dispatch(req, info, deps, state, known);
  } catch (err) {
    response = await failure(err, req, state, deps);
  }
  // Only requests with an Origin header pay for the rules lookup.
  if (req.headers.has("origin")) await applyCors(req, response, deps, state);
  response.headers.set(h(state.dialect, "request-id"), state.requestId);
  response.headers.set("server", "store");
  deps.ops.metrics.observe({
    operation: state.operation,
    status: response.status,
    seconds: (performance.now() - started) / 1000,
    bytesIn: declaredLength(req.headers),
    bytesOut: declaredLength(response.headers),
  });
  if (state.corsBucket !== "") {
    void deps.bucketLog.note(
      state.corsBucket,
      (owner) => accessRecord(req, info, state, response, { owner, started }),
    );
  }
  noteRequest({
    requestId: state.requestId,
    operation: state.operation,
    bucket: state.corsBucket || undefined,
    key: state.key,
    principal: state.principal,
  });
  if (isDebug()) {
    log("debug", "Request", {
      requestId: state.requestId,
      operation: state.operation,
      method: req.method,
      resource: state.resource,
      status: response.status,
      ms: Math.round(performance.now() - started),
    });
  }
  return response;
}

/** The bucket access record of a request (src/bucketlog/record.ts). */
function accessRecord(
  req: Request,
  info: Deno.ServeHandlerInfo,
  state: RequestState,
  response: Response,
  at: { owner: string; started: number },
): AccessRecord {
  const pathStart = req.url.indexOf("/", req.url.indexOf("//") + 2);
  const uri = pathStart < 0 ? "/" : req.url.slice(pathStart);
  const query = new URLSearchParams(uri.includes("?") ? uri.slice(uri.indexOf("?") + 1) : "");
  const sent = declaredLength(response.headers);
  const range = /\/(\d+)$/.exec(response.headers.get("content-range") ?? "");
  const reads = req.method === "GET" || req.method === "HEAD";
  return {
    bucketOwner: at.owner,
    bucket: state.corsBucket,
    time: new Date(performance.timeOrigin + at.started),
    remoteIp: (info.remoteAddr as Deno.NetAddr).hostname ?? "",
    requester: state.requester,
    requestId: state.requestId,
    operation: operationName(state.operation, req.method, { key: state.key, query }),
    key: state.key,
    requestUri: `${req.method} ${uri} HTTP/1.1`,
    status: response.status,
    errorCode: state.errorCode,
    bytesSent: req.method === "HEAD" ? 0 : sent,
    objectSize: state.key === undefined || response.status >= 300
      ? undefined
      : reads
      ? (range ? Number(range[1]) : sent)
      : declaredLength(req.headers),
    totalMs: Math.round(performance.now() - at.started),
    referer: req.headers.get("referer") ?? undefined,
    userAgent: req.headers.get("user-agent") ?? undefined,
    versionId: response.headers.get(h(state.dialect, "version-id")) ?? undefined,
    signatureVersion: state.auth?.signatureVersion,
    authType: state.auth?.authType,
    hostHeader: req.headers.get("host") ?? undefined,
  };
}
