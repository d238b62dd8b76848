// Signature Version 4: header and presigned (query) authentication, in either dialect.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { ChunkSigner } from "../http/chunked_body.ts";
import { type Dialect, h, q } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";

export const MAX_CLOCK_SKEW_MS = 15 * 60 * 1000;
export const MAX_PRESIGN_EXPIRES_S = 7 * 24 * 3600;
export const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
/** Payload hash of a streaming upload whose chunks are not signed, with trailing headers. */
export const STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/** What a verified signature tells the rest of the request. */
export interface SignedRequest {
  accessKey: string;
  presigned: boolean;
  /** Hex SHA-256 the body must have, or undefined when the payload is unsigned. */
  payloadSha256?: string;
  /** Present when the body is a streaming (chunked) upload. */
  streaming?: Streaming;
}

/** How a streaming upload body is framed and signed. */
export interface Streaming {
  /** Present when every chunk (and the trailer, if any) carries a signature. */
  signer?: ChunkSigner;
  /** True when trailing headers follow the last chunk. */
  trailer: boolean;
}

export interface SignatureInput {
  method: string;
  /** The request path exactly as received (still percent-encoded). */
  rawPath: string;
  /** The query string exactly as received, without the leading `?`. */
  rawQuery: string;
  headers: Headers;
  dialect: Dialect;
  region: string;
  now: number;
  secretFor: (accessKey: string) => Promise<string | undefined>;
  /** Services accepted in the credential scope instead of the dialect's (the token service). */
  services?: readonly string[];
  /** The body's SHA-256 (hex) when the server has read it: clients of the token service send
   * no content-sha256 header. */
  payloadSha256?: string;
}

/** Values that are their own encoding (most query values: upload ids, part numbers, prefixes). */
const UNRESERVED_ONLY = /^[A-Za-z0-9\-._~]*$/;
const UNRESERVED_OR_SLASH = /^[A-Za-z0-9\-._~/]*$/;
const HEX_DIGITS = "0123456789ABCDEF";
const utf8 = new TextEncoder();

function unreserved(byte: number): boolean {
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) ||
    (byte >= 0x61 && byte <= 0x7a) || byte === 0x2d || byte === 0x2e || byte === 0x5f ||
    byte === 0x7e;
}

/** Percent-encodes per SigV4: everything but unreserved characters, upper-case hex. */
export function uriEncode(value: string, keepSlash = false): string {
  if ((keepSlash ? UNRESERVED_OR_SLASH : UNRESERVED_ONLY).test(value)) return value;
  let out = "";
  for (const byte of utf8.encode(value)) {
    if (unreserved(byte) || (keepSlash && byte === 0x2f)) out += String.fromCharCode(byte);
    else out += "%" + HEX_DIGITS[byte >> 4] + HEX_DIGITS[byte & 15];
  }
  return out;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new S3Error("InvalidURI", "Couldn't parse the specified URI.");
  }
}

/** A path of unreserved characters and slashes only: its own canonical form. */
const PLAIN_PATH = /^[A-Za-z0-9\-._~/]*$/;

export function canonicalUri(rawPath: string): string {
  if (PLAIN_PATH.test(rawPath)) return rawPath;
  return rawPath.split("/").map((s) => uriEncode(safeDecode(s))).join("/");
}

export function canonicalQuery(rawQuery: string, skip?: string): string {
  return joinedQuery(encodedPairs(rawQuery, skip), false);
}

/** The query's parameters (but `skip`), decoded and encoded again per SigV4, in request order. */
function encodedPairs(rawQuery: string, skip?: string): [string, string][] {
  const pairs: [string, string][] = [];
  for (const part of rawQuery.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    const key = safeDecode(eq < 0 ? part : part.slice(0, eq));
    if (key === skip) continue;
    const value = eq < 0 ? "" : safeDecode(part.slice(eq + 1));
    pairs.push([uriEncode(key), uriEncode(value)]);
  }
  return pairs;
}

/** `pairs` sorted by key (and by value too unless `byKeyOnly`; the sort keeps ties in order). */
function joinedQuery(pairs: [string, string][], byKeyOnly: boolean): string {
  return [...pairs].sort((a, b) => {
    if (a[0] !== b[0]) return a[0] < b[0] ? -1 : 1;
    if (byKeyOnly || a[1] === b[1]) return 0;
    return a[1] < b[1] ? -1 : 1;
  }).map(([k, v]) => `${k}=${v}`).join("&");
}

/**
 * The canonical query strings a signature may cover. The protocol sorts repeated parameters by
 * value; MinIO's clients keep them in request order (Go's url.Values), and `mc watch` repeats
 * `events`, so that order is accepted too.
 */
