// The two spellings of the protocol. This is the only module that spells a vendor prefix:
// everything else asks a Dialect for the header, query parameter, algorithm or namespace it needs.

export type DialectName = "store" | "amz";

export interface Dialect {
  readonly name: DialectName;
  /** Lower-case header prefix, e.g. `x-store-`. */
  readonly headerPrefix: string;
  /** Presigned query parameter prefix, e.g. `X-Store-`. */
  readonly queryPrefix: string;
  /** Signature algorithm name, e.g. `STORE4-HMAC-SHA256`. */
  readonly algorithm: string;
  /** Last element of the credential scope, e.g. `store4_request`. */
  readonly scopeTerminator: string;
  /** Prefix of the secret when deriving the signing key, e.g. `STORE4`. */
  readonly keySeed: string;
  /** Services accepted inside the credential scope. */
  readonly services: readonly string[];
  /** XML namespace of response documents. */
  readonly xmlns: string;
  /** XML namespace of the token service's (STS) documents. */
  readonly stsXmlns: string;
  /** Prefix of policy actions and service condition keys, e.g. `store:` (`store:GetObject`). */
  readonly actionPrefix: string;
  /** Vendor word of the SSE-KMS key id header, e.g. `store` (`x-store-server-side-encryption-store-kms-key-id`). */
  readonly kmsVendor: string;
  /** Prefix of global policy condition keys, e.g. `store:` (`store:SourceIp`). */
  readonly globalKeyPrefix: string;
  /** Bucket/object ARN prefix, e.g. `arn:store:store:::`. */
  readonly resourceArnPrefix: string;
  /** User ARN prefix, e.g. `arn:store:iam::user/`. */
  readonly userArnPrefix: string;
  /** Key of a policy Principal object, e.g. `Store` in `{"Store": "arn:..."}`. */
  readonly principalKey: string;
  /** Prefix of ACL group URIs, e.g. `http://acs.store.local/groups/`. */
  readonly groupUriPrefix: string;
  /** Prefix of notification event names, e.g. `store:` (`store:ObjectCreated:Put`). */
  readonly eventPrefix: string;
  /** ARN partition of notification destinations, e.g. `store` (`arn:store:sqs:...`). */
  readonly arnPartition: string;
  /** `eventSource` of event records, e.g. `store:store`. */
  readonly eventSource: string;
  /** `Service` of the test event sent when a notification configuration is set. */
  readonly eventService: string;
  /** Content coding of a streaming (chunked) upload body, e.g. `store-chunked`. */
  readonly chunkedEncoding: string;
  /** Payload hash of a streaming upload with signed chunks. */
  readonly streamingPayload: string;
  /** Payload hash of a streaming upload with signed chunks and a signed trailer. */
  readonly streamingPayloadTrailer: string;
  /** First line of a chunk's string to sign, e.g. `STORE4-HMAC-SHA256-PAYLOAD`. */
  readonly chunkAlgorithm: string;
  /** First line of a trailer's string to sign, e.g. `STORE4-HMAC-SHA256-TRAILER`. */
  readonly trailerAlgorithm: string;
  /**
   * Signature Version 2 names (`Authorization: AWS <key>:<signature>`, query `AWSAccessKeyId`,
   * form field `AWSAccessKeyId`); only the amz dialect has them.
   */
  readonly sigV2?: { readonly scheme: string; readonly accessKeyField: string };
}

const STORE: Dialect = {
  name: "store",
  headerPrefix: "x-store-",
  queryPrefix: "X-Store-",
  algorithm: "STORE4-HMAC-SHA256",
  scopeTerminator: "store4_request",
  keySeed: "STORE4",
  services: ["store", "s3"],
  xmlns: "http://store.local/doc/2006-03-01/",
  stsXmlns: "http://store.local/doc/sts/2011-06-15/",
  actionPrefix: "store:",
  kmsVendor: "store",
  globalKeyPrefix: "store:",
  resourceArnPrefix: "arn:store:store:::",
  userArnPrefix: "arn:store:iam::user/",
  principalKey: "Store",
  groupUriPrefix: "http://acs.store.local/groups/",
  eventPrefix: "store:",
  arnPartition: "store",
  eventSource: "store:store",
  eventService: "store",
  chunkedEncoding: "store-chunked",
  streamingPayload: "STREAMING-STORE4-HMAC-SHA256-PAYLOAD",
  streamingPayloadTrailer: "STREAMING-STORE4-HMAC-SHA256-PAYLOAD-TRAILER",
  chunkAlgorithm: "STORE4-HMAC-SHA256-PAYLOAD",
  trailerAlgorithm: "STORE4-HMAC-SHA256-TRAILER",
};

