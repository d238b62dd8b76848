// The web console's server side over plain HTTP: sign-in and its cookie, CSRF on every change,
// cross-origin refusal, sign-in rate limits per address and per key, idle and absolute session
// expiry, sessions that end with their user, the administrator-only API, objects served as data.
import { CreateBucketCommand, HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { adminApi, createUser } from "./access_helpers.ts";
import { assert, assertEquals } from "./assert.ts";
import { createSlapd, READER_PASSWORD, SUFFIXES } from "../services/slapd.ts";
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  s3Client,
  startServer,
  type TestServer,
  withServer,
} from "./server.ts";

interface Signed {
  cookie: string;
  csrf: string;
  setCookie: string;
}

function signInRequest(
  server: TestServer,
  accessKey: string,
  secret: string,
  headers: Record<string, string> = {},
) {
  return fetch(`${server.url}/console/api/sign-in`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ access_key: accessKey, secret_key: secret }),
  });
}

async function signIn(
  server: TestServer,
  accessKey = ADMIN_USER,
  secret = ADMIN_PASSWORD,
  headers: Record<string, string> = {},
): Promise<Signed> {
  const res = await signInRequest(server, accessKey, secret, headers);
  const body = await res.json();
  assertEquals(res.status, 200, JSON.stringify(body));
  const setCookie = res.headers.get("set-cookie") ?? "";
  return { cookie: setCookie.split(";")[0], csrf: body.csrf, setCookie };
}

