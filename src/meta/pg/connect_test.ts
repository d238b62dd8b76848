// What the PostgreSQL store counts as "database unavailable" (503) and the one postgres.js error
// it keeps from ending the process.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { metaUnavailable, MetaUnavailableError } from "../store.ts";
import { openPool } from "./connect.ts";
import { isUnavailable } from "./tx.ts";

Deno.test("connection failures and server shutdowns are 'unavailable', other errors are not", () => {
  const coded = (code: string) => Object.assign(new Error(code), { code });
  for (const code of ["ECONNREFUSED", "CONNECTION_CLOSED", "CONNECT_TIMEOUT", "08006", "57P01"]) {
    assert(isUnavailable(coded(code)), code);
  }
  for (const code of ["23505", "40P01", "42P01", "22P02"]) {
    assert(!isUnavailable(coded(code)), code);
  }
  assert(!isUnavailable(new Error("guard refused")));
});

Deno.test("metaUnavailable finds the error behind causes", () => {
  const inner = new MetaUnavailableError("down");
  assertEquals(metaUnavailable(new Error("write failed", { cause: inner })), inner);
  assertEquals(metaUnavailable(new Error("other")), undefined);
});

Deno.test("postgres.js's writes after close are kept from ending the process; nothing else", async () => {
  const sql = openPool("postgres://nobody@127.0.0.1:1/none", 1);
  try {
    const event = (message: string, stack: string) => {
      const error = new TypeError(message);
      error.stack = stack;
      const e = new ErrorEvent("error", { error, cancelable: true });
      globalThis.dispatchEvent(e);
      return e.defaultPrevented;
    };
    const frame = "    at Immediate.nextWrite (file:///x/postgres/3.4.9/src/connection.js:255:22)";
    assert(event("Cannot read properties of null (reading 'write')", `TypeError\n${frame}`));
    assert(!event("Cannot read properties of null (reading 'write')", "TypeError\n    at mine"));
    assert(!event("something else", `TypeError\n${frame}`));
    // The socket ended by PostgreSQL first: Deno's node:net throws, seen as an unhandled rejection.
    const ended = "This socket has been ended by the other party";
    const rejected = (message: string, stack: string) => {
      const reason = Object.assign(new Error(message), { code: "EPIPE" });
      reason.stack = stack;
      const promise = Promise.resolve();
      const e = new PromiseRejectionEvent("unhandledrejection", {
        promise,
        reason,
        cancelable: true,
      });
      globalThis.dispatchEvent(e);
      return e.defaultPrevented;
    };
    const afterFin = "    at Socket._writeAfterFIN [as write] (ext:deno_node/net.ts:1:10175)";
    assert(rejected(ended, `Error: ${ended}\n${afterFin}\n${frame}`));
    assert(!rejected(ended, `Error: ${ended}\n${afterFin}\n    at mine (file:///x/mine.ts:1:1)`));
    assert(!rejected("read ECONNRESET", `Error\n${frame}`));
  } finally {
    await sql.end();
  }
});
