// Serving HTTP/1.1 on one accepted connection, in place of Deno's built-in server. Deno's server
// answers `Expect: 100-continue` with `100 Continue` as soon as it has read the head, before the
// handler runs; here the handler decides (authentication, access) first and the 100 goes out
// only when it starts reading the body (src/net/http1/body.ts).

import { RequestBody } from "./body.ts";
import { HeadError, parseHead, type RequestHead } from "./head.ts";
import { ConnReader, UnexpectedEof } from "./reader.ts";
import { plainHead, writeResponse } from "./response.ts";

/** After a response, at most this much of an unread request body is read and dropped. */
const DRAIN_LIMIT = 256 * 1024;
const NO_BODY_METHODS = new Set(["GET", "HEAD"]);

export interface Http1Hooks {
  tls: boolean;
  handler: Deno.ServeHandler<Deno.NetAddr>;
  onError: (error: unknown) => Response | Promise<Response>;
  /** A request's head is complete; `completed` settles once its response has been sent. */
  onRequest(completed: Promise<void>): void;
}

export interface Http1Connection {
  /** Settles (never rejects) when the connection has closed. */
  readonly finished: Promise<void>;
  /** Closes the connection now. */
  close(): void;
  /** Closes the connection after the response in progress, or now when none is. */
  shutdown(): Promise<void>;
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
  const write = async (bytes: Uint8Array) => {
    let at = 0;
    while (at < bytes.length) at += await conn.write(at === 0 ? bytes : bytes.subarray(at));
  };
  const out = { write };

  /** Serves one request; false when the connection must not carry another. */
  const serveOne = async (head: RequestHead): Promise<boolean> => {
    const body = head.framing.kind === "none"
      ? null
      : new RequestBody(reader, head.framing, head.expectContinue, write);
    let request: Request;
    try {
      request = buildRequest(head, scheme, body);
    } catch {
      await write(plainHead(400, ["connection: close", "content-length: 0"]));
      return false;
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
      // A body the client was never asked to send, or one too large to read and drop, ends
      // the connection with this response.
      const mustClose = head.close || draining || (body !== null && (body.withheld ||
        (!body.done && (body.touched || head.framing.kind === "chunked" ||
          (head.framing.kind === "length" && head.framing.length > DRAIN_LIMIT)))));
      if (body) body.responseStarted = true;
      const reusable = await writeResponse(out, response, {
        head: head.method === "HEAD",
        close: mustClose,
      });
      if (!reusable || closed) return false;
      return !body || body.done || await body.drain(DRAIN_LIMIT);
    } finally {
      done();
    }
  };

  const loop = async () => {
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
        const again = await serveOne(head);
        busy = false;
        if (!again) return;
      }
    } catch (err) {
      if (!(err instanceof UnexpectedEof) && !closed) throw err;
    } finally {
      close();
    }
  };
  const answer = (status: number) =>
    write(plainHead(status, ["connection: close", "content-length: 0"])).catch(() => {});

  const finished = loop().catch(() => {});
  return {
    finished,
    close,
    shutdown() {
      draining = true;
      if (!busy) close();
      return finished;
    },
  };
}

/** The Request a handler sees; its `url` keeps the target as sent, as Deno's server does. */
function buildRequest(head: RequestHead, scheme: string, body: RequestBody | null): Request {
  const url = head.target.startsWith("/")
    ? `${scheme}://${head.host ?? "localhost"}${head.target}`
    : head.target;
  const withBody = body !== null && !NO_BODY_METHODS.has(head.method);
  const request = new Request(url, {
    method: head.method,
    // Pairs, not a Headers object: Request copies a Headers object field by field, slowly.
    headers: head.fields,
    body: withBody ? body.stream : null,
    // @ts-ignore: Deno's RequestInit takes `duplex` for streaming bodies
    duplex: "half",
  });
  if (request.url !== url) Object.defineProperty(request, "url", { value: url });
  return request;
}