function call(
  server: TestServer,
  s: Signed,
  method: string,
  path: string,
  opts: { csrf?: string | null; body?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { cookie: s.cookie, ...opts.headers };
  const csrf = opts.csrf === undefined ? s.csrf : opts.csrf;
  if (csrf !== null) headers["x-console-csrf"] = csrf;
  return fetch(`${server.url}/console/api/${path}`, { method, headers, body: opts.body });
}

async function errorCode(res: Response): Promise<string> {
  return (await res.json()).error?.code;
}

Deno.test("console: page, cookie flags, CSRF, cross-origin, roles, sign-out", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "media" }));
    await s3.send(
      new PutObjectCommand({
        Bucket: "media",
        Key: "page.html",
        Body: "<script>alert(1)</script>",
        ContentType: "text/html",
      }),
    );

    await t.step("the page and its assets, with a CSP that admits only them", async () => {
      const page = await fetch(`${server.url}/console/`);
      assertEquals(page.status, 200);
      assert((await page.text()).includes('src="/console/app.js"'));
      const csp = page.headers.get("content-security-policy") ?? "";
      assert(csp.includes("script-src 'self'") && csp.includes("default-src 'none'"), csp);
      for (const asset of ["app.js", "app.css", "icon.svg"]) {
        const res = await fetch(`${server.url}/console/${asset}`);
        assertEquals(res.status, 200, asset);
        await res.body?.cancel();
      }
      const missing = await fetch(`${server.url}/console/nothing.js`);
      assertEquals(missing.status, 404);
      await missing.body?.cancel();
    });

    await t.step("the session cookie: HttpOnly, SameSite=Strict, path /console", async () => {
      const s = await signIn(server);
      assert(/^store_console=[A-Za-z0-9_-]{43}$/.test(s.cookie), s.cookie);
      for (const flag of ["HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age=43200"]) {
        assert(s.setCookie.includes(flag), s.setCookie);
      }
      assert(!s.setCookie.includes("Secure"), "plain HTTP: not Secure");
      const session = await call(server, s, "GET", "session");
      assertEquals(session.headers.get("cache-control"), "no-store");
      assertEquals((await session.json()).kind, "admin");
      const none = await fetch(`${server.url}/console/api/session`);
      assertEquals([none.status, await errorCode(none)], [401, "session_expired"]);
    });

    await t.step("every change needs the session's CSRF token", async () => {
      const s = await signIn(server);
      for (const csrf of [null, "wrong", (await signIn(server)).csrf]) {
        const res = await call(server, s, "PUT", "s3/media/forged.txt", { csrf, body: "x" });
        assertEquals([res.status, await errorCode(res)], [403, "csrf_refused"]);
      }
      const sign = await call(server, s, "POST", "sign-out", { csrf: null });
      assertEquals(sign.status, 403);
      await sign.body?.cancel();
      let missing = false;
      await s3.send(new HeadObjectCommand({ Bucket: "media", Key: "forged.txt" }))
        .catch(() => missing = true);
      assert(missing, "nothing was written");
      const ok = await call(server, s, "PUT", "s3/media/real.txt", { body: "y" });
      assertEquals(ok.status, 200);
      await ok.body?.cancel();
      // Reads need no token.
      const read = await call(server, s, "GET", "s3/media/real.txt", { csrf: null });
      assertEquals([read.status, await read.text()], [200, "y"]);
    });

    await t.step("requests from another origin are refused, sign-in included", async () => {
      const res = await signInRequest(server, ADMIN_USER, ADMIN_PASSWORD, {
        origin: "http://evil.example",
      });
      assertEquals([res.status, await errorCode(res)], [403, "cross_origin"]);
      const s = await signIn(server, ADMIN_USER, ADMIN_PASSWORD, {
        origin: server.url,
      });
      const cross = await call(server, s, "GET", "session", {
        headers: { origin: "http://evil.example" },
      });
      assertEquals(cross.status, 403);
      await cross.body?.cancel();
    });

    await t.step("objects come back as data: sandboxed and as attachments", async () => {
      const s = await signIn(server);
      const res = await call(server, s, "GET", "s3/media/page.html");
      assertEquals(res.status, 200);
      assertEquals(res.headers.get("content-security-policy"), "default-src 'none'; sandbox");
      assertEquals(res.headers.get("content-disposition"), "attachment");
      assertEquals(res.headers.get("x-content-type-options"), "nosniff");
      await res.body?.cancel();
    });

    await t.step("a user: its own access decides; the admin API is refused", async () => {
      const user = await createUser(server, "viewer", [{ bucket: "media", permission: "read" }]);
      const s = await signIn(server, user.accessKey, user.secret);
      const buckets = await (await call(server, s, "GET", "buckets")).json();
      assertEquals(buckets.buckets, [
        { name: "media", created: buckets.buckets[0].created, access: "read" },
      ]);
      const own = await call(server, s, "PUT", "s3/viewer-own");
      assertEquals(own.status, 200, "users create buckets, as the protocol lets them");
      await own.body?.cancel();
      const read = await call(server, s, "GET", "s3/media/real.txt");
      assertEquals(read.status, 200);
      await read.body?.cancel();
      const write = await call(server, s, "PUT", "s3/media/mine.txt", { body: "z" });
      assertEquals(write.status, 403);
      assert((await write.text()).includes("<Code>AccessDenied</Code>"));
      const admin = await call(server, s, "GET", "admin/users");
      assertEquals([admin.status, await errorCode(admin)], [403, "admin_only"]);
      const history = await call(server, s, "GET", "metrics/history");
      assertEquals([history.status, await errorCode(history)], [403, "admin_only"]);
      const link = await call(server, s, "POST", "presign", {
        body: JSON.stringify({ bucket: "media", key: "real.txt", expires_in: 60 }),
        headers: { "content-type": "application/json" },
      });
      assertEquals(link.status, 200);
      const { url } = await link.json();
      assertEquals(await (await fetch(url)).text(), "y");
      await s3.send(new CreateBucketCommand({ Bucket: "private" }));
      for (
        const [bucket, status, code] of [["private", 403, "AccessDenied"], [
          "gone",
          404,
          "NoSuchKey",
        ]]
      ) {
        const refused = await call(server, s, "POST", "presign", {
          body: JSON.stringify({ bucket, key: "x", expires_in: 60 }),
          headers: { "content-type": "application/json" },
        });
        assertEquals([refused.status, await errorCode(refused)], [status, code]);
      }

      // Share links: made as the user (only what it may do itself), listed, revoked.
      const json = { "content-type": "application/json" };
      const share = (permissions: string[]) =>
        call(server, s, "POST", "shares", {
          body: JSON.stringify({ bucket: "media", permissions, expires_in: 600 }),
          headers: json,
        });
      const refusedShare = await share(["write"]);
      assertEquals([refusedShare.status, await errorCode(refusedShare)], [403, "access_denied"]);
      const made = await share(["read", "list"]);
      const madeBody = await made.json();
      assertEquals(made.status, 201);
      assertEquals(await fetch(`${madeBody.url}real.txt`).then((r) => r.text()), "y");
      const mine = await (await call(server, s, "GET", "shares")).json();
      assertEquals(mine.shares.map((x: { id: string }) => x.id), [madeBody.id]);
      const revoked = await call(server, s, "DELETE", `shares/${madeBody.id}`);
      assertEquals(revoked.status, 204);
      const metrics = await call(server, s, "GET", "metrics");
      assertEquals([metrics.status, await errorCode(metrics)], [403, "admin_only"]);

      // Disabling the user ends its console session at its next request.
      assertEquals(
        (await adminApi(server, "POST", `/users/${user.accessKey}/disable`)).status,
        200,
      );
      const after = await call(server, s, "GET", "buckets");
      assertEquals([after.status, await errorCode(after)], [401, "session_expired"]);
    });

    await t.step("the administrator reaches the /admin routes through the console", async () => {
      const s = await signIn(server);
      const users = await call(server, s, "GET", "admin/users");
      assertEquals((await users.json()).total, 1);
      const created = await call(server, s, "POST", "admin/users", {
        body: JSON.stringify({ name: "made-here" }),
        headers: { "content-type": "application/json" },
      });
      const body = await created.json();
      assertEquals(created.status, 201);
      assert(typeof body.secret_key === "string" && body.secret_key.length === 40);
      const wrong = await signInRequest(server, ADMIN_USER, "not-the-password");
      assertEquals(wrong.status, 401);
      await wrong.body?.cancel();
      const audit = await call(server, s, "GET", "admin/audit?operation=Console%3APOST%20sign-in");
      const signIns = (await audit.json()).entries as { principal: string; status: number }[];
      assert(signIns.some((e) => e.principal === "admin:testadmin" && e.status === 200));
      assert(signIns.some((e) => e.status === 401), "failed sign-ins are recorded too");
      // The screens' date filters (UTC, to the second) reach the API as since/until: a sign-in
      // after the next whole second is the only one from then on.
      const cutAt = Math.ceil((Date.now() + 1) / 1000) * 1000;
      await new Promise((r) => setTimeout(r, cutAt - Date.now() + 20));
      await signIn(server);
      const cut = new Date(cutAt).toISOString().slice(0, 19) + "Z";
      const window = async (q: string) =>
        ((await (await call(server, s, "GET", `admin/audit?${q}`)).json()).entries as {
          time: string;
        }[]).map((e) => Date.parse(e.time));
      const before = await window(`operation=Console%3APOST%20sign-in&until=${cut}`);
      const after = await window(`operation=Console%3APOST%20sign-in&since=${cut}`);
      assertEquals(before.length, signIns.length);
      assert(before.every((t) => t < cutAt), String(before));
      assertEquals(after.length, 1);
      assert(after[0] >= cutAt, String(after));
      const errors = await call(server, s, "GET", `admin/errors?since=${cut}&until=${cut}`);
      assertEquals([errors.status, (await errors.json()).errors], [200, []]);
      const bad = await call(server, s, "GET", "admin/errors?since=yesterday-ish");
      assertEquals([bad.status, await errorCode(bad)], [400, "invalid_field"]);
      const all = await (await call(server, s, "GET", "buckets")).json();
      assertEquals(
        all.buckets.map((b: { name: string; access: string }) => `${b.name}:${b.access}`),
        ["media:owner", "private:owner", "viewer-own:admin"],
        "the administrator sees every bucket",
      );
      const metrics = await call(server, s, "GET", "metrics");
      assertEquals(metrics.status, 200);
      assert((await metrics.text()).includes("store_requests_total"));
      // The last hour's totals, sampled by the server from its start (every 10 s).
      const history = await (await call(server, s, "GET", "metrics/history")).json();
      assertEquals(history.interval_seconds, 10);
      const first = history.samples[0];
      assert(history.samples.length >= 1 && first.at <= Date.now(), JSON.stringify(history));
      for (const field of ["requests", "received", "sent", "seconds"]) {
        assert(typeof first[field] === "number" && first[field] >= 0, field);
      }
    });

    await t.step("sign-out ends the session on the server", async () => {
      const s = await signIn(server);
      const out = await call(server, s, "POST", "sign-out");
      assertEquals(out.status, 200);
      assert((out.headers.get("set-cookie") ?? "").includes("Max-Age=0"));
      await out.body?.cancel();
      const after = await call(server, s, "GET", "session");
      assertEquals(after.status, 401);
      await after.body?.cancel();
    });
  });
});

