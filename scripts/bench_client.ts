// A lean S3 client for the benchmark: SigV4 with node:crypto (signing key cached per day,
// UNSIGNED-PAYLOAD so bodies are never hashed) over a minimal keep-alive HTTP/1.1 connection.
//
// Why not fetch: Deno's fetch sends a ReadableStream body chunked and, whenever the server reads
// slower than the client writes, stalls; a 64 MiB streamed PUT took ~2.5 s through fetch and
// ~0.5 s with curl or a plain socket against the same server. A Uint8Array body is fast but may
// be copied per request. Writing views of one shared buffer to a socket is both cheap and honest.
import { Buffer } from "node:buffer";
import { createHash, createHmac } from "node:crypto";

export interface Endpoint {
  url: string;
  accessKey: string;
  secretKey: string;
  region: string;
}

export interface Request {
  method: string;
  /** Already-encoded path, e.g. `/bucket/key`. */
  path: string;
  query?: [string, string][];
  headers?: Record<string, string>;
  /** The first `size` bytes of `buffer` are sent, in views, without copying. */
  body?: { buffer: Uint8Array; size: number };
  /** Keep the response body (for error messages and small documents). */
  collect?: boolean;
}

export interface Response {
  status: number;
  headers: Map<string, string>;
  /** Body bytes received. */
  length: number;
  /** The body as text when `collect` was set. */
  text?: string;
}

const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
const WRITE_CHUNK = 1024 * 1024;
const READ_BUFFER = 256 * 1024;
const enc = new TextEncoder();

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

export class Signer {
  readonly #endpoint: Endpoint;
  readonly host: string;
  #keyDay = "";
  #key: Buffer = Buffer.alloc(0);

  constructor(endpoint: Endpoint) {
    this.#endpoint = endpoint;
    this.host = new URL(endpoint.url).host;
  }

  #signingKey(day: string): Buffer {
    if (day !== this.#keyDay) {
      const { secretKey, region } = this.#endpoint;
      const kDate = createHmac("sha256", "AWS4" + secretKey).update(day).digest();
      const kRegion = createHmac("sha256", kDate).update(region).digest();
      const kService = createHmac("sha256", kRegion).update("s3").digest();
      this.#key = createHmac("sha256", kService).update("aws4_request").digest();
      this.#keyDay = day;
    }
    return this.#key;
  }

  /** The request target (path and query) and every header, Authorization and Host included. */
  sign(r: Request): { target: string; headers: Record<string, string> } {
    const date = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
    const day = date.slice(0, 8);
    const headers: Record<string, string> = {
      host: this.host,
      "x-amz-content-sha256": UNSIGNED_PAYLOAD,
      "x-amz-date": date,
    };
    for (const [k, v] of Object.entries(r.headers ?? {})) headers[k.toLowerCase()] = v;
    const names = Object.keys(headers).sort();
    const query = (r.query ?? []).map(([k, v]) => [encode(k), encode(v)])
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : 1))
      .map(([k, v]) => `${k}=${v}`).join("&");
    const canonical = [
      r.method,
      r.path,
      query,
      names.map((n) => `${n}:${headers[n].trim()}\n`).join(""),
      names.join(";"),
      UNSIGNED_PAYLOAD,
    ].join("\n");
    const scope = `${day}/${this.#endpoint.region}/s3/aws4_request`;
    const toSign = [
      "AWS4-HMAC-SHA256",
      date,
      scope,
      createHash("sha256").update(canonical).digest("hex"),
    ].join("\n");
    const signature = createHmac("sha256", this.#signingKey(day)).update(toSign).digest("hex");
    headers.authorization = `AWS4-HMAC-SHA256 Credential=${this.#endpoint.accessKey}/${scope}, ` +
      `SignedHeaders=${names.join(";")}, Signature=${signature}`;
    return { target: query ? `${r.path}?${query}` : r.path, headers };
  }
}

/** One keep-alive HTTP/1.1 connection; one request at a time. */
export class Connection {
  readonly #hostname: string;
  readonly #port: number;
  #conn?: Deno.TcpConn;
  #buf = new Uint8Array(READ_BUFFER);
  #start = 0;
  #end = 0;

  constructor(url: string) {
    const u = new URL(url);
    if (u.protocol !== "http:") throw new Error(`Only http:// endpoints are supported: ${url}`);
    this.#hostname = u.hostname;
    this.#port = Number(u.port || 80);
  }

  close(): void {
    try {
      this.#conn?.close();
    } catch { /* already closed */ }
    this.#conn = undefined;
    this.#start = this.#end = 0;
  }

