// Serving HTTP/1.1 on one accepted connection, in place of Deno's built-in server. Deno's server
// answers `Expect: 100-continue` with `100 Continue` as soon as it has read the head, before the
// handler runs; here the handler decides (authentication, access) first and the 100 goes out
// only when it starts reading the body (src/net/http1/body.ts).

import { RequestBody } from "./body.ts";
import { RequestHeaders } from "./request_headers.ts";
import { HeadError, parseHead, type RequestHead } from "./head.ts";
import { ConnReader, UnexpectedEof } from "./reader.ts";
import { plainHead, writeResponse } from "./response.ts";

/** After a response, at most this much of an unread request body is read and dropped... */
const DRAIN_LIMIT = 256 * 1024;
/** ...if it arrives within this long. */
const DRAIN_MS = 5000;
/**
 * Closing a connection the client is still sending on makes the kernel reset it, and the reset
 * can overtake the response. So the sending side is shut first and what still arrives is read
 * and dropped (at most this much, for at most this long) before the close (RFC 9112 §9.6).
 */
const LINGER_BYTES = 1024 * 1024;
const LINGER_MS = 2000;
const NO_BODY_METHODS = new Set(["GET", "HEAD"]);

export interface Http1Hooks {
  tls: boolean;
  handler: Deno.ServeHandler<Deno.NetAddr>;
  onError: (error: unknown) => Response | Promise<Response>;
  /** A request's head is complete; `completed` settles once its response has been sent. */
  onRequest(completed: Promise<void>): void;
  /** A write to the client that makes no progress for this long ends the connection. */
  stallMs: number;
}

export interface Http1Connection {
  /** Settles (never rejects) when the connection has closed. */
  readonly finished: Promise<void>;
  /** Closes the connection now. */
  close(): void;
  /** Closes the connection after the response in progress, or now when none is. */
  shutdown(): Promise<void>;
  /**
   * While a write to the client is pending: when it counts as stalled (performance.now() ms;
   * the listener's sweep closes the connection then). 0 otherwise.
   */
  readonly writeDeadline: number;
}

