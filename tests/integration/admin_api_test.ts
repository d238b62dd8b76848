// The administration API (/admin/users) end to end, with its error cases.
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER, type TestServer, withServer } from "./server.ts";
import { signedFetch } from "./signer.ts";

function basic(user = ADMIN_USER, password = ADMIN_PASSWORD): string {
  return "Basic " + btoa(`${user}:${password}`);
}

async function admin(
  server: TestServer,
  method: string,
  path: string,
  opts: { body?: unknown; raw?: string; auth?: string; type?: string } = {},
): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> {
  const headers: Record<string, string> = { authorization: opts.auth ?? basic() };
  let body: string | undefined;
  if (opts.body !== undefined || opts.raw !== undefined) {
    headers["content-type"] = opts.type ?? "application/json";
    body = opts.raw ?? JSON.stringify(opts.body);
  }
  const res = await fetch(`${server.url}${path}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : {}, headers: res.headers };
}

function errorCode(json: Record<string, unknown>): string {
  return (json.error as { code: string }).code;
}

Deno.test("admin API: users end to end", async (t) => {
  await withServer(async (server) => {
    let alice: Record<string, unknown> = {};

    await t.step("create returns the user with a fresh key pair", async () => {
      const res = await admin(server, "POST", "/admin/users", {
        body: {
          name: "alice",
          description: "Photographer",
          email: "alice@example.org",
          bucket_access: [{ bucket: "photos", permission: "readwrite" }],
        },
      });
      assertEquals(res.status, 201);
      alice = res.json;
      assertMatch(alice.access_key as string, /^STUS[A-Z0-9]{16}$/);
      assertMatch(alice.secret_key as string, /^[A-Za-z0-9]{40}$/);
      assertEquals(alice.name, "alice");
      assertEquals(alice.email, "alice@example.org");
      assertEquals(alice.description, "Photographer");
      assertEquals(alice.bucket_access, [{ bucket: "photos", permission: "readwrite" }]);
      assertEquals(alice.enabled, true);
      assert(!Number.isNaN(Date.parse(alice.created_at as string)), "created_at is a date");
      const ok = await signedFetch(server, {
        method: "GET",
        path: "/",
        accessKey: alice.access_key as string,
        secret: alice.secret_key as string,
      });
      assertEquals(ok.status, 200, "the new pair signs requests");
      await ok.body?.cancel();
    });

    await t.step("list and get never show secrets", async () => {
      await admin(server, "POST", "/admin/users", { body: { name: "bob" } });
      const list = await admin(server, "GET", "/admin/users");
      assertEquals(list.status, 200);
      assertEquals(list.json.total, 2);
      const users = list.json.users as Record<string, unknown>[];
      assertEquals(users.map((u) => u.name), ["alice", "bob"]);
      for (const u of users) {
        assertEquals(u.secret_key, undefined);
        assertEquals(u.is_admin, false);
        assertEquals(typeof u.enabled, "boolean");
      }
      assertEquals(users[1].bucket_access, []);
      const one = await admin(server, "GET", `/admin/users/${alice.access_key}`);
      assertEquals(one.status, 200);
      assertEquals(one.json.name, "alice");
      assertEquals(one.json.secret_key, undefined);
    });

    await t.step("the database does not hold secrets in plain text", async () => {
      const db = await Deno.readFile(`${server.dataDir}/meta.db`);
      const wal = await Deno.readFile(`${server.dataDir}/meta.db-wal`).catch(() =>
        new Uint8Array()
      );
      const haystack = new TextDecoder("latin1").decode(db) + new TextDecoder("latin1").decode(wal);
      assert(!haystack.includes(alice.secret_key as string), "secret not stored in plain text");
    });

    await t.step("set bucket access", async () => {
      const res = await admin(server, "PUT", `/admin/users/${alice.access_key}/buckets`, {
        body: {
          bucket_access: [{ bucket: "docs", permission: "read" }, {
            bucket: "tmp",
            permission: "none",
          }],
        },
      });
      assertEquals(res.status, 200);
      assertEquals(res.json.bucket_access, [
        { bucket: "docs", permission: "read" },
        { bucket: "tmp", permission: "none" },
      ]);
      const got = await admin(server, "GET", `/admin/users/${alice.access_key}`);
      assertEquals(got.json.bucket_access, res.json.bucket_access);
    });

    await t.step("disable and enable", async () => {
      const off = await admin(server, "POST", `/admin/users/${alice.access_key}/disable`);
      assertEquals(off.status, 200);
      assertEquals(off.json.enabled, false);
      const denied = await signedFetch(server, {
        method: "GET",
        path: "/",
        accessKey: alice.access_key as string,
        secret: alice.secret_key as string,
      });
      assertEquals(denied.status, 403);
      await denied.body?.cancel();
      const on = await admin(server, "POST", `/admin/users/${alice.access_key}/enable`);
      assertEquals(on.json.enabled, true);
    });

    await t.step("rotate keys: the old pair stops working at once", async () => {
      const res = await admin(server, "POST", `/admin/users/${alice.access_key}/keys`);
      assertEquals(res.status, 200);
      assertMatch(res.json.access_key as string, /^STUS[A-Z0-9]{16}$/);
      assertEquals((res.json.secret_key as string).length, 40);
      assert(!Number.isNaN(Date.parse(res.json.created_at as string)), "created_at");
      const old = await signedFetch(server, {
        method: "GET",
        path: "/",
        accessKey: alice.access_key as string,
        secret: alice.secret_key as string,
      });
      assertEquals(old.status, 403);
      assertMatch(await old.text(), /InvalidAccessKeyId/);
      assertEquals((await admin(server, "GET", `/admin/users/${alice.access_key}`)).status, 404);
      const fresh = await signedFetch(server, {
        method: "GET",
        path: "/",
        accessKey: res.json.access_key as string,
        secret: res.json.secret_key as string,
      });
      assertEquals(fresh.status, 200);
      await fresh.body?.cancel();
      alice = { ...alice, ...res.json };
    });

    await t.step("delete", async () => {
      const res = await admin(server, "DELETE", `/admin/users/${alice.access_key}`);
      assertEquals(res.status, 204);
      assertEquals((await admin(server, "GET", `/admin/users/${alice.access_key}`)).status, 404);
      const gone = await signedFetch(server, {
        method: "GET",
        path: "/",
        accessKey: alice.access_key as string,
        secret: alice.secret_key as string,
      });
      assertMatch(await gone.text(), /InvalidAccessKeyId/);
      assertEquals((await admin(server, "GET", "/admin/users")).json.total, 1);
    });

    await t.step("credentials: missing, wrong password, malformed", async () => {
      for (
        const auth of [
          "",
          basic(ADMIN_USER, "wrong-password"),
          basic("nobody", ADMIN_PASSWORD),
          "Basic !!!",
          "Bearer x",
        ]
      ) {
        const res = await admin(server, "GET", "/admin/users", { auth });
        assertEquals(res.status, 401, `auth ${auth}`);
        assertEquals(errorCode(res.json), "unauthorized");
        assertMatch(res.headers.get("www-authenticate") ?? "", /^Basic realm=/);
      }
    });

    await t.step("invalid fields and bad JSON", async () => {
      const cases: [unknown, string][] = [
        [{}, "invalid_field"],
        [{ name: "" }, "invalid_field"],
        [{ name: "has space" }, "invalid_field"],
        [{ name: "x".repeat(65) }, "invalid_field"],
        [{ name: "carol", email: "not-an-email" }, "invalid_field"],
        [{ name: "carol", description: 5 }, "invalid_field"],
        [{ name: "carol", unknown: true }, "invalid_field"],
        [{ name: "carol", bucket_access: "photos" }, "invalid_field"],
        [
          { name: "carol", bucket_access: [{ bucket: "photos", permission: "admin" }] },
          "invalid_field",
        ],
        [
          { name: "carol", bucket_access: [{ bucket: "Bad_Name", permission: "read" }] },
          "invalid_field",
        ],
        [{
          name: "carol",
          bucket_access: [{ bucket: "a-b", permission: "read" }, {
            bucket: "a-b",
            permission: "none",
          }],
        }, "invalid_field"],
        [[1, 2], "invalid_json"],
      ];
      for (const [body, code] of cases) {
        const res = await admin(server, "POST", "/admin/users", { body });
        assertEquals(res.status, 400, JSON.stringify(body));
        assertEquals(errorCode(res.json), code, JSON.stringify(body));
      }
      const bad = await admin(server, "POST", "/admin/users", { raw: "{name: " });
      assertEquals(bad.status, 400);
      assertEquals(errorCode(bad.json), "invalid_json");
      const type = await admin(server, "POST", "/admin/users", {
        raw: "name=x",
        type: "application/x-www-form-urlencoded",
      });
      assertEquals(type.status, 415);
      const dup = await admin(server, "POST", "/admin/users", { body: { name: "bob" } });
      assertEquals(dup.status, 409);
      assertEquals(errorCode(dup.json), "user_exists");
      assertEquals(
        (await admin(server, "GET", "/admin/users")).json.total,
        1,
        "nothing was created",
      );
    });

    await t.step("unknown users and routes", async () => {
      for (
        const [method, path] of [
          ["GET", "/admin/users/STUSNOSUCHUSER000000"],
          ["DELETE", "/admin/users/STUSNOSUCHUSER000000"],
          ["POST", "/admin/users/STUSNOSUCHUSER000000/disable"],
          ["POST", "/admin/users/STUSNOSUCHUSER000000/keys"],
        ]
      ) {
        const res = await admin(server, method, path);
        assertEquals(res.status, 404, `${method} ${path}`);
        assertEquals(errorCode(res.json), "no_such_user");
      }
      const put = await admin(server, "PUT", "/admin/users/STUSNOSUCHUSER000000/buckets", {
        body: { bucket_access: [] },
      });
      assertEquals(put.status, 404);
      assertEquals((await admin(server, "GET", "/admin/groups")).status, 404);
      assertEquals((await admin(server, "PATCH", "/admin/users")).status, 405);
    });
  });
});
