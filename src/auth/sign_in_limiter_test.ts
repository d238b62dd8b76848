// The failed sign-in table: the limit per client, its window, IPv6 /64 grouping, and its bound.
import { assertEquals } from "../../tests/integration/assert.ts";
import { clientOf, SignInLimiter } from "./sign_in_limiter.ts";

function limiter(maxClients?: number) {
  let now = 1_000_000;
  const l = new SignInLimiter({ maxFailures: 3, windowMs: 60_000, maxClients, now: () => now });
  return { l, advance: (ms: number) => (now += ms) };
}

Deno.test("sign-in limiter: refuses after the limit until the window ends", () => {
  const { l, advance } = limiter();
  for (let i = 0; i < 3; i++) {
    assertEquals(l.retryAfter("10.0.0.1"), 0);
    l.failed("10.0.0.1");
  }
  assertEquals(l.retryAfter("10.0.0.1"), 60);
  assertEquals(l.retryAfter("10.0.0.2"), 0, "other clients are not affected");
  advance(59_500);
  assertEquals(l.retryAfter("10.0.0.1"), 1);
  advance(500);
  assertEquals(l.retryAfter("10.0.0.1"), 0);
});

Deno.test("sign-in limiter: a success clears the failures", () => {
  const { l } = limiter();
  l.failed("10.0.0.1");
  l.failed("10.0.0.1");
  l.succeeded("10.0.0.1");
  l.failed("10.0.0.1");
  l.failed("10.0.0.1");
  assertEquals(l.retryAfter("10.0.0.1"), 0);
});

Deno.test("sign-in limiter: IPv6 counts per /64, mapped IPv4 as IPv4", () => {
  assertEquals(clientOf("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  assertEquals(clientOf("2001:db8:1:2:bbbb:cccc:dddd:eeee"), "2001:db8:1:2::/64");
  assertEquals(clientOf("2001:0db8::1"), "2001:db8:0:0::/64");
  assertEquals(clientOf("::1"), "0:0:0:0::/64");
  assertEquals(clientOf("::ffff:192.0.2.7"), "192.0.2.7");
  const { l } = limiter();
  for (let i = 1; i <= 3; i++) l.failed(`2001:db8:1:2::${i}`);
  assertEquals(l.retryAfter("2001:db8:1:2::99") > 0, true);
});

Deno.test("sign-in limiter: the table stays bounded under many addresses", () => {
  const { l, advance } = limiter(100);
  for (let i = 0; i < 10_000; i++) {
    l.failed(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    advance(1);
  }
  assertEquals(l.size, 100);
  // The newest clients are still counted.
  l.failed("10.0.39.15");
  l.failed("10.0.39.15");
  assertEquals(l.retryAfter("10.0.39.15") > 0, true);
});
