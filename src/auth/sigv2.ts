// Signature Version 2 (HMAC-SHA1) for old clients: the `Authorization: AWS <key>:<signature>`
// header and the query form (`AWSAccessKeyId`, `Expires`, `Signature`), as the protocol's
// "Signing and authenticating REST requests" reference describes them. Only the amz dialect
// has names for it (`Dialect.sigV2`); STORE_SIGV2=off refuses it before anything is checked.
import { createHmac, timingSafeEqual } from "node:crypto";
import { type Dialect, h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { MAX_CLOCK_SKEW_MS, type SignatureInput, type SignedRequest } from "./sigv4.ts";

/**
 * Query parameters that are part of the canonicalized resource when present (the reference's
 * list, as widely used clients sign it); all other parameters are not signed.
 */
export const SIGNED_SUBRESOURCES: ReadonlySet<string> = new Set([
  "accelerate",
  "acl",
  "analytics",
  "cors",
  "defaultObjectAcl",
  "delete",
  "inventory",
  "lifecycle",
  "location",
  "logging",
  "metrics",
  "notification",
  "object-lock",
  "partNumber",
  "policy",
  "replication",
  "requestPayment",
  "response-cache-control",
  "response-content-disposition",
  "response-content-encoding",
  "response-content-language",
  "response-content-type",
  "response-expires",
  "restore",
  "select",
  "select-type",
  "storageClass",
  "tagging",
  "torrent",
  "uploadId",
  "uploads",
  "versionId",
  "versioning",
  "versions",
  "website",
]);

/** Methods a V2 query-signed URL may use (as for V4 presigned URLs). */
const QUERY_METHODS = ["GET", "HEAD", "PUT", "DELETE"];

/** The protocol's answer to a V2 signature where only V4 is accepted (STORE_SIGV2=off). */
export function sigV2Refused(dialect: Dialect): S3Error {
  return new S3Error(
    "InvalidRequest",
    "The authorization mechanism you have provided is not supported. Please use " +
      `${dialect.algorithm}.`,
  );
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new S3Error("InvalidURI", "Couldn't parse the specified URI.");
  }
}

/**
 * The path exactly as received plus the signed subresources, sorted by name, with decoded
 * values (`?acl`, `?partNumber=2&uploadId=x`).
 */
export function canonicalResource(rawPath: string, rawQuery: string): string {
  const parts: [string, string | undefined][] = [];
  for (const part of rawQuery.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    const name = decode(eq < 0 ? part : part.slice(0, eq));
    if (!SIGNED_SUBRESOURCES.has(name)) continue;
    parts.push([name, eq < 0 ? undefined : decode(part.slice(eq + 1))]);
  }
  parts.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const query = parts.map(([n, v]) => (v === undefined ? n : `${n}=${v}`)).join("&");
  return query === "" ? rawPath : `${rawPath}?${query}`;
}

/** `name:value\n` for every vendor header, names lower-case and sorted. */
function canonicalVendorHeaders(headers: Headers, d: Dialect): string {
  const lines: string[] = [];
  headers.forEach((value, name) => {
    if (name.startsWith(d.headerPrefix)) lines.push(`${name}:${value.trim()}\n`);
  });
  return lines.sort().join("");
}

/**
 * Method, Content-MD5, Content-Type, the date line (empty when the vendor date header is sent;
 * `Expires` for query signatures), the vendor headers and the canonicalized resource.
 */
export function stringToSignV2(
  input: Pick<SignatureInput, "method" | "rawPath" | "rawQuery" | "headers" | "dialect">,
  dateLine: string,
): string {
  return [
    input.method,
    input.headers.get("content-md5") ?? "",
    input.headers.get("content-type") ?? "",
    dateLine,
    canonicalVendorHeaders(input.headers, input.dialect) +
    canonicalResource(input.rawPath, input.rawQuery),
  ].join("\n");
}

/** Base64 HMAC-SHA1 of the string to sign. */
export function signV2(secret: string, stringToSign: string): string {
  return createHmac("sha1", secret).update(stringToSign, "utf8").digest("base64");
}

/** Constant-time comparison of two base64 signatures. */
export function sameSignatureV2(expected: string, given: string): boolean {
  const a = new TextEncoder().encode(expected);
  const b = new TextEncoder().encode(given);
  return a.byteLength === b.byteLength && timingSafeEqual(a, b);
}

