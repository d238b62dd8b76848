// The /browse pages over plain HTTP: who may browse (the anonymous ListObjectsV2 decision), the
// one 404 page, escaping, paging and the page's security headers.
import {
  CreateBucketCommand,
  PutBucketAclCommand,
  PutBucketPolicyCommand,
  PutObjectCommand,
  PutPublicAccessBlockCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { s3Client, type TestServer, withServer } from "./server.ts";

function publicPolicy(bucket: string, actions: string[], effect = "Allow") {
  return JSON.stringify({
    Version: "2012-10-17",
    Statement: [{
      Effect: effect,
      Principal: "*",
      Action: actions.map((a) => `s3:${a}`),
      Resource: [`arn:aws:s3:::${bucket}`, `arn:aws:s3:::${bucket}/*`],
    }],
  });
}

async function bucketWith(s3: S3Client, bucket: string, keys: string[]): Promise<void> {
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  for (const key of keys) {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: key }));
  }
}

async function get(server: TestServer, path: string, init?: RequestInit) {
  const res = await fetch(server.url + path, init);
  return { res, body: await res.text() };
}

/** Hrefs of the rows (folders and files) in page order. */
function rowLinks(body: string): string[] {
  return [...body.matchAll(/<span class="name"><a href="([^"]*)"/g)]
    .map((m) => m[1].replace(/&#39;/g, "'").replace(/&amp;/g, "&"));
}

Deno.test("browse: only anonymously listable buckets; one 404 page for everything else", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await bucketWith(s3, "by-policy", ["a.txt"]);
    await bucketWith(s3, "by-acl", ["a.txt"]);
    await bucketWith(s3, "private", ["a.txt"]);
    await bucketWith(s3, "denied", ["a.txt"]);
    await s3.send(
      new PutBucketPolicyCommand({
        Bucket: "by-policy",
        Policy: publicPolicy("by-policy", ["ListBucket", "GetObject"]),
      }),
    );
    await s3.send(new PutBucketAclCommand({ Bucket: "by-acl", ACL: "public-read" }));
    // A Deny for anonymous listing wins over the public-read ACL.
    await s3.send(new PutBucketAclCommand({ Bucket: "denied", ACL: "public-read" }));
    await s3.send(
      new PutBucketPolicyCommand({
        Bucket: "denied",
        Policy: publicPolicy("denied", ["ListBucket"], "Deny"),
      }),
    );

    const policy = await get(server, "/browse/by-policy");
    assertEquals(policy.res.status, 200);
    assertEquals(rowLinks(policy.body), ["/by-policy/a.txt"]);
    const acl = await get(server, "/browse/by-acl/");
    assertEquals(acl.res.status, 200);
    assertEquals(rowLinks(acl.body), ["/by-acl/a.txt"], "readable by the object's own ACL");

    const notFound = await get(server, "/browse/private");
    assertEquals(notFound.res.status, 404);
    const headerNames = (r: Response) => [...r.headers.keys()].filter((k) => k !== "date");
    for (
      const path of [
        "/browse/denied",
        "/browse/missing-bucket",
        "/browse/NOT_A..NAME",
        "/browse",
        "/browse/",
        "/browse/private/sub/dir/?q=a",
      ]
    ) {
      const other = await get(server, path);
      assertEquals(other.res.status, 404, path);
      assertEquals(other.body, notFound.body, `${path}: the same page`);
      assertEquals(headerNames(other.res), headerNames(notFound.res), `${path}: the same headers`);
    }
    assert(!notFound.body.replace(/<style>[^<]*<\/style>/, "").includes("private"));

    const icon = await get(server, "/browse/_assets/icon.svg");
    assertEquals(icon.res.status, 200);
    assertEquals(icon.res.headers.get("content-type"), "image/svg+xml");
    assertMatch(icon.body, /^<svg /);

    const post = await get(server, "/browse/by-policy", { method: "POST", body: "x" });
    assertEquals(post.res.status, 405);
    assertEquals(post.res.headers.get("allow"), "GET, HEAD");
    const head = await fetch(server.url + "/browse/by-policy", { method: "HEAD" });
    assertEquals(head.status, 200);
    assertEquals(await head.text(), "");
    const headMissing = await fetch(server.url + "/browse/private", { method: "HEAD" });
    assertEquals(headMissing.status, 404);
    await headMissing.body?.cancel();
    // The public access block applies through the same decision.
    await s3.send(
      new PutPublicAccessBlockCommand({
        Bucket: "by-policy",
        PublicAccessBlockConfiguration: { RestrictPublicBuckets: true },
      }),
    );
    await s3.send(
      new PutPublicAccessBlockCommand({
        Bucket: "by-acl",
        PublicAccessBlockConfiguration: { IgnorePublicAcls: true },
      }),
    );
    for (const path of ["/browse/by-policy", "/browse/by-acl"]) {
      const blocked = await get(server, path);
      assertEquals(blocked.res.status, 404, `${path} behind a public access block`);
      assertEquals(blocked.body, notFound.body);
    }
  });
});

