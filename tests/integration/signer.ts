// A small SigV4 signer for raw test requests in either dialect, written independently of the
// server's implementation (WebCrypto instead of node:crypto) so the two check each other.
import { ADMIN_PASSWORD, ADMIN_USER, REGION, type TestServer } from "./server.ts";

export type DialectName = "store" | "amz";

const SPELLING = {
  store: {
    alg: "STORE4-HMAC-SHA256",
    term: "store4_request",
    seed: "STORE4",
    hdr: "x-store-",
    qp: "X-Store-",
    service: "store",
  },
  amz: {
    alg: "AWS4-HMAC-SHA256",
    term: "aws4_request",
    seed: "AWS4",
    hdr: "x-amz-",
    qp: "X-Amz-",
    service: "s3",
  },
};

export function headerName(dialect: DialectName, suffix: string): string {
  return SPELLING[dialect].hdr + suffix;
}

export function queryName(dialect: DialectName, suffix: string): string {
  return SPELLING[dialect].qp + suffix;
}

const enc = new TextEncoder();

function hex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function sha256(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? enc.encode(data) : data;
  return hex(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

async function hmac(
  key: Uint8Array<ArrayBuffer> | ArrayBuffer,
  data: string,
): Promise<ArrayBuffer> {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return crypto.subtle.sign("HMAC", k, enc.encode(data));
}

/** RFC 3986 encoding as SigV4 wants it. */
export function encode(s: string): string {
  return encodeURIComponent(s).replace(
    /[!'()*]/g,
    (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase(),
  );
}

/** `/bucket/key` with each segment encoded. */
export function objectPath(bucket: string, key = ""): string {
  return "/" + [bucket, ...(key === "" ? [] : key.split("/"))].map(encode).join("/");
}

export interface RawRequest {
  method: string;
  /** Already-encoded path. */
  path: string;
  query?: [string, string][];
  headers?: Record<string, string>;
  body?: Uint8Array | string;
  dialect?: DialectName;
  accessKey?: string;
  secret?: string;
  date?: Date;
  /** Overrides the payload hash header (e.g. UNSIGNED-PAYLOAD or a wrong value). */
  payloadHash?: string;
  region?: string;
  service?: string;
}

function amzDate(d: Date): string {
  return d.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

function canonicalQuery(query: [string, string][]): string {
  return query.map(([k, v]) => [encode(k), encode(v)])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`).join("&");
}

async function signature(
  r: RawRequest,
  opts: { date: string; scope: string; canonicalRequest: string },
): Promise<string> {
  const s = SPELLING[r.dialect ?? "store"];
  const toSign = [s.alg, opts.date, opts.scope, await sha256(opts.canonicalRequest)].join("\n");
  const [day, region, service] = opts.scope.split("/");
  let key: ArrayBuffer = await hmac(enc.encode(s.seed + (r.secret ?? ADMIN_PASSWORD)), day);
  key = await hmac(key, region);
  key = await hmac(key, service);
  key = await hmac(key, s.term);
  return hex(await hmac(key, toSign));
}

export interface SignedRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: Uint8Array;
}

/** Sends a request signed in the Authorization header. */
export async function signedFetch(server: TestServer, r: RawRequest): Promise<Response> {
  const req = await signRequest(server, r);
  return await fetch(req.url, {
    method: req.method,
    headers: req.headers,
    body: req.body as Uint8Array<ArrayBuffer> | undefined,
  });
}

/** Signs a request in the Authorization header without sending it (tests tamper with it). */
export async function signRequest(server: TestServer, r: RawRequest): Promise<SignedRequest> {
  const dialect = r.dialect ?? "store";
  const s = SPELLING[dialect];
  const date = amzDate(r.date ?? new Date());
  const body = typeof r.body === "string" ? enc.encode(r.body) : r.body;
  const payload = r.payloadHash ?? await sha256(body ?? new Uint8Array(0));
  const host = new URL(server.url).host;
  const headers: Record<string, string> = {
    host,
    [s.hdr + "date"]: date,
    [s.hdr + "content-sha256"]: payload,
  };
  for (const [k, v] of Object.entries(r.headers ?? {})) headers[k.toLowerCase()] = v;
  const names = Object.keys(headers).sort();
  const scope = `${date.slice(0, 8)}/${r.region ?? REGION}/${r.service ?? s.service}/${s.term}`;
  const canonicalRequest = [
    r.method,
    r.path,
    canonicalQuery(r.query ?? []),
    names.map((n) => `${n}:${headers[n].trim()}\n`).join(""),
    names.join(";"),
    payload,
  ].join("\n");
  const sig = await signature(r, { date, scope, canonicalRequest });
  headers.authorization = `${s.alg} Credential=${r.accessKey ?? ADMIN_USER}/${scope}, ` +
    `SignedHeaders=${names.join(";")}, Signature=${sig}`;
  delete headers.host;
  const qs = (r.query ?? []).map(([k, v]) => `${encode(k)}=${encode(v)}`).join("&");
  return { url: `${server.url}${r.path}${qs ? "?" + qs : ""}`, method: r.method, headers, body };
}

/** A presigned URL (query authentication) for the request. */
export async function presign(
  server: TestServer,
  r: RawRequest & { expires: number },
): Promise<string> {
  const dialect = r.dialect ?? "store";
  const s = SPELLING[dialect];
  const date = amzDate(r.date ?? new Date());
  const scope = `${date.slice(0, 8)}/${r.region ?? REGION}/${r.service ?? s.service}/${s.term}`;
  const host = new URL(server.url).host;
  const headers: Record<string, string> = { host };
  for (const [k, v] of Object.entries(r.headers ?? {})) headers[k.toLowerCase()] = v;
  const names = Object.keys(headers).sort();
  const query: [string, string][] = [
    ...(r.query ?? []),
    [s.qp + "Algorithm", s.alg],
    [s.qp + "Credential", `${r.accessKey ?? ADMIN_USER}/${scope}`],
    [s.qp + "Date", date],
    [s.qp + "Expires", String(r.expires)],
    [s.qp + "SignedHeaders", names.join(";")],
  ];
  const canonicalRequest = [
    r.method,
    r.path,
    canonicalQuery(query),
    names.map((n) => `${n}:${headers[n].trim()}\n`).join(""),
    names.join(";"),
    r.payloadHash ?? "UNSIGNED-PAYLOAD",
  ].join("\n");
  const sig = await signature(r, { date, scope, canonicalRequest });
  query.push([s.qp + "Signature", sig]);
  return `${server.url}${r.path}?${query.map(([k, v]) => `${encode(k)}=${encode(v)}`).join("&")}`;
}

/** The text of the first `<name>` element in an XML document. */
export function xmlValue(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml);
  return m ? m[1] : undefined;
}

/** Every `<name>` element's text in order. */
export function xmlValues(xml: string, name: string): string[] {
  return [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, "g"))].map((m) => m[1]);
}