function canonicalQueries(rawQuery: string, skip?: string): string[] {
  const pairs = encodedPairs(rawQuery, skip);
  const sorted = joinedQuery(pairs, false);
  const inOrder = joinedQuery(pairs, true);
  return inOrder === sorted ? [sorted] : [sorted, inOrder];
}

function canonicalHeaders(headers: Headers, signed: string[]): string {
  return signed.map((name) => {
    const value = (headers.get(name) ?? "").trim().replace(/\s+/g, " ");
    return `${name}:${value}\n`;
  }).join("");
}

const signingKeys = new Map<string, Uint8Array>();

/** The SigV4 signing key of a credential scope (cached per secret, day, region and service). */
export function signingKey(
  dialect: Dialect,
  secret: string,
  scope: { date: string; region: string; service: string },
): Uint8Array {
  const cacheKey = [dialect.name, secret, scope.date, scope.region, scope.service].join("\n");
  let key = signingKeys.get(cacheKey);
  if (!key) {
    const kDate = createHmac("sha256", dialect.keySeed + secret).update(scope.date).digest();
    const kRegion = createHmac("sha256", kDate).update(scope.region).digest();
    const kService = createHmac("sha256", kRegion).update(scope.service).digest();
    key = createHmac("sha256", kService).update(dialect.scopeTerminator).digest();
    if (signingKeys.size > 1000) signingKeys.clear();
    signingKeys.set(cacheKey, key);
  }
  return key;
}

/** Parses `YYYYMMDDTHHMMSSZ` into epoch milliseconds, or NaN. */
export function parseAmzDate(value: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return NaN;
  return Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
}

export interface Credential {
  accessKey: string;
  date: string;
  region: string;
  service: string;
}

function parseCredential(
  value: string,
  input: SignatureInput,
  errorCode: string,
): Credential {
  const parts = value.split("/");
  if (parts.length !== 5 || parts[0] === "") {
    throw new S3Error(errorCode, `The credential "${value}" is malformed.`);
  }
  const [accessKey, date, region, service, terminator] = parts;
  if (!/^\d{8}$/.test(date)) throw new S3Error(errorCode, "The credential date is malformed.");
  if (terminator !== input.dialect.scopeTerminator) {
    throw new S3Error(
      errorCode,
      `The credential terminator must be "${input.dialect.scopeTerminator}".`,
    );
  }
  if (region !== input.region) {
    throw new S3Error(
      errorCode,
      `The region '${region}' is wrong; expecting '${input.region}'.`,
      { details: { Region: input.region } },
    );
  }
  if (!(input.services ?? input.dialect.services).includes(service)) {
    throw new S3Error(errorCode, `The service '${service}' is not served here.`);
  }
  return { accessKey, date, region, service };
}

async function verify(
  input: SignatureInput,
  opts: {
    credential: Credential;
    amzDate: string;
    signedHeaders: string[];
    signature: string;
    canonicalQueryStrings: string[];
    payload: string;
  },
): Promise<Uint8Array> {
  const secret = await input.secretFor(opts.credential.accessKey);
  if (secret === undefined) {
    throw new S3Error(
      "InvalidAccessKeyId",
      "The access key Id you provided does not exist in our records.",
    );
  }
  const given = /^[0-9a-f]{64}$/.test(opts.signature)
    ? Uint8Array.fromHex(opts.signature)
    : undefined;
  const matches = (query: string) => {
    const canonicalRequest = [
      input.method,
      canonicalUri(input.rawPath),
      query,
      canonicalHeaders(input.headers, opts.signedHeaders),
      opts.signedHeaders.join(";"),
      opts.payload,
    ].join("\n");
    const expected = computeSignature(input.dialect, secret, {
      scope: opts.credential,
      amzDate: opts.amzDate,
      canonicalRequest,
    });
    return given !== undefined && timingSafeEqual(expected, given);
  };
  if (!opts.canonicalQueryStrings.some(matches)) {
    throw new S3Error(
      "SignatureDoesNotMatch",
      "The request signature we calculated does not match the signature you provided. " +
        "Check your key and signing method.",
    );
  }
  return signingKey(input.dialect, secret, opts.credential);
}

/** The signature of a canonical request: string to sign, then HMAC with the signing key. */
export function computeSignature(
  dialect: Dialect,
  secret: string,
  opts: {
    scope: { date: string; region: string; service: string };
    amzDate: string;
    canonicalRequest: string;
  },
): Uint8Array {
  const { date, region, service } = opts.scope;
  const stringToSign = [
    dialect.algorithm,
    opts.amzDate,
    `${date}/${region}/${service}/${dialect.scopeTerminator}`,
    createHash("sha256").update(opts.canonicalRequest).digest("hex"),
  ].join("\n");
  return createHmac("sha256", signingKey(dialect, secret, opts.scope)).update(stringToSign)
    .digest();
}

