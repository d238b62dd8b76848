// Rule matching: origins with and without a wildcard, methods, requested headers, rule order.
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { corsHeaders, type CorsRule, matchRule, requestedHeaders, wildcardMatch } from "./rules.ts";

function rule(over: Partial<CorsRule>): CorsRule {
  return {
    allowedOrigins: ["https://app.example.com"],
    allowedMethods: ["GET"],
    allowedHeaders: [],
    exposeHeaders: [],
    ...over,
  };
}

Deno.test("wildcardMatch: exact, leading, inner and trailing wildcards", () => {
  assert(wildcardMatch("https://a.com", "https://a.com"));
  assert(!wildcardMatch("https://a.com", "https://a.com.evil"));
  assert(!wildcardMatch("https://a.com", "HTTPS://A.COM"), "origins compare exactly");
  assert(wildcardMatch("*", "null"));
  assert(wildcardMatch("https://*.example.com", "https://app.example.com"));
  assert(wildcardMatch("https://*.example.com", "https://a.b.example.com"));
  assert(!wildcardMatch("https://*.example.com", "https://example.com"));
  assert(!wildcardMatch("https://*.example.com", "http://app.example.com"));
  assert(!wildcardMatch("https://*.example.com", "https://app.example.com.evil.org"));
  assert(wildcardMatch("http://localhost:*", "http://localhost:8080"));
  assert(!wildcardMatch("ab*ba", "aba"), "head and tail may not overlap");
  assert(wildcardMatch("x-amz-meta-*", "X-Amz-Meta-Color", true));
  assert(!wildcardMatch("x-amz-meta-*", "X-Amz-Meta-Color"));
});

Deno.test("requestedHeaders: comma list, trimmed, lower-cased, empties dropped", () => {
  assertEquals(requestedHeaders(null), []);
  assertEquals(requestedHeaders("Content-Type, X-Amz-Date,,authorization "), [
    "content-type",
    "x-amz-date",
    "authorization",
  ]);
});

Deno.test("matchRule: the first rule allowing origin, method and every header wins", () => {
  const rules = [
    rule({ id: "reads", allowedOrigins: ["*"], allowedMethods: ["GET", "HEAD"] }),
    rule({
      id: "writes",
      allowedOrigins: ["https://*.example.com"],
      allowedMethods: ["PUT", "DELETE", "GET"],
      allowedHeaders: ["content-type", "x-amz-*"],
    }),
  ];
  const origin = "https://app.example.com";
  assertEquals(matchRule(rules, { origin, method: "GET" })?.rule.id, "reads");
  assertEquals(matchRule(rules, { origin, method: "GET" })?.anyOrigin, true);
  assertEquals(matchRule(rules, { origin, method: "PUT" })?.rule.id, "writes");
  assertEquals(matchRule(rules, { origin, method: "PUT" })?.anyOrigin, false);
  assertEquals(matchRule(rules, { origin, method: "POST" }), undefined);
  assertEquals(matchRule(rules, { origin: "https://other.org", method: "PUT" }), undefined);
  // A GET preflight asking for a header: the first rule allows no headers, the second does.
  assertEquals(
    matchRule(rules, { origin, method: "GET", headers: ["x-amz-date"] })?.rule.id,
    "writes",
  );
  assertEquals(
    matchRule(rules, { origin, method: "PUT", headers: ["content-type", "authorization"] }),
    undefined,
    "every requested header must be allowed",
  );
  assertEquals(matchRule([], { origin, method: "GET" }), undefined);
  assertEquals(
    matchRule([rule({ allowedHeaders: ["*"] })], {
      origin,
      method: "GET",
      headers: ["anything-at-all"],
    })?.rule.allowedHeaders,
    ["*"],
  );
});

Deno.test("corsHeaders: preflight and actual responses", () => {
  const r = rule({
    allowedMethods: ["GET", "PUT"],
    allowedHeaders: ["*"],
    exposeHeaders: ["ETag", "x-amz-version-id"],
    maxAgeSeconds: 600,
  });
  const query = { origin: "https://app.example.com", method: "PUT", headers: ["content-type"] };
  const pre = corsHeaders({ rule: r, anyOrigin: false }, query, true);
  assertEquals(pre["access-control-allow-origin"], "https://app.example.com");
  assertEquals(pre["access-control-allow-methods"], "GET, PUT");
  assertEquals(pre["access-control-allow-headers"], "content-type");
  assertEquals(pre["access-control-expose-headers"], "ETag, x-amz-version-id");
  assertEquals(pre["access-control-max-age"], "600");
  assertEquals(pre["access-control-allow-credentials"], "true");
  assert(pre.vary.startsWith("Origin"));
  const actual = corsHeaders({ rule: r, anyOrigin: true }, query, false);
  assertEquals(actual["access-control-allow-origin"], "*");
  assertEquals(actual["access-control-allow-headers"], undefined);
  assertEquals(actual["access-control-allow-credentials"], undefined);
});
