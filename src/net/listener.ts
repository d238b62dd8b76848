// The HTTP front door: an own accept loop that counts connections and times them, serving
// HTTP/1.1 on each accepted socket (src/net/http1/: Deno's built-in server sends
// `100 Continue` before the handler can refuse a request).
//
// Deno.serve has no header-read or idle timeout and no connection cap, and an accept error
// there rejects `server.finished`. Here:
// - a new connection must deliver a request's headers within `headerTimeoutMs`;
// - after a response has been sent, the next request's headers must arrive within
//   `idleTimeoutMs`, or the connection is closed;
// - at `maxConnections` open connections, a new connection takes the place of the one that has
//   waited longest for a request; when all are busy with requests, it gets a 503 and is closed;
// - an accept error (out of descriptors, ...) is logged and retried with a back-off, never
//   thrown.
// Stalled request and response bodies are bounded where they are read and written
// (src/http/progress.ts, src/object/read_stream.ts).
//
// With a certificate and key the same loop serves HTTPS (the limits hold there too; the header
// timeout covers the TLS handshake). `reloadTls` swaps them for new connections: the pair is
// tried on a throw-away listener first, then the listening socket is closed and bound again with
// it as soon as it is released (a gap of about a millisecond, without unstable SO_REUSEPORT);
// open connections are not touched.

import { withConnection } from "./connection_context.ts";
import { serveHttp1 } from "./http1/serve.ts";

export interface ConnectionLimits {
  headerTimeoutMs: number;
  idleTimeoutMs: number;
  maxConnections: number;
  /** A response write the client takes nothing of for this long ends the connection. */
  stallMs: number;
}

/** A certificate chain and its private key, PEM text. */
export interface TlsKeyPair {
  cert: string;
  key: string;
}

export interface ListenOptions {
  hostname: string;
  port: number;
  limits: ConnectionLimits;
  /** Serve HTTPS with this certificate and key. */
  tls?: TlsKeyPair;
  onListen?: (addr: Deno.NetAddr) => void;
  onError: (error: unknown) => Response | Promise<Response>;
  warn: (message: string, fields: Record<string, unknown>) => void;
}

export interface ConnectionServer {
  readonly addr: Deno.NetAddr;
  /** Open connections right now. */
  readonly open: number;
  /** Settles (never rejects) once the listener is closed and every connection has ended. */
  readonly finished: Promise<void>;
  /** Stops accepting; running responses finish, idle connections close. */
  shutdown(): Promise<void>;
  /**
   * New connections get this certificate and key; open ones keep theirs. Throws (and keeps the
   * old pair) when the pair is unusable or the server does not serve TLS.
   */
  reloadTls(pair: TlsKeyPair): Promise<void>;
}

const REFUSAL = new TextEncoder().encode(
  "HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 1\r\n" +
    "content-length: 0\r\n\r\n",
);
/** Longest pause between accept attempts after errors. */
const MAX_BACKOFF_MS = 1000;
/** At most one accept-error log line per this many milliseconds. */
const LOG_EVERY_MS = 10_000;

/**
 * One accepted connection and its deadline: the sweep closes it when it waits too long.
 * "Waiting" means waiting for a request's headers (a new or an idle keep-alive connection).
 */
class Connection {
  readonly #abort = new AbortController();
  /** While waiting: when the sweep closes the connection (performance.now() ms). */
  deadline = 0;
  #active = 0;
  /** Settles once the connection's server has ended. */
  closed: Promise<void> = Promise.resolve();