function parseSignedHeaders(value: string | undefined, errorCode: string): string[] {
  if (!value) throw new S3Error(errorCode, "SignedHeaders is missing.");
  const names = value.split(";");
  if (!names.includes("host")) {
    throw new S3Error(errorCode, "The host header must be signed.");
  }
  if (names.some((n) => n === "" || n !== n.toLowerCase())) {
    throw new S3Error(errorCode, "SignedHeaders is malformed.");
  }
  return names;
}

/**
 * Every vendor header present must be signed: otherwise a holder of a signature could add
 * meaning the signer never approved (metadata, a copy source, ...).
 */
function requireVendorHeadersSigned(input: SignatureInput, signedHeaders: string[]): void {
  // forEach: several times cheaper than the Headers iterator (which sorts on every call).
  let unsigned: string | undefined;
  input.headers.forEach((_value, name) => {
    if (name.startsWith(input.dialect.headerPrefix) && !signedHeaders.includes(name)) {
      unsigned ??= name;
    }
  });
  if (unsigned !== undefined) {
    throw new S3Error(
      "AccessDenied",
      `There were headers present which were not signed: ${unsigned}`,
    );
  }
}

/** Verifies an `Authorization: <ALG> Credential=..., SignedHeaders=..., Signature=...` header. */
export async function verifyHeaderAuth(
  input: SignatureInput,
  authorization: string,
): Promise<SignedRequest> {
  const d = input.dialect;
  const code = "AuthorizationHeaderMalformed";
  if (!authorization.startsWith(d.algorithm + " ")) {
    throw new S3Error(code, `The authorization header must use ${d.algorithm}.`);
  }
  const fields: Record<string, string> = {};
  for (const part of authorization.slice(d.algorithm.length + 1).split(",")) {
    const eq = part.indexOf("=");
    if (eq > 0) fields[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  if (!fields.Credential || !fields.Signature) {
    throw new S3Error(code, "The authorization header is malformed.");
  }
  const credential = parseCredential(fields.Credential, input, code);
  const signedHeaders = parseSignedHeaders(fields.SignedHeaders, code);
  requireVendorHeadersSigned(input, signedHeaders);
  const amzDate = input.headers.get(h(d, "date"));
  const when = amzDate ? parseAmzDate(amzDate) : Date.parse(input.headers.get("date") ?? "");
  if (Number.isNaN(when)) {
    throw new S3Error("AccessDenied", `The request must carry a valid ${h(d, "date")} header.`);
  }
  const requestDate = amzDate ?? toAmzDate(when);
  if (requestDate.slice(0, 8) !== credential.date) {
    throw new S3Error(code, "The credential date does not match the request date.");
  }
  if (Math.abs(input.now - when) > MAX_CLOCK_SKEW_MS) {
    throw new S3Error(
      "RequestTimeTooSkewed",
      "The difference between the request time and the current time is too large.",
    );
  }
  const payload = input.payloadSha256 ?? input.headers.get(h(d, "content-sha256"));
  if (!payload) {
    throw new S3Error(
      "InvalidRequest",
      `Missing required header for this request: ${h(d, "content-sha256")}`,
    );
  }
  const streaming = streamingKind(d, payload);
  if (!streaming && payload !== UNSIGNED_PAYLOAD && !/^[0-9a-f]{64}$/.test(payload)) {
    if (payload.startsWith("STREAMING-")) {
      throw new S3Error("NotImplemented", `The payload hash ${payload} is not supported.`);
    }
    throw new S3Error("InvalidArgument", `${h(d, "content-sha256")} must be a SHA-256 hex digest.`);
  }
  const key = await verify(input, {
    credential,
    amzDate: requestDate,
    signedHeaders,
    signature: fields.Signature,
    canonicalQueryStrings: canonicalQueries(input.rawQuery),
    payload,
  });
  if (streaming) {
    const signer = streaming.signed
      ? chunkSigner(d, { key, amzDate: requestDate, credential, seed: fields.Signature })
      : undefined;
    return {
      accessKey: credential.accessKey,
      presigned: false,
      streaming: { signer, trailer: streaming.trailer },
    };
  }
  return {
    accessKey: credential.accessKey,
    presigned: false,
    payloadSha256: payload === UNSIGNED_PAYLOAD ? undefined : payload,
  };
}

/** The streaming payload hashes of a dialect: signed chunks or not, trailer or not. */
function streamingKind(
  d: Dialect,
  payload: string,
): { signed: boolean; trailer: boolean } | undefined {
  if (payload === d.streamingPayload) return { signed: true, trailer: false };
  if (payload === d.streamingPayloadTrailer) return { signed: true, trailer: true };
  if (payload === STREAMING_UNSIGNED_TRAILER) return { signed: false, trailer: true };
  return undefined;
}

/**
 * Signs the chunks and the trailer of a streaming upload. A chunk's string to sign is
 *   <chunk algorithm> \n <request date> \n <scope> \n <previous signature> \n
 *   <SHA-256 of the empty string> \n <SHA-256 of the chunk data>
 * and the trailer's
 *   <trailer algorithm> \n <request date> \n <scope> \n <previous signature> \n
 *   <SHA-256 of the trailing headers, each "name:value\n">
 * each HMAC'd with the request's signing key; the first chunk chains from the request's own
 * signature (the seed).
 */
export function chunkSigner(
  d: Dialect,
  opts: { key: Uint8Array; amzDate: string; credential: Credential; seed: string },
): ChunkSigner {
  const { date, region, service } = opts.credential;
  const scope = `${date}/${region}/${service}/${d.scopeTerminator}`;
  const sign = (lines: string[]) =>
    createHmac("sha256", opts.key).update(lines.join("\n")).digest("hex");
  return {
    seed: opts.seed,
    chunk: (previous, sha256Hex) =>
      sign([d.chunkAlgorithm, opts.amzDate, scope, previous, EMPTY_SHA256, sha256Hex]),
    trailer: (previous, sha256Hex) =>
      sign([d.trailerAlgorithm, opts.amzDate, scope, previous, sha256Hex]),
  };
}

const PRESIGNED_METHODS = ["GET", "HEAD", "PUT", "DELETE"];

/** Verifies presigned query authentication (`X-*-Algorithm`, `X-*-Signature`, ...). */
export async function verifyPresigned(
  input: SignatureInput,
  query: URLSearchParams,
): Promise<SignedRequest> {
  const d = input.dialect;
  const code = "AuthorizationQueryParametersError";
  const get = (name: string) => query.get(q(d, name)) ?? undefined;
  const algorithm = get("Algorithm");
  const rawCredential = get("Credential");
  const amzDate = get("Date");
  const expires = get("Expires");
  const signature = get("Signature");
  if (algorithm !== d.algorithm) {
    throw new S3Error(code, `${q(d, "Algorithm")} only supports "${d.algorithm}".`);
  }
  if (!rawCredential || !amzDate || !expires || !signature || !get("SignedHeaders")) {
    throw new S3Error(
      code,
      `Query-string authentication requires the ${q(d, "Credential")}, ${q(d, "Date")}, ` +
        `${q(d, "Expires")}, ${q(d, "SignedHeaders")} and ${q(d, "Signature")} parameters.`,
    );
  }
  if (!PRESIGNED_METHODS.includes(input.method)) {
    throw new S3Error("AccessDenied", `Presigned ${input.method} requests are not allowed.`);
  }
  const credential = parseCredential(rawCredential, input, code);
  const signedHeaders = parseSignedHeaders(get("SignedHeaders"), code);
  requireVendorHeadersSigned(input, signedHeaders);
  if (!/^\d+$/.test(expires) || +expires < 1 || +expires > MAX_PRESIGN_EXPIRES_S) {
    throw new S3Error(
      code,
      `${q(d, "Expires")} must be between 1 and ${MAX_PRESIGN_EXPIRES_S} seconds.`,
    );
  }
  const signedAt = parseAmzDate(amzDate);
  if (Number.isNaN(signedAt) || amzDate.slice(0, 8) !== credential.date) {
    throw new S3Error(code, `${q(d, "Date")} is malformed or does not match the credential.`);
  }
  if (signedAt - input.now > MAX_CLOCK_SKEW_MS) {
    throw new S3Error("AccessDenied", "Request is not valid yet.");
  }
  const payload = input.headers.get(h(d, "content-sha256")) ?? UNSIGNED_PAYLOAD;
  if (payload.startsWith("STREAMING-")) {
    throw new S3Error("NotImplemented", "Streaming payloads cannot be presigned.");
  }
  await verify(input, {
    credential,
    amzDate,
    signedHeaders,
    signature,
    canonicalQueryStrings: canonicalQueries(input.rawQuery, q(d, "Signature")),
    payload,
  });
  if (input.now > signedAt + Number(expires) * 1000) {
    throw new S3Error("ExpiredPresignedRequest", "Request has expired.", {
      details: {
        Expires: new Date(signedAt + Number(expires) * 1000).toISOString(),
        ServerTime: new Date(input.now).toISOString(),
      },
    });
  }
  return {
    accessKey: credential.accessKey,
    presigned: true,
    payloadSha256: /^[0-9a-f]{64}$/.test(payload) ? payload : undefined,
  };
}

export function toAmzDate(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}
