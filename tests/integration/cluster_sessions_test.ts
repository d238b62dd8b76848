// Token-service sessions, bearer tokens of the administrator and of directory users, and directory
// (LDAP) access mappings replicated between three nodes on loopback with one real slapd:
// temporary credentials made on one node sign on the others (AWS SDK), a token revoked or expired
// on one node is refused on all, and a mapping changed on one node applies on all; then the same
// between nodes that each keep their metadata in their own PostgreSQL database.
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListBucketsCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { createSlapd, READER_PASSWORD, type Slapd, SUFFIXES } from "../services/slapd.ts";
import { adminApi, createUser, type TestUser } from "./access_helpers.ts";
import { assert, assertEquals } from "./assert.ts";
import {
  type ClusterNodeProcess,
  eventually,
  seenBy,
  startNode,
  stopAll,
} from "./cluster_helpers.ts";
import { credentialsOf, ldapSignIn, sessionClient, type TempCredentials } from "./ldap_helpers.ts";
import { startPgMeta } from "./postgres_meta_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, s3Client } from "./server.ts";
import { signedFetch } from "./signer.ts";

const BASE = SUFFIXES.openldap;

function ldapEnv(slapd: Slapd): Record<string, string> {
  return {
    STORE_LDAP_ENABLED: "true",
    STORE_LDAP_URL: slapd.url,
    STORE_LDAP_BASE_DN: BASE,
    STORE_LDAP_BIND_DN: `cn=reader,${BASE}`,
    STORE_LDAP_BIND_PASSWORD: READER_PASSWORD,
    STORE_LDAP_GROUP_BASE_DN: `ou=groups,${BASE}`,
    STORE_LDAP_CACHE_TTL: "2",
    STORE_SIGNIN_LIMIT: "100",
  };
}

async function startThree(env: () => Promise<Record<string, string>>) {
  const a = await startNode("node-a", { env: await env() });
  const nodes = [a];
  try {
    nodes.push(await startNode("node-b", { seeds: [a.url], env: await env() }));
    nodes.push(await startNode("node-c", { seeds: [a.url], env: await env() }));
    for (const n of nodes) {
      await eventually(
        `${n.id} sees the others`,
        () => seenBy(n),
        (s) => s.length === 2 && s.every((x) => x.endsWith(":alive")),
      );
    }
  } catch (err) {
    await stopAll(nodes);
    throw err;
  }
  return nodes;
}

const sessionOn = (node: ClusterNodeProcess, creds: TempCredentials) =>
  sessionClient(node.server, creds);

/** "ok" or the error's name. */
function outcome(p: Promise<unknown>): Promise<string> {
  return p.then(() => "ok", (err) => (err as { name?: string }).name ?? String(err));
}

/** AssumeRole signed with a user's own keys on `node`. */
async function assumeRole(node: ClusterNodeProcess, user: TestUser): Promise<TempCredentials> {
  const res = await signedFetch(node.server, {
    method: "POST",
    path: "/",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Astore%3Aiam%3A%3A1%3Arole%2Fx" +
      "&RoleSessionName=cluster",
    accessKey: user.accessKey,
    secret: user.secret,
    service: "sts",
  });
  const xml = await res.text();
  assertEquals(res.status, 200, xml);
  return credentialsOf(xml);
}

