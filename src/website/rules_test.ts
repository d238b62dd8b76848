import { assertEquals } from "../../tests/integration/assert.ts";
import type { WebsiteConfig } from "./config.ts";
import { redirectAfterError, redirectBeforeLookup, servedKey, type SiteAddress } from "./rules.ts";

const SITE: SiteAddress = { scheme: "http", host: "localhost:9000", root: "/website/site/" };

const CONFIG: WebsiteConfig = {
  indexSuffix: "index.html",
  errorKey: "error.html",
  routingRules: [
    {
      condition: { keyPrefixEquals: "docs/" },
      redirect: { replaceKeyPrefixWith: "documents/" },
    },
    {
      condition: { keyPrefixEquals: "old.html" },
      redirect: { replaceKeyWith: "new.html", httpRedirectCode: "302" },
    },
    {
      condition: { keyPrefixEquals: "ext/" },
      redirect: { hostName: "example.com", protocol: "https", replaceKeyPrefixWith: "" },
    },
    {
      condition: { httpErrorCodeReturnedEquals: "404", keyPrefixEquals: "images/" },
      redirect: { hostName: "img.example.com", replaceKeyPrefixWith: "missing/" },
    },
    {
      condition: { httpErrorCodeReturnedEquals: "404" },
      redirect: { replaceKeyWith: "not-found.html", httpRedirectCode: "307" },
    },
  ],
};

Deno.test("website routing before lookup: prefix rules in order, first match wins", () => {
  const table: [string, { status: number; location: string } | undefined][] = [
    ["docs/a/b.html", {
      status: 301,
      location: "http://localhost:9000/website/site/documents/a/b.html",
    }],
    ["docs/", { status: 301, location: "http://localhost:9000/website/site/documents/" }],
    ["docsx", undefined],
    ["old.html", { status: 302, location: "http://localhost:9000/website/site/new.html" }],
    ["old.html.bak", { status: 302, location: "http://localhost:9000/website/site/new.html" }],
    ["ext/a b?.html", { status: 301, location: "https://example.com/a%20b%3F.html" }],
    ["images/cat.png", undefined],
    ["index.html", undefined],
    ["", undefined],
  ];
  for (const [key, expected] of table) {
    assertEquals(redirectBeforeLookup(CONFIG, key, SITE), expected, key);
  }
});

Deno.test("website routing after an error: the error code and the prefix must both match", () => {
  const table: [string, number, { status: number; location: string } | undefined][] = [
    ["images/cat.png", 404, { status: 301, location: "http://img.example.com/missing/cat.png" }],
    ["other.png", 404, {
      status: 307,
      location: "http://localhost:9000/website/site/not-found.html",
    }],
    ["images/cat.png", 403, undefined],
    ["other.png", 403, undefined],
  ];
  for (const [key, status, expected] of table) {
    assertEquals(redirectAfterError(CONFIG, key, status, SITE), expected, `${key} ${status}`);
  }
});

Deno.test("website routing: a rule without a condition redirects everything", () => {
  const config: WebsiteConfig = {
    indexSuffix: "index.html",
    routingRules: [{ redirect: { hostName: "new.example", protocol: "https" } }],
  };
  const host = { ...SITE, scheme: "https" as const, host: "site.web.test", root: "/" };
  assertEquals(redirectBeforeLookup(config, "a/b", host), {
    status: 301,
    location: "https://new.example/a/b",
  });
});

Deno.test("website routing: RedirectAllRequestsTo keeps the path, protocol defaults to the request's", () => {
  const config: WebsiteConfig = { redirectAll: { hostName: "www.example.com" }, routingRules: [] };
  assertEquals(redirectBeforeLookup(config, "x/y.html", SITE), {
    status: 301,
    location: "http://www.example.com/x/y.html",
  });
  const https: WebsiteConfig = {
    redirectAll: { hostName: "www.example.com", protocol: "https" },
    routingRules: [],
  };
  assertEquals(redirectBeforeLookup(https, "", SITE)?.location, "https://www.example.com/");
});

Deno.test("website index documents serve folders", () => {
  const table: [string, string][] = [
    ["", "index.html"],
    ["a/", "a/index.html"],
    ["a/b/", "a/b/index.html"],
    ["a", "a"],
    ["a/page.html", "a/page.html"],
  ];
  for (const [key, served] of table) assertEquals(servedKey(CONFIG, key), served, key);
});
