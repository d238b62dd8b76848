// LDAP over TLS and the directory presets against a real slapd: STARTTLS with the 389 Directory
// Server layout (nsAccountLock), ldaps:// with the Active Directory layout (sAMAccountName,
// memberOf, userAccountControl), a certificate the server cannot verify, the sign-in rate limit,
// and AssumeRole for a local user through the real aws cli.
import { join } from "node:path";
import { createSlapd, READER_PASSWORD, SUFFIXES } from "../services/slapd.ts";
import { adminApi, createUser } from "./access_helpers.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { errorCode, ldapSignIn, sts } from "./ldap_helpers.ts";
import { REGION, s3Client, startServer, type TestServer } from "./server.ts";
import { CreateBucketCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { sessionClient } from "./ldap_helpers.ts";

function ldapEnv(url: string, layout: keyof typeof SUFFIXES): Record<string, string> {
  const base = SUFFIXES[layout];
  return {
    STORE_LDAP_ENABLED: "true",
    STORE_LDAP_URL: url,
    STORE_LDAP_PRESET: layout,
    STORE_LDAP_BASE_DN: `ou=people,${base}`,
    STORE_LDAP_GROUP_BASE_DN: `ou=groups,${base}`,
    STORE_LDAP_BIND_DN: `cn=reader,${base}`,
    STORE_LDAP_BIND_PASSWORD: READER_PASSWORD,
    STORE_LDAP_TIMEOUT: "3",
  };
}

async function signInFails(server: TestServer, user: string, password: string) {
  const res = await sts(server, {
    Action: "AssumeRoleWithLDAPIdentity",
    LDAPUsername: user,
    LDAPPassword: password,
  });
  return { status: res.status, code: errorCode(res.text), text: res.text, headers: res.headers };
}

async function aws(server: TestServer, env: Record<string, string>, ...args: string[]) {
  const home = await Deno.makeTempDir({ prefix: "store-awscli-" });
  try {
    const out = await new Deno.Command("/usr/bin/aws", {
      args: [...args, "--endpoint-url", server.url, "--output", "json", "--no-cli-pager"],
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: home,
        LANG: "C.UTF-8",
        AWS_DEFAULT_REGION: REGION,
        AWS_CONFIG_FILE: join(home, "none"),
        AWS_SHARED_CREDENTIALS_FILE: join(home, "none"),
        AWS_EC2_METADATA_DISABLED: "true",
        ...env,
      },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      ok: out.success,
      stdout: new TextDecoder().decode(out.stdout),
      stderr: new TextDecoder().decode(out.stderr),
    };
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

Deno.test("ldap over TLS: STARTTLS and 389 layout, ldaps and AD layout, rate limit, AssumeRole", async (t) => {
  const slapd = await createSlapd();
  await slapd.start();
  const servers: TestServer[] = [];
  const start = async (env: Record<string, string>) => {
    const server = await startServer({ env });
    servers.push(server);
    return server;
  };
  try {
    await t.step(
      "STARTTLS with the test CA, 389 layout: sign-in, disabled account, rate limit",
      async () => {
        const server = await start({
          ...ldapEnv(slapd.url, "389ds"),
          STORE_LDAP_STARTTLS: "true",
          STORE_LDAP_TLS_CA_FILE: slapd.caFile,
          STORE_SIGNIN_LIMIT: "3",
        });
        await ldapSignIn(server, "alice", "alice-pw");
        let res = await signInFails(server, "dave", "dave-pw");
        assertEquals([res.status, res.code], [403, "AccessDenied"]);
        assertMatch(res.text, /disabled/);
        res = await signInFails(server, "bob", "wrong");
        assertEquals(res.status, 403);
        res = await signInFails(server, "bob", "wrong");
        assertEquals(res.status, 403);
        // Three failures from this address: even the right password waits now.
        res = await signInFails(server, "bob", "bob-pw");
        assertEquals([res.status, res.code], [400, "Throttling"]);
        assert(Number(res.headers.get("retry-after")) > 0, "Retry-After");
      },
    );

    await t.step(
      "ldaps with the test CA, AD layout: memberOf groups, userAccountControl",
      async () => {
        const server = await start({
          ...ldapEnv(slapd.ldapsUrl, "ad"),
          STORE_LDAP_TLS_CA_FILE: slapd.caFile,
        });
        const admin = s3Client(server);
        await admin.send(new CreateBucketCommand({ Bucket: "eng" }));
        admin.destroy();
        const put = await adminApi(server, "PUT", "/ldap/groups/engineers", {
          bucket_access: [{ bucket: "eng", permission: "read" }],
        });
        assertEquals(put.status, 200);
        const s3 = sessionClient(server, await ldapSignIn(server, "ALICE", "alice-pw"));
        await s3.send(new ListObjectsV2Command({ Bucket: "eng" }));
        s3.destroy();
        const res = await signInFails(server, "dave", "dave-pw");
        assertEquals([res.status, res.code], [403, "AccessDenied"]);
        assertMatch(res.text, /disabled/);
      },
    );

    await t.step("ldaps with an unknown CA: a clear error, local users unaffected", async () => {
      const server = await start(ldapEnv(slapd.ldapsUrl, "openldap"));
      const res = await signInFails(server, "alice", "alice-pw");
      assertEquals([res.status, res.code], [503, "ServiceUnavailable"]);
      for (let i = 0; i < 50 && !/LDAP directory unreachable/.test(server.logs()); i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assertMatch(server.logs(), /LDAP directory unreachable/);
      const admin = s3Client(server);
      await admin.send(new CreateBucketCommand({ Bucket: "still-works" }));
      admin.destroy();
    });

    await t.step(
      "AssumeRole through the aws cli: session keys no stronger than the user",
      async () => {
        const server = servers[1];
        const user = await createUser(server, "scripts", [{
          bucket: "eng",
          permission: "readwrite",
        }]);
        const keys = { AWS_ACCESS_KEY_ID: user.accessKey, AWS_SECRET_ACCESS_KEY: user.secret };
        const assumed = await aws(
          server,
          keys,
          "sts",
          "assume-role",
          "--role-arn",
          "arn:aws:iam::000000000000:role/store",
          "--role-session-name",
          "nightly",
          "--duration-seconds",
          "900",
        );
        assert(assumed.ok, assumed.stderr);
        const creds = JSON.parse(assumed.stdout).Credentials;
        assertMatch(creds.AccessKeyId, /^STSE/);
        const session = {
          AWS_ACCESS_KEY_ID: creds.AccessKeyId,
          AWS_SECRET_ACCESS_KEY: creds.SecretAccessKey,
          AWS_SESSION_TOKEN: creds.SessionToken,
        };
        const listed = await aws(server, session, "s3api", "list-objects-v2", "--bucket", "eng");
        assert(listed.ok, listed.stderr);
        // Narrowed by a session policy: reads only.
        const policy = JSON.stringify({
          Version: "2012-10-17",
          Statement: [{ Effect: "Allow", Action: "s3:ListBucket", Resource: "arn:aws:s3:::eng" }],
        });
        const narrowed = await aws(
          server,
          keys,
          "sts",
          "assume-role",
          "--role-arn",
          "arn:aws:iam::000000000000:role/store",
          "--role-session-name",
          "readonly",
          "--policy",
          policy,
        );
        assert(narrowed.ok, narrowed.stderr);
        const c2 = JSON.parse(narrowed.stdout).Credentials;
        const readOnly = {
          AWS_ACCESS_KEY_ID: c2.AccessKeyId,
          AWS_SECRET_ACCESS_KEY: c2.SecretAccessKey,
          AWS_SESSION_TOKEN: c2.SessionToken,
        };
        assert((await aws(server, readOnly, "s3api", "list-objects-v2", "--bucket", "eng")).ok);
        const denied = await aws(
          server,
          readOnly,
          "s3api",
          "put-object",
          "--bucket",
          "eng",
          "--key",
          "x",
        );
        assert(!denied.ok && /AccessDenied/.test(denied.stderr), denied.stderr);
        // Session keys cannot issue further sessions; a wrong secret is refused.
        const chained = await aws(
          server,
          session,
          "sts",
          "assume-role",
          "--role-arn",
          "arn:aws:iam::000000000000:role/store",
          "--role-session-name",
          "again",
        );
        assert(!chained.ok && /AccessDenied/.test(chained.stderr), chained.stderr);
        const wrong = await aws(
          server,
          { ...keys, AWS_SECRET_ACCESS_KEY: "wrong" + user.secret.slice(5) },
          "sts",
          "assume-role",
          "--role-arn",
          "arn:aws:iam::000000000000:role/store",
          "--role-session-name",
          "x1",
        );
        assert(!wrong.ok && /SignatureDoesNotMatch/.test(wrong.stderr), wrong.stderr);
        // The user disabled: its sessions stop at once.
        const disabled = await adminApi(server, "POST", `/users/${user.accessKey}/disable`);
        assertEquals(disabled.status, 200);
        const after = await aws(server, session, "s3api", "list-objects-v2", "--bucket", "eng");
        assert(!after.ok && /AccessDenied/.test(after.stderr), after.stderr);
        // Enabled again, the session works again; rotating the user's keys ends it.
        const enabled = await adminApi(server, "POST", `/users/${user.accessKey}/enable`);
        assertEquals(enabled.status, 200);
        assert((await aws(server, session, "s3api", "list-objects-v2", "--bucket", "eng")).ok);
        const rotate = await adminApi(server, "POST", `/users/${user.accessKey}/keys`);
        assertEquals(rotate.status, 200);
        const rotated = await aws(server, session, "s3api", "list-objects-v2", "--bucket", "eng");
        assert(!rotated.ok && /InvalidAccessKeyId/.test(rotated.stderr), rotated.stderr);
      },
    );
  } finally {
    for (const server of servers) {
      await server.stop();
      await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
    }
    await slapd.dispose();
  }
});
