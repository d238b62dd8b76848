// One access record in the protocol's server access log format: space-separated fields, `-` for
// what is unknown or does not apply, the time in brackets, quoted Request-URI, Referer and
// User-Agent. Also the operation names (REST.METHOD.RESOURCE) and the log object keys.

/** What is known about a request when it has been answered. */
export interface AccessRecord {
  bucketOwner: string;
  bucket: string;
  time: Date;
  remoteIp: string;
  /** The requester's id; undefined for anonymous requests. */
  requester?: string;
  requestId: string;
  /** E.g. REST.GET.OBJECT. */
  operation: string;
  key?: string;
  /** `METHOD /path?query HTTP/1.1`. */
  requestUri: string;
  status: number;
  errorCode?: string;
  bytesSent?: number;
  objectSize?: number;
  totalMs: number;
  turnAroundMs?: number;
  referer?: string;
  userAgent?: string;
  versionId?: string;
  /** SigV2 or SigV4; undefined for anonymous requests. */
  signatureVersion?: string;
  /** AuthHeader or QueryString; undefined for anonymous requests. */
  authType?: string;
  hostHeader?: string;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

const pad = (n: number) => String(n).padStart(2, "0");

/** `[06/Feb/2019:00:00:38 +0000]`. */
export function logTime(d: Date): string {
  return `[${pad(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000]`;
}

/** A bare field: `-` when empty; white space and control characters become `%XX`. */
function bare(value: string | number | undefined): string {
  if (value === undefined || value === "") return "-";
  return String(value).replace(
    // deno-lint-ignore no-control-regex -- control characters are what is escaped
    /[\s\x00-\x1f\x7f]/g,
    (c) => "%" + c.charCodeAt(0).toString(16).padStart(2, "0"),
  );
}

/** A quoted field: `"-"` when empty; quotes and backslashes escaped. */
function quoted(value: string | undefined): string {
  if (value === undefined || value === "") return '"-"';
  // deno-lint-ignore no-control-regex -- control characters are what is escaped
  return `"${value.replace(/[\\"]/g, (c) => "\\" + c).replace(/[\x00-\x1f\x7f]/g, " ")}"`;
}

/** The key URL-encoded, as the format has it. */
function encodedKey(key: string | undefined): string | undefined {
  return key === undefined || key === "" ? undefined : encodeURIComponent(key).replace(/%2F/g, "/");
}

/** One line (without its newline). */
export function formatRecord(r: AccessRecord): string {
  return [
    bare(r.bucketOwner),
    bare(r.bucket),
    logTime(r.time),
    bare(r.remoteIp),
    bare(r.requester),
    bare(r.requestId),
    bare(r.operation),
    bare(encodedKey(r.key)),
    quoted(r.requestUri),
    bare(r.status),
    bare(r.errorCode),
    bare(r.bytesSent === 0 ? undefined : r.bytesSent),
    bare(r.objectSize),
    bare(r.totalMs),
    bare(r.turnAroundMs),
    quoted(r.referer),
    quoted(r.userAgent),
    bare(r.versionId),
    "-", // host id: there is no second request id
    bare(r.signatureVersion),
    "-", // cipher suite: the TLS library does not tell it
    bare(r.authType),
    bare(r.hostHeader),
    "-", // TLS version: the TLS library does not tell it
    "-", // access point ARN: there are no access points
    "-", // ACL required: not tracked
  ].join(" ");
}

/** Resource names of bucket subresources in operation names. */
const SUBRESOURCE: Record<string, string> = {
  versioning: "VERSIONING",
  logging: "LOGGING_STATUS",
  policy: "BUCKETPOLICY",
  policyStatus: "BUCKETPOLICYSTATUS",
  acl: "ACL",
  cors: "CORS",
  lifecycle: "LIFECYCLE",
  tagging: "TAGGING",
  website: "WEBSITE",
  encryption: "ENCRYPTION",
  notification: "NOTIFICATION",
  "object-lock": "OBJECT_LOCK_CONFIGURATION",
  publicAccessBlock: "PUBLIC_ACCESS_BLOCK",
  ownershipControls: "OWNERSHIP_CONTROLS",
  location: "LOCATION",
  versions: "BUCKETVERSIONS",
  uploads: "UPLOADS",
};

/** Operation names that are not `REST.{METHOD}.{subresource or OBJECT/BUCKET}`. */
const SPECIAL: Record<string, string> = {
  CopyObject: "REST.COPY.OBJECT",
  DeleteObjects: "REST.POST.MULTI_OBJECT_DELETE",
  CreateMultipartUpload: "REST.POST.UPLOADS",
  UploadPart: "REST.PUT.PART",
  UploadPartCopy: "REST.COPY.PART",
  CompleteMultipartUpload: "REST.POST.UPLOAD",
  AbortMultipartUpload: "REST.DELETE.UPLOAD",
  ListParts: "REST.GET.UPLOAD",
  GetObjectAcl: "REST.GET.OBJECT_ACL",
  PutObjectAcl: "REST.PUT.OBJECT_ACL",
  GetObjectTagging: "REST.GET.OBJECT_TAGGING",
  PutObjectTagging: "REST.PUT.OBJECT_TAGGING",
  DeleteObjectTagging: "REST.DELETE.OBJECT_TAGGING",
  SelectObjectContent: "REST.POST.SELECT",
  PostObject: "REST.POST.OBJECT",
};

/** The operation field for a request: e.g. REST.GET.OBJECT, REST.PUT.VERSIONING. */
export function operationName(
  operation: string,
  method: string,
  opts: { key?: string; query: URLSearchParams },
): string {
  const special = SPECIAL[operation];
  if (special) return special;
  if (opts.key) return `REST.${method}.OBJECT`;
  for (const [name, resource] of Object.entries(SUBRESOURCE)) {
    if (opts.query.has(name)) return `REST.${method}.${resource}`;
  }
  return `REST.${method}.BUCKET`;
}

/**
 * The key of a log object: `{prefix}YYYY-MM-DD-hh-mm-ss-{id}`, or with the partitioned format
 * `{prefix}{owner}/{region}/{bucket}/YYYY/MM/DD/YYYY-MM-DD-hh-mm-ss-{id}`.
 */
export function logObjectKey(
  config: { targetPrefix: string; keyFormat: "simple" | "partitioned" },
  source: { owner: string; region: string; bucket: string },
  at: Date,
  id: string,
): string {
  const y = at.getUTCFullYear();
  const mo = pad(at.getUTCMonth() + 1);
  const d = pad(at.getUTCDate());
  const stamp = `${y}-${mo}-${d}-${pad(at.getUTCHours())}-${pad(at.getUTCMinutes())}-` +
    `${pad(at.getUTCSeconds())}-${id}`;
  if (config.keyFormat === "simple") return config.targetPrefix + stamp;
  return `${config.targetPrefix}${source.owner}/${source.region}/${source.bucket}/${y}/${mo}/${d}/${stamp}`;
}