Deno.test("browse: listing only public, downloads only where GetObject is public", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await bucketWith(s3, "list-only", ["doc.txt", "pic.png"]);
    await s3.send(
      new PutBucketPolicyCommand({
        Bucket: "list-only",
        Policy: JSON.stringify({
          Version: "2012-10-17",
          Statement: [
            {
              Effect: "Allow",
              Principal: "*",
              Action: "s3:ListBucket",
              Resource: "arn:aws:s3:::list-only",
            },
            {
              Effect: "Deny",
              Principal: "*",
              Action: "s3:GetObject",
              Resource: "arn:aws:s3:::list-only/*",
            },
          ],
        }),
      }),
    );
    const { res, body } = await get(server, "/browse/list-only");
    assertEquals(res.status, 200);
    assertEquals(rowLinks(body), [], "no links to objects that cannot be read");
    assertMatch(body, /<bdi>doc\.txt<\/bdi><span class="private">private<\/span>/);
    assert(!body.includes("<img"), "no preview of an unreadable image");
    const direct = await fetch(server.url + "/list-only/doc.txt");
    assertEquals(direct.status, 403, "the object itself stays private");
    await direct.body?.cancel();
  });
});

Deno.test("browse: folders, escaping, dot segments, search, paging and headers", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const hostile = `<img src=x onerror="alert(1)"> 'q' & 🦀 שלום.txt`;
    const keys = [
      "a.txt",
      "b.txt",
      "c.txt",
      "docs/one.txt",
      "docs/two.txt",
      "pics/cat.png",
      hostile,
      "x/../escape.txt",
      "sp ace/#hash?.txt",
    ];
    await bucketWith(s3, "pub", keys);
    await s3.send(
      new PutBucketPolicyCommand({
        Bucket: "pub",
        Policy: publicPolicy("pub", ["ListBucket", "GetObject"]),
      }),
    );

    const root = await get(server, "/browse/pub");
    const csp = root.res.headers.get("content-security-policy") ?? "";
    assertMatch(csp, /default-src 'none'/);
    assertMatch(csp, /style-src 'sha256-[A-Za-z0-9+/]+=*'/);
    assert(!csp.includes("unsafe-inline") && !csp.includes("script-src"));
    assertEquals(root.res.headers.get("x-content-type-options"), "nosniff");
    assertEquals(root.res.headers.get("content-type"), "text/html; charset=utf-8");
    assert(
      !/<script|https?:\/\//i.test(root.body.replace(/&lt;script/g, "")),
      "no script, no external URL",
    );
    assert(!root.body.includes(hostile) && !root.body.includes("<img src=x"));
    assert(
      root.body.includes(
        "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &#39;q&#39; &amp; 🦀 שלום.txt",
      ),
    );
    // Folders and files in key order (`<` sorts before letters).
    assertEquals(rowLinks(root.body), [
      "/pub/%3Cimg%20src%3Dx%20onerror%3D%22alert(1)%22%3E%20'q'%20%26%20%F0%9F%A6%80%20%D7%A9%D7%9C%D7%95%D7%9D.txt",
      "/pub/a.txt",
      "/pub/b.txt",
      "/pub/c.txt",
      "/browse/pub/docs/",
      "/browse/pub/pics/",
      "/browse/pub/sp%20ace/",
      "/browse/pub/x/",
    ]);

    const docs = await get(server, "/browse/pub/docs/");
    assertEquals(rowLinks(docs.body), ["/pub/docs/one.txt", "/pub/docs/two.txt"]);
    assertEquals(
      (await get(server, "/browse/pub/docs")).body,
      docs.body,
      "trailing slash optional",
    );
    const pics = await get(server, "/browse/pub/pics/");
    assertMatch(pics.body, /<img src="\/pub\/pics\/cat\.png" alt="" loading="lazy">/);
    const spaced = await get(server, "/browse/pub/sp%20ace/");
    assertEquals(rowLinks(spaced.body), ["/pub/sp%20ace/%23hash%3F.txt"]);

    // A prefix with a dot segment is reached through ?prefix= and its key gets no link.
    const x = await get(server, "/browse/pub/x/");
    assertEquals(rowLinks(x.body), ["/browse/pub/?prefix=x%2F..%2F"]);
    const dots = await get(server, "/browse/pub/?prefix=x%2F..%2F");
    assertEquals(rowLinks(dots.body), []);
    assertMatch(dots.body, /<bdi>escape\.txt<\/bdi><span class="private">no link<\/span>/);

    const search = await get(server, "/browse/pub/docs/?q=tw");
    assertEquals(rowLinks(search.body), ["/pub/docs/two.txt"]);
    assertMatch(search.body, /value="tw"/);
    const none = await get(server, "/browse/pub/?q=zzz");
    assertMatch(none.body, /Nothing here matches/);

    // Paging: two rows a page, following "Next page" until there is none.
    const seen: string[] = [];
    let path: string | undefined = "/browse/pub/?limit=2";
    let pages = 0;
    while (path) {
      const page = await get(server, path);
      assertEquals(page.res.status, 200);
      const links = rowLinks(page.body).concat(
        [...page.body.matchAll(/<bdi>([^<]*)<\/bdi><span class="private">/g)].map((m) => m[1]),
      );
      assert(links.length <= 2);
      seen.push(...links.map((l) => l.replace("?limit=2", "")));
      const next = /<a rel="next" href="([^"]*)">/.exec(page.body);
      path = next ? next[1].replace(/&amp;/g, "&") : undefined;
      pages++;
    }
    assertEquals(seen, rowLinks(root.body));
    assertEquals(pages, 4);
    const bad = await get(server, "/browse/pub/?token=%25%25");
    assertEquals(bad.res.status, 400);
  });
});