/** POST /api/v1/tokens on `node` with `body`; the token. */
async function issueToken(node: ClusterNodeProcess, body: unknown): Promise<string> {
  const res = await fetch(`${node.url}/api/v1/tokens`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  assertEquals(res.status, 201, JSON.stringify(json));
  return json.token as string;
}

/** The status of GET /api/v1/shares with a bearer token (or of DELETE /api/v1/tokens). */
function withToken(node: ClusterNodeProcess, token: string, method = "GET"): Promise<number> {
  return fetch(`${node.url}/api/v1/${method === "GET" ? "shares" : "tokens"}`, {
    method,
    headers: { authorization: `Bearer ${token}` },
  }).then(async (r) => {
    await r.body?.cancel();
    return r.status;
  });
}

async function tokenEverywhere(nodes: ClusterNodeProcess[], token: string, status: number) {
  for (const n of nodes) {
    await eventually(`token ${status} on ${n.id}`, () => withToken(n, token), (s) => s === status);
  }
}

Deno.test("cluster: sessions, tokens and directory mappings reach every node", async (t) => {
  const slapd = await createSlapd();
  await slapd.start();
  let nodes: ClusterNodeProcess[] = [];
  try {
    nodes = await startThree(() => Promise.resolve(ldapEnv(slapd)));
    const [a, b, c] = nodes;
    const admin = s3Client(a.server);
    await admin.send(new CreateBucketCommand({ Bucket: "eng-data" }));
    await admin.send(new PutObjectCommand({ Bucket: "eng-data", Key: "r.txt", Body: "report" }));

    await t.step("temporary credentials made on a sign on b and c", async () => {
      const sam = await createUser(a.server, "sam");
      // sam reaches b before its session can be used there.
      const creds = await assumeRole(a, sam);
      const made = Date.now();
      for (const node of [b, c]) {
        await eventually(
          `sam's session on ${node.id}`,
          () => outcome(sessionOn(node, creds).send(new ListBucketsCommand({}))),
          (r) => r === "ok",
        );
      }
      console.log(`a session made on a signed on b and c after ${Date.now() - made} ms`);
      // The token travelled with the session: another token is refused.
      const forged = { ...creds, sessionToken: creds.sessionToken.slice(0, -1) + "x" };
      assertEquals(
        await outcome(sessionOn(c, forged).send(new ListBucketsCommand({}))),
        "InvalidToken",
      );
      // sam disabled on c: its session ends on a and b too.
      assertEquals(
        (await adminApi(c.server, "POST", `/users/${sam.accessKey}/disable`)).status,
        200,
      );
      for (const node of [a, b]) {
        await eventually(
          `sam's session refused on ${node.id}`,
          () => outcome(sessionOn(node, creds).send(new ListBucketsCommand({}))),
          (r) => r === "AccessDenied",
        );
      }
    });

    let alice: TempCredentials;
    const readOn = (node: ClusterNodeProcess) =>
      outcome(
        sessionOn(node, alice).send(new GetObjectCommand({ Bucket: "eng-data", Key: "r.txt" })),
      );

    await t.step("a mapping put on a applies on b and c; changed on c, on a and b", async () => {
      const put = await adminApi(a.server, "PUT", "/ldap/groups/engineers", {
        bucket_access: [{ bucket: "eng-data", permission: "read" }],
      });
      assertEquals(put.status, 200);
      for (const node of [b, c]) {
        await eventually(
          `the mapping on ${node.id}`,
          () => adminApi(node.server, "GET", "/ldap/groups/engineers"),
          (r) => r.status === 200,
        );
      }
      // alice (group engineers) signs in on b and reads on c with that session.
      alice = await ldapSignIn(b.server, "alice", "alice-pw");
      await eventually(`alice reads on c`, () => readOn(c), (r) => r === "ok");
      // Her access set to none on c: refused on a and b (their cached mappings are read again).
      const none = await adminApi(c.server, "PUT", "/ldap/groups/engineers", {
        bucket_access: [{ bucket: "eng-data", permission: "none" }],
      });
      assertEquals(none.status, 200);
      for (const node of [a, b]) {
        await eventually(
          `alice refused on ${node.id}`,
          () => readOn(node),
          (r) => r === "AccessDenied",
        );
      }
      // Deleted on b: gone everywhere; put again on a: readable everywhere.
      assertEquals((await adminApi(b.server, "DELETE", "/ldap/groups/engineers")).status, 204);
      for (const node of [a, c]) {
        await eventually(
          `the mapping gone on ${node.id}`,
          () => adminApi(node.server, "GET", "/ldap/groups/engineers"),
          (r) => r.status === 404,
        );
      }
      assertEquals(
        (await adminApi(a.server, "PUT", "/ldap/groups/engineers", {
          bucket_access: [{ bucket: "eng-data", permission: "read" }],
        })).status,
        200,
      );
      for (const node of [a, b, c]) {
        await eventually(`alice reads on ${node.id} again`, () => readOn(node), (r) => r === "ok");
      }
    });

    await t.step(
      "the administrator's token: issued on a, revoked on b, refused on a and c",
      async () => {
        const token = await issueToken(a, { access_key: ADMIN_USER, secret_key: ADMIN_PASSWORD });
        await tokenEverywhere([b, c], token, 200);
        assertEquals(await withToken(b, token, "DELETE"), 204);
        await tokenEverywhere([a, c], token, 401);
      },
    );

    await t.step(
      "a directory user's token: issued on c, works on a and b, revoked on a",
      async () => {
        const token = await issueToken(c, { ldap_username: "alice", ldap_password: "alice-pw" });
        await tokenEverywhere([a, b], token, 200);
        // A URL presigned on b with the session behind the token (made on c) reads there.
        const presigned = await fetch(`${b.url}/api/v1/presigned/download/eng-data/r.txt`, {
          headers: { authorization: `Bearer ${token}` },
        });
        assertEquals(presigned.status, 200);
        const onB = await fetch(String((await presigned.json()).url));
        assertEquals([onB.status, await onB.text()], [200, "report"]);
        assertEquals(await withToken(a, token, "DELETE"), 204);
        await tokenEverywhere([b, c], token, 401);
      },
    );

    await t.step("a token expires on every node", async () => {
      const token = await issueToken(b, {
        access_key: ADMIN_USER,
        secret_key: ADMIN_PASSWORD,
        expires_in: 4,
      });
      const issued = Date.now();
      await tokenEverywhere([a, c], token, 200);
      assert(Date.now() - issued < 4000, "the token reached a and c before it expired");
      await new Promise((r) => setTimeout(r, Math.max(0, issued + 4500 - Date.now())));
      for (const node of [a, b, c]) assertEquals(await withToken(node, token), 401);
    });
  } finally {
    await stopAll(nodes);
    await slapd.dispose();
  }
});

Deno.test("cluster: sessions, tokens and mappings between nodes on their own PostgreSQL", async () => {
  const slapd = await createSlapd();
  await slapd.start();
  const pg = await startPgMeta();
  let nodes: ClusterNodeProcess[] = [];
  try {
    nodes = await startThree(async () => ({
      ...ldapEnv(slapd),
      STORE_META_URL: await pg.database(),
    }));
    const [a, b, c] = nodes;
    const tess = await createUser(a.server, "tess");
    const creds = await assumeRole(a, tess);
    for (const node of [b, c]) {
      await eventually(
        `tess's session on ${node.id}`,
        () => outcome(sessionOn(node, creds).send(new ListBucketsCommand({}))),
        (r) => r === "ok",
      );
    }
    const token = await issueToken(a, { access_key: ADMIN_USER, secret_key: ADMIN_PASSWORD });
    await tokenEverywhere([b, c], token, 200);
    assertEquals(await withToken(b, token, "DELETE"), 204);
    await tokenEverywhere([a, c], token, 401);
    assertEquals(
      (await adminApi(c.server, "PUT", "/ldap/users/alice", { is_admin: true })).status,
      200,
    );
    for (const node of [a, b]) {
      await eventually(
        `alice's mapping on ${node.id}`,
        () => adminApi(node.server, "GET", "/ldap/users/alice"),
        (r) => r.json?.is_admin === true,
      );
    }
    assertEquals((await adminApi(a.server, "DELETE", "/ldap/users/alice")).status, 204);
    for (const node of [b, c]) {
      await eventually(
        `alice's mapping gone on ${node.id}`,
        () => adminApi(node.server, "GET", "/ldap/users/alice"),
        (r) => r.status === 404,
      );
    }
  } finally {
    await stopAll(nodes);
    await pg.dispose();
    await slapd.dispose();
  }
});
