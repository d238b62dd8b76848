// Request line -> operation name: method + path shape + subresource query keyword + headers.

export interface Route {
  operation: string;
  bucket?: string;
  key?: string;
}

type Methods = Partial<Record<string, string>>;

const BUCKET_SUBRESOURCES: Record<string, Methods> = {
  location: { GET: "GetBucketLocation" },
  versioning: { GET: "GetBucketVersioning", PUT: "PutBucketVersioning" },
  versions: { GET: "ListObjectVersions" },
  policy: { GET: "GetBucketPolicy", PUT: "PutBucketPolicy", DELETE: "DeleteBucketPolicy" },
  policyStatus: { GET: "GetBucketPolicyStatus" },
  acl: { GET: "GetBucketAcl", PUT: "PutBucketAcl" },
  cors: { GET: "GetBucketCors", PUT: "PutBucketCors", DELETE: "DeleteBucketCors" },
  lifecycle: {
    GET: "GetBucketLifecycleConfiguration",
    PUT: "PutBucketLifecycleConfiguration",
    DELETE: "DeleteBucketLifecycle",
  },
  tagging: { GET: "GetBucketTagging", PUT: "PutBucketTagging", DELETE: "DeleteBucketTagging" },
  "object-lock": { GET: "GetObjectLockConfiguration", PUT: "PutObjectLockConfiguration" },
  notification: {
    GET: "GetBucketNotificationConfiguration",
    PUT: "PutBucketNotificationConfiguration",
  },
  uploads: { GET: "ListMultipartUploads" },
  delete: { POST: "DeleteObjects" },
  encryption: {
    GET: "GetBucketEncryption",
    PUT: "PutBucketEncryption",
    DELETE: "DeleteBucketEncryption",
  },
  replication: {
    GET: "GetBucketReplication",
    PUT: "PutBucketReplication",
    DELETE: "DeleteBucketReplication",
  },
  logging: { GET: "GetBucketLogging", PUT: "PutBucketLogging" },
  website: { GET: "GetBucketWebsite", PUT: "PutBucketWebsite", DELETE: "DeleteBucketWebsite" },
  accelerate: { GET: "GetBucketAccelerateConfiguration", PUT: "PutBucketAccelerateConfiguration" },
  requestPayment: { GET: "GetBucketRequestPayment", PUT: "PutBucketRequestPayment" },
  ownershipControls: {
    GET: "GetBucketOwnershipControls",
    PUT: "PutBucketOwnershipControls",
    DELETE: "DeleteBucketOwnershipControls",
  },
  publicAccessBlock: {
    GET: "GetPublicAccessBlock",
    PUT: "PutPublicAccessBlock",
    DELETE: "DeletePublicAccessBlock",
  },
};

const OBJECT_SUBRESOURCES: Record<string, Methods> = {
  acl: { GET: "GetObjectAcl", PUT: "PutObjectAcl" },
  tagging: { GET: "GetObjectTagging", PUT: "PutObjectTagging", DELETE: "DeleteObjectTagging" },
  retention: { GET: "GetObjectRetention", PUT: "PutObjectRetention" },
  "legal-hold": { GET: "GetObjectLegalHold", PUT: "PutObjectLegalHold" },
  uploads: { POST: "CreateMultipartUpload" },
  uploadId: {
    GET: "ListParts",
    PUT: "UploadPart",
    POST: "CompleteMultipartUpload",
    DELETE: "AbortMultipartUpload",
  },
  select: { POST: "SelectObjectContent" },
  restore: { POST: "RestoreObject" },
  attributes: { GET: "GetObjectAttributes" },
  torrent: { GET: "GetObjectTorrent" },
};

export const METHODS = ["GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS"];

function bySubresource(
  table: Record<string, Methods>,
  method: string,
  query: URLSearchParams,
): string | undefined | null {
  for (const name of Object.keys(table)) {
    if (query.has(name)) return table[name][method] ?? null;
  }
  return undefined;
}

/**
 * Resolves an operation. `null` operation means the method is not allowed on that resource.
 * `path` is already percent-decoded.
 */
export function route(
  method: string,
  path: string,
  query: URLSearchParams,
  copySource: boolean,
): Route | null {
  const slash = path.indexOf("/", 1);
  const bucket = slash < 0 ? path.slice(1) : path.slice(1, slash);
  const key = slash < 0 ? "" : path.slice(slash + 1);
  if (method === "OPTIONS") {
    // A CORS preflight, whatever the subresource: the browser asks before the actual request.
    return bucket === "" ? null : { operation: "OptionsObject", bucket, key: key || undefined };
  }
  if (bucket === "") {
    if (method === "GET") return { operation: "ListBuckets" };
    if (method === "POST") return { operation: "PostObject" };
    return null;
  }
  if (key === "") {
    const sub = bySubresource(BUCKET_SUBRESOURCES, method, query);
    if (sub === null) return null;
    if (sub) return { operation: sub, bucket };
    const plain: Methods = {
      GET: query.get("list-type") !== null ? "ListObjectsV2" : "ListObjects",
      PUT: "CreateBucket",
      DELETE: "DeleteBucket",
      HEAD: "HeadBucket",
      POST: "PostObject",
    };
    const op = plain[method];
    return op ? { operation: op, bucket } : null;
  }
  const sub = bySubresource(OBJECT_SUBRESOURCES, method, query);
  if (sub === null) return null;
  if (sub === "UploadPart" && copySource) return { operation: "UploadPartCopy", bucket, key };
  if (sub) return { operation: sub, bucket, key };
  const plain: Methods = {
    GET: "GetObject",
    HEAD: "HeadObject",
    PUT: copySource ? "CopyObject" : "PutObject",
    DELETE: "DeleteObject",
  };
  const op = plain[method];
  return op ? { operation: op, bucket, key } : null;
}