  /** Sends a signed request and reads the whole response; retries once on a stale connection. */
  async send(signer: Signer, r: Request): Promise<Response> {
    const reused = this.#conn !== undefined;
    try {
      return await this.#exchange(signer, r);
    } catch (err) {
      this.close();
      const stale = err instanceof StaleConnection || err instanceof Deno.errors.ConnectionReset ||
        err instanceof Deno.errors.BrokenPipe;
      if (!reused || !stale) throw err;
      return await this.#exchange(signer, r);
    }
  }

  async #exchange(signer: Signer, r: Request): Promise<Response> {
    if (!this.#conn) {
      this.#conn = await Deno.connect({ hostname: this.#hostname, port: this.#port });
      this.#conn.setNoDelay(true);
    }
    const { target, headers } = signer.sign(r);
    if (r.body) headers["content-length"] = String(r.body.size);
    else if (r.method === "PUT" || r.method === "POST") headers["content-length"] = "0";
    let head = `${r.method} ${target} HTTP/1.1\r\n`;
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    const headBytes = enc.encode(head + "\r\n");
    if (r.body && r.body.size <= 64 * 1024) {
      const all = new Uint8Array(headBytes.length + r.body.size);
      all.set(headBytes);
      all.set(r.body.buffer.subarray(0, r.body.size), headBytes.length);
      await this.#write(all);
    } else {
      await this.#write(headBytes);
      for (let offset = 0; r.body && offset < r.body.size; offset += WRITE_CHUNK) {
        await this.#write(
          r.body.buffer.subarray(offset, Math.min(r.body.size, offset + WRITE_CHUNK)),
        );
      }
    }
    return await this.#readResponse(r);
  }

  async #write(bytes: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < bytes.length) offset += await this.#conn!.write(bytes.subarray(offset));
  }

  async #fill(): Promise<boolean> {
    if (this.#start === this.#end) this.#start = this.#end = 0;
    else if (this.#end === this.#buf.length) {
      this.#buf.copyWithin(0, this.#start, this.#end);
      this.#end -= this.#start;
      this.#start = 0;
    }
    const n = await this.#conn!.read(this.#buf.subarray(this.#end));
    if (n === null) return false;
    this.#end += n;
    return true;
  }

  async #line(first = false): Promise<string> {
    while (true) {
      for (let i = this.#start; i + 1 < this.#end; i++) {
        if (this.#buf[i] === 13 && this.#buf[i + 1] === 10) {
          const line = new TextDecoder().decode(this.#buf.subarray(this.#start, i));
          this.#start = i + 2;
          return line;
        }
      }
      if (this.#end - this.#start === this.#buf.length) throw new Error("Header line too long");
      if (!(await this.#fill())) {
        if (first && this.#start === this.#end) throw new StaleConnection();
        throw new Error("Connection closed in the middle of a response");
      }
    }
  }

  /** Consumes `n` body bytes, keeping them in `keep` when given. */
  async #skip(n: number, keep?: Uint8Array[]): Promise<void> {
    while (n > 0) {
      if (this.#start === this.#end && !(await this.#fill())) {
        throw new Error("Connection closed in the middle of a response body");
      }
      const take = Math.min(n, this.#end - this.#start);
      keep?.push(this.#buf.slice(this.#start, this.#start + take));
      this.#start += take;
      n -= take;
    }
  }

  async #readResponse(r: Request): Promise<Response> {
    const statusLine = await this.#line(true);
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
    if (!m) throw new Error(`Malformed status line: ${statusLine}`);
    const status = Number(m[1]);
    const headers = new Map<string, string>();
    for (let line = await this.#line(); line !== ""; line = await this.#line()) {
      const colon = line.indexOf(":");
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const keep = r.collect || status >= 300 ? [] as Uint8Array[] : undefined;
    let length = 0;
    if (r.method !== "HEAD" && status !== 204 && status !== 304) {
      if (headers.get("transfer-encoding")?.toLowerCase().includes("chunked")) {
        while (true) {
          const size = parseInt((await this.#line()).split(";")[0], 16);
          if (!(size >= 0)) throw new Error("Malformed chunk size");
          if (size === 0) {
            while ((await this.#line()) !== "") { /* trailers */ }
            break;
          }
          await this.#skip(size, keep);
          length += size;
          await this.#line();
        }
      } else if (headers.has("content-length")) {
        length = Number(headers.get("content-length"));
        await this.#skip(length, keep);
      } else {
        throw new Error("Responses without a length are not supported");
      }
    }
    if (headers.get("connection")?.toLowerCase() === "close") this.close();
    const text = keep ? new TextDecoder().decode(concat(keep)) : undefined;
    return { status, headers, length, text };
  }
}

class StaleConnection extends Error {
  constructor() {
    super("The server closed the connection before answering");
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}
