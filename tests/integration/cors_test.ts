// CORS over HTTP: Get/Put/DeleteBucketCors with the SDK and raw requests, preflights on bucket
// and object paths, and the headers of actual requests (errors included).
import {
  CreateBucketCommand,
  DeleteBucketCorsCommand,
  GetBucketCorsCommand,
  PutBucketCorsCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { anonymous, expectError, expectStatus, md5Base64 } from "./access_helpers.ts";
import { s3Client, type TestServer, withServer } from "./server.ts";
import { signedFetch, xmlValue } from "./signer.ts";

const ORIGIN = "https://app.example.com";

/** Rules as the SDK shows them, with keys in a fixed order. */
function canonical(rules: object[] | undefined): string[] {
  return (rules ?? []).map((r) => JSON.stringify(r, Object.keys(r).sort()));
}

function preflightReq(
  server: TestServer,
  path: string,
  headers: Record<string, string>,
): Promise<Response> {
  return fetch(server.url + path, { method: "OPTIONS", headers });
}

function putCors(server: TestServer, bucket: string, xml: string, md5 = true) {
  return signedFetch(server, {
    method: "PUT",
    path: `/${bucket}`,
    query: [["cors", ""]],
    headers: md5 ? { "content-md5": md5Base64(xml) } : {},
    body: xml,
  });
}

const RULES = `<CORSConfiguration>
  <CORSRule><ID>writers</ID><AllowedOrigin>https://*.example.com</AllowedOrigin>
    <AllowedMethod>PUT</AllowedMethod><AllowedMethod>GET</AllowedMethod>
    <AllowedMethod>DELETE</AllowedMethod><AllowedHeader>content-type</AllowedHeader>
    <AllowedHeader>x-amz-*</AllowedHeader><ExposeHeader>ETag</ExposeHeader>
    <MaxAgeSeconds>600</MaxAgeSeconds></CORSRule>
  <CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>
    <AllowedMethod>HEAD</AllowedMethod></CORSRule>
</CORSConfiguration>`;

Deno.test("CORS configuration: SDK round trip, errors, refusals change nothing", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "cors-sdk" }));
    await assertRejectsCode(
      () => s3.send(new GetBucketCorsCommand({ Bucket: "cors-sdk" })),
      "NoSuchCORSConfiguration",
    );
    const CORSRules = [{
      ID: "one",
      AllowedOrigins: ["http://localhost:*"],
      AllowedMethods: ["GET", "PUT"],
      AllowedHeaders: ["*"],
      ExposeHeaders: ["ETag"],
      MaxAgeSeconds: 60,
    }];
    await s3.send(
      new PutBucketCorsCommand({ Bucket: "cors-sdk", CORSConfiguration: { CORSRules } }),
    );
    const got = await s3.send(new GetBucketCorsCommand({ Bucket: "cors-sdk" }));
    assertEquals(canonical(got.CORSRules), canonical(CORSRules));

    const bad = [
      ["<CORSConfiguration></CORSConfiguration>", "MalformedXML"],
      [
        "<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
        "MalformedXML",
      ],
      [
        "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>",
        "InvalidRequest",
      ],
      [
        "<CORSConfiguration><CORSRule><AllowedOrigin>*.*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
        "InvalidRequest",
      ],
      [
        "<CORSConfiguration>" +
        "<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>"
          .repeat(101) +
        "</CORSConfiguration>",
        "MalformedXML",
      ],
      [
        "<CORSConfiguration><CORSRule><AllowedOrigin>" + "a".repeat(70_000) +
        "</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
        "InvalidRequest",
      ],
    ];
    for (const [xml, code] of bad) {
      await expectError(await putCors(server, "cors-sdk", xml), code, 400, xml.slice(0, 80));
    }
    await expectError(await putCors(server, "cors-sdk", RULES, false), "InvalidRequest", 400);
    const stillThere = await s3.send(new GetBucketCorsCommand({ Bucket: "cors-sdk" }));
    assertEquals(
      canonical(stillThere.CORSRules),
      canonical(CORSRules),
      "refused documents change nothing",
    );

    // Anonymous callers may neither read nor replace nor delete the rules.
    const anonPut = await anonymous(server, {
      method: "PUT",
      path: "/cors-sdk",
      query: "cors",
      headers: { "content-md5": md5Base64(RULES) },
      body: RULES,
    });
    await expectError(anonPut, "AccessDenied", 403);
    await expectError(
      await anonymous(server, { method: "GET", path: "/cors-sdk", query: "cors" }),
      "AccessDenied",
      403,
    );
    await expectError(
      await anonymous(server, { method: "DELETE", path: "/cors-sdk", query: "cors" }),
      "AccessDenied",
      403,
    );
    await s3.send(new DeleteBucketCorsCommand({ Bucket: "cors-sdk" }));
    await assertRejectsCode(
      () => s3.send(new GetBucketCorsCommand({ Bucket: "cors-sdk" })),
      "NoSuchCORSConfiguration",
    );
    await expectError(
      await signedFetch(server, { method: "GET", path: "/no-such-bucket", query: [["cors", ""]] }),
      "NoSuchBucket",
      404,
    );
  });
});

