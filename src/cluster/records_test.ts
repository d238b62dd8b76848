import { assert, assertEquals } from "../../tests/integration/assert.ts";
import type { SecretSealer } from "../auth/secrets.ts";
import { SqliteMetaStore } from "../meta/sqlite.ts";
import type { ReplicatedRecord, SessionRecord } from "../meta/store.ts";
import { parseRecordState, RecordReplicator } from "./records.ts";
import { firstMessage, nodeAWithB, nodeSealer } from "./sender_test_helpers.ts";
import { wireSealer } from "./users.ts";

const SECRET = "records-test-cluster-secret-0123456789abcdef";

/** What a node sends of its record queue (one message), with `here` as its sealer. */
function sent(meta: SqliteMetaStore, here: SecretSealer): Promise<string> {
  return firstMessage((deliver) =>
    new RecordReplicator(meta, nodeAWithB(), deliver, here, wireSealer(SECRET), 10)
  );
}

Deno.test("a session's secret and token travel sealed with the cluster's key, sealed again on arrival", async () => {
  const meta = new SqliteMetaStore(":memory:", { clusterNode: "a" });
  const here = nodeSealer();
  const secret = "session-secret-0123456789abcdefghijklmno";
  const token = "session-token-".padEnd(96, "t");
  const accessKey = "STSEABCDEFGHIJ012345";
  const session: SessionRecord = {
    accessKey,
    sealedSecret: here.seal(secret, accessKey),
    sealedToken: here.seal(token, `${accessKey}/token`),
    parentKind: "ldap",
    parentId: "alice",
    ldapDn: "uid=alice,dc=example,dc=org",
    ldapGroups: ["engineers"],
    createdAt: Date.now(),
    expiresAt: Date.now() + 3600_000,
  };
  await meta.createSession(session);
  await meta.putLdapMapping({
    kind: "user",
    name: "alice",
    bucketAccess: [{ bucket: "bk1", permission: "read" }],
    isAdmin: false,
  });
  const body = await sent(meta, here);
  await meta.close();
  // Neither in the clear nor as stored here.
  for (const hidden of [secret, token, session.sealedSecret, session.sealedToken]) {
    assert(!body.includes(hidden), `${hidden.slice(0, 12)} left the node`);
  }
  const { type, changes } = JSON.parse(body) as { type: string; changes: unknown[] };
  assertEquals(type, "records");
  assertEquals(changes.length, 2);

  // Another node opens it with the cluster's key and seals it with its own master key.
  const there = nodeSealer();
  const parsed = parseRecordState(changes[0], there, wireSealer(SECRET));
  assert(parsed?.kind === "session" && parsed.value);
  const got = parsed.value;
  assertEquals(there.open(got.sealedSecret, accessKey), secret);
  assertEquals(there.open(got.sealedToken, `${accessKey}/token`), token);
  const { sealedSecret: _s, sealedToken: _t, ...rest } = got;
  const { sealedSecret: _s2, sealedToken: _t2, ...expected } = session;
  assertEquals(rest, expected);
  const mapping = parseRecordState(changes[1], there, wireSealer(SECRET));
  assertEquals(mapping?.kind, "mapping");
  assertEquals(mapping?.id, "user:alice");

  // Another cluster secret, a session id moved to another key, a mapping under another id or
  // with bad access: refused.
  assertEquals(parseRecordState(changes[0], there, wireSealer(SECRET + "x")), undefined);
  const moved = { ...(changes[0] as Record<string, unknown>), id: "STSEABCDEFGHIJ099999" };
  assertEquals(parseRecordState(moved, there, wireSealer(SECRET)), undefined);
  const m = changes[1] as Record<string, unknown> & { value: Record<string, unknown> };
  for (
    const bad of [
      { ...m, id: "user:bob" },
      { ...m, value: { ...m.value, bucketAccess: "all" } },
      { ...m, value: { ...m.value, kind: "team" } },
    ]
  ) {
    assertEquals(parseRecordState(bad, there, wireSealer(SECRET)), undefined);
  }
  const gone = { ...(changes[0] as ReplicatedRecord), value: null };
  assertEquals(parseRecordState(gone, there, wireSealer(SECRET))?.value, null);
});

Deno.test("a session whose secret does not open stays on its node; the queue goes on", async () => {
  const meta = new SqliteMetaStore(":memory:", { clusterNode: "a" });
  const here = nodeSealer();
  await meta.createSession({
    accessKey: "STSEABCDEFGHIJ000000",
    sealedSecret: nodeSealer().seal("x", "STSEABCDEFGHIJ000000"),
    sealedToken: nodeSealer().seal("y", "STSEABCDEFGHIJ000000/token"),
    parentKind: "user",
    parentId: "u1",
    createdAt: Date.now(),
    expiresAt: Date.now() + 3600_000,
  });
  await meta.createToken({
    hash: "f".repeat(64),
    userId: "admin",
    createdAt: 1,
    expiresAt: Date.now() + 3600_000,
  });
  const body = JSON.parse(await sent(meta, here)) as { changes: { kind: string }[] };
  assertEquals(body.changes.map((c) => c.kind), ["token"]);
  assertEquals(await meta.recordReplicationCursor("b"), 2);
  await meta.close();
});

Deno.test("what ties a session and a token to a key, and a share to its bucket, travels with them", async () => {
  const meta = new SqliteMetaStore(":memory:", { clusterNode: "a" });
  const here = nodeSealer();
  const now = Date.now();
  const accessKey = "STSEABCDEFGHIJ054321";
  await meta.createSession({
    accessKey,
    sealedSecret: here.seal("s".repeat(40), accessKey),
    sealedToken: here.seal("t".repeat(96), `${accessKey}/token`),
    parentKind: "user",
    parentId: "u1",
    parentKey: "AKUSERKEY00000000001",
    createdAt: now,
    expiresAt: now + 3600_000,
  });
  const token = {
    hash: "e".repeat(64),
    userId: "u1",
    createdAt: now,
    expiresAt: now + 3600_000,
    accessKey: "AKUSERKEY00000000001",
  };
  await meta.createToken(token);
  const share = {
    id: "share-1",
    tokenHash: "d".repeat(64),
    creator: "admin",
    bucket: "photos",
    bucketCreatedAt: now - 5000,
    prefix: "2026/",
    permissions: ["read" as const],
    createdAt: now,
    expiresAt: now + 3600_000,
    downloads: 0,
    uploads: 0,
  };
  await meta.createShare(share);
  const { changes } = JSON.parse(await sent(meta, here)) as { changes: unknown[] };
  await meta.close();
  const [s, t, sh] = changes.map((c) => parseRecordState(c, nodeSealer(), wireSealer(SECRET)));
  assert(s?.kind === "session" && s.value);
  assertEquals(s.value.parentKey, "AKUSERKEY00000000001");
  assertEquals(t?.value, token);
  assertEquals(sh?.value, share);
  // Malformed, they are refused.
  const [badToken, badShare] = [changes[1], changes[2]].map((c, i) => {
    const r = c as { value: Record<string, unknown> };
    return {
      ...r,
      value: { ...r.value, ...(i === 0 ? { accessKey: 7 } : { bucketCreatedAt: -1 }) },
    };
  });
  assertEquals(parseRecordState(badToken, nodeSealer(), wireSealer(SECRET)), undefined);
  assertEquals(parseRecordState(badShare, nodeSealer(), wireSealer(SECRET)), undefined);
});
