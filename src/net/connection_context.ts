// The connection a request arrived on, as seen from code deep in the request's handling: a
// response body that makes no progress (its client stopped reading) is ended by closing the
// connection, because an error in the body stream is not noticed while a write is pending; and
// whether the connection is TLS (secrets in headers are refused over plain HTTP).
import { AsyncLocalStorage } from "node:async_hooks";

export interface ConnectionInfo {
  /** Closes the connection. */
  close: () => void;
  /** The connection is TLS (served by this process, not by a proxy in front of it). */
  tls: boolean;
}

const current = new AsyncLocalStorage<ConnectionInfo>();

/** Runs `fn` (a request's handler) with the connection it arrived on. */
export function withConnection<T>(conn: ConnectionInfo, fn: () => T): T {
  return current.run(conn, fn);
}

/** Closes the connection of the request being handled; undefined outside a request. */
export function connectionCloser(): (() => void) | undefined {
  return current.getStore()?.close;
}

/** Whether the request being handled arrived over TLS (false outside a request). */
export function connectionIsTls(): boolean {
  return current.getStore()?.tls ?? false;
}
