// The presigned-URL service (/api/v1): bearer tokens, URL generation, and the URLs in use.
import { createHash } from "node:crypto";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER, type TestServer, withServer } from "./server.ts";
import { signedFetch, xmlValue } from "./signer.ts";

async function createUser(server: TestServer, name: string, access: unknown[]) {
  const res = await fetch(`${server.url}/admin/users`, {
    method: "POST",
    headers: {
      authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`),
      "content-type": "application/json",
    },
    body: JSON.stringify({ name, bucket_access: access }),
  });
  assertEquals(res.status, 201);
  return await res.json() as { access_key: string; secret_key: string };
}

async function token(
  server: TestServer,
  body: unknown,
): Promise<{ status: number; json: Record<string, string> }> {
  const res = await fetch(`${server.url}/api/v1/tokens`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

async function presigned(server: TestServer, bearer: string, path: string) {
  const res = await fetch(`${server.url}/api/v1/presigned/${path}`, {
    headers: { authorization: `Bearer ${bearer}` },
  });
  return { status: res.status, json: await res.json() as Record<string, string> };
}

Deno.test("presigned-URL service", async (t) => {
  await withServer(async (server) => {
    for (const b of ["shared", "private"]) {
      assertEquals((await signedFetch(server, { method: "PUT", path: `/${b}` })).status, 200);
    }
    await signedFetch(server, {
      method: "PUT",
      path: "/shared/report.txt",
      body: "quarterly numbers",
    });
    await signedFetch(server, { method: "PUT", path: "/private/secret.txt", body: "hidden" });
    const user = await createUser(server, "dora", [{ bucket: "shared", permission: "readwrite" }]);
    let bearer = "";

    await t.step("tokens: issued for valid credentials only", async () => {
      const ok = await token(server, { access_key: user.access_key, secret_key: user.secret_key });
      assertEquals(ok.status, 201);
      assertMatch(ok.json.token, /^stt_[A-Za-z0-9_-]{43}$/);
      assertEquals(ok.json.token_type, "Bearer");
      const ttl = Date.parse(ok.json.expires_at) - Date.now();
      assert(ttl > 3500_000 && ttl <= 3600_000, `default lifetime is an hour, got ${ttl}`);
      bearer = ok.json.token;
      const short = await token(server, {
        access_key: user.access_key,
        secret_key: user.secret_key,
        expires_in: 60,
      });
      assert(Date.parse(short.json.expires_at) - Date.now() <= 60_000, "expires_in honoured");
      assertEquals(
        (await token(server, { access_key: user.access_key, secret_key: "x".repeat(40) })).status,
        401,
      );
      assertEquals(
        (await token(server, { access_key: "STUSNOPE", secret_key: user.secret_key })).status,
        401,
      );
      assertEquals((await token(server, { access_key: user.access_key })).status, 400);
      const long = await token(server, {
        access_key: user.access_key,
        secret_key: user.secret_key,
        expires_in: 10 ** 9,
      });
      assertEquals(long.status, 400);
    });

    await t.step("download URL carries the user's signature and works", async () => {
      const res = await presigned(server, bearer, "download/shared/report.txt?expires_in=120");
      assertEquals(res.status, 200);
      assertEquals(res.json.bucket, "shared");
      assertEquals(res.json.key, "report.txt");
      const expires = Date.parse(res.json.expires_at) - Date.now();
      assert(expires > 100_000 && expires <= 120_000, "expires_at follows expires_in");
      const url = new URL(res.json.url);
      assertEquals(url.searchParams.get("X-Store-Algorithm"), "STORE4-HMAC-SHA256");
      assert(
        url.searchParams.get("X-Store-Credential")!.startsWith(user.access_key + "/"),
        "user's key",
      );
      assertEquals(url.searchParams.get("X-Store-Expires"), "120");
      const got = await fetch(res.json.url);
      assertEquals(got.status, 200);
      assertEquals(await got.text(), "quarterly numbers");
    });

    await t.step("the user's permissions apply when the URL is used", async () => {
      const res = await presigned(server, bearer, "download/private/secret.txt");
      assertEquals(res.status, 200);
      const got = await fetch(res.json.url);
      assertEquals(got.status, 403);
      assertEquals(xmlValue(await got.text(), "Code"), "AccessDenied");
    });

    await t.step("upload URL honours Content-Type and Content-MD5", async () => {
      const body = "uploaded through a presigned URL";
      const md5 = createHash("md5").update(body).digest("base64");
      const res = await presigned(
        server,
        bearer,
        `upload/shared/in%20box/new.txt?content_type=text%2Fx-note&content_md5=${
          encodeURIComponent(md5)
        }`,
      );
      assertEquals(res.status, 200);
      assertEquals(res.json.key, "in box/new.txt");
      const wrongType = await fetch(res.json.url, {
        method: "PUT",
        headers: { "content-type": "text/plain", "content-md5": md5 },
        body,
      });
      assertEquals(wrongType.status, 403);
      assertEquals(xmlValue(await wrongType.text(), "Code"), "SignatureDoesNotMatch");
      const wrongBody = await fetch(res.json.url, {
        method: "PUT",
        headers: { "content-type": "text/x-note", "content-md5": md5 },
        body: body + "!",
      });
      assertEquals(xmlValue(await wrongBody.text(), "Code"), "BadDigest");
      const ok = await fetch(res.json.url, {
        method: "PUT",
        headers: { "content-type": "text/x-note", "content-md5": md5 },
        body,
      });
      assertEquals(ok.status, 200);
      await ok.body?.cancel();
      const head = await signedFetch(server, { method: "HEAD", path: "/shared/in%20box/new.txt" });
      assertEquals(head.headers.get("content-type"), "text/x-note");
    });

    await t.step("delete URL and versionId", async () => {
      const dl = await presigned(server, bearer, "download/shared/report.txt?version_id=null");
      assertEquals(new URL(dl.json.url).searchParams.get("versionId"), "null");
      assertEquals((await fetch(dl.json.url)).status, 200);
      const del = await presigned(server, bearer, "delete/shared/report.txt");
      const res = await fetch(del.json.url, { method: "DELETE" });
      assertEquals(res.status, 204);
      const gone = await signedFetch(server, { method: "GET", path: "/shared/report.txt" });
      assertEquals(gone.status, 404);
      await gone.body?.cancel();
    });

    await t.step("multipart part URLs carry uploadId and partNumber", async () => {
      const res = await presigned(
        server,
        bearer,
        "upload-part/shared/big.bin?upload_id=abc&part_number=3",
      );
      assertEquals(res.status, 200);
      const url = new URL(res.json.url);
      assertEquals(url.searchParams.get("uploadId"), "abc");
      assertEquals(url.searchParams.get("partNumber"), "3");
      assertEquals(
        (await presigned(server, bearer, "upload-part/shared/big.bin?upload_id=abc&part_number=0"))
          .status,
        400,
      );
      assertEquals(
        (await presigned(server, bearer, "upload-part/shared/big.bin?part_number=1")).status,
        400,
      );
    });

    await t.step("bad requests", async () => {
      assertEquals((await presigned(server, bearer, "download/shared/a?expires_in=0")).status, 400);
      assertEquals(
        (await presigned(server, bearer, "download/shared/a?expires_in=604801")).status,
        400,
      );
      assertEquals((await presigned(server, bearer, "sideways/shared/a")).status, 404);
      assertEquals((await presigned(server, bearer, "download/shared")).status, 404);
      const none = await fetch(`${server.url}/api/v1/presigned/download/shared/a`);
      assertEquals(none.status, 401);
      assertMatch(none.headers.get("www-authenticate") ?? "", /^Bearer/);
      await none.body?.cancel();
      assertEquals((await presigned(server, "stt_forged", "download/shared/a")).status, 401);
    });

    await t.step("expired URLs are refused", async () => {
      const res = await presigned(server, bearer, "download/shared/in%20box/new.txt?expires_in=1");
      await new Promise((r) => setTimeout(r, 2100));
      const got = await fetch(res.json.url);
      assertEquals(got.status, 403);
      assertEquals(xmlValue(await got.text(), "Code"), "ExpiredPresignedRequest");
    });

    await t.step("revoked tokens and rotated keys end the token", async () => {
      const revoke = await fetch(`${server.url}/api/v1/tokens`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${bearer}` },
      });
      assertEquals(revoke.status, 204);
      assertEquals((await presigned(server, bearer, "download/shared/a")).status, 401);
      const again = await token(server, {
        access_key: user.access_key,
        secret_key: user.secret_key,
      });
      const rotated = await fetch(`${server.url}/admin/users/${user.access_key}/keys`, {
        method: "POST",
        headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) },
      });
      assertEquals(rotated.status, 200);
      await rotated.body?.cancel();
      assertEquals((await presigned(server, again.json.token, "download/shared/a")).status, 401);
    });
  });
});
