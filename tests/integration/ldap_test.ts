// LDAP sign-in against a real slapd (OpenLDAP layout, plain ldap://): the token service's
// AssumeRoleWithLDAPIdentity, the S3 SDK with the temporary credentials, group mappings through
// /admin/ldap, session policies, bad sign-ins, tokens (missing, tampered, expired), removal from a
// group within the cache TTL, the directory stopped and frozen mid-test, boto3 and mc.
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { createSlapd, READER_PASSWORD, SUFFIXES, userDn } from "../services/slapd.ts";
import { adminApi } from "./access_helpers.ts";
import { assert, assertEquals, assertMatch, assertRejectsCode } from "./assert.ts";
import { changeMembership, errorCode, ldapSignIn, sessionClient, sts } from "./ldap_helpers.ts";
import { freePort } from "../services/process.ts";
import { s3Client, startServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";

const BASE = SUFFIXES.openldap;
const MC = new URL("../../.tools/bin/mc", import.meta.url).pathname;
const TTL_S = 2;

Deno.test("ldap: sign-in, temporary credentials and group mappings against a real slapd", async (t) => {
  const slapd = await createSlapd();
  await slapd.start();
  const deadPort = await freePort();
  const server = await startServer({
    env: {
      STORE_LDAP_ENABLED: "true",
      // The first address answers nothing: failover to the second.
      STORE_LDAP_URL: `ldap://127.0.0.1:${deadPort},${slapd.url}`,
      STORE_LDAP_BASE_DN: BASE,
      STORE_LDAP_BIND_DN: `cn=reader,${BASE}`,
      STORE_LDAP_BIND_PASSWORD: READER_PASSWORD,
      STORE_LDAP_GROUP_BASE_DN: `ou=groups,${BASE}`,
      STORE_LDAP_CACHE_TTL: String(TTL_S),
      STORE_LDAP_TIMEOUT: "2",
      STORE_SIGNIN_LIMIT: "100",
    },
  });
  const admin = s3Client(server);
  try {
    await admin.send(new CreateBucketCommand({ Bucket: "eng-data" }));
    await admin.send(new CreateBucketCommand({ Bucket: "audit-data" }));
    await admin.send(new PutObjectCommand({ Bucket: "audit-data", Key: "r.txt", Body: "report" }));

    await t.step("/admin/ldap: mappings are put, read, listed and deleted", async () => {
      let res = await adminApi(server, "PUT", "/ldap/groups/Engineers", {
        bucket_access: [{ bucket: "eng-data", permission: "readwrite" }],
      });
      assertEquals(res.status, 200, JSON.stringify(res.json));
      assertEquals(res.json!.name, "engineers");
      res = await adminApi(server, "PUT", "/ldap/groups/auditors", {
        bucket_access: [{ bucket: "audit-data", permission: "read" }],
      });
      assertEquals(res.status, 200);
      res = await adminApi(server, "PUT", "/ldap/users/carol", {
        bucket_access: [{ bucket: "eng-data", permission: "none" }],
      });
      assertEquals(res.status, 200);
      res = await adminApi(server, "GET", "/ldap");
      assertEquals(res.json!.total, 3);
      res = await adminApi(server, "GET", "/ldap/groups/engineers");
      assertEquals(res.json!.bucket_access, [{ bucket: "eng-data", permission: "readwrite" }]);
      // Bad input changes nothing.
      res = await adminApi(server, "PUT", "/ldap/groups/x", { bucket_access: "all" });
      assertEquals(res.status, 400);
      res = await adminApi(server, "PUT", "/ldap/groups/x", { is_admin: "yes" });
      assertEquals(res.status, 400);
      res = await adminApi(server, "PUT", "/ldap/teams/x", { bucket_access: [] });
      assertEquals(res.status, 404);
      res = await adminApi(server, "DELETE", "/ldap/users/nobody");
      assertEquals(res.status, 404);
      res = await adminApi(server, "DELETE", "/ldap/users/carol");
      assertEquals(res.status, 204);
      res = await adminApi(server, "GET", "/ldap/users/carol");
      assertEquals(res.status, 404);
      const anonymous = await fetch(`${server.url}/admin/ldap`);
      assertEquals(anonymous.status, 401);
      await anonymous.body?.cancel();
    });

    await t.step("a directory user works with the S3 SDK within its groups' access", async () => {
      const creds = await ldapSignIn(server, "alice", "alice-pw", { DurationSeconds: "900" });
      assertMatch(creds.accessKeyId, /^STSE[A-Z0-9]{16}$/);
      const expires = Date.parse(creds.expiration) - Date.now();
      assert(expires > 890_000 && expires <= 900_000, `expiration ${creds.expiration}`);
      const s3 = sessionClient(server, creds);
      await s3.send(new PutObjectCommand({ Bucket: "eng-data", Key: "a.txt", Body: "from alice" }));
      const got = await s3.send(new GetObjectCommand({ Bucket: "eng-data", Key: "a.txt" }));
      assertEquals(await got.Body!.transformToString(), "from alice");
      await assertRejectsCode(
        () => s3.send(new ListObjectsV2Command({ Bucket: "audit-data" })),
        "AccessDenied",
        403,
      );
      // Presigned with the session: the token travels in the query.
      const url = await getSignedUrl(
        s3,
        new GetObjectCommand({ Bucket: "eng-data", Key: "a.txt" }),
        {
          expiresIn: 60,
        },
      );
      assertMatch(url, /X-Amz-Security-Token=/);
      const res = await fetch(url);
      assertEquals(await res.text(), "from alice");
      // The union of the groups: carol reads audit-data and writes eng-data.
      const carol = sessionClient(server, await ldapSignIn(server, "carol", "carol-pw"));
      await carol.send(new PutObjectCommand({ Bucket: "eng-data", Key: "c.txt", Body: "c" }));
      await carol.send(new GetObjectCommand({ Bucket: "audit-data", Key: "r.txt" }));
      await assertRejectsCode(
        () => carol.send(new PutObjectCommand({ Bucket: "audit-data", Key: "x", Body: "x" })),
        "AccessDenied",
      );
    });

    await t.step("a user's own 'none' entry wins over its group", async () => {
      await adminApi(server, "PUT", "/ldap/users/carol", {
        bucket_access: [{ bucket: "eng-data", permission: "none" }],
      });
      const carol = sessionClient(server, await ldapSignIn(server, "carol", "carol-pw"));
      await assertRejectsCode(
        () => carol.send(new GetObjectCommand({ Bucket: "eng-data", Key: "c.txt" })),
        "AccessDenied",
      );
      await adminApi(server, "DELETE", "/ldap/users/carol");
    });

    await t.step("a session policy narrows the session", async () => {
      const policy = JSON.stringify({
        Version: "2012-10-17",
        Statement: [{
          Effect: "Allow",
          Action: "s3:GetObject",
          Resource: "arn:aws:s3:::eng-data/*",
        }],
      });
      const s3 = sessionClient(
        server,
        await ldapSignIn(server, "alice", "alice-pw", { Policy: policy }),
      );
      await s3.send(new GetObjectCommand({ Bucket: "eng-data", Key: "a.txt" }));
      await assertRejectsCode(
        () => s3.send(new PutObjectCommand({ Bucket: "eng-data", Key: "p", Body: "p" })),
        "AccessDenied",
      );
      await assertRejectsCode(
        () => s3.send(new CreateBucketCommand({ Bucket: "alice-new" })),
        "AccessDenied",
      );
      const bad = await sts(server, {
        Action: "AssumeRoleWithLDAPIdentity",
        LDAPUsername: "alice",
        LDAPPassword: "alice-pw",
        Policy: '{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"*"}]}',
      });
      assertEquals([bad.status, errorCode(bad.text)], [400, "MalformedPolicyDocument"]);
    });

    await t.step("bad sign-ins are refused without temporary credentials", async () => {
      const cases: [string, string, number, string][] = [
        ["alice", "wrong", 403, "AccessDenied"],
        ["alice", "", 403, "AccessDenied"],
        ["nobody", "x", 403, "AccessDenied"],
        // Filter injection: as a literal name nobody has it.
        ["*)(uid=*", "alice-pw", 403, "AccessDenied"],
        ["*", "alice-pw", 403, "AccessDenied"],
        ["alice)(|(uid=*", "alice-pw", 403, "AccessDenied"],
        ["", "x", 403, "AccessDenied"],
      ];
      for (const [name, password, status, code] of cases) {
        const res = await sts(server, {
          Action: "AssumeRoleWithLDAPIdentity",
          LDAPUsername: name,
          LDAPPassword: password,
        });
        assertEquals([res.status, errorCode(res.text)], [status, code], `${name}/${password}`);
        assert(!res.text.includes("<AccessKeyId>"), "no credentials");
      }
      // The user whose name is filter syntax signs in as itself.
      await ldapSignIn(server, "e*v(i)l\\", "evil-pw");
      const bad: [Record<string, string>, string][] = [
        [{ Action: "AssumeRoleWithLDAPIdentity", LDAPUsername: "alice" }, "MissingParameter"],
        [{
          Action: "AssumeRoleWithLDAPIdentity",
          LDAPUsername: "alice",
          LDAPPassword: "alice-pw",
          DurationSeconds: "60",
        }, "ValidationError"],
        [{ Action: "AssumeRoleWithLDAPIdentity", Version: "2020-01-01" }, "InvalidParameterValue"],
        [{ Action: "DeleteEverything" }, "InvalidAction"],
      ];
      for (const [params, code] of bad) {
        const res = await sts(server, params);
        assertEquals([res.status, errorCode(res.text)], [400, code], JSON.stringify(params));
      }
    });

    await t.step("directory sign-ins are in the audit chain, refused and accepted", async () => {
      const query = new URLSearchParams({
        operation: "TokenService:AssumeRoleWithLDAPIdentity",
        principal: "ldap:alice",
        limit: "1000",
      });
      const { status, json } = await adminApi(server, "GET", `/audit?${query}`);
      assertEquals(status, 200);
      const statuses = (json!.entries as { status: number }[]).map((e) => e.status);
      assert(statuses.includes(200), `an accepted sign-in is recorded: ${statuses}`);
      assert(statuses.includes(403), `a refused sign-in is recorded: ${statuses}`);
      const verified = await adminApi(server, "GET", "/audit/verify");
      assertEquals(verified.json!.ok, true);
    });

    await t.step(
      "session keys need their token: missing, tampered, expired, on long-term keys",
      async () => {
        const creds = await ldapSignIn(server, "alice", "alice-pw");
        const get = (headers: Record<string, string>, keys = creds) =>
          signedFetch(server, {
            method: "GET",
            path: objectPath("eng-data", "a.txt"),
            dialect: "amz",
            accessKey: keys.accessKeyId,
            secret: keys.secretAccessKey,
            headers,
          });
        let res = await get({});
        assertEquals([res.status, /<Code>(\w+)/.exec(await res.text())?.[1]], [
          400,
          "InvalidToken",
        ]);
        const tampered = creds.sessionToken.slice(0, -1) +
          (creds.sessionToken.endsWith("A") ? "B" : "A");
        res = await get({ "x-amz-security-token": tampered });
        assertEquals([res.status, /<Code>(\w+)/.exec(await res.text())?.[1]], [
          400,
          "InvalidToken",
        ]);
        res = await get({ "x-amz-security-token": creds.sessionToken });
        assertEquals([res.status, await res.text()], [200, "from alice"]);
        // The store dialect carries the token as x-store-security-token.
        res = await signedFetch(server, {
          method: "GET",
          path: objectPath("eng-data", "a.txt"),
          accessKey: creds.accessKeyId,
          secret: creds.secretAccessKey,
          headers: { "x-store-security-token": creds.sessionToken },
        });
        assertEquals(res.status, 200);
        await res.body?.cancel();
        // A long-term key with a token is refused too.
        res = await signedFetch(server, {
          method: "GET",
          path: objectPath("eng-data", "a.txt"),
          dialect: "amz",
          headers: { "x-amz-security-token": creds.sessionToken },
        });
        assertEquals(res.status, 400);
        await res.body?.cancel();
        // Expired: a session whose expiry has passed (moved back in the database before first use).
        const later = await ldapSignIn(server, "alice", "alice-pw");
        const db = new DatabaseSync(join(server.dataDir, "meta.db"));
        db.prepare("UPDATE sts_sessions SET expires_at = ? WHERE access_key = ?")
          .run(Date.now() - 1000, later.accessKeyId);
        db.close();
        res = await get({ "x-amz-security-token": later.sessionToken }, later);
        assertEquals([res.status, /<Code>(\w+)/.exec(await res.text())?.[1]], [
          400,
          "ExpiredToken",
        ]);
      },
    );

    // Listing the administrator's bucket needs the group's access (alice's own objects stay
    // readable to her through their ACL).
    await t.step(
      "removal from a group takes effect within the TTL, for issued sessions too",
      async () => {
        const s3 = sessionClient(server, await ldapSignIn(server, "alice", "alice-pw"));
        await s3.send(new ListObjectsV2Command({ Bucket: "eng-data" }));
        const dn = userDn("openldap", "alice");
        await changeMembership(slapd.url, "openldap", "engineers", dn, "delete");
        try {
          await new Promise((r) => setTimeout(r, TTL_S * 1000 + 300));
          await assertRejectsCode(
            () => s3.send(new ListObjectsV2Command({ Bucket: "eng-data" })),
            "AccessDenied",
          );
        } finally {
          await changeMembership(slapd.url, "openldap", "engineers", dn, "add");
        }
        await new Promise((r) => setTimeout(r, TTL_S * 1000 + 300));
        await s3.send(new ListObjectsV2Command({ Bucket: "eng-data" }));
      },
    );

    await t.step(
      "the directory stopped: sessions and cached sign-ins keep working, others fail fast",
      async () => {
        const s3 = sessionClient(server, await ldapSignIn(server, "alice", "alice-pw"));
        await slapd.stop();
        try {
          // Cached within the TTL: no directory needed.
          await ldapSignIn(server, "alice", "alice-pw");
          const started = Date.now();
          const res = await sts(server, {
            Action: "AssumeRoleWithLDAPIdentity",
            LDAPUsername: "bob",
            LDAPPassword: "bob-pw",
          });
          assertEquals([res.status, errorCode(res.text)], [503, "ServiceUnavailable"]);
          assert(Date.now() - started < 5000, "a clear error without hanging");
          // Past the TTL the groups cannot be re-read: the last known ones serve.
          await new Promise((r) => setTimeout(r, TTL_S * 1000 + 300));
          await s3.send(new ListObjectsV2Command({ Bucket: "eng-data" }));
          // Local users are not affected.
          await admin.send(new ListObjectsV2Command({ Bucket: "eng-data" }));
        } finally {
          await slapd.start();
        }
        await ldapSignIn(server, "bob", "bob-pw");
      },
    );

    await t.step("a directory that accepts connections but never answers: timeouts", async () => {
      await slapd.freeze(true);
      try {
        const started = Date.now();
        const res = await sts(server, {
          Action: "AssumeRoleWithLDAPIdentity",
          LDAPUsername: "carol",
          LDAPPassword: "carol-pw",
        });
        const ms = Date.now() - started;
        assertEquals([res.status, errorCode(res.text)], [503, "ServiceUnavailable"]);
        // STORE_LDAP_TIMEOUT is 2 s.
        assert(ms >= 1500 && ms < 6000, `answered after ${ms} ms`);
      } finally {
        await slapd.freeze(false);
      }
      await ldapSignIn(server, "carol", "carol-pw");
    });

    await t.step("boto3 and mc use the temporary credentials", async () => {
      const creds = await ldapSignIn(server, "alice", "alice-pw");
      const script = [
        "import boto3, sys",
        "s3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1',",
        "  aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3],",
        "  aws_session_token=sys.argv[4])",
        "s3.put_object(Bucket='eng-data', Key='boto3.txt', Body=b'from boto3')",
        "print(s3.get_object(Bucket='eng-data', Key='a.txt')['Body'].read().decode())",
      ].join("\n");
      const py = await new Deno.Command("/usr/bin/python3", {
        args: [
          "-c",
          script,
          server.url,
          creds.accessKeyId,
          creds.secretAccessKey,
          creds.sessionToken,
        ],
        env: { HOME: server.dataDir, AWS_CONFIG_FILE: "/dev/null" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert(py.success, new TextDecoder().decode(py.stderr));
      assertEquals(new TextDecoder().decode(py.stdout).trim(), "from alice");
      const configDir = await Deno.makeTempDir({ prefix: "mc-config-" });
      try {
        const mc = await new Deno.Command(MC, {
          args: ["--config-dir", configDir, "cat", "ldap/eng-data/boto3.txt"],
          env: {
            MC_HOST_ldap: `http://${creds.accessKeyId}:${creds.secretAccessKey}:` +
              `${creds.sessionToken}@127.0.0.1:${server.port}`,
          },
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert(mc.success, new TextDecoder().decode(mc.stderr));
        assertEquals(new TextDecoder().decode(mc.stdout), "from boto3");
      } finally {
        await Deno.remove(configDir, { recursive: true });
      }
    });

    await t.step(
      "POST /api/v1/tokens signs a directory user in; its presigned URLs work",
      async () => {
        const res = await fetch(`${server.url}/api/v1/tokens`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ ldap_username: "alice", ldap_password: "alice-pw" }),
        });
        const body = await res.json();
        assertEquals(res.status, 201, JSON.stringify(body));
        const presigned = await fetch(
          `${server.url}/api/v1/presigned/download/eng-data/a.txt?expires_in=60`,
          { headers: { authorization: `Bearer ${body.token}` } },
        );
        const { url } = await presigned.json();
        assertEquals(presigned.status, 200);
        assertMatch(url, /Security-Token=/);
        const got = await fetch(url);
        assertEquals([got.status, await got.text()], [200, "from alice"]);
        const wrong = await fetch(`${server.url}/api/v1/tokens`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ ldap_username: "alice", ldap_password: "nope" }),
        });
        assertEquals(wrong.status, 401);
        await wrong.body?.cancel();
      },
    );
  } finally {
    admin.destroy();
    await server.stop();
    await slapd.dispose();
    await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
  }
});
