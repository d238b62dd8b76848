// Website hosting over HTTP: Get/Put/DeleteBucketWebsite with the SDK and raw requests in both
// dialects (errors included), and the site served at /website/{bucket}/ and by Host under
// STORE_WEBSITE_DOMAIN: index documents, the error document with its status, routing rules,
// RedirectAllRequestsTo, private buckets, no listings.
import {
  CreateBucketCommand,
  DeleteBucketWebsiteCommand,
  GetBucketWebsiteCommand,
  PutBucketPolicyCommand,
  PutBucketWebsiteCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { DIALECTS, expectError, expectStatus, md5Base64, NAMESPACE } from "./access_helpers.ts";
import { connect, readUntilClosed, send, statusOf } from "./raw_conn.ts";
import { s3Client, type TestServer, withServer } from "./server.ts";
import { signedFetch, xmlValue, xmlValues } from "./signer.ts";

const INDEX = "<h1>home</h1>";
const ABOUT = "<h1>about</h1>";
const ERROR = "<h1>oops</h1>";

/**
 * A bucket anyone may read; with `listable` anyone may also list it, so a missing key is 404
 * rather than 403 (as the protocol decides it).
 */
async function publicBucket(s3: S3Client, Bucket: string, listable = true): Promise<void> {
  await s3.send(new CreateBucketCommand({ Bucket }));
  const Statement = [{
    Effect: "Allow",
    Principal: "*",
    Action: "s3:GetObject",
    Resource: `arn:aws:s3:::${Bucket}/*`,
  }];
  if (listable) {
    Statement.push({
      Effect: "Allow",
      Principal: "*",
      Action: "s3:ListBucket",
      Resource: `arn:aws:s3:::${Bucket}`,
    });
  }
  await s3.send(
    new PutBucketPolicyCommand({
      Bucket,
      Policy: JSON.stringify({ Version: "2012-10-17", Statement }),
    }),
  );
}

/** JSON with every object's keys sorted, to compare documents whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(
    value,
    (_, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a < b ? -1 : 1))
        : v,
  );
}

async function putPage(s3: S3Client, Bucket: string, Key: string, Body: string) {
  await s3.send(new PutObjectCommand({ Bucket, Key, Body, ContentType: "text/html" }));
}

function site(server: TestServer, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(server.url + path, { redirect: "manual", ...init });
}

const SITE_CONFIG = {
  IndexDocument: { Suffix: "index.html" },
  ErrorDocument: { Key: "error.html" },
  RoutingRules: [
    { Condition: { KeyPrefixEquals: "docs/" }, Redirect: { ReplaceKeyPrefixWith: "documents/" } },
    {
      Condition: { KeyPrefixEquals: "old.html" },
      Redirect: { ReplaceKeyWith: "about/", HttpRedirectCode: "302" },
    },
    {
      Condition: { HttpErrorCodeReturnedEquals: "404", KeyPrefixEquals: "images/" },
      Redirect: { HostName: "img.example.com", Protocol: "https" as const },
    },
  ],
};

Deno.test("website configuration: SDK round trip", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "web-sdk";
    await s3.send(new CreateBucketCommand({ Bucket }));
    await assertRejectsCode(
      () => s3.send(new GetBucketWebsiteCommand({ Bucket })),
      "NoSuchWebsiteConfiguration",
    );
    await s3.send(new PutBucketWebsiteCommand({ Bucket, WebsiteConfiguration: SITE_CONFIG }));
    const got = await s3.send(new GetBucketWebsiteCommand({ Bucket }));
    assertEquals(got.IndexDocument, SITE_CONFIG.IndexDocument);
    assertEquals(got.ErrorDocument, SITE_CONFIG.ErrorDocument);
    assertEquals(canonical(got.RoutingRules), canonical(SITE_CONFIG.RoutingRules));
    assertEquals(got.RedirectAllRequestsTo, undefined);

    await s3.send(
      new PutBucketWebsiteCommand({
        Bucket,
        WebsiteConfiguration: {
          RedirectAllRequestsTo: { HostName: "www.example.com", Protocol: "https" },
        },
      }),
    );
    const all = await s3.send(new GetBucketWebsiteCommand({ Bucket }));
    assertEquals(all.RedirectAllRequestsTo, { HostName: "www.example.com", Protocol: "https" });
    assertEquals(all.IndexDocument, undefined);

    await s3.send(new DeleteBucketWebsiteCommand({ Bucket }));
    await assertRejectsCode(
      () => s3.send(new GetBucketWebsiteCommand({ Bucket })),
      "NoSuchWebsiteConfiguration",
    );
  });
});

const doc = (inner: string) => `<WebsiteConfiguration>${inner}</WebsiteConfiguration>`;
const INDEX_XML = "<IndexDocument><Suffix>index.html</Suffix></IndexDocument>";
const rule = (inner: string) => `<RoutingRules><RoutingRule>${inner}</RoutingRule></RoutingRules>`;

Deno.test("website configuration: raw requests and errors in both dialects", async () => {
  await withServer(async (server) => {
    for (const dialect of DIALECTS) {
      const bucket = `web-raw-${dialect}`;
      const req = (r: Parameters<typeof signedFetch>[1]) => signedFetch(server, { dialect, ...r });
      await expectStatus(await req({ method: "PUT", path: `/${bucket}` }), 200);
      const put = (xml: string) =>
        req({
          method: "PUT",
          path: `/${bucket}`,
          query: [["website", ""]],
          headers: { "content-md5": md5Base64(xml) },
          body: xml,
        });
      const get = () => req({ method: "GET", path: `/${bucket}`, query: [["website", ""]] });
      const missing = await expectError(await get(), "NoSuchWebsiteConfiguration", 404);
      assertEquals(xmlValue(missing, "BucketName"), bucket);

      const many = Array.from(
        { length: 51 },
        (_, i) =>
          `<RoutingRule><Condition><KeyPrefixEquals>p${i}/</KeyPrefixEquals></Condition>` +
          `<Redirect><ReplaceKeyWith>x</ReplaceKeyWith></Redirect></RoutingRule>`,
      ).join("");
      const bad: [string, string][] = [
        [doc(""), "InvalidArgument"],
        [doc("<ErrorDocument><Key>e.html</Key></ErrorDocument>"), "InvalidArgument"],
        [doc("<IndexDocument><Suffix>a/index.html</Suffix></IndexDocument>"), "InvalidArgument"],
        [doc("<IndexDocument><Suffix></Suffix></IndexDocument>"), "InvalidArgument"],
        [
          doc(INDEX_XML + "<RedirectAllRequestsTo><HostName>h</HostName></RedirectAllRequestsTo>"),
          "InvalidArgument",
        ],
        [
          doc("<RedirectAllRequestsTo><Protocol>https</Protocol></RedirectAllRequestsTo>"),
          "InvalidArgument",
        ],
        [
          doc(
            "<RedirectAllRequestsTo><HostName>h</HostName><Protocol>ftp</Protocol></RedirectAllRequestsTo>",
          ),
          "InvalidArgument",
        ],
        [
          doc(INDEX_XML + rule("<Redirect><HttpRedirectCode>200</HttpRedirectCode></Redirect>")),
          "InvalidArgument",
        ],
        [
          doc(INDEX_XML + rule("<Redirect><HttpRedirectCode>300</HttpRedirectCode></Redirect>")),
          "InvalidArgument",
        ],
        [
          doc(
            INDEX_XML +
              rule(
                "<Condition><HttpErrorCodeReturnedEquals>200</HttpErrorCodeReturnedEquals></Condition>" +
                  "<Redirect><HostName>h</HostName></Redirect>",
              ),
          ),
          "InvalidArgument",
        ],
        [
          doc(
            INDEX_XML +
              rule(
                "<Redirect><ReplaceKeyWith>a</ReplaceKeyWith><ReplaceKeyPrefixWith>b</ReplaceKeyPrefixWith></Redirect>",
              ),
          ),
          "InvalidArgument",
        ],
        [
          doc(INDEX_XML + rule("<Condition><KeyPrefixEquals>a</KeyPrefixEquals></Condition>")),
          "MalformedXML",
        ],
        [doc(INDEX_XML + "<Other/>"), "MalformedXML"],
        [doc(INDEX_XML + `<RoutingRules>${many}</RoutingRules>`), "InvalidArgument"],
        ["<Website/>", "MalformedXML"],
      ];
      for (const [xml, code] of bad) await expectError(await put(xml), code, 400, xml);
      await expectError(await get(), "NoSuchWebsiteConfiguration", 404, "nothing was stored");

      const good = doc(
        INDEX_XML + "<ErrorDocument><Key>404.html</Key></ErrorDocument>" +
          rule(
            "<Condition><HttpErrorCodeReturnedEquals>404</HttpErrorCodeReturnedEquals></Condition>" +
              "<Redirect><HostName>h.example</HostName><HttpRedirectCode>307</HttpRedirectCode></Redirect>",
          ),
      );
      await expectStatus(await put(good), 200);
      const body = await expectStatus(await get(), 200);
      assert(body.includes(`<WebsiteConfiguration xmlns="${NAMESPACE[dialect]}">`), body);
      assertEquals(xmlValue(body, "Suffix"), "index.html");
      assertEquals(xmlValue(body, "Key"), "404.html");
      assertEquals(xmlValue(body, "HttpErrorCodeReturnedEquals"), "404");
      assertEquals(xmlValues(body, "HostName"), ["h.example"]);
      assertEquals(xmlValue(body, "HttpRedirectCode"), "307");
      await expectStatus(
        await req({ method: "DELETE", path: `/${bucket}`, query: [["website", ""]] }),
        204,
      );
      await expectError(await get(), "NoSuchWebsiteConfiguration", 404);
      await expectError(
        await req({ method: "GET", path: "/no-such-site", query: [["website", ""]] }),
        "NoSuchBucket",
        404,
      );
    }
  });
});

/** A GET with a Host header (fetch cannot set one), over a raw connection. */
async function hostGet(
  server: TestServer,
  host: string,
  path: string,
): Promise<{ status: number; headers: Headers; body: string }> {
  const conn = await connect(server.port);
  await send(conn, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  const { text } = await readUntilClosed(conn, 10_000);
  const [head, ...rest] = text.split("\r\n\r\n");
  const headers = new Headers();
  for (const line of head.split("\r\n").slice(1)) {
    const colon = line.indexOf(":");
    headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  let body = rest.join("\r\n\r\n");
  if (headers.get("transfer-encoding") === "chunked") {
    let out = "";
    for (let at = 0;;) {
      const end = body.indexOf("\r\n", at);
      const size = parseInt(body.slice(at, end), 16);
      if (!size) break;
      out += body.slice(end + 2, end + 2 + size);
      at = end + 2 + size + 2;
    }
    body = out;
  }
  return { status: statusOf(text)!, headers, body };
}

Deno.test("website serving: index and error documents, routing rules, redirects, access", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await publicBucket(s3, "site");
    await putPage(s3, "site", "index.html", INDEX);
    await putPage(s3, "site", "about/index.html", ABOUT);
    await putPage(s3, "site", "error.html", ERROR);
    await putPage(s3, "site", "documents/a.html", "<p>a</p>");
    await s3.send(
      new PutBucketWebsiteCommand({ Bucket: "site", WebsiteConfiguration: SITE_CONFIG }),
    );

    const ok = async (path: string, body: string) => {
      const res = await site(server, path);
      assertEquals(await res.text(), body, path);
      assertEquals(res.status, 200, path);
      assertEquals(res.headers.get("content-type"), "text/html", path);
    };
    await ok("/website/site/", INDEX);
    await ok("/website/site/index.html", INDEX);
    await ok("/website/site/about/", ABOUT);
    await ok("/website/site/documents/a.html", "<p>a</p>");

    // Redirects: [path, status, location].
    const host = new URL(server.url).host;
    const redirects: [string, number, string][] = [
      ["/website/site", 302, "/website/site/"],
      ["/website/site/about", 302, "/website/site/about/"],
      ["/website/site/docs/a.html", 301, `http://${host}/website/site/documents/a.html`],
      ["/website/site/old.html", 302, `http://${host}/website/site/about/`],
      ["/website/site/images/cat.png", 301, "https://img.example.com/images/cat.png"],
    ];
    for (const [path, status, location] of redirects) {
      const res = await site(server, path);
      await res.body?.cancel();
      assertEquals([res.status, res.headers.get("location")], [status, location], path);
    }

    // A missing page: the error document with 404; HEAD too, without a body.
    const missing = await site(server, "/website/site/nothing.html");
    assertEquals([missing.status, await missing.text()], [404, ERROR]);
    const head = await site(server, "/website/site/nothing.html", { method: "HEAD" });
    assertEquals([head.status, await head.text()], [404, ""]);
    const headOk = await site(server, "/website/site/", { method: "HEAD" });
    assertEquals([headOk.status, headOk.headers.get("content-length")], [
      200,
      String(INDEX.length),
    ]);
    // A folder without an index document is not listed.
    await putPage(s3, "site", "files/x.txt", "x");
    const folder = await site(server, "/website/site/files/");
    assertEquals([folder.status, await folder.text()], [404, ERROR]);
    // Ranges and conditions reach the object read.
    const range = await site(server, "/website/site/", { headers: { range: "bytes=0-3" } });
    assertEquals([range.status, await range.text()], [206, INDEX.slice(0, 4)]);
    const etag = (await site(server, "/website/site/").then(async (r) => {
      await r.body?.cancel();
      return r.headers.get("etag");
    }))!;
    const cached = await site(server, "/website/site/", { headers: { "if-none-match": etag } });
    await cached.body?.cancel();
    assertEquals(cached.status, 304);
    // Only GET and HEAD; dot segments refused.
    const post = await site(server, "/website/site/index.html", { method: "POST", body: "x" });
    assertEquals(post.status, 405);
    assert((await post.text()).includes("MethodNotAllowed"));
    // (fetch would resolve the dot segments itself.)
    const dots = await hostGet(server, "127.0.0.1", "/website/site/a/../index.html");
    assertEquals(dots.status, 400);

    // Without the error document: an HTML page naming the error.
    await s3.send(
      new PutBucketWebsiteCommand({
        Bucket: "site",
        WebsiteConfiguration: { IndexDocument: { Suffix: "index.html" } },
      }),
    );
    const plain = await site(server, "/website/site/nothing.html");
    const page = await plain.text();
    assertEquals(plain.status, 404);
    assertEquals(plain.headers.get("content-type"), "text/html; charset=utf-8");
    assert(page.includes("Code: NoSuchKey") && page.includes("Key: nothing.html"), page);

    // A private bucket's site: 403 with its error document only if that is readable (it is not).
    await s3.send(new CreateBucketCommand({ Bucket: "private-site" }));
    await putPage(s3, "private-site", "index.html", INDEX);
    await s3.send(
      new PutBucketWebsiteCommand({ Bucket: "private-site", WebsiteConfiguration: SITE_CONFIG }),
    );
    const denied = await site(server, "/website/private-site/");
    const deniedPage = await denied.text();
    assertEquals(denied.status, 403);
    assert(deniedPage.includes("Code: AccessDenied") && !deniedPage.includes("home"), deniedPage);

    // Readable but not listable: a missing key is 403, answered with the error document; a
    // folder's index document is still found.
    await publicBucket(s3, "unlisted", false);
    await putPage(s3, "unlisted", "error.html", ERROR);
    await putPage(s3, "unlisted", "about/index.html", ABOUT);
    await s3.send(
      new PutBucketWebsiteCommand({ Bucket: "unlisted", WebsiteConfiguration: SITE_CONFIG }),
    );
    const unlisted = await site(server, "/website/unlisted/nothing.html");
    assertEquals([unlisted.status, await unlisted.text()], [403, ERROR]);
    const unlistedFolder = await site(server, "/website/unlisted/about");
    await unlistedFolder.body?.cancel();
    assertEquals(unlistedFolder.headers.get("location"), "/website/unlisted/about/");

    // A bucket without a website, a missing bucket.
    await publicBucket(s3, "no-site");
    const noSite = await site(server, "/website/no-site/");
    assertEquals(noSite.status, 404);
    assert((await noSite.text()).includes("NoSuchWebsiteConfiguration"));
    const noBucket = await site(server, "/website/ghost/");
    assertEquals(noBucket.status, 404);
    assert((await noBucket.text()).includes("NoSuchBucket"));

    // RedirectAllRequestsTo sends every path elsewhere, keeping it.
    await publicBucket(s3, "moved");
    await s3.send(
      new PutBucketWebsiteCommand({
        Bucket: "moved",
        WebsiteConfiguration: { RedirectAllRequestsTo: { HostName: "new.example" } },
      }),
    );
    const moved = await site(server, "/website/moved/a/b.html?x=1");
    await moved.body?.cancel();
    assertEquals([moved.status, moved.headers.get("location")], [
      301,
      "http://new.example/a/b.html",
    ]);
  });
});

