// RequestHeaders must answer as Deno's Headers does for the same fields.
import { assertEquals } from "../../../tests/integration/assert.ts";
import { RequestHeaders } from "./request_headers.ts";

const FIELDS: [string, string][] = [
  ["host", "example.com"],
  ["x-amz-meta-b", "2"],
  ["accept", "text/plain"],
  ["x-amz-meta-a", "1"],
  ["accept", "application/xml"],
  ["set-cookie", "a=1"],
  ["cookie", "c=3"],
  ["set-cookie", "b=2"],
  ["content-length", "0"],
  ["x-empty", ""],
];

/** Everything a reader can observe of a Headers object. */
function observe(h: Headers) {
  const seen: string[] = [];
  h.forEach((value, name, parent) => seen.push(`${name}=${value}:${parent === h}`));
  return {
    gets: ["Host", "ACCEPT", "accept", "set-cookie", "Cookie", "x-empty", "missing", "X-Amz-Meta-A"]
      .map((n) => [h.get(n), h.has(n)]),
    entries: [...h.entries()],
    iterated: [...h],
    keys: [...h.keys()],
    values: [...h.values()],
    forEach: seen,
    cookies: h.getSetCookie(),
  };
}

Deno.test("RequestHeaders reads as Headers does: joined values, sorted iteration, cookies apart", () => {
  assertEquals(observe(new RequestHeaders(FIELDS)), observe(new Headers(FIELDS)));
  assertEquals(observe(new RequestHeaders([])), observe(new Headers()));
});

Deno.test("RequestHeaders changes as Headers does", () => {
  const ours = new RequestHeaders(FIELDS);
  const theirs = new Headers(FIELDS);
  for (const h of [ours, theirs]) {
    h.append("Accept", "  text/html\t");
    h.set("X-Amz-Meta-B", "changed");
    h.delete("HOST");
    h.set("set-cookie", "only=1");
    h.append("x-new", "v");
  }
  assertEquals(observe(ours), observe(theirs));
  // Iteration after a change sees the change.
  ours.delete("x-new");
  theirs.delete("x-new");
  assertEquals([...ours], [...theirs]);
});

Deno.test("RequestHeaders makes a Headers object and a Request the same as its fields do", () => {
  const ours = new RequestHeaders(FIELDS);
  assertEquals([...new Headers(ours)], [...new Headers(FIELDS)]);
  const request = new Request("http://example.com/", { headers: ours });
  assertEquals([...request.headers], [...new Headers(FIELDS)]);
});