  constructor(
    readonly limits: ConnectionLimits,
    readonly waiting: Set<Connection>,
  ) {
    this.#wait(limits.headerTimeoutMs);
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** A request's headers arrived: no timer runs until its response has been sent. */
  onRequest(completed: Promise<void>): void {
    this.#active++;
    this.waiting.delete(this);
    const done = () => {
      if (--this.#active === 0) this.#wait(this.limits.idleTimeoutMs);
    };
    completed.then(done, done);
  }

  /** Closes the connection (a waiting one, to make room for a new one). */
  close(): void {
    this.ended();
    if (this.#abort.signal.aborted) return;
    try {
      this.#abort.abort();
    } catch {
      // Deno's listener throws BadResource when the connection has already gone away.
    }
  }

  ended(): void {
    this.waiting.delete(this);
  }

  #wait(ms: number): void {
    if (this.#abort.signal.aborted) return;
    this.deadline = performance.now() + ms;
    // Re-added at the end: the set stays ordered by when each connection started waiting.
    this.waiting.delete(this);
    this.waiting.add(this);
  }
}

/** How often waiting connections are checked against their deadlines. */
const SWEEP_MS = 200;

/**
 * Closes the waiting connections whose time is up. One sweep for all of them instead of a timer
 * per connection: arming and clearing a timer on every request cost more than the whole check.
 */
function sweep(
  waiting: Set<Connection>,
  servers: Set<{ writeDeadline: number; close(): void }>,
  late: boolean,
): void {
  const now = performance.now();
  for (const c of waiting) if (c.deadline <= now) c.close();
  // Busy connections: a response the client stopped reading. Not right after the event loop
  // was held up: writes that completed meanwhile have not been seen yet.
  if (late) return;
  for (const s of servers) if (s.writeDeadline !== 0 && s.writeDeadline <= now) s.close();
}

export function serveConnections(
  opts: ListenOptions,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): ConnectionServer {
  let listener: Deno.Listener = opts.tls
    ? Deno.listenTls({ ...opts.tls, hostname: opts.hostname, port: opts.port })
    : Deno.listen({ hostname: opts.hostname, port: opts.port });
  const tls = opts.tls !== undefined;
  /** Listeners closed by a TLS reload: their accept loops end instead of retrying. */
  const retired = new WeakSet<Deno.Listener>();
  /** Every connection's server (or its TLS handshake in progress). */
  const servers = new Set<
    { shutdown(): Promise<void>; finished: Promise<void>; close(): void; writeDeadline: number }
  >();
  /** Connections waiting for a request's headers, oldest first: the first to give way. */
  const waiting = new Set<Connection>();
  let lastSweep = performance.now();
  const sweeper = setInterval(() => {
    const now = performance.now();
    sweep(waiting, servers, now - lastSweep > 2 * SWEEP_MS);
    lastSweep = now;
  }, SWEEP_MS);
  /** Connections closed to make room whose sockets may not have been released yet. */
  let evicting = 0;
  let closed = false;
  let lastLog = 0;
  let suppressed = 0;

  const warnThrottled = (message: string, error: unknown) => {
    const now = Date.now();
    if (now - lastLog < LOG_EVERY_MS) {
      suppressed++;
      return;
    }
    opts.warn(message, { error: String(error), suppressed });
    lastLog = now;
    suppressed = 0;
  };

  const refuse = (conn: Deno.Conn) => {
    conn.write(REFUSAL).catch(() => {}).finally(() => {
      try {
        conn.close();
      } catch { /* already closed */ }
    });
  };

  /**
   * At the cap, a new connection takes the place of the one that has waited longest for a
   * request (slow or idle clients give way to new ones); false when every connection is busy.
   */
  const evictWaiting = (): boolean => {
    const oldest = waiting.values().next().value;
    if (!oldest) return false;
    oldest.close();
    evicting++;
    oldest.closed.finally(() => evicting--);
    return true;
  };

  const serve = (conn: Deno.Conn, c: Connection) => {
    const info = { close: () => c.close(), tls };
    const server = serveHttp1(conn, {
      tls,
      handler: (req, serveInfo) => withConnection(info, () => handler(req, serveInfo)),
      onError: opts.onError,
      onRequest: (completed) => c.onRequest(completed),
      stallMs: opts.limits.stallMs,
    });
    c.signal.addEventListener("abort", () => server.close(), { once: true });
    servers.add(server);
    c.closed = server.finished.catch((err) => {
      warnThrottled("A connection ended with an error", err);
    }).finally(() => {
      c.ended();
      servers.delete(server);
    });
  };

  /**
   * The TLS handshake runs here, under the header timeout: Deno's HTTP server would wait for a
   * client that never finishes it. The connection counts against the cap meanwhile.
   */
  const handshake = (conn: Deno.TlsConn, c: Connection) => {
    const drop = () => {
      try {
        conn.close();
      } catch { /* already closed */ }
    };
    c.signal.addEventListener("abort", drop, { once: true });
    const pending = {
      finished: Promise.resolve(),
      writeDeadline: 0,
      close: () => c.close(),
      shutdown: () => {
        c.close();
        return Promise.resolve();
      },
    };
    servers.add(pending);
    c.closed = pending.finished = conn.handshake().then(
      () => {
        servers.delete(pending);
        c.signal.removeEventListener("abort", drop);
        if (c.signal.aborted) drop();
        else serve(conn, c);
      },
      () => {
        servers.delete(pending);
        c.ended();
        drop();
      },
    );
  };

  const track = (conn: Deno.Conn) => {
    // Responses are written in pieces: without this, Nagle's algorithm and delayed ACKs add
    // up to 40 ms to a response that ends in a small piece.
    (conn as Deno.TcpConn).setNoDelay?.(true);
    const c = new Connection(opts.limits, waiting);
    if (tls) handshake(conn as Deno.TlsConn, c);
    else serve(conn, c);
  };

  /** Accepts from `from` until the server closes or `from` is replaced (TLS reload). */
  const acceptLoop = async (from: Deno.Listener) => {
    let backoff = 0;
    while (!closed && !retired.has(from)) {
      let conn: Deno.Conn;
      try {
        conn = await from.accept();
        backoff = 0;
      } catch (err) {
        if (closed || retired.has(from)) break;
        warnThrottled("Accepting a connection failed", err);
        backoff = Math.min(MAX_BACKOFF_MS, backoff === 0 ? 10 : backoff * 2);
        await new Promise((r) => setTimeout(r, backoff));
        continue;
      }
      try {
        if (servers.size - evicting >= opts.limits.maxConnections && !evictWaiting()) refuse(conn);
        else track(conn);
      } catch (err) {
        // The socket failed between accept and serve (the client reset it): drop it, go on.
        warnThrottled("Serving a connection failed", err);
        try {
          conn.close();
        } catch { /* already closed */ }
      }
    }
  };

  const addr = listener.addr as Deno.NetAddr;
  opts.onListen?.(addr);
  // The loop handles its own errors; should it still end while open, it is started again.
  const keepAccepting = (from: Deno.Listener): Promise<void> =>
    acceptLoop(from).catch((err) => opts.warn("Accept loop failed", { error: `${err}` }))
      .then(() =>
        closed || retired.has(from)
          ? undefined
          : new Promise((r) => setTimeout(r, 100)).then(() => keepAccepting(from))
      );
  let accepting = keepAccepting(listener);
  let shutdownDone: Promise<void> | undefined;
  const settled = (p: Promise<void>) => p.then(() => {}, () => {});
  return {
    addr,
    get open() {
      return servers.size;
    },
    get finished() {
      // A TLS reload replaces the loop: wait for whichever runs when this one ends.
      const wait = (): Promise<void> => {
        const current = accepting;
        return current.then(() => current === accepting ? shutdownDone : wait());
      };
      return wait().then(() => {});
    },
    shutdown() {
      if (shutdownDone) return shutdownDone;
      closed = true;
      try {
        listener.close();
      } catch { /* already closed */ }
      shutdownDone = Promise.all([...servers].map((s) => settled(s.shutdown()))).then(() => {
        clearInterval(sweeper);
      });
      return shutdownDone;
    },
    async reloadTls(pair) {
      if (!tls) throw new Error("The server does not serve TLS");
      if (closed) return;
      // An unusable pair throws here, while the old listener still serves.
      Deno.listenTls({ ...pair, hostname: addr.hostname, port: 0 }).close();
      const previous = listener;
      const previousLoop = accepting;
      retired.add(previous);
      try {
        previous.close();
      } catch { /* already closed */ }
      // The socket is released once the pending accept has given up.
      await previousLoop;
      let next: Deno.Listener | undefined;
      for (let attempt = 0; !next; attempt++) {
        try {
          next = Deno.listenTls({ ...pair, hostname: addr.hostname, port: addr.port });
        } catch (err) {
          if (!(err instanceof Deno.errors.AddrInUse) || attempt >= 200) throw err;
          await new Promise((r) => setTimeout(r, 5));
        }
      }
      listener = next;
      if (closed) next.close();
      else accepting = keepAccepting(next);
    },
  };
}
