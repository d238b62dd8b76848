import { assertEquals } from "../../tests/integration/assert.ts";
import { setLogSink } from "../log.ts";
import { ignoreOrphanedSocketReadErrors, isOrphanedSocketReadError } from "./node_socket_errors.ts";

/** An error shaped as Deno's node:net read loop raises it. */
function socketReadError(code = "ECONNRESET", firstFrame?: string): Error {
  const err = Object.assign(new Error(`read ${code}`), { code, syscall: "read", errno: -104 });
  err.stack = `Error: read ${code}\n    at ${
    firstFrame ??
      "TCPWrap.onStreamRead [as onread] (ext:deno_node/internal/stream_base_commons.ts:1:3690)"
  }`;
  return err;
}

Deno.test("only read resets raised by the node:net read loop are recognised", () => {
  assertEquals(isOrphanedSocketReadError(socketReadError()), true);
  assertEquals(isOrphanedSocketReadError(socketReadError("EPIPE")), true);
  // Another code, another syscall, another origin, not an error at all: not ours to swallow.
  assertEquals(isOrphanedSocketReadError(socketReadError("ENOENT")), false);
  assertEquals(
    isOrphanedSocketReadError(Object.assign(socketReadError(), { syscall: "write" })),
    false,
  );
  assertEquals(
    isOrphanedSocketReadError(
      socketReadError("ECONNRESET", "query (file:///src/meta/pg/x.ts:1:1)"),
    ),
    false,
  );
  assertEquals(isOrphanedSocketReadError(new Error("read ECONNRESET")), false);
  assertEquals(isOrphanedSocketReadError("read ECONNRESET"), false);
});

Deno.test("an unhandled read reset of a let-go socket is logged and the process goes on", async () => {
  const warnings: string[] = [];
  setLogSink((_level, message) => warnings.push(message));
  ignoreOrphanedSocketReadErrors();
  try {
    // Without the guard the test runner fails this test on the unhandled rejection.
    Promise.reject(socketReadError());
    await new Promise((r) => setTimeout(r, 50));
    assertEquals(warnings, [
      "A connection of a client library was reset after it was let go (ignored)",
    ]);
  } finally {
    setLogSink(undefined);
  }
});
