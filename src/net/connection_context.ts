// The connection a request arrived on, as seen from code deep in the request's handling: a
// response body that makes no progress (its client stopped reading) is ended by closing the
// connection, because an error in the body stream is not noticed while a write is pending.
import { AsyncLocalStorage } from "node:async_hooks";

const current = new AsyncLocalStorage<() => void>();

/** Runs `fn` (a request's handler) with `close` as the way to close its connection. */
export function withConnection<T>(close: () => void, fn: () => T): T {
  return current.run(close, fn);
}

/** Closes the connection of the request being handled; undefined outside a request. */
export function connectionCloser(): (() => void) | undefined {
  return current.getStore();
}