const AMZ: Dialect = {
  name: "amz",
  headerPrefix: "x-amz-",
  queryPrefix: "X-Amz-",
  algorithm: "AWS4-HMAC-SHA256",
  scopeTerminator: "aws4_request",
  keySeed: "AWS4",
  services: ["s3", "store"],
  xmlns: "http://s3.amazonaws.com/doc/2006-03-01/",
  stsXmlns: "https://sts.amazonaws.com/doc/2011-06-15/",
  actionPrefix: "s3:",
  kmsVendor: "aws",
  globalKeyPrefix: "aws:",
  resourceArnPrefix: "arn:aws:s3:::",
  userArnPrefix: "arn:aws:iam::user/",
  principalKey: "AWS",
  groupUriPrefix: "http://acs.amazonaws.com/groups/",
  eventPrefix: "s3:",
  arnPartition: "aws",
  eventSource: "aws:s3",
  eventService: "Amazon S3",
  chunkedEncoding: "aws-chunked",
  streamingPayload: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
  streamingPayloadTrailer: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
  chunkAlgorithm: "AWS4-HMAC-SHA256-PAYLOAD",
  trailerAlgorithm: "AWS4-HMAC-SHA256-TRAILER",
  sigV2: { scheme: "AWS", accessKeyField: "AWSAccessKeyId" },
};

export const DIALECTS: Record<DialectName, Dialect> = { store: STORE, amz: AMZ };

/** The full name of a vendor header, e.g. `h(d, "meta-")` -> `x-amz-meta-`. */
export function h(dialect: Dialect, suffix: string): string {
  return dialect.headerPrefix + suffix;
}

/** The full name of a presigned query parameter, e.g. `q(d, "Signature")`. */
export function q(dialect: Dialect, suffix: string): string {
  return dialect.queryPrefix + suffix;
}

function byAlgorithm(text: string): Dialect | undefined {
  if (text.startsWith(STORE.algorithm)) return STORE;
  if (text.startsWith(AMZ.algorithm)) return AMZ;
  if (text.startsWith(AMZ.sigV2!.scheme + " ")) return AMZ;
  return undefined;
}

/**
 * Picks the dialect of a request: the signature algorithm decides; unsigned requests are judged
 * by the prefix of their headers or query parameters; otherwise the configured default.
 */
export function detectDialect(
  headers: Headers,
  query: URLSearchParams,
  fallback: Dialect,
): Dialect {
  const auth = headers.get("authorization");
  if (auth) {
    const d = byAlgorithm(auth);
    if (d) return d;
  }
  for (const name of [STORE, AMZ].map((d) => q(d, "Algorithm"))) {
    const alg = query.get(name);
    if (alg) return byAlgorithm(alg) ?? (name.startsWith(STORE.queryPrefix) ? STORE : AMZ);
  }
  if (query.has(AMZ.sigV2!.accessKeyField)) return AMZ;
  let byHeader: Dialect | undefined;
  headers.forEach((_value, name) => {
    if (byHeader) return;
    if (name.startsWith(STORE.headerPrefix)) byHeader = STORE;
    else if (name.startsWith(AMZ.headerPrefix)) byHeader = AMZ;
  });
  if (byHeader) return byHeader;
  for (const name of query.keys()) {
    if (name.startsWith(STORE.queryPrefix)) return STORE;
    if (name.startsWith(AMZ.queryPrefix)) return AMZ;
  }
  return fallback;
}

/** Error codes that carry the vendor name are spelled per dialect. */
export function dialectErrorCode(dialect: Dialect, code: string): string {
  if (code === "ContentSHA256Mismatch") {
    return dialect.name === "amz" ? "XAmzContentSHA256Mismatch" : "XStoreContentSHA256Mismatch";
  }
  return code;
}