Deno.test("website serving by Host under STORE_WEBSITE_DOMAIN", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await publicBucket(s3, "blog");
    await putPage(s3, "blog", "index.html", INDEX);
    await putPage(s3, "blog", "about/index.html", ABOUT);
    await putPage(s3, "blog", "error.html", ERROR);
    await s3.send(
      new PutBucketWebsiteCommand({ Bucket: "blog", WebsiteConfiguration: SITE_CONFIG }),
    );
    const h = "blog.web.test:8080";
    const home = await hostGet(server, h, "/");
    assertEquals([home.status, home.body], [200, INDEX]);
    const about = await hostGet(server, h, "/about");
    assertEquals([about.status, about.headers.get("location")], [302, "/about/"]);
    assertEquals((await hostGet(server, h, "/about/")).body, ABOUT);
    const docs = await hostGet(server, h, "/docs/x.html");
    assertEquals([docs.status, docs.headers.get("location")], [
      301,
      `http://${h}/documents/x.html`,
    ]);
    const missing = await hostGet(server, "BLOG.web.test", "/missing");
    assertEquals([missing.status, missing.body], [404, ERROR]);
    // Every path under the site's host is the site: the protocol's paths are keys there.
    const admin = await hostGet(server, h, "/admin/users");
    assertEquals([admin.status, admin.body], [404, ERROR]);
    // Other hosts reach the protocol as before.
    for (const other of ["127.0.0.1", "blog.other.test"]) {
      const api = await hostGet(server, other, "/blog/about");
      assertEquals(api.status, 404, other);
      assert(api.body.includes("<Code>NoSuchKey</Code>"), api.body);
    }
  }, { env: { STORE_WEBSITE_DOMAIN: "web.test" } });
});