export function serveHttp1(conn: Deno.Conn, hooks: Http1Hooks): Http1Connection {
  const reader = new ConnReader(conn);
  const remoteAddr = conn.remoteAddr as Deno.NetAddr;
  const scheme = hooks.tls ? "https" : "http";
  let closed = false;
  let draining = false;
  let busy = false;

  const close = () => {
    if (closed) return;
    closed = true;
    try {
      conn.close();
    } catch { /* already closed */ }
  };
  let writeDeadline = 0;
  /** Writes all of `bytes`; each socket write must progress within stallMs (see writeDeadline). */
  const write = async (bytes: Uint8Array) => {
    let at = 0;
    try {
      while (at < bytes.length) {
        writeDeadline = performance.now() + hooks.stallMs;
        at += await conn.write(at === 0 ? bytes : bytes.subarray(at));
      }
    } finally {
      writeDeadline = 0;
    }
  };
  const out = { write };

  /** Shuts the sending side, drops what the client still sends for a moment, then closes. */
  const linger = async () => {
    try {
      await (conn as Deno.TcpConn).closeWrite();
      const scratch = new Uint8Array(64 * 1024);
      const until = Date.now() + LINGER_MS;
      let dropped = 0;
      while (dropped < LINGER_BYTES && Date.now() < until) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const n = await Promise.race([
          conn.read(scratch),
          new Promise<null>((r) => timer = setTimeout(() => r(null), until - Date.now())),
        ]).finally(() => clearTimeout(timer));
        if (n === null) break;
        dropped += n;
      }
    } catch { /* the client is gone already */ }
  };

  /** Serves one request; false when the connection must not carry another. */
  const serveOne = async (head: RequestHead): Promise<"again" | "close" | "linger"> => {
    const body = head.framing.kind === "none"
      ? null
      : new RequestBody(reader, head.framing, head.expectContinue, write);
    let request: Request;
    try {
      request = buildRequest(head, scheme, body);
    } catch {
      await write(plainHead(400, ["connection: close", "content-length: 0"]));
      return "close";
    }
    let done!: () => void;
    const completed = new Promise<void>((r) => done = r);
    hooks.onRequest(completed);
    try {
      let response: Response;
      try {
        response = await hooks.handler(request, { remoteAddr, completed });
      } catch (err) {
        response = await hooks.onError(err);
      }
      if (body?.failure instanceof HeadError) {
        // Malformed body framing: whatever the handler made of it, the answer is the framing's.
        await response.body?.cancel().catch(() => {});
        response = new Response(null, { status: body.failure.status });
      }
      // A body the client was never asked to send, or one too large to read and drop, ends
      // the connection with this response.
      const unread = body !== null && !body.done;
      const mustClose = head.close || draining || body?.failure !== undefined ||
        (unread && (body.withheld || body.touched || head.framing.kind === "chunked" ||
          (head.framing.kind === "length" && head.framing.length > DRAIN_LIMIT)));
      if (body) {
        body.responseStarted = true;
        await body.continueWritten();
      }
      const reusable = await writeResponse(out, response, {
        head: request.method === "HEAD",
        close: mustClose,
        http10: head.minor === 0,
      });
      if (!reusable || closed) return unread && !body.withheld ? "linger" : "close";
      return !unread || await body.drain(DRAIN_LIMIT, DRAIN_MS) ? "again" : "close";
    } finally {
      done();
    }
  };

  const loop = async () => {
    let ending: "close" | "linger" = "close";
    try {
      while (!closed && !draining) {
        let bytes: Uint8Array | null;
        try {
          bytes = await reader.readHead();
        } catch (err) {
          if (err instanceof HeadError) await answer(err.status);
          return;
        }
        if (bytes === null) return;
        let head: RequestHead;
        try {
          head = parseHead(bytes);
        } catch (err) {
          if (err instanceof HeadError) await answer(err.status);
          return;
        }
        busy = true;
        const next = await serveOne(head);
        busy = false;
        if (next !== "again") {
          ending = next;
          return;
        }
      }
    } catch (err) {
      if (!(err instanceof UnexpectedEof) && !closed) throw err;
    } finally {
      if (ending === "linger" && !closed) await linger();
      reader.release();
      close();
    }
  };
  const answer = (status: number) =>
    write(plainHead(status, ["connection: close", "content-length: 0"])).catch(() => {});

  const finished = loop().catch(() => {});
  return {
    finished,
    close,
    get writeDeadline() {
      return writeDeadline;
    },
    shutdown() {
      draining = true;
      if (!busy) close();
      return finished;
    },
  };
}

/** The Request a handler sees; its `url` keeps the target as sent, as Deno's server does. */
function buildRequest(head: RequestHead, scheme: string, body: RequestBody | null): Request {
  let url: string;
  if (head.target.startsWith("/")) url = `${scheme}://${head.host ?? "localhost"}${head.target}`;
  else {
    // Absolute form (the head parser refuses any other): the path is at least "/".
    const authority = head.target.indexOf("//") + 2;
    const cut = head.target.slice(authority).search(/[/?]/);
    url = cut < 0
      ? `${head.target}/`
      : head.target[authority + cut] === "?"
      ? `${head.target.slice(0, authority + cut)}/${head.target.slice(authority + cut)}`
      : head.target;
  }
  const withBody = body !== null && !NO_BODY_METHODS.has(head.method);
  const request = new Request(url, {
    method: head.method,
    body: withBody ? body.stream : null,
    // @ts-ignore: Deno's RequestInit takes `duplex` for streaming bodies
    duplex: "half",
  });
  if (request.url !== url) Object.defineProperty(request, "url", { value: url });
  // The parsed fields as they are (request_headers.ts), not checked and copied again by Request.
  Object.defineProperty(request, "headers", { value: new RequestHeaders(head.fields) });
  return request;
}
