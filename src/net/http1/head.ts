// Parsing an HTTP/1.1 request head (RFC 9112), strictly: anything a proxy in front of the server
// could read differently (whitespace before a colon, folded lines, both Content-Length and
// Transfer-Encoding, conflicting lengths) is refused rather than guessed at.

/** Longest request head accepted (request line and header fields). */
export const MAX_HEAD_BYTES = 64 * 1024;
/** Most header fields accepted in one request head. */
export const MAX_HEADER_FIELDS = 256;

/** A request head that cannot be served; `status` is the answer (400, 431, 501, 505). */
export class HeadError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export type BodyFraming =
  | { kind: "none" }
  | { kind: "length"; length: number }
  | { kind: "chunked" };

export interface RequestHead {
  method: string;
  /** The request target as sent (origin form `/path?query`, or absolute form). */
  target: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: number;
  /** Field names lower-cased, values with surrounding whitespace removed, in order. */
  fields: [string, string][];
  host: string | undefined;
  framing: BodyFraming;
  /** The client waits for `100 Continue` before it sends the body. */
  expectContinue: boolean;
  /** The client asked for the connection to be closed after this request. */
  close: boolean;
}

export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Characters no field value may hold (tab is allowed). */
// deno-lint-ignore no-control-regex -- control characters are what is refused
export const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;
const TARGET = /^[\x21-\x7e\u0080-\uffff]+$/;
/** The absolute form of a request target (RFC 9112 §3.2.2); other forms are refused. */
const ABSOLUTE = /^https?:\/\/[^/?#]+([/?].*)?$/i;
const HOST = /^[A-Za-z0-9.\-_~%!$&'()*+,;=:\[\]]*$/;
/**
 * Methods the Request constructor upper-cases. Methods are case-sensitive: `head` is not HEAD,
 * and answering it as HEAD would leave a body the client (or a proxy) waits for unsent.
 */
const NORMALIZED = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]);
const utf8 = new TextDecoder();
/** The request line of a head with non-ASCII bytes: they must be UTF-8. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** `value` without leading and trailing spaces and tabs (a loop: a regex would be quadratic). */
function trimOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && (value.charCodeAt(start) === 32 || value.charCodeAt(start) === 9)) start++;
  while (end > start && (value.charCodeAt(end - 1) === 32 || value.charCodeAt(end - 1) === 9)) {
    end--;
  }
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

/** Text of bytes read one byte per character (header field values are octets, not UTF-8). */
function latin1(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    out += String.fromCharCode(...bytes.subarray(i, Math.min(bytes.length, i + 8192)));
  }
  return out;
}

/**
 * Parses the head in `bytes` (without the blank line that ends it). The request target is read
 * as UTF-8 and field values one byte per character, as Deno's own server does.
 */