export function signatureMismatch(): S3Error {
  return new S3Error(
    "SignatureDoesNotMatch",
    "The request signature we calculated does not match the signature you provided. " +
      "Check your key and signing method.",
  );
}

async function check(
  input: SignatureInput,
  opts: { accessKey: string; signature: string; dateLine: string },
): Promise<void> {
  const secret = await input.secretFor(opts.accessKey);
  if (secret === undefined) {
    throw new S3Error(
      "InvalidAccessKeyId",
      "The access key Id you provided does not exist in our records.",
    );
  }
  if (sameSignatureV2(signV2(secret, stringToSignV2(input, opts.dateLine)), opts.signature)) return;
  // A bucket addressed path-style (`/bucket`) is the resource `/bucket/` to clients that sign
  // as for a virtual-hosted bucket (the reference's `/awsexamplebucket1/` with path `/`).
  if (/^\/[^/]+$/.test(input.rawPath)) {
    const slashed = { ...input, rawPath: input.rawPath + "/" };
    if (sameSignatureV2(signV2(secret, stringToSignV2(slashed, opts.dateLine)), opts.signature)) {
      return;
    }
  }
  throw signatureMismatch();
}

function signedPayload(input: SignatureInput): string | undefined {
  const value = input.headers.get(h(input.dialect, "content-sha256")) ?? "";
  return /^[0-9a-f]{64}$/.test(value) ? value : undefined;
}

/** Verifies `Authorization: AWS <access key>:<base64 signature>`. */
export async function verifyV2Header(
  input: SignatureInput,
  authorization: string,
): Promise<SignedRequest> {
  const scheme = input.dialect.sigV2?.scheme;
  const m = scheme ? /^(\S+) ([^:\s]+):(\S+)$/.exec(authorization) : null;
  if (!m || m[1] !== scheme) {
    throw new S3Error("InvalidArgument", "The authorization header is malformed.");
  }
  const vendorDate = input.headers.get(h(input.dialect, "date"));
  const when = Date.parse(vendorDate ?? input.headers.get("date") ?? "");
  if (Number.isNaN(when)) {
    throw new S3Error(
      "AccessDenied",
      `The request must carry a valid Date or ${h(input.dialect, "date")} header.`,
    );
  }
  if (Math.abs(input.now - when) > MAX_CLOCK_SKEW_MS) {
    throw new S3Error(
      "RequestTimeTooSkewed",
      "The difference between the request time and the current time is too large.",
    );
  }
  const dateLine = vendorDate !== null ? "" : input.headers.get("date")!;
  await check(input, { accessKey: m[2], signature: m[3], dateLine });
  return { accessKey: m[2], presigned: false, payloadSha256: signedPayload(input) };
}

/** Verifies query authentication with `AWSAccessKeyId`, `Expires` and `Signature`. */
export async function verifyV2Query(
  input: SignatureInput,
  query: URLSearchParams,
): Promise<SignedRequest> {
  const accessKey = query.get(input.dialect.sigV2?.accessKeyField ?? "");
  const expires = query.get("Expires");
  const signature = query.get("Signature");
  if (!accessKey || !expires || !signature) {
    throw new S3Error(
      "AccessDenied",
      "Query-string authentication requires the Signature, Expires and " +
        `${input.dialect.sigV2?.accessKeyField} parameters.`,
    );
  }
  if (!QUERY_METHODS.includes(input.method)) {
    throw new S3Error("AccessDenied", `Presigned ${input.method} requests are not allowed.`);
  }
  if (!/^\d{1,12}$/.test(expires)) {
    throw new S3Error("AccessDenied", "Expires must be a number of seconds since the epoch.");
  }
  await check(input, { accessKey, signature, dateLine: expires });
  const until = Number(expires) * 1000;
  if (input.now > until) {
    throw new S3Error("AccessDenied", "Request has expired", {
      details: {
        Expires: new Date(until).toISOString(),
        ServerTime: new Date(input.now).toISOString(),
      },
    });
  }
  return { accessKey, presigned: true, payloadSha256: signedPayload(input) };
}

/** True when the request carries a V2 header or query signature in this dialect. */
export function usesSigV2(
  d: Dialect,
  opts: { authorization: string | null; query: URLSearchParams },
): { header: boolean; query: boolean } {
  const v2 = d.sigV2;
  return {
    header: !!v2 && !!opts.authorization?.startsWith(v2.scheme + " "),
    query: !!v2 && opts.query.has(v2.accessKeyField),
  };
}
