// Writing a Response to an HTTP/1.1 connection: status line and fields, then the body framed by
// its Content-Length, or by chunked transfer coding when its length is not known up front.

import { reportWritten } from "../../http/written.ts";

const encoder = new TextEncoder();

const REASONS: Record<number, string> = {
  100: "Continue",
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  206: "Partial Content",
  301: "Moved Permanently",
  302: "Found",
  303: "See Other",
  304: "Not Modified",
  307: "Temporary Redirect",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  411: "Length Required",
  412: "Precondition Failed",
  413: "Content Too Large",
  416: "Range Not Satisfiable",
  417: "Expectation Failed",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  505: "HTTP Version Not Supported",
};

/** Fields the connection sets itself. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding"]);
/** Bodies up to this size go out in the same write as the head. */
const COALESCE_BYTES = 16 * 1024;

let dateText = "";
let dateSecond = 0;

/** The Date field, formatted once a second. */
function httpDate(): string {
  const second = Math.floor(Date.now() / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(second * 1000).toUTCString();
  }
  return dateText;
}

/** Bytes of a head (field values are octets: a character above U+007F is one byte). */
function headBytes(text: string): Uint8Array {
  // deno-lint-ignore no-control-regex -- any character outside ASCII
  if (!/[^\x00-\x7f]/.test(text)) return encoder.encode(text);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

export interface Writer {
  write(bytes: Uint8Array): Promise<void>;
}

/** A status with its reason phrase and fields, for answers made by the connection itself. */
export function plainHead(status: number, fields: string[]): Uint8Array {
  return headBytes(
    `HTTP/1.1 ${status} ${REASONS[status] ?? ""}\r\n${fields.map((f) => `${f}\r\n`).join("")}` +
      `date: ${httpDate()}\r\n\r\n`,
  );
}

/**
 * Writes `res`; true when the connection may carry another request afterwards (the body was
 * framed and written whole, and nobody asked to close). `http10`: the request was HTTP/1.0, which
 * knows no chunked coding (a body of unknown length is ended by closing the connection).
 */
export async function writeResponse(
  out: Writer,
  res: Response,
  opts: { head: boolean; close: boolean; http10: boolean },
): Promise<boolean> {
  const status = res.status;
  let text = `HTTP/1.1 ${status} ${res.statusText || REASONS[status] || ""}\r\n`;
  let length: number | undefined;
  let close = opts.close;
  let hasDate = false;
  // A 204 or 1xx carries no Content-Length (RFC 9110 §8.6).
  const lengthAllowed = status >= 200 && status !== 204;
  // forEach: several times cheaper than the Headers iterator.
  res.headers.forEach((value, name) => {
    if (HOP_BY_HOP.has(name)) {
      if (name === "connection" && /(^|,)\s*close\s*(,|$)/i.test(value)) close = true;
      return;
    }
    if (name === "content-length") {
      if (!lengthAllowed || !/^\d{1,15}$/.test(value)) return;
      length = Number(value);
    } else if (name === "date") hasDate = true;
    text += `${name}: ${value}\r\n`;
  });
  if (!hasDate) text += `date: ${httpDate()}\r\n`;
  /** The head's last fields: how the connection goes on. */
  const ending = (fields = "") =>
    headBytes(
      text + fields +
        (close ? "connection: close\r\n" : opts.http10 ? "connection: keep-alive\r\n" : "") +
        "\r\n",
    );
  const noBody = opts.head || status === 204 || status === 304 || status < 200;
  const body = res.body;
  if (noBody || !body) {
    if (body) await body.cancel().catch(() => {});
    await out.write(ending(!noBody && length === undefined ? "content-length: 0\r\n" : ""));
    return !close;
  }
  const reader = body.getReader();
  let headSent = false;
  try {
    if (length !== undefined) {
      await out.write(ending());
      headSent = true;
      let sent = 0;
      // The next piece is asked for before this one is written: reading (from disk) and
      // writing (to the socket) overlap.
      let next = readAhead(reader);
      for (;;) {
        const { value, done } = await next;
        if (done) break;
        next = readAhead(reader);
        sent += value.length;
        if (sent > length) {
          // More than declared: the framing is lost, the connection has to end.
          await reader.cancel().catch(() => {});
          return false;
        }
        await out.write(value);
        reportWritten(value);
      }
      return sent === length && !close;
    }
    // No declared length: a body that is already whole goes out with its length, anything
    // else (a stream still being produced) with chunked coding (HTTP/1.0: until the close).
    const first = await reader.read();
    const secondRead = first.done ? null : readAhead(reader);
    const second = secondRead ? await Promise.race([secondRead, afterTicks(8)]) : first;
    if (second !== null && second.done) {
      const bytes = first.done ? new Uint8Array(0) : first.value;
      const head = ending(`content-length: ${bytes.length}\r\n`);
      headSent = true;
      if (bytes.length <= COALESCE_BYTES) {
        const all = new Uint8Array(head.length + bytes.length);
        all.set(head);
        all.set(bytes, head.length);
        await out.write(all);
      } else {
        await out.write(head);
        await out.write(bytes);
      }
      return !close;
    }
    if (opts.http10) close = true;
    await out.write(ending(opts.http10 ? "" : "transfer-encoding: chunked\r\n"));
    headSent = true;
    const send = opts.http10
      ? (bytes: Uint8Array) => out.write(bytes)
      : (bytes: Uint8Array) => writeChunk(out, bytes);
    await send(first.value!);
    reportWritten(first.value!);
    let next = secondRead!;
    for (;;) {
      const { value, done } = await next;
      if (done) break;
      next = readAhead(reader);
      await send(value);
      reportWritten(value);
    }
    if (!opts.http10) await out.write(LAST_CHUNK);
    return !close;
  } catch (err) {
    // The client went away (or the body failed): let the body's source release what it holds.
    await reader.cancel(err).catch(() => {});
    // A body that failed before anything went out still gets an answer.
    if (!headSent) {
      await out.write(plainHead(500, ["connection: close", "content-length: 0"])).catch(() => {});
      return false;
    }
    throw err;
  }
}

/**
 * The reader's next piece, read while the previous one is being written. Its failure is
 * observed where it is awaited; until then it must not count as unhandled.
 */
function readAhead(
  reader: ReadableStreamDefaultReader<Uint8Array>,
): Promise<ReadableStreamReadResult<Uint8Array>> {
  const read = reader.read();
  read.catch(() => {});
  return read;
}

/**
 * Null after `n` turns of the microtask queue: a body made from a string, bytes or a blob has
 * delivered its end by then (1 to 5 turns); a stream still being produced has not. (A timer
 * would do too but costs more per response.)
 */
async function afterTicks(n: number): Promise<null> {
  for (let i = 0; i < n; i++) await undefined;
  return null;
}

const CRLF = encoder.encode("\r\n");
const LAST_CHUNK = encoder.encode("0\r\n\r\n");

async function writeChunk(out: Writer, bytes: Uint8Array): Promise<void> {
  if (bytes.length === 0) return;
  await out.write(encoder.encode(`${bytes.length.toString(16)}\r\n`));
  await out.write(bytes);
  await out.write(CRLF);
}
