// The token, share, session and mapping queue of a MetaStore (clustering): bearer tokens, shares,
// token-service sessions and directory access mappings are queued with their creation and
// revocation (or deletion), taken by another node when their stamp is newer, and pruned once
// expired and received everywhere. Run against SQLite (sqlite_cluster_test.ts) and PostgreSQL
// (pg/ports_test.ts).
import { assertEquals } from "../../../tests/integration/assert.ts";
import type { SessionRecord, ShareRecord, UserRecord } from "../store.ts";
import type { Opener } from "./replication.ts";

type Test = (name: string, fn: () => Promise<void>) => void;

const HOUR = 3600_000;
const hash = (c: string) => c.repeat(64);

export function recordReplicationCases(test: Test, open: Opener): void {
  const user: UserRecord = {
    id: "u1",
    name: "carol",
    description: "",
    email: "",
    accessKey: "KEY1",
    sealedSecret: "s",
    enabled: true,
    createdAt: 1000,
    keyCreatedAt: 1000,
    bucketAccess: [],
  };
  function share(id: string, over: Partial<ShareRecord> = {}): ShareRecord {
    return {
      id,
      tokenHash: hash(id.slice(-1)),
      creator: "u1",
      bucket: "bk1",
      prefix: "p/",
      permissions: ["read", "list"],
      passwordHash: "scrypt$x",
      createdAt: 1000,
      expiresAt: Date.now() + HOUR,
      maxDownloads: 3,
      downloads: 0,
      uploads: 0,
      ...over,
    };
  }

  test("tokens and shares: every token and share is queued with its changes", async () => {
    const off = await open({});
    await off.createShare(share("s1"));
    assertEquals(await off.recordChanges(0, 10), []);
    await off.close();
    const a = await open({ clusterNode: "a" });
    await a.createUser(user);
    const expiresAt = Date.now() + HOUR;
    await a.createToken({ hash: hash("a"), userId: "u1", createdAt: 1, expiresAt, accessKey: "K" });
    // The administrator's and directory sessions' tokens too.
    await a.createToken({ hash: hash("b"), userId: "admin", createdAt: 1, expiresAt });
    await a.createShare(share("s1"));
    const changes = await a.recordChanges(0, 10);
    assertEquals(changes.map((c) => [c.kind, c.id, c.seq]), [
      ["token", hash("a"), 1],
      ["token", hash("b"), 2],
      ["share", "s1", 3],
    ]);
    assertEquals(changes[0].value, {
      hash: hash("a"),
      userId: "u1",
      createdAt: 1,
      expiresAt,
      accessKey: "K",
    });
    assertEquals((changes[1].value as { accessKey?: string }).accessKey, undefined);
    assertEquals(changes[2].expiresAt, (changes[2].value as ShareRecord).expiresAt);
    await a.deleteToken(hash("a"));
    await a.deleteToken(hash("b"));
    await a.revokeShare("s1");
    const later = await a.recordChanges(3, 10);
    assertEquals(later.map((c) => [c.kind, c.seq, c.value === null]), [
      ["token", 4, true],
      ["token", 5, true],
      ["share", 6, false],
    ]);
    assertEquals(typeof (later[2].value as ShareRecord).revokedAt, "number");
    assertEquals((await a.recordReplicationBacklog(3)).depth, 3);
    await a.close();
  });

  test("tokens and shares: another node's record applies when newer, counts stay local", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    await a.createUser(user);
    const expiresAt = Date.now() + HOUR;
    const token = { hash: hash("c"), userId: "u1", createdAt: 5, expiresAt, accessKey: "KEY1" };
    await a.createToken(token);
    await a.createShare(share("s2", { bucketCreatedAt: 900 }));
    await b.createShare(share("s2"));
    await b.countShareDownload("s2");
    const first = await a.recordChanges(0, 10);
    // b's own copy of s2 is later (made after a's): a's is stale there.
    const outcomes = [];
    for (const c of first) outcomes.push(await b.applyRecordState(c));
    assertEquals(outcomes, ["applied", "stale"]);
    // With the key it was issued for.
    assertEquals(await b.getToken(hash("c")), token);
    // Revoked on a: taken by b, its download count kept.
    await a.revokeShare("s2");
    await a.deleteToken(hash("c"));
    const later = await a.recordChanges(2, 10);
    for (const c of later) assertEquals(await b.applyRecordState(c), "applied");
    assertEquals(await b.getToken(hash("c")), undefined);
    const s2 = await b.getShare({ id: "s2" });
    assertEquals([typeof s2?.revokedAt, s2?.downloads, s2?.maxDownloads], ["number", 1, 3]);
    assertEquals(s2?.bucketCreatedAt, 900);
    // Again, or the older state: stale.
    for (const c of [...later, ...first]) assertEquals(await b.applyRecordState(c), "stale");
    assertEquals(await b.getToken(hash("c")), undefined);
    // Queued on for the others: b's queue ends with what it took.
    const onB = await b.recordChanges(0, 10);
    assertEquals(onB.map((c) => [c.id, c.value === null]), [["s2", false], [hash("c"), true]]);
    await a.close();
    await b.close();
  });

  test("tokens and shares: expired rows every node has received are pruned", async () => {
    const a = await open({ clusterNode: "a" });
    await a.createUser(user);
    const now = Date.now();
    await a.createShare(share("old", { expiresAt: now - 1 }));
    await a.createShare(share("live"));
    await a.createShare(share("newest", { expiresAt: now - 1 }));
    await a.createToken({ hash: hash("d"), userId: "u1", createdAt: 1, expiresAt: now - 1 });
    assertEquals(await a.pruneRecordChanges(["n1"], now), 0);
    await a.setRecordReplicationCursor("n1", 4);
    // "old" and "newest" go; "live" and the newest row (the token) stay.
    assertEquals(await a.pruneRecordChanges(["n1"], now), 2);
    assertEquals((await a.recordChanges(0, 10)).map((c) => c.id), ["live", hash("d")]);
    assertEquals(await a.forgetReplicationNode("n1"), true);
    assertEquals(await a.recordReplicationCursor("n1"), 0);
    await a.close();
  });
  test("sessions and mappings: queued, taken when newer, a deletion wins over older states", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    const now = Date.now();
    const session: SessionRecord = {
      accessKey: "STSEABCDEFGHIJKLMNOP",
      sealedSecret: "sealed-secret",
      sealedToken: "sealed-token",
      parentKind: "ldap",
      parentId: "alice",
      ldapDn: "uid=alice,dc=example,dc=org",
      ldapGroups: ["engineers"],
      policy: '{"Statement":[]}',
      createdAt: now,
      expiresAt: now + HOUR,
    };
    await a.createSession(session);
    const engineers = {
      kind: "group" as const,
      name: "eng:ops",
      bucketAccess: [{ bucket: "eng", permission: "readwrite" as const }],
      isAdmin: false,
    };
    await a.putLdapMapping(engineers);
    const first = await a.recordChanges(0, 10);
    assertEquals(first.map((c) => [c.kind, c.id, c.value !== null]), [
      ["session", session.accessKey, true],
      ["mapping", "group:eng:ops", true],
    ]);
    assertEquals(first[0].expiresAt, session.expiresAt);
    for (const c of first) assertEquals(await b.applyRecordState(c), "applied");
    assertEquals(await b.getSession(session.accessKey), session);
    assertEquals(await b.listLdapMappings(), [engineers]);
    // Changed, then deleted on a: b ends without it, and the older states stay stale there.
    await a.putLdapMapping({ ...engineers, isAdmin: true });
    const changed = await a.recordChanges(2, 10);
    assertEquals(await b.applyRecordState(changed[0]), "applied");
    assertEquals((await b.listLdapMappings())[0].isAdmin, true);
    assertEquals(await a.deleteLdapMapping("group", "eng:ops"), true);
    assertEquals(await a.deleteLdapMapping("group", "eng:ops"), false);
    const deleted = await a.recordChanges(3, 10);
    assertEquals(deleted.map((c) => [c.kind, c.value]), [["mapping", null]]);
    assertEquals(await b.applyRecordState(deleted[0]), "applied");
    assertEquals(await b.listLdapMappings(), []);
    for (const c of [...first, ...changed]) assertEquals(await b.applyRecordState(c), "stale");
    assertEquals(await b.listLdapMappings(), []);
    // A session gone from its node travels as null and is removed on the other.
    assertEquals(
      await b.applyRecordState({
        ...first[0],
        stamp: { ms: first[0].stamp.ms + 1, node: "a" },
        value: null,
      }),
      "applied",
    );
    assertEquals(await b.getSession(session.accessKey), undefined);
    // A mapping's row is never pruned (its deletion must outlive every older state); the expired
    // session's is.
    await a.createToken({ hash: hash("e"), userId: "admin", createdAt: 1, expiresAt: now + HOUR });
    await a.setRecordReplicationCursor("n1", 10);
    assertEquals(await a.pruneRecordChanges(["n1"], now + 2 * HOUR), 1);
    assertEquals((await a.recordChanges(0, 10)).map((c) => c.kind), ["mapping", "token"]);
    await a.close();
    await b.close();
  });
}