export function parseHead(bytes: Uint8Array): RequestHead {
  let text = utf8.decode(bytes);
  let requestLineEnd = text.indexOf("\r\n");
  if (text.length !== bytes.length || text.includes("\ufffd")) {
    // Non-ASCII bytes (a multi-byte sequence shortens the text, a stray byte becomes U+FFFD):
    // the request line as UTF-8, the fields as octets.
    const lineEnd = bytes.indexOf(13);
    let line: string;
    try {
      line = strictUtf8.decode(lineEnd < 0 ? bytes : bytes.subarray(0, lineEnd));
    } catch {
      throw new HeadError(400, "request line is not UTF-8");
    }
    text = lineEnd < 0 ? line : line + latin1(bytes.subarray(lineEnd));
    requestLineEnd = lineEnd < 0 ? -1 : line.length;
  }
  const requestLine = requestLineEnd < 0 ? text : text.slice(0, requestLineEnd);
  const parts = requestLine.split(" ");
  if (parts.length !== 3) throw new HeadError(400, "malformed request line");
  const [method, target, version] = parts;
  if (!TOKEN.test(method)) throw new HeadError(400, "malformed method");
  if (method !== method.toUpperCase() && NORMALIZED.has(method.toUpperCase())) {
    throw new HeadError(501, "unknown method");
  }
  if (!TARGET.test(target) || (target[0] !== "/" && !ABSOLUTE.test(target))) {
    throw new HeadError(400, "malformed request target");
  }
  let minor: number;
  if (version === "HTTP/1.1") minor = 1;
  else if (version === "HTTP/1.0") minor = 0;
  else if (/^HTTP\/\d\.\d$/.test(version)) throw new HeadError(505, "unsupported HTTP version");
  else throw new HeadError(400, "malformed HTTP version");

  const fields: [string, string][] = [];
  let host: string | undefined;
  let hosts = 0;
  let contentLength: string | undefined;
  let transferEncoding: string | undefined;
  let expect: string | undefined;
  let connection = "";
  let at = requestLineEnd < 0 ? text.length : requestLineEnd + 2;
  while (at < text.length) {
    let end = text.indexOf("\r\n", at);
    if (end < 0) end = text.length;
    const line = text.slice(at, end);
    at = end + 2;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new HeadError(400, "malformed header field");
    const name = line.slice(0, colon).toLowerCase();
    // Also refuses obsolete line folding (a line starting with whitespace) and whitespace
    // before the colon.
    if (!TOKEN.test(name)) throw new HeadError(400, "malformed header field name");
    const value = trimOws(line.slice(colon + 1));
    if (CONTROL.test(value)) {
      throw new HeadError(400, "malformed header field value");
    }
    if (fields.length >= MAX_HEADER_FIELDS) throw new HeadError(431, "too many header fields");
    fields.push([name, value]);
    switch (name) {
      case "host":
        host = value;
        hosts++;
        break;
      case "content-length":
        contentLength = contentLength === undefined ? value : `${contentLength},${value}`;
        break;
      case "transfer-encoding":
        transferEncoding = transferEncoding === undefined ? value : `${transferEncoding},${value}`;
        break;
      case "expect":
        expect = value;
        break;
      case "connection":
        connection += `,${value.toLowerCase()}`;
        break;
    }
  }
  if (hosts > 1) throw new HeadError(400, "more than one Host field");
  if (host !== undefined && !HOST.test(host)) throw new HeadError(400, "malformed Host field");
  if (host === undefined && minor === 1) throw new HeadError(400, "missing Host field");

  let framing: BodyFraming = { kind: "none" };
  if (transferEncoding !== undefined) {
    if (contentLength !== undefined) {
      throw new HeadError(400, "both Content-Length and Transfer-Encoding");
    }
    if (minor === 0) throw new HeadError(400, "Transfer-Encoding in an HTTP/1.0 request");
    const codings = transferEncoding.split(",").map((c) => c.trim().toLowerCase())
      .filter((c) => c !== "");
    if (codings.length !== 1 || codings[0] !== "chunked") {
      throw new HeadError(501, "unsupported transfer coding");
    }
    framing = { kind: "chunked" };
  } else if (contentLength !== undefined) {
    const values = new Set(contentLength.split(",").map((v) => v.trim()));
    const [only] = values;
    if (values.size !== 1 || !/^\d{1,15}$/.test(only)) {
      throw new HeadError(400, "malformed Content-Length");
    }
    const length = Number(only);
    if (length > 0) framing = { kind: "length", length };
  }

  let expectContinue = false;
  if (expect !== undefined) {
    if (expect.toLowerCase() !== "100-continue") {
      throw new HeadError(417, "unsupported expectation");
    }
    expectContinue = minor === 1 && framing.kind !== "none";
  }
  const close = minor === 0
    ? !/,\s*keep-alive\s*(,|$)/.test(connection)
    : /,\s*close\s*(,|$)/.test(connection);
  return { method, target, minor, fields, host, framing, expectContinue, close };
}