Deno.test("CORS preflight: bucket and object paths, matching and refusals", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "cors-pre" }));
    const ask = (path: string, headers: Record<string, string>) =>
      preflightReq(server, path, headers);
    // No rules yet: the same 403 as for a bucket that does not exist.
    const none = await ask("/cors-pre/a.txt", {
      origin: ORIGIN,
      "access-control-request-method": "GET",
    });
    const noneBody = await expectError(none, "AccessForbidden", 403);
    assertEquals(xmlValue(noneBody, "Method"), "GET");
    assertEquals(xmlValue(noneBody, "ResourceType"), "OBJECT");
    const missing = await ask("/cors-missing/a.txt", {
      origin: ORIGIN,
      "access-control-request-method": "GET",
    });
    const missingBody = await expectError(missing, "AccessForbidden", 403);
    assertEquals(xmlValue(missingBody, "Message"), xmlValue(noneBody, "Message"));

    await expectStatus(await putCors(server, "cors-pre", RULES), 200);
    const ok = await ask("/cors-pre/dir/a.txt", {
      origin: ORIGIN,
      "access-control-request-method": "PUT",
      "access-control-request-headers": "Content-Type, X-Amz-Date",
    });
    await expectStatus(ok, 200);
    assertEquals(ok.headers.get("access-control-allow-origin"), ORIGIN);
    assertEquals(ok.headers.get("access-control-allow-methods"), "PUT, GET, DELETE");
    assertEquals(ok.headers.get("access-control-allow-headers"), "content-type, x-amz-date");
    assertEquals(ok.headers.get("access-control-expose-headers"), "ETag");
    assertEquals(ok.headers.get("access-control-max-age"), "600");
    assertEquals(ok.headers.get("access-control-allow-credentials"), "true");
    assert(ok.headers.get("vary")?.includes("Origin"));

    // The wildcard rule answers any origin for GET on the bucket path.
    const any = await ask("/cors-pre", {
      origin: "http://elsewhere.test",
      "access-control-request-method": "GET",
    });
    await expectStatus(any, 200);
    assertEquals(any.headers.get("access-control-allow-origin"), "*");

    const refusals: [string, Record<string, string>][] = [
      ["/cors-pre/a", { origin: "http://elsewhere.test", "access-control-request-method": "PUT" }],
      ["/cors-pre/a", {
        origin: ORIGIN,
        "access-control-request-method": "PUT",
        "access-control-request-headers": "authorization",
      }],
      ["/cors-pre/a", { origin: ORIGIN, "access-control-request-method": "POST" }],
      ["/cors-pre/a", { origin: "https://example.com", "access-control-request-method": "PUT" }],
    ];
    for (const [path, headers] of refusals) {
      const res = await ask(path, headers);
      await expectError(res, "AccessForbidden", 403, JSON.stringify(headers));
      assertEquals(res.headers.get("access-control-allow-origin"), null);
    }
    await expectError(
      await ask("/cors-pre/a", { "access-control-request-method": "GET" }),
      "BadRequest",
      400,
    );
    await expectError(await ask("/cors-pre/a", { origin: ORIGIN }), "BadRequest", 400);
    // A preflight never needs (nor checks) credentials: a bad signature changes nothing.
    const signedJunk = await ask("/cors-pre/a", {
      origin: ORIGIN,
      "access-control-request-method": "GET",
      authorization: "AWS4-HMAC-SHA256 Credential=nobody/x, SignedHeaders=host, Signature=00",
    });
    await expectStatus(signedJunk, 200);
  });
});

Deno.test("CORS on actual requests: matching rule's headers, errors included", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "cors-act" }));
    await s3.send(new PutObjectCommand({ Bucket: "cors-act", Key: "a.txt", Body: "hello" }));
    await expectStatus(await putCors(server, "cors-act", RULES), 200);

    const get = await signedFetch(server, {
      method: "GET",
      path: "/cors-act/a.txt",
      headers: { origin: ORIGIN },
    });
    assertEquals(await expectStatus(get, 200), "hello");
    assertEquals(get.headers.get("access-control-allow-origin"), ORIGIN);
    assertEquals(get.headers.get("access-control-expose-headers"), "ETag");

    // Errors carry the headers too, so a page can read why it failed.
    const denied = await anonymous(server, {
      method: "GET",
      path: "/cors-act/a.txt",
      headers: { origin: "http://elsewhere.test" },
    });
    await expectError(denied, "AccessDenied", 403);
    assertEquals(denied.headers.get("access-control-allow-origin"), "*");
    const missing = await signedFetch(server, {
      method: "GET",
      path: "/cors-act/missing",
      headers: { origin: ORIGIN },
    });
    await expectError(missing, "NoSuchKey", 404);
    assertEquals(missing.headers.get("access-control-allow-origin"), ORIGIN);

    // No Origin header, an origin no rule names, a method no rule allows: no CORS headers.
    const plain = await signedFetch(server, { method: "GET", path: "/cors-act/a.txt" });
    await expectStatus(plain, 200);
    assertEquals(plain.headers.get("access-control-allow-origin"), null);
    const put = await signedFetch(server, {
      method: "PUT",
      path: "/cors-act/b.txt",
      headers: { origin: "http://elsewhere.test" },
      body: "x",
    });
    await expectStatus(put, 200);
    assertEquals(put.headers.get("access-control-allow-origin"), null);
    assertEquals(put.headers.get("vary"), "Origin");
  });
});
