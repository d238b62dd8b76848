import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { NonceCache } from "./nonces.ts";
import {
  checkAnswer,
  checkCall,
  parseCallSignature,
  sameHex,
  signAnswer,
  signCall,
  WINDOW_MS,
} from "./signature.ts";

const SECRET = "s".repeat(32);
const body = new TextEncoder().encode('{"node":{"id":"a"}}');

function signed(now = Date.now()) {
  const { header } = signCall(SECRET, {
    method: "POST",
    target: "/cluster/heartbeat",
    node: "a",
    body,
    now,
  });
  return parseCallSignature(header)!;
}

Deno.test("a signed call verifies; any change to method, path, secret or parts does not", () => {
  const s = signed();
  const ok = { method: "POST", target: "/cluster/heartbeat", signature: s };
  assertEquals(checkCall(SECRET, ok), undefined);
  assertEquals(checkCall("t".repeat(32), ok), "mismatch");
  assertEquals(checkCall(SECRET, { ...ok, method: "GET" }), "mismatch");
  assertEquals(checkCall(SECRET, { ...ok, target: "/cluster/join" }), "mismatch");
  assertEquals(checkCall(SECRET, { ...ok, signature: { ...s, node: "b" } }), "mismatch");
  assertEquals(
    checkCall(SECRET, { ...ok, signature: { ...s, nonce: "0".repeat(32) } }),
    "mismatch",
  );
  assertEquals(checkCall(SECRET, { ...ok, signature: { ...s, body: "0".repeat(64) } }), "mismatch");
  assertEquals(
    checkCall(SECRET, { ...ok, signature: { ...s, timestamp: s.timestamp + 1 } }),
    "mismatch",
  );
});

Deno.test("timestamps outside the window either way are expired", () => {
  const now = Date.now();
  const call = (at: number) => ({
    method: "POST",
    target: "/cluster/heartbeat",
    signature: signed(at),
    now,
  });
  assertEquals(checkCall(SECRET, call(now - WINDOW_MS + 1000)), undefined);
  assertEquals(checkCall(SECRET, call(now - WINDOW_MS - 1)), "expired");
  assertEquals(checkCall(SECRET, call(now + WINDOW_MS + 1)), "expired");
});

Deno.test("malformed Authorization headers are not parsed", () => {
  const { header } = signCall(SECRET, { method: "GET", target: "/cluster/ping", node: "a", body });
  assert(parseCallSignature(header));
  for (
    const bad of [
      null,
      "",
      "Basic abc",
      header.replace("Nonce=", "Nonc="),
      header.replace(/Signature=[0-9a-f]+/, "Signature=zz"),
      header + ", Extra=1",
      header.replace(/Node=a/, "Node=a b"),
    ]
  ) assertEquals(parseCallSignature(bad), undefined, String(bad));
});

Deno.test("answers are bound to the call's nonce, status and body", () => {
  const sig = signAnswer(SECRET, "n1", 200, body);
  assert(checkAnswer(SECRET, { nonce: "n1", status: 200, body, signature: sig }));
  assert(!checkAnswer(SECRET, { nonce: "n2", status: 200, body, signature: sig }));
  assert(!checkAnswer(SECRET, { nonce: "n1", status: 403, body, signature: sig }));
  assert(
    !checkAnswer(SECRET, { nonce: "n1", status: 200, body: new Uint8Array(1), signature: sig }),
  );
  assert(!checkAnswer(SECRET, { nonce: "n1", status: 200, body, signature: null }));
  assert(!sameHex("ab", "abc"));
});

Deno.test("nonces: a replay inside the window is refused; memory stays bounded", () => {
  const cache = new NonceCache(1000, 3);
  assertEquals(cache.admit("n1", 0, 0), "fresh");
  assertEquals(cache.admit("n1", 0, 500), "replayed");
  assertEquals(cache.admit("n2", 0, 500), "fresh");
  assertEquals(cache.admit("n3", 0, 500), "fresh");
  assertEquals(cache.admit("n4", 0, 500), "full");
  // After the window the old ones are forgotten (their timestamps are refused as expired anyway).
  assertEquals(cache.admit("n4", 1500, 1500), "fresh");
  assertEquals(cache.size, 1);
});