Deno.test("console: Secure cookie behind a TLS proxy", async () => {
  await withServer(async (server) => {
    const s = await signIn(server, ADMIN_USER, ADMIN_PASSWORD, { "x-forwarded-proto": "https" });
    assert(s.setCookie.includes("; Secure"), s.setCookie);
  }, { env: { STORE_TRUST_PROXY: "true" } });
});

Deno.test("console: sign-in attempts limited per address and per access key", async () => {
  await withServer(async (server) => {
    const user = await createUser(server, "target");
    const wrong = async (key: string) => {
      const res = await signInRequest(server, key, "wrong-secret-wrong-secret");
      assertEquals(res.status, 401);
      await res.body?.cancel();
    };
    // Two failures for the user, then the administrator signs in: the address starts over...
    await wrong(user.accessKey);
    await wrong(user.accessKey);
    await signIn(server);
    // ...but the key keeps its count: the third failure locks the key, right secret or not.
    await wrong(user.accessKey);
    const locked = await signInRequest(server, user.accessKey, user.secret);
    assertEquals([locked.status, await errorCode(locked)], [429, "too_many_attempts"]);
    assert(Number(locked.headers.get("retry-after")) > 0);
    // The address has one failure since its success: others still sign in.
    await signIn(server);
    // Three failures from the address (with any keys) lock the address for every key.
    await wrong("STUSNOSUCHKEY0000001");
    await wrong("STUSNOSUCHKEY0000002");
    await wrong("STUSNOSUCHKEY0000003");
    const address = await signInRequest(server, ADMIN_USER, ADMIN_PASSWORD);
    assertEquals(address.status, 429);
    await address.body?.cancel();
  }, { env: { STORE_SIGNIN_LIMIT: "3", STORE_SIGNIN_WINDOW: "300" } });
});

