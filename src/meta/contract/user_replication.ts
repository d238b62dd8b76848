// The user-change queue of a MetaStore (clustering): filled in the change's transaction only when
// clustering is on, one row per user, merged part by part (last writer wins), with per-node
// cursors and pruning. Run against SQLite (sqlite_cluster_test.ts) and PostgreSQL
// (pg/ports_test.ts).
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import type { MetaStore, UserRecord } from "../store.ts";
import type { Opener } from "./replication.ts";

type Test = (name: string, fn: () => Promise<void>) => void;

const tick = () => new Promise((r) => setTimeout(r, 3));

export function userReplicationCases(test: Test, open: Opener): void {
  function user(id: string, over: Partial<UserRecord> = {}): UserRecord {
    return {
      id,
      name: `name-${id}`,
      description: "d",
      email: "e@example.com",
      accessKey: `KEY${id}`,
      sealedSecret: `sealed-${id}`,
      enabled: true,
      createdAt: 1000,
      keyCreatedAt: 1000,
      bucketAccess: [],
      ...over,
    };
  }

  /** Applies every change of `from` after `after` to `to`; the outcomes. */
  async function pass(from: MetaStore, to: MetaStore, after = 0) {
    const out = [];
    for (const c of await from.userChanges(after, 100)) out.push(await to.applyUserState(c));
    return out;
  }

  test("users: nothing is queued while clustering is off", async () => {
    const meta = await open({});
    await meta.createUser(user("u1"));
    await meta.updateUser(user("u1", { enabled: false }));
    await meta.deleteUser("u1");
    assertEquals(await meta.userChanges(0, 10), []);
    await meta.close();
  });

  test("users: changes coalesce per user, each part with the stamp of its last change", async () => {
    const meta = await open({ clusterNode: "a" });
    await meta.createUser(user("u1"));
    await meta.createUser(user("u2"));
    const [created] = await meta.userChanges(0, 10);
    assertEquals(created.record?.value, {
      name: "name-u1",
      description: "d",
      email: "e@example.com",
      createdAt: 1000,
    });
    assertEquals(created.key?.value, {
      accessKey: "KEYu1",
      sealedSecret: "sealed-u1",
      keyCreatedAt: 1000,
    });
    await tick();
    await meta.updateUser(user("u1", { enabled: false }));
    // A replace that changes nothing queues nothing.
    await meta.updateUser(user("u2"));
    const changes = await meta.userChanges(0, 10);
    assertEquals(changes.map((c) => [c.id, c.seq]), [["u2", 2], ["u1", 3]]);
    const u1 = changes[1];
    assertEquals(u1.enabled?.value, false);
    assert(u1.enabled!.stamp.ms > u1.record!.stamp.ms, JSON.stringify(u1));
    assertEquals([u1.record!.stamp, u1.access!.stamp, u1.key!.stamp.node], [
      created.record!.stamp,
      created.access!.stamp,
      "a",
    ]);
    assertEquals(await meta.deleteUser("u2"), true);
    const [tomb] = await meta.userChanges(3, 10);
    assertEquals([tomb.id, tomb.seq, tomb.record?.value, tomb.key], ["u2", 4, null, undefined]);
    assertEquals((await meta.userReplicationBacklog(2)).depth, 2);
    await meta.close();
  });

  test("users: another node's state applies when newer, ends tokens, and is queued on", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    await a.createUser(user("u1", { bucketAccess: [{ bucket: "x1", permission: "read" }] }));
    assertEquals(await pass(a, b), ["applied"]);
    assertEquals(await b.getUser({ accessKey: "KEYu1" }), await a.getUser({ id: "u1" }));
    // Again, or back to its origin: stale, so nothing loops.
    assertEquals(await pass(a, b), ["stale"]);
    assertEquals(await pass(b, a), ["stale"]);
    // A re-key on b: a takes it and the user's bearer tokens there end.
    await a.createToken({ hash: "h1", userId: "u1", createdAt: 1, expiresAt: Date.now() + 1e6 });
    await tick();
    await b.updateUser({
      ...(await b.getUser({ id: "u1" }))!,
      accessKey: "KEYnew",
      sealedSecret: "sealed-new",
      keyCreatedAt: 2000,
    });
    const before = await a.userChanges(0, 10);
    assertEquals(await pass(b, a, 1), ["applied"]);
    assertEquals(await a.getUser({ accessKey: "KEYu1" }), undefined);
    assertEquals((await a.getUser({ accessKey: "KEYnew" }))?.sealedSecret, "sealed-new");
    assertEquals(await a.getToken("h1"), undefined);
    // The older state never undoes it.
    assertEquals(await a.applyUserState(before[0]), "stale");
    assertEquals((await a.getUser({ id: "u1" }))?.accessKey, "KEYnew");
    // A deletion removes the user and its tokens; its earlier states do not bring it back.
    await b.createToken({ hash: "h2", userId: "u1", createdAt: 1, expiresAt: Date.now() + 1e6 });
    await tick();
    assertEquals(await a.deleteUser("u1"), true);
    assertEquals(await pass(a, b, 1), ["applied"]);
    assertEquals(await b.getUser({ id: "u1" }), undefined);
    assertEquals(await b.getToken("h2"), undefined);
    assertEquals(await b.applyUserState(before[0]), "stale");
    assertEquals(await b.listUsers(), []);
    await a.close();
    await b.close();
  });

  test("users: changes of different parts on two nodes both survive, the same part converges", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    await a.createUser(user("u1"));
    await pass(a, b);
    await tick();
    // Concurrently: disabled on a, bucket access and name on b; both re-keyed.
    const u = (await a.getUser({ id: "u1" }))!;
    await a.updateUser({ ...u, enabled: false, accessKey: "KEYa", sealedSecret: "sa" });
    await b.updateUser({
      ...u,
      name: "renamed",
      bucketAccess: [{ bucket: "x1", permission: "readwrite" }],
      accessKey: "KEYb",
      sealedSecret: "sb",
    });
    const [fromA] = await a.userChanges(1, 10);
    const [fromB] = await b.userChanges(1, 10);
    assertEquals(await a.applyUserState(fromB), "applied");
    assertEquals(await b.applyUserState(fromA), "applied");
    const [onA, onB] = [await a.getUser({ id: "u1" }), await b.getUser({ id: "u1" })];
    assertEquals(onA, onB);
    assertEquals([onA?.enabled, onA?.name, onA?.bucketAccess.length], [false, "renamed", 1]);
    // The re-keys carry stamps; the later one (b's, same ms: the higher node id) wins on both.
    const later = fromA.key!.stamp.ms > fromB.key!.stamp.ms ? "KEYa" : "KEYb";
    assertEquals(onA?.accessKey, later);
    await a.close();
    await b.close();
  });

  test("users: changeUser changes the user as stored, keeping what another node changed", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    await a.createUser(user("u1"));
    await pass(a, b);
    await tick();
    assertEquals((await b.changeUser("u1", { enabled: false }))?.enabled, false);
    assertEquals(await pass(b, a, 1), ["applied"]);
    await tick();
    const access = [{ bucket: "bk1", permission: "read" as const }];
    const changed = await a.changeUser("u1", { bucketAccess: access });
    assertEquals([changed?.enabled, changed?.bucketAccess], [false, access]);
    assertEquals(await pass(a, b, 2), ["applied"]);
    assertEquals(await b.getUser({ id: "u1" }), changed);
    assertEquals(await a.changeUser("nobody", { enabled: false }), undefined);
    await a.close();
    await b.close();
  });

  test("users: a local change and a replicated one committed at once both stay", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    await a.createUser(user("u1"));
    await pass(a, b);
    for (let i = 0; i < 10; i++) {
      await b.changeUser("u1", { enabled: i % 2 === 0 });
      const [fromB] = await b.userChanges(0, 10);
      await tick();
      await Promise.all([
        a.changeUser("u1", { accessKey: `KEY${i}`, sealedSecret: `s${i}` }),
        a.applyUserState(fromB),
      ]);
      const onA = await a.getUser({ id: "u1" });
      assertEquals([onA?.accessKey, onA?.enabled], [`KEY${i}`, i % 2 === 0], `round ${i}`);
      // b learns a's key; the next round starts from the same user on both.
      for (const c of await a.userChanges(0, 10)) await b.applyUserState(c);
      assertEquals((await b.getUser({ id: "u1" }))?.accessKey, `KEY${i}`);
    }
    await a.close();
    await b.close();
  });

  test("users: one name made on two nodes at once ends with the earlier user everywhere", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    await a.createUser(user("ua", { name: "alice", createdAt: 2000 }));
    await b.createUser(user("ub", { name: "alice", createdAt: 1000 }));
    // b's user is older: a gives the name up (its own user deleted, that deletion queued).
    assertEquals(await pass(b, a), ["applied"]);
    assertEquals((await a.getUser({ name: "alice" }))?.id, "ub");
    assertEquals(await a.getUser({ id: "ua" }), undefined);
    // a's user reaches b later: refused there, and a's deletion of it is stale or applied alike.
    const [created] = await b.userChanges(0, 10);
    assertEquals(created.id, "ub");
    const fromA = await a.userChanges(0, 10);
    assertEquals(fromA.map((c) => [c.id, c.record?.value === null]), [["ua", true], [
      "ub",
      false,
    ]]);
    assertEquals(await b.applyUserState(fromA[0]), "applied");
    for (const m of [a, b]) {
      assertEquals((await m.listUsers()).map((x) => x.id), ["ub"]);
    }
    await a.close();
    await b.close();
  });

  test("users: a later user with a taken name is refused", async () => {
    const a = await open({ clusterNode: "a" });
    const b = await open({ clusterNode: "b" });
    await a.createUser(user("ua", { name: "bob", createdAt: 1000 }));
    await b.createUser(user("ub", { name: "bob", createdAt: 3000 }));
    assertEquals(await pass(b, a), ["conflict"]);
    assertEquals((await a.listUsers()).map((x) => x.id), ["ua"]);
    assertEquals(await a.userChanges(1, 10), []);
    await a.close();
    await b.close();
  });

  test("users made before clustering are queued once; cursors, pruning and forgetting", async () => {
    const data = `users-${crypto.randomUUID().slice(0, 8)}`;
    const before = await open({ data });
    await before.createUser(user("old", { createdAt: 5000 }));
    await before.close();
    const a = await open({ data, clusterNode: "a" });
    assertEquals(await a.queueUnreplicatedUsers(), 1);
    assertEquals(await a.queueUnreplicatedUsers(), 0);
    const [old] = await a.userChanges(0, 10);
    assertEquals(old.record?.stamp, { ms: 5000, node: "a" });
    assertEquals(old.key?.stamp, { ms: 5000, node: "a" });
    for (const id of ["g1", "live", "g2"]) await a.createUser(user(id));
    await a.deleteUser("g1");
    await a.deleteUser("g2");
    const ids = async () => (await a.userChanges(0, 10)).map((c) => c.id);
    assertEquals(await ids(), ["old", "live", "g1", "g2"]);
    const last = (await a.userChanges(0, 10)).at(-1)!.seq;
    await a.setUserReplicationCursor("n1", last);
    await a.setUserReplicationCursor("n1", 1);
    assertEquals(await a.userReplicationCursor("n1"), last);
    // n2 has received nothing: nothing goes.
    assertEquals(await a.pruneUserChanges(["n1", "n2"]), 0);
    await a.setUserReplicationCursor("n2", last);
    // g1's row goes; live users and the newest row stay.
    assertEquals(await a.pruneUserChanges(["n1", "n2"]), 1);
    assertEquals(await ids(), ["old", "live", "g2"]);
    assertEquals(await a.forgetReplicationNode("n2"), true);
    assertEquals(await a.userReplicationCursor("n2"), 0);
    await a.close();
  });
}
