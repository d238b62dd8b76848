// LDAP sign-in and session keys: a real slapd (tests/services/slapd.ts) seeded with extra users,
// the server started against it, then timed sequentially from one client:
//   - directory sign-in (AssumeRoleWithLDAPIdentity, each user once: a search, a bind, a group
//     search at the directory), and repeat sign-ins (answered from the sign-in cache);
//   - GET of a 1 KiB object signed with session keys against the same GET with long-term keys.
// Server peak RSS at the end.
//
//   deno task bench:ldap [--users 200] [--gets 1000]
import { Client } from "ldapts";
import { ADMIN_PASSWORD, createSlapd, READER_PASSWORD, SUFFIXES } from "../tests/services/slapd.ts";
import { adminApi, createUser } from "../tests/integration/access_helpers.ts";
import { credentialsOf, sts } from "../tests/integration/ldap_helpers.ts";
import { memoryOf, startServer } from "../tests/integration/server.ts";
import { objectPath, signedFetch } from "../tests/integration/signer.ts";

function arg(name: string, fallback: number): number {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}
const USERS = arg("--users", 200);
const GETS = arg("--gets", 1000);
const BASE = SUFFIXES.openldap;
const BUCKET = "ldap-bench";

function summary(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  const total = ms.reduce((a, b) => a + b, 0);
  return `p50 ${at(0.5).toFixed(2)} ms, p99 ${at(0.99).toFixed(2)} ms, ` +
    `${(ms.length / (total / 1000)).toFixed(0)}/s (n=${ms.length})`;
}

async function timed(n: number, fn: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(i);
    out.push(performance.now() - t);
  }
  return out;
}

async function addUsers(url: string): Promise<void> {
  const client = new Client({ url });
  await client.bind(`cn=admin,${BASE}`, ADMIN_PASSWORD);
  for (let i = 0; i < USERS; i++) {
    await client.add(`uid=bench${i},ou=people,${BASE}`, {
      objectClass: "inetOrgPerson",
      uid: `bench${i}`,
      cn: `bench${i}`,
      sn: "bench",
      userPassword: `bench${i}-pw`,
    });
  }
  await client.unbind();
}

const slapd = await createSlapd();
await slapd.start();
const server = await startServer({
  env: {
    STORE_LDAP_ENABLED: "true",
    STORE_LDAP_URL: slapd.url,
    STORE_LDAP_BASE_DN: BASE,
    STORE_LDAP_BIND_DN: `cn=reader,${BASE}`,
    STORE_LDAP_BIND_PASSWORD: READER_PASSWORD,
    STORE_SIGNIN_LIMIT: "10000",
  },
});
try {
  await addUsers(slapd.url);
  await signedFetch(server, { method: "PUT", path: objectPath(BUCKET) });
  await signedFetch(server, {
    method: "PUT",
    path: objectPath(BUCKET, "obj"),
    body: new Uint8Array(1024),
  });
  await adminApi(server, "PUT", "/ldap/users/bench0", {
    bucket_access: [{ bucket: BUCKET, permission: "read" }],
  });
  const signIn = (i: number) => async () => {
    const res = await sts(server, {
      Action: "AssumeRoleWithLDAPIdentity",
      LDAPUsername: `bench${i}`,
      LDAPPassword: `bench${i}-pw`,
    });
    if (res.status !== 200) throw new Error(res.text);
  };
  // Each user's first sign-in goes to the directory, its second (right after) to the cache:
  // interleaved, so load on the machine weighs on both alike.
  const cold: number[] = [];
  const warm: number[] = [];
  for (let i = 0; i < USERS; i++) {
    cold.push(...await timed(1, () => signIn(i)()));
    warm.push(...await timed(1, () => signIn(i)()));
  }
  console.log(`directory sign-in (search + bind + groups): ${summary(cold)}`);
  console.log(`repeat sign-in (cached):                    ${summary(warm)}`);

  const user = await createUser(server, "benchuser", [{ bucket: BUCKET, permission: "read" }]);
  const session = credentialsOf(
    (await sts(server, {
      Action: "AssumeRoleWithLDAPIdentity",
      LDAPUsername: "bench0",
      LDAPPassword: "bench0-pw",
    })).text,
  );
  const get = (keys: { accessKey: string; secret: string; token?: string }) => async () => {
    const res = await signedFetch(server, {
      method: "GET",
      path: objectPath(BUCKET, "obj"),
      dialect: "amz",
      accessKey: keys.accessKey,
      secret: keys.secret,
      headers: keys.token ? { "x-amz-security-token": keys.token } : {},
    });
    if (res.status !== 200) throw new Error(`${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  };
  const longTerm = get({ accessKey: user.accessKey, secret: user.secret });
  const sessionGet = get({
    accessKey: session.accessKeyId,
    secret: session.secretAccessKey,
    token: session.sessionToken,
  });
  // Warm both paths, then alternate rounds so drift hits both alike.
  await timed(50, longTerm);
  await timed(50, sessionGet);
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < 10; r++) {
    a.push(...await timed(GETS / 10, longTerm));
    b.push(...await timed(GETS / 10, sessionGet));
  }
  console.log(`GET 1 KiB, long-term keys:                  ${summary(a)}`);
  console.log(`GET 1 KiB, session keys + token:            ${summary(b)}`);
  const mem = await memoryOf(server.pid);
  console.log(`server peak RSS: ${(mem.peak / 1048576).toFixed(0)} MiB`);
} finally {
  await server.stop();
  await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
  await slapd.dispose();
}