Deno.test("console: idle and absolute session expiry", async () => {
  await withServer(async (server) => {
    const idle = await signIn(server);
    await new Promise((r) => setTimeout(r, 1300));
    const expired = await call(server, idle, "GET", "session");
    assertEquals([expired.status, await errorCode(expired)], [401, "session_expired"]);
    assert((expired.headers.get("set-cookie") ?? "").includes("Max-Age=0"));

    // Active all along, the session still ends at its absolute limit.
    const busy = await signIn(server);
    const started = Date.now();
    let status = 200;
    while (Date.now() - started < 3500 && status === 200) {
      const res = await call(server, busy, "GET", "session");
      status = res.status;
      await res.body?.cancel();
      await new Promise((r) => setTimeout(r, 400));
    }
    const lasted = Date.now() - started;
    assertEquals(status, 401);
    assert(lasted >= 1900 && lasted < 3500, `ended after ${lasted} ms`);
  }, { env: { STORE_CONSOLE_IDLE_TIMEOUT: "1", STORE_CONSOLE_SESSION_MAX: "2" } });
});

Deno.test("console: the name is reserved: no bucket may be called console", async () => {
  await withServer(async (server) => {
    // With the console off the protocol itself answers /console, and refuses the name.
    let code = "";
    await s3Client(server).send(new CreateBucketCommand({ Bucket: "console" }))
      .catch((err) => code = err.name);
    assertEquals(code, "InvalidBucketName");
  }, { env: { STORE_CONSOLE_ENABLED: "false" } });
});

