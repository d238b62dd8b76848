// Test-side streaming uploads and checksums, written independently of the server's code:
// byte-at-a-time CRC tables (the server uses slice-by-8), WebCrypto HMAC for chunk signatures.
import { createHash } from "node:crypto";
import { ADMIN_PASSWORD, REGION, type TestServer } from "./server.ts";
import { type DialectName, headerName, type RawRequest, signRequest } from "./signer.ts";

export type Algorithm = "CRC32" | "CRC32C" | "CRC64NVME" | "SHA1" | "SHA256";
export const ALGORITHMS: Algorithm[] = ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"];

function table32(poly: number): Uint32Array {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ poly : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
}

const CRC32_T = table32(0xedb88320);
const CRC32C_T = table32(0x82f63b78);

function crc32With(t: Uint32Array, data: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < data.length; i++) c = t[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// CRC-64/NVME: reflected polynomial 0x9a6c9329ac4bc9b5, init and xorout all ones.
const CRC64_LO = new Uint32Array(256);
const CRC64_HI = new Uint32Array(256);
for (let i = 0; i < 256; i++) {
  let c = BigInt(i);
  for (let k = 0; k < 8; k++) c = c & 1n ? (c >> 1n) ^ 0x9a6c9329ac4bc9b5n : c >> 1n;
  CRC64_LO[i] = Number(c & 0xffffffffn);
  CRC64_HI[i] = Number(c >> 32n);
}

function crc64nvme(data: Uint8Array): Uint8Array {
  let lo = 0xffffffff, hi = 0xffffffff;
  for (let i = 0; i < data.length; i++) {
    const k = (lo ^ data[i]) & 0xff;
    lo = ((lo >>> 8) | (hi << 24)) ^ CRC64_LO[k];
    hi = (hi >>> 8) ^ CRC64_HI[k];
  }
  const out = new Uint8Array(8);
  const view = new DataView(out.buffer);
  view.setUint32(0, ~hi >>> 0);
  view.setUint32(4, ~lo >>> 0);
  return out;
}

function u32(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

/** The raw checksum of `data`. */
export function rawChecksum(algorithm: Algorithm, data: Uint8Array): Uint8Array {
  switch (algorithm) {
    case "CRC32":
      return u32(crc32With(CRC32_T, data));
    case "CRC32C":
      return u32(crc32With(CRC32C_T, data));
    case "CRC64NVME":
      return crc64nvme(data);
    case "SHA1":
      return new Uint8Array(createHash("sha1").update(data).digest());
    case "SHA256":
      return new Uint8Array(createHash("sha256").update(data).digest());
  }
}

export function base64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

/** The base64 checksum of `data`, as the protocol's headers carry it. */
export function checksum(algorithm: Algorithm, data: Uint8Array): string {
  return base64(rawChecksum(algorithm, data));
}

/** A composite multipart checksum: the checksum of the parts' raw checksums, then `-<n>`. */
export function composite(algorithm: Algorithm, parts: Uint8Array[]): string {
  const raw = concat(...parts.map((p) => rawChecksum(algorithm, p)));
  return `${checksum(algorithm, raw)}-${parts.length}`;
}

export function concat(...parts: (Uint8Array | string)[]): Uint8Array {
  const bytes = parts.map((p) => typeof p === "string" ? new TextEncoder().encode(p) : p);
  const out = new Uint8Array(bytes.reduce((n, b) => n + b.byteLength, 0));
  bytes.reduce((at, b) => (out.set(b, at), at + b.byteLength), 0);
  return out;
}

const SPELLING = {
  store: { seed: "STORE4", term: "store4_request", service: "store", alg: "STORE4-HMAC-SHA256" },
  amz: { seed: "AWS4", term: "aws4_request", service: "s3", alg: "AWS4-HMAC-SHA256" },
};

const enc = new TextEncoder();

async function hmac(key: Uint8Array | ArrayBuffer, data: string): Promise<ArrayBuffer> {
  const k = await crypto.subtle.importKey(
    "raw",
    key as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return crypto.subtle.sign("HMAC", k, enc.encode(data));
}

function hex(bytes: ArrayBuffer | Uint8Array): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? enc.encode(data) : data;
  return hex(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

export type StreamingMode = "signed" | "signed-trailer" | "unsigned-trailer";

export interface ChunkedOptions {
  dialect?: DialectName;
  method?: string;
  path: string;
  query?: [string, string][];
  data: Uint8Array;
  chunkSize: number;
  mode: StreamingMode;
  /** A trailing header to send (and to announce in `x-*-trailer`). */
  trailer?: { name: string; value: string };
  /** Extra request headers (signed). */
  headers?: Record<string, string>;
  /** Overrides the decoded length announced. */
  decodedLength?: number;
  /** Changes the framed body before it is sent (tests break it on purpose). */
  tamper?: (body: string) => string;
}

/** Frames and signs a streaming upload; returns what to send. */
export async function chunkedRequest(
  server: TestServer,
  o: ChunkedOptions,
): Promise<{ url: string; method: string; headers: Record<string, string>; body: Uint8Array }> {
  const dialect = o.dialect ?? "store";
  const s = SPELLING[dialect];
  const payload = o.mode === "unsigned-trailer"
    ? "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    : `STREAMING-${s.alg}-PAYLOAD${o.mode === "signed-trailer" ? "-TRAILER" : ""}`;
  const headers: Record<string, string> = {
    "content-encoding": dialect === "store" ? "store-chunked" : "aws-chunked",
    [headerName(dialect, "decoded-content-length")]: String(o.decodedLength ?? o.data.byteLength),
    ...o.headers,
  };
  if (o.trailer) headers[headerName(dialect, "trailer")] = o.trailer.name;
  const date = new Date();
  const r: RawRequest = {
    method: o.method ?? "PUT",
    path: o.path,
    query: o.query,
    headers,
    dialect,
    date,
    payloadHash: payload,
  };
  const signed = await signRequest(server, r);
  const seed = /Signature=([0-9a-f]{64})/.exec(signed.headers.authorization)![1];
  const amzDate = signed.headers[headerName(dialect, "date")];
  const scope = `${amzDate.slice(0, 8)}/${REGION}/${s.service}/${s.term}`;
  let key: ArrayBuffer = await hmac(enc.encode(s.seed + ADMIN_PASSWORD), amzDate.slice(0, 8));
  for (const part of [REGION, s.service, s.term]) key = await hmac(key, part);
  const signing = o.mode !== "unsigned-trailer";
  let previous = seed;
  const sign = async (first: string, hash: string, extra?: string) => {
    const lines = extra === undefined
      ? [first, amzDate, scope, previous, hash]
      : [first, amzDate, scope, previous, extra, hash];
    previous = hex(await hmac(key, lines.join("\n")));
    return previous;
  };
  const emptyHash = await sha256Hex("");
  const parts: (string | Uint8Array)[] = [];
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < o.data.byteLength; at += o.chunkSize) {
    chunks.push(o.data.subarray(at, at + o.chunkSize));
  }
  chunks.push(new Uint8Array(0));
  for (const chunk of chunks) {
    const size = chunk.byteLength.toString(16);
    if (signing) {
      const sig = await sign(`${s.alg}-PAYLOAD`, await sha256Hex(chunk), emptyHash);
      parts.push(`${size};chunk-signature=${sig}\r\n`);
    } else parts.push(`${size}\r\n`);
    if (chunk.byteLength > 0) parts.push(chunk, "\r\n");
  }
  if (o.trailer) {
    const line = `${o.trailer.name}:${o.trailer.value}`;
    parts.push(line + "\r\n");
    if (signing) {
      const sig = await sign(`${s.alg}-TRAILER`, await sha256Hex(line + "\n"));
      parts.push(`${headerName(dialect, "trailer-signature")}:${sig}\r\n`);
    }
  }
  parts.push("\r\n");
  let body = concat(...parts);
  if (o.tamper) {
    const latin1 = new TextDecoder("latin1").decode(body);
    body = Uint8Array.from(o.tamper(latin1), (c) => c.charCodeAt(0));
  }
  delete signed.headers["content-length"];
  return { url: signed.url, method: signed.method, headers: signed.headers, body };
}

/** Sends a framed upload, optionally as a stream of small pieces (chunked transfer). */
export async function sendChunked(
  server: TestServer,
  o: ChunkedOptions & { pieces?: number },
): Promise<Response> {
  const req = await chunkedRequest(server, o);
  const pieces = o.pieces;
  const body = pieces === undefined ? req.body : new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < req.body.byteLength; at += pieces) {
        controller.enqueue(req.body.slice(at, at + pieces));
      }
      controller.close();
    },
  });
  return await fetch(req.url, {
    method: req.method,
    headers: req.headers,
    body: body as BodyInit,
  });
}
