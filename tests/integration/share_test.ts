// Bucket shares through real HTTP clients: permissions, prefix escapes, expiry, the download limit
// under concurrent downloads, revocation, passwords and their limiter, a creator who is disabled
// or loses access, the listing as JSON and HTML, bad inputs, and the audit of share use.
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { adminApi, createUser, setBucketAccess, type TestUser } from "./access_helpers.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER, s3Client, type TestServer, withServer } from "./server.ts";

const BUCKET = "shared-things";
const AUTH = { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) };

interface Share {
  id: string;
  token: string;
  url: string;
  downloads: number;
  uploads: number;
  state: string;
}

async function bearer(server: TestServer, user: TestUser): Promise<string> {
  const res = await fetch(`${server.url}/api/v1/tokens`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ access_key: user.accessKey, secret_key: user.secret }),
  });
  assertEquals(res.status, 201);
  return (await res.json()).token;
}

async function share(
  server: TestServer,
  token: string,
  body: Record<string, unknown>,
): Promise<{ status: number; json: Share & { error?: { code: string } } }> {
  const res = await fetch(`${server.url}/api/v1/shares`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

async function created(server: TestServer, token: string, body: Record<string, unknown>) {
  const { status, json } = await share(server, token, { bucket: BUCKET, ...body });
  assertEquals(status, 201, JSON.stringify(json));
  return json;
}

async function get(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(url, init);
  return { status: res.status, text: await res.text(), headers: res.headers };
}

function code(text: string): string {
  return JSON.parse(text).error.code;
}

Deno.test("bucket shares", async (t) => {
  await withServer(async (server) => {
    const alice = await createUser(server, "alice");
    const aliceS3 = s3Client(server, { user: alice.accessKey, password: alice.secret });
    await aliceS3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const objects: Record<string, string> = {
      "docs/a.txt": "alpha",
      "docs/sub/b.txt": "beta",
      "docs/%2e%2e%2fsecret.txt": "literal",
      "secret.txt": "top secret",
      "docsecret.txt": "next door",
    };
    for (const [Key, Body] of Object.entries(objects)) {
      await aliceS3.send(new PutObjectCommand({ Bucket: BUCKET, Key, Body }));
    }
    const aliceToken = await bearer(server, alice);

    await t.step("read + list: listing as JSON, downloads as attachments", async () => {
      const s = await created(server, aliceToken, {
        prefix: "docs/",
        permissions: ["read", "list"],
        expires_in: 600,
      });
      assertMatch(s.token, /^shr_[A-Za-z0-9_-]{43}$/);
      assertEquals(s.url, `${server.url}/share/${s.token}/`);
      const root = await get(s.url);
      assertEquals(root.status, 200);
      const listing = JSON.parse(root.text);
      assertEquals(listing.objects.map((o: { name: string }) => o.name), [
        "%2e%2e%2fsecret.txt",
        "a.txt",
      ]);
      assertEquals(listing.folders, ["sub/"]);
      const sub = JSON.parse((await get(`${s.url}sub/`)).text);
      assertEquals(sub.objects.map((o: { name: string }) => o.name), ["sub/b.txt"]);
      const file = await get(`${s.url}a.txt`);
      assertEquals([file.status, file.text], [200, "alpha"]);
      assertMatch(file.headers.get("content-disposition")!, /^attachment/);
      assertEquals(file.headers.get("content-security-policy"), "sandbox");
      const range = await get(`${s.url}a.txt`, { headers: { range: "bytes=1-2" } });
      assertEquals([range.status, range.text], [206, "lp"]);
      const head = await fetch(`${s.url}sub/b.txt`, { method: "HEAD" });
      assertEquals([head.status, head.headers.get("content-length")], [200, "4"]);
      const missing = await get(`${s.url}nothing.txt`);
      assertEquals([missing.status, code(missing.text)], [404, "NoSuchKey"]);
      const put = await get(`${s.url}new.txt`, { method: "PUT", body: "x" });
      assertEquals([put.status, code(put.text)], [403, "not_permitted"]);
      const del = await get(`${s.url}a.txt`, { method: "DELETE" });
      assertEquals(del.status, 405);
    });

    await t.step(
      "nothing outside the prefix: dot segments, encoded slashes, double encoding",
      async () => {
        const s = await created(server, aliceToken, {
          prefix: "docs/",
          permissions: ["read", "list"],
          expires_in: 600,
        });
        // fetch would normalise ../ itself: these go out as written through a raw request target.
        for (
          const path of [
            "../secret.txt",
            "%2e%2e/secret.txt",
            "..%2Fsecret.txt",
            "sub/../../secret.txt",
            "./a.txt",
            "..%5csecret.txt",
          ]
        ) {
          const res = await rawGet(server, `/share/${s.token}/${path}`);
          assertEquals(res.status, 400, path);
        }
        // An encoded slash is a slash inside the key: still under the prefix.
        const sub = await get(`${s.url}sub%2Fb.txt`);
        assertEquals([sub.status, sub.text], [200, "beta"]);
        // Decoded once: a double-encoded name is a literal key under the prefix.
        const literal = await get(`${s.url}%252e%252e%252fsecret.txt`);
        assertEquals([literal.status, literal.text], [200, "literal"]);
        // A prefix without its slash would reach the neighbour; the prefix is matched literally.
        const narrow = await created(server, aliceToken, {
          prefix: "docs/sub/",
          permissions: ["read"],
          expires_in: 600,
        });
        const up = await rawGet(server, `/share/${narrow.token}/../a.txt`);
        assertEquals(up.status, 400);
        const notThere = await get(`${narrow.url}a.txt`);
        assertEquals(notThere.status, 404);
        // Another share's token, a malformed token, a missing one.
        for (const bad of ["shr_nope", "shr_" + "A".repeat(43), ""]) {
          const res = await get(`${server.url}/share/${bad}/a.txt`);
          assertEquals(res.status, 404, bad);
        }
      },
    );

    await t.step(
      "write only: uploads land under the prefix, nothing is read or listed",
      async () => {
        const s = await created(server, aliceToken, {
          prefix: "inbox/",
          permissions: ["write"],
          expires_in: 600,
        });
        const put = await get(`${s.url}report.txt`, {
          method: "PUT",
          body: "uploaded",
          headers: { "content-type": "text/plain" },
        });
        assertEquals(put.status, 200, put.text);
        const back = await aliceS3.send(
          new (await import("@aws-sdk/client-s3")).GetObjectCommand({
            Bucket: BUCKET,
            Key: "inbox/report.txt",
          }),
        );
        assertEquals(await back.Body!.transformToString(), "uploaded");
        assertEquals(back.ContentType, "text/plain");
        assertEquals((await get(`${s.url}report.txt`)).status, 403);
        assertEquals((await get(s.url)).status, 403);
        const folder = await get(s.url, { method: "PUT", body: "x" });
        assertEquals(folder.status, 400);
      },
    );

    await t.step(
      "download limit: 20 concurrent downloads, exactly max_downloads succeed",
      async () => {
        const s = await created(server, aliceToken, {
          prefix: "docs/",
          permissions: ["read"],
          expires_in: 600,
          max_downloads: 5,
        });
        const results = await Promise.all(
          Array.from({ length: 20 }, () => get(`${s.url}a.txt`)),
        );
        const ok = results.filter((r) => r.status === 200);
        assertEquals(ok.length, 5);
        assert(ok.every((r) => r.text === "alpha"));
        const refused = results.filter((r) => r.status === 410);
        assertEquals(refused.length, 15);
        assertEquals(code(refused[0].text), "download_limit_reached");
        // HEAD does not count; the listing of the caller's shares shows the count.
        assertEquals((await fetch(`${s.url}a.txt`, { method: "HEAD" })).status, 200);
        const mine = await fetch(`${server.url}/api/v1/shares`, {
          headers: { authorization: `Bearer ${aliceToken}` },
        });
        const listed = (await mine.json()).shares.find((x: Share) => x.id === s.id);
        assertEquals(listed.downloads, 5);
      },
    );

    await t.step("expiry and revocation: 410 with the reason", async () => {
      const brief = await created(server, aliceToken, { permissions: ["list"], expires_in: 1 });
      assertEquals((await get(brief.url)).status, 200);
      await new Promise((r) => setTimeout(r, 1100));
      const expired = await get(brief.url);
      assertEquals([expired.status, code(expired.text)], [410, "share_expired"]);

      const s = await created(server, aliceToken, { permissions: ["list"], expires_in: 600 });
      const bob = await createUser(server, "bob");
      const bobToken = await bearer(server, bob);
      const notHis = await fetch(`${server.url}/api/v1/shares/${s.id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${bobToken}` },
      });
      await notHis.body?.cancel();
      assertEquals(notHis.status, 404);
      const revoke = await fetch(`${server.url}/api/v1/shares/${s.id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${aliceToken}` },
      });
      assertEquals(revoke.status, 204);
      const gone = await get(s.url);
      assertEquals([gone.status, code(gone.text)], [410, "share_revoked"]);
      // The administrator sees and revokes every share.
      const all = await adminApi(server, "GET", "/shares");
      const states = (all.json!.shares as Share[]).map((x) => x.state);
      assert(states.includes("revoked") && states.includes("expired") && states.includes("active"));
      const other = await created(server, aliceToken, { permissions: ["list"], expires_in: 600 });
      assertEquals((await adminApi(server, "DELETE", `/shares/${other.id}`)).status, 204);
      assertEquals((await get(other.url)).status, 410);
    });

    await t.step("password: required, wrong, right; repeated failures are limited", async () => {
      const s = await created(server, aliceToken, {
        prefix: "docs/",
        permissions: ["read", "list"],
        expires_in: 600,
        password: "open sesame",
      });
      const none = await get(s.url);
      assertEquals([none.status, code(none.text)], [401, "password_required"]);
      const right = await get(`${s.url}a.txt`, { headers: { "x-share-password": "open sesame" } });
      assertEquals([right.status, right.text], [200, "alpha"]);
      const byQuery = await get(`${s.url}?password=open%20sesame`);
      assertEquals(byQuery.status, 200);
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        statuses.push((await get(s.url, { headers: { "x-share-password": "guess" + i } })).status);
      }
      // STORE_SIGNIN_LIMIT=3 for this server.
      assertEquals(statuses, [401, 401, 401, 429]);
      const locked = await get(s.url, { headers: { "x-share-password": "open sesame" } });
      assertEquals(locked.status, 429);
      assert(Number(locked.headers.get("retry-after")) > 0);
    });

    await t.step("the creator's access is decided at every use", async () => {
      const admin = s3Client(server);
      await admin.send(new CreateBucketCommand({ Bucket: "carol-reads" }));
      await admin.send(new PutObjectCommand({ Bucket: "carol-reads", Key: "f.txt", Body: "f" }));
      const carol = await createUser(server, "carol", [{
        bucket: "carol-reads",
        permission: "read",
      }]);
      const carolToken = await bearer(server, carol);
      const noWrite = await share(server, carolToken, {
        bucket: "carol-reads",
        permissions: ["write"],
        expires_in: 60,
      });
      assertEquals([noWrite.status, noWrite.json.error!.code], [403, "access_denied"]);
      const s = (await share(server, carolToken, {
        bucket: "carol-reads",
        permissions: ["read", "list"],
        expires_in: 600,
      })).json;
      assertEquals((await get(`${s.url}f.txt`)).text, "f");
      await setBucketAccess(server, carol, [{ bucket: "carol-reads", permission: "none" }]);
      const lost = await get(`${s.url}f.txt`);
      assertEquals([lost.status, code(lost.text)], [403, "creator_lacks_access"]);
      assertEquals((await get(s.url)).status, 403);
      await setBucketAccess(server, carol, [{ bucket: "carol-reads", permission: "read" }]);
      assertEquals((await get(`${s.url}f.txt`)).status, 200);
      const disable = await adminApi(server, "POST", `/users/${carol.accessKey}/disable`);
      assertEquals(disable.status, 200);
      const disabled = await get(`${s.url}f.txt`);
      assertEquals([disabled.status, code(disabled.text)], [403, "creator_disabled"]);
    });

    await t.step("a bucket deleted and created again under its name is not shared", async () => {
      const admin = s3Client(server);
      await admin.send(new CreateBucketCommand({ Bucket: "reborn" }));
      await admin.send(new PutObjectCommand({ Bucket: "reborn", Key: "f.txt", Body: "first" }));
      const adminToken = await bearer(server, {
        name: ADMIN_USER,
        email: "",
        accessKey: ADMIN_USER,
        secret: ADMIN_PASSWORD,
      });
      const s = await created(server, adminToken, {
        bucket: "reborn",
        permissions: ["read", "list"],
        expires_in: 600,
      });
      assertEquals((await get(`${s.url}f.txt`)).text, "first");
      await admin.send(new DeleteObjectCommand({ Bucket: "reborn", Key: "f.txt" }));
      await admin.send(new DeleteBucketCommand({ Bucket: "reborn" }));
      // Another user takes the name: the administrator's share does not reach into it.
      await aliceS3.send(new CreateBucketCommand({ Bucket: "reborn" }));
      await aliceS3.send(new PutObjectCommand({ Bucket: "reborn", Key: "f.txt", Body: "alice" }));
      for (const path of ["f.txt", ""]) {
        const res = await get(`${s.url}${path}`);
        assertEquals([res.status, code(res.text)], [404, "no_such_bucket"], path);
      }
    });

    await t.step("HTML for browsers", async () => {
      const s = await created(server, aliceToken, {
        prefix: "docs/",
        permissions: ["read", "list"],
        expires_in: 600,
      });
      const page = await get(s.url, { headers: { accept: "text/html" } });
      assertEquals(page.status, 200);
      assertMatch(page.headers.get("content-type")!, /^text\/html/);
      assertMatch(page.headers.get("content-security-policy")!, /default-src 'none'/);
      assertMatch(page.text, /<a href="\/share\/shr_[^"]+\/a\.txt">/);
      assertMatch(page.text, /sub\/<\/bdi>/);
      const gone = await get(`${server.url}/share/shr_${"B".repeat(43)}/`, {
        headers: { accept: "text/html" },
      });
      assertEquals(gone.status, 404);
      assertMatch(gone.text, /<h1>Not found<\/h1>/);
    });

    await t.step("bad inputs", async () => {
      const cases: [Record<string, unknown>, number][] = [
        [{ permissions: ["read"], expires_in: 30 * 86400 + 1 }, 400],
        [{ permissions: ["read"], expires_in: 0 }, 400],
        [{ permissions: ["read"], expires_in: 1.5 }, 400],
        [{ permissions: ["delete"], expires_in: 60 }, 400],
        [{ permissions: [], expires_in: 60 }, 400],
        [{ permissions: ["read", "read"], expires_in: 60 }, 400],
        [{ permissions: ["read"], expires_in: 60, max_downloads: 0 }, 400],
        [{ permissions: ["read"], expires_in: 60, password: "abc" }, 400],
        [{ permissions: ["read"], expires_in: 60, prefix: "a/../" }, 400],
        [{ permissions: ["read"], expires_in: 60, prefix: 7 }, 400],
        [{ permissions: ["read"], expires_in: 60, bucket: "no-such-bucket" }, 404],
      ];
      for (const [body, status] of cases) {
        const res = await share(server, aliceToken, { bucket: BUCKET, ...body });
        assertEquals(res.status, status, JSON.stringify(body));
      }
      const noToken = await fetch(`${server.url}/api/v1/shares`, { method: "POST" });
      await noToken.body?.cancel();
      assertEquals(noToken.status, 401);
      const notJson = await fetch(`${server.url}/api/v1/shares`, {
        method: "POST",
        headers: { authorization: `Bearer ${aliceToken}`, "content-type": "text/plain" },
        body: "{}",
      });
      await notJson.body?.cancel();
      assertEquals(notJson.status, 415);
      // "share" is a reserved bucket name.
      const reserved = await fetch(`${server.url}/share`, { method: "PUT" });
      await reserved.body?.cancel();
      assert(reserved.status >= 400);
      const s3 = s3Client(server);
      let refused = "";
      await s3.send(new CreateBucketCommand({ Bucket: "share" })).catch((e) => (refused = e.name));
      assert(refused !== "", "creating a bucket named share is refused");
    });

    await t.step("share use is audited", async () => {
      const res = await fetch(`${server.url}/admin/audit?operation=Share:GET&limit=1000`, {
        headers: AUTH,
      });
      const { entries } = await res.json();
      assert(entries.length > 20);
      assert(entries.every((e: { principal: string }) => e.principal.startsWith("share")));
      assert(entries.some((e: { status: number }) => e.status === 410));
      const created = await fetch(`${server.url}/admin/audit?operation=CreateShare`, {
        headers: AUTH,
      });
      assert((await created.json()).entries.length >= 8);
    });
  }, { env: { STORE_SIGNIN_LIMIT: "3" } });
});

/** A GET with the request target sent exactly as written (no client-side dot removal). */
async function rawGet(server: TestServer, target: string): Promise<{ status: number }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  try {
    await conn.write(
      new TextEncoder().encode(
        `GET ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`,
      ),
    );
    let text = "";
    const buf = new Uint8Array(4096);
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
      if (text.includes("\r\n\r\n")) break;
    }
    return { status: Number(text.split(" ")[1]) };
  } finally {
    conn.close();
  }
}