Deno.test("console: off with STORE_CONSOLE_ENABLED=false", async () => {
  await withServer(async (server) => {
    const res = await fetch(`${server.url}/console/`);
    // Without the console, /console is a bucket name to the protocol.
    assert(res.status !== 200, String(res.status));
    assert(!(await res.text()).includes("app.js"));
  }, { env: { STORE_CONSOLE_ENABLED: "false" } });
});

Deno.test("console: directory (LDAP) sign-in against a real slapd", async () => {
  const slapd = await createSlapd();
  await slapd.start();
  const ldapEnv = {
    STORE_LDAP_ENABLED: "true",
    STORE_LDAP_URL: slapd.url,
    STORE_LDAP_BASE_DN: SUFFIXES.openldap,
    STORE_LDAP_BIND_DN: `cn=reader,${SUFFIXES.openldap}`,
    STORE_LDAP_BIND_PASSWORD: READER_PASSWORD,
    STORE_LDAP_GROUP_BASE_DN: `ou=groups,${SUFFIXES.openldap}`,
    STORE_LDAP_TIMEOUT: "2",
    STORE_SIGNIN_LIMIT: "3",
  };
  const server = await startServer({ env: ldapEnv });
  let restarted: TestServer | undefined;
  const s3 = s3Client(server);
  try {
    const config = await (await fetch(`${server.url}/console/api/config`)).json();
    assertEquals(config, { ldap: true });
    await s3.send(new CreateBucketCommand({ Bucket: "eng-data" }));
    await s3.send(new CreateBucketCommand({ Bucket: "audit-data" }));
    await s3.send(new PutObjectCommand({ Bucket: "eng-data", Key: "plan.txt", Body: "plan" }));
    const mapped = await adminApi(server, "PUT", "/ldap/groups/engineers", {
      bucket_access: [{ bucket: "eng-data", permission: "read" }],
    });
    assertEquals(mapped.status, 200);
    const ldapSignIn = (username: string, password: string) =>
      fetch(`${server.url}/console/api/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ method: "ldap", username, password }),
      });

    const res = await ldapSignIn("alice", "alice-pw");
    const body = await res.json();
    assertEquals([res.status, body.user, body.via], [200, "alice", "ldap"]);
    const s: Signed = {
      cookie: (res.headers.get("set-cookie") ?? "").split(";")[0],
      csrf: body.csrf,
      setCookie: "",
    };
    const buckets = await (await call(server, s, "GET", "buckets")).json();
    assertEquals(buckets.buckets.map((b: { name: string }) => b.name), ["eng-data"]);
    const read = await call(server, s, "GET", "s3/eng-data/plan.txt");
    assertEquals([read.status, await read.text()], [200, "plan"]);
    const other = await call(server, s, "GET", "s3/audit-data?list-type=2");
    assertEquals(other.status, 403);
    await other.body?.cancel();
    // Links are signed with an access key; a directory user has none.
    const link = await call(server, s, "POST", "presign", {
      body: JSON.stringify({ bucket: "eng-data", key: "plan.txt", expires_in: 60 }),
      headers: { "content-type": "application/json" },
    });
    assertEquals([link.status, await errorCode(link)], [400, "no_signing_key"]);
    // Share links: a directory user shares what its mappings let it read, not more; the share
    // works for anyone and is listed and revocable as theirs.
    const share = (permissions: string[]) =>
      call(server, s, "POST", "shares", {
        body: JSON.stringify({ bucket: "eng-data", prefix: "", permissions, expires_in: 600 }),
        headers: { "content-type": "application/json" },
      });
    const tooMuch = await share(["read", "write"]);
    assertEquals([tooMuch.status, await errorCode(tooMuch)], [403, "access_denied"]);
    const made = await share(["read", "list"]);
    const shareBody = await made.json();
    assertEquals([made.status, shareBody.creator], [201, "ldap:alice"]);
    const viaShare = await fetch(`${shareBody.url}plan.txt`);
    assertEquals([viaShare.status, await viaShare.text()], [200, "plan"]);
    const mine = await (await call(server, s, "GET", "shares")).json();
    assertEquals(mine.shares.map((x: { id: string }) => x.id), [shareBody.id]);
    // The same through the share API, with a token issued for the directory account.
    const issued = await fetch(`${server.url}/api/v1/tokens`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ldap_username: "alice", ldap_password: "alice-pw" }),
    });
    const { token } = await issued.json();
    assertEquals(issued.status, 201);
    const viaApi = await fetch(`${server.url}/api/v1/shares`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ bucket: "eng-data", permissions: ["read"], expires_in: 60 }),
    });
    const apiShare = await viaApi.json();
    assertEquals([viaApi.status, apiShare.creator], [201, "ldap:alice"]);
    const apiRead = await fetch(`${apiShare.url}plan.txt`);
    assertEquals([apiRead.status, await apiRead.text()], [200, "plan"]);
    const second = await (await share(["list"])).json();
    const revoked = await call(server, s, "DELETE", `shares/${second.id}`);
    assertEquals(revoked.status, 204);
    const gone = await fetch(second.url, { headers: { accept: "application/json" } });
    assertEquals([gone.status, await errorCode(gone)], [410, "share_revoked"]);
    // The session's access follows the mappings as they are now, as token sessions do; so does
    // the share's, decided for its creator at every use.
    assertEquals((await adminApi(server, "DELETE", "/ldap/groups/engineers")).status, 204);
    const unmapped = await call(server, s, "GET", "s3/eng-data/plan.txt");
    assertEquals(unmapped.status, 403);
    await unmapped.body?.cancel();
    const unshared = await fetch(`${shareBody.url}plan.txt`, {
      headers: { accept: "application/json" },
    });
    assertEquals(unshared.status, 403);
    const refusal = await errorCode(unshared);
    assert(["creator_lacks_access", "AccessDenied"].includes(refusal), refusal);
    await adminApi(server, "PUT", "/ldap/groups/engineers", {
      bucket_access: [{ bucket: "eng-data", permission: "read" }],
    });
    const again = await fetch(`${shareBody.url}plan.txt`);
    assertEquals([again.status, await again.text()], [200, "plan"]);

    // Wrong passwords count per user name: the third locks "bob" out, right password or not.
    for (let i = 0; i < 3; i++) {
      const wrong = await ldapSignIn("bob", "not-bobs");
      assertEquals([wrong.status, await errorCode(wrong)], [401, "sign_in_failed"]);
    }
    const locked = await ldapSignIn("bob", "bob-pw");
    assertEquals([locked.status, await errorCode(locked)], [429, "too_many_attempts"]);

    // A restarted server whose directory does not answer cannot vouch for the creator yet.
    await server.stop();
    await slapd.stop();
    restarted = await startServer({ dataDir: server.dataDir, env: ldapEnv });
    const unavailable = await fetch(`${shareBody.url.replace(server.url, restarted.url)}plan.txt`, {
      headers: { accept: "application/json" },
    });
    assertEquals([unavailable.status, await errorCode(unavailable)], [
      503,
      "directory_unavailable",
    ]);
  } finally {
    s3.destroy();
    await server.stop();
    await restarted?.stop();
    await slapd.dispose();
    await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
  }
});
