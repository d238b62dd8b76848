// The token and share queue of a MetaStore (clustering): users' bearer tokens and shares are
// queued with their creation and revocation, taken by another node when their stamp is newer,
// and pruned once expired and received everywhere. Run against SQLite (sqlite_cluster_test.ts)
// and PostgreSQL (pg/ports_test.ts).
import { assertEquals } from "../../../tests/integration/assert.ts";
import type { ShareRecord, UserRecord } from "../store.ts";
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

  test("tokens and shares: users' tokens and shares are queued, others' tokens are not", async () => {
    const off = await open({});
    await off.createShare(share("s1"));
    assertEquals(await off.recordChanges(0, 10), []);
    await off.close();
    const a = await open({ clusterNode: "a" });
    await a.createUser(user);
    const expiresAt = Date.now() + HOUR;
    await a.createToken({ hash: hash("a"), userId: "u1", createdAt: 1, expiresAt });
    // The administrator's and sessions' tokens stay on their node.
    await a.createToken({ hash: hash("b"), userId: "admin", createdAt: 1, expiresAt });
    await a.createShare(share("s1"));
    const changes = await a.recordChanges(0, 10);
    assertEquals(changes.map((c) => [c.kind, c.id, c.seq]), [
      ["token", hash("a"), 1],
      ["share", "s1", 2],
    ]);
    assertEquals(changes[0].value, { hash: hash("a"), userId: "u1", createdAt: 1, expiresAt });
    assertEquals(changes[1].expiresAt, changes[1].value!.expiresAt);
    await a.deleteToken(hash("a"));
    await a.deleteToken(hash("b"));
    await a.revokeShare("s1");
    const later = await a.recordChanges(2, 10);
    assertEquals(later.map((c) => [c.kind, c.seq, c.value === null]), [
      ["token", 3, true],
      ["share", 4, false],
    ]);
    assertEquals(typeof (later[1].value as ShareRecord).revokedAt, "number");
    assertEquals((await a.recordReplicationBacklog(2)).depth, 2);
    await a.close();
  });

  test("tokens and shares: another node's record applies when newer, counts stay local", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    await a.createUser(user);
    const expiresAt = Date.now() + HOUR;
    await a.createToken({ hash: hash("c"), userId: "u1", createdAt: 5, expiresAt });
    await a.createShare(share("s2"));
    await b.createShare(share("s2"));
    await b.countShareDownload("s2");
    const first = await a.recordChanges(0, 10);
    // b's own copy of s2 is later (made after a's): a's is stale there.
    const outcomes = [];
    for (const c of first) outcomes.push(await b.applyRecordState(c));
    assertEquals(outcomes, ["applied", "stale"]);
    assertEquals((await b.getToken(hash("c")))?.userId, "u1");
    // Revoked on a: taken by b, its download count kept.
    await a.revokeShare("s2");
    await a.deleteToken(hash("c"));
    const later = await a.recordChanges(2, 10);
    for (const c of later) assertEquals(await b.applyRecordState(c), "applied");
    assertEquals(await b.getToken(hash("c")), undefined);
    const s2 = await b.getShare({ id: "s2" });
    assertEquals([typeof s2?.revokedAt, s2?.downloads, s2?.maxDownloads], ["number", 1, 3]);
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
}
