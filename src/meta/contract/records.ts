// Contract cases: users and tokens, token-service sessions and directory mappings, shares and
// the error log.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import {
  DuplicateError,
  type ErrorRecord,
  type SessionRecord,
  type ShareRecord,
  type UserRecord,
} from "../store.ts";
import { assertSame, type ContractCase, rejects } from "./helpers.ts";

function user(id: string, over: Partial<UserRecord> = {}): UserRecord {
  return {
    id,
    name: `name-${id}`,
    description: "d",
    email: "e@example.com",
    accessKey: `AK${id}`,
    sealedSecret: "sealed",
    enabled: true,
    createdAt: 1_700_000_000_000,
    keyCreatedAt: 1_700_000_000_001,
    bucketAccess: [{ bucket: "b", permission: "read" }],
    ...over,
  };
}

async function duplicate(p: Promise<unknown>, field: string): Promise<void> {
  const err = await rejects(p, DuplicateError);
  assertEquals((err as DuplicateError).field, field);
}

function session(accessKey: string, over: Partial<SessionRecord> = {}): SessionRecord {
  const now = Date.now();
  return {
    accessKey,
    sealedSecret: "s",
    sealedToken: "t",
    parentKind: "user",
    parentId: "u1",
    createdAt: now,
    expiresAt: now + 3_600_000,
    ...over,
  };
}

function share(id: string, over: Partial<ShareRecord> = {}): ShareRecord {
  return {
    id,
    tokenHash: `h-${id}`,
    creator: "alice",
    bucket: "b",
    prefix: "p/",
    permissions: ["read", "list"],
    createdAt: 1_700_000_000_000,
    expiresAt: 1_800_000_000_000,
    downloads: 0,
    uploads: 0,
    ...over,
  };
}

export const RECORD_CASES: ContractCase[] = [
  {
    name: "users: create, get by id, access key or name, list in name order, update, delete",
    fn: async (store) => {
      await store.createUser(user("2", { name: "zed" }));
      await store.createUser(user("1", { name: "Alpha", enabled: false, bucketAccess: [] }));
      assertSame(
        await store.getUser({ id: "1" }),
        user("1", {
          name: "Alpha",
          enabled: false,
          bucketAccess: [],
        }),
      );
      assertEquals((await store.getUser({ accessKey: "AK2" }))?.id, "2");
      assertEquals((await store.getUser({ name: "zed" }))?.id, "2");
      assertEquals(await store.getUser({ name: "none" }), undefined);
      assertEquals((await store.listUsers()).map((u) => u.name), ["Alpha", "zed"]);
      const changed = user("2", {
        name: "zed2",
        accessKey: "AKnew",
        sealedSecret: "s2",
        keyCreatedAt: 5,
        enabled: false,
        bucketAccess: [{ bucket: "x", permission: "readwrite" }],
      });
      assert(await store.updateUser(changed));
      // The creation time is not changed by an update.
      assertSame(await store.getUser({ accessKey: "AKnew" }), changed);
      assertEquals(await store.getUser({ accessKey: "AK2" }), undefined);
      assertEquals(await store.updateUser(user("9")), false);
      assert(await store.deleteUser("2"));
      assertEquals(await store.deleteUser("2"), false);
      assertEquals((await store.listUsers()).map((u) => u.id), ["1"]);
    },
  },
  {
    name: "users: a taken name or access key fails with DuplicateError (name checked first)",
    fn: async (store) => {
      await store.createUser(user("1"));
      await store.createUser(user("2"));
      await duplicate(store.createUser(user("3", { name: "name-1" })), "name");
      await duplicate(store.createUser(user("3", { accessKey: "AK1" })), "access_key");
      await duplicate(store.createUser(user("3", { name: "name-1", accessKey: "AK2" })), "name");
      await duplicate(store.updateUser(user("2", { accessKey: "AK1" })), "access_key");
      await duplicate(store.updateUser(user("2", { name: "name-1" })), "name");
      // Keeping its own name and key is no conflict.
      assert(await store.updateUser(user("2", { description: "new" })));
      assertEquals((await store.listUsers()).length, 2);
      assertEquals(await store.getUser({ id: "3" }), undefined);
    },
  },
  {
    name: "tokens: create drops expired ones; delete one, a user's, or with the user",
    fn: async (store) => {
      const now = Date.now();
      const later = now + 3_600_000;
      await store.createUser(user("u"));
      await store.createToken({ hash: "old", userId: "u", createdAt: 0, expiresAt: 1 });
      await store.createToken({ hash: "t1", userId: "u", createdAt: now, expiresAt: later });
      assertEquals(await store.getToken("old"), undefined);
      assertSame(await store.getToken("t1"), {
        hash: "t1",
        userId: "u",
        createdAt: now,
        expiresAt: later,
      });
      await store.createToken({ hash: "t2", userId: "u", createdAt: now, expiresAt: later });
      await store.createToken({ hash: "t3", userId: "v", createdAt: now, expiresAt: later });
      await store.createToken({ hash: "t4", userId: "u", createdAt: now, expiresAt: later });
      assert(await store.deleteToken("t1"));
      assertEquals(await store.deleteToken("t1"), false);
      await store.deleteUserTokens("v");
      assertEquals(await store.getToken("t3"), undefined);
      assert(await store.getToken("t2"));
      assert(await store.deleteUser("u"));
      assertEquals(await store.getToken("t2"), undefined);
      assertEquals(await store.getToken("t4"), undefined);
    },
  },
  {
    name: "sessions: round trip with and without directory fields; expired ones dropped",
    fn: async (store) => {
      await store.createSession(session("old", { expiresAt: 1 }));
      const ldap = session("L", {
        parentKind: "ldap",
        parentId: "bob",
        ldapDn: "uid=bob,dc=example",
        ldapGroups: ["g1", "g2"],
        policy: '{"Statement":[]}',
      });
      await store.createSession(ldap);
      assertSame(await store.getSession("L"), ldap);
      assertEquals(await store.getSession("old"), undefined);
      const plain = session("P");
      await store.createSession(plain);
      const got = await store.getSession("P");
      assertSame(got, plain);
      assert(got && !("ldapDn" in got) && !("policy" in got));
      assertEquals(await store.getSession("none"), undefined);
    },
  },
  {
    name: "directory mappings: upsert, list in kind and name order, delete",
    fn: async (store) => {
      await store.putLdapMapping({ kind: "user", name: "bob", bucketAccess: [], isAdmin: false });
      await store.putLdapMapping({
        kind: "group",
        name: "ops",
        bucketAccess: [{ bucket: "b", permission: "write" }],
        isAdmin: false,
      });
      await store.putLdapMapping({ kind: "group", name: "dev", bucketAccess: [], isAdmin: false });
      await store.putLdapMapping({ kind: "group", name: "ops", bucketAccess: [], isAdmin: true });
      assertSame(await store.listLdapMappings(), [
        { kind: "group", name: "dev", bucketAccess: [], isAdmin: false },
        { kind: "group", name: "ops", bucketAccess: [], isAdmin: true },
        { kind: "user", name: "bob", bucketAccess: [], isAdmin: false },
      ]);
      assert(await store.deleteLdapMapping("group", "ops"));
      assertEquals(await store.deleteLdapMapping("group", "ops"), false);
      assertEquals(await store.deleteLdapMapping("user", "ops"), false);
      assertEquals((await store.listLdapMappings()).length, 2);
    },
  },
  {
    name: "shares: create, get by id and token hash, list newest first, revoke once",
    fn: async (store) => {
      await store.createShare(share("a"));
      await store.createShare(share("b", { createdAt: 1_700_000_000_500, maxDownloads: 3 }));
      await store.createShare(share("c", { creator: "bob", passwordHash: "scrypt$x" }));
      await store.createShare(share("d", { permissions: ["write"] }));
      assertSame(await store.getShare({ id: "a" }), share("a"));
      assertSame(
        await store.getShare({ tokenHash: "h-c" }),
        share("c", { creator: "bob", passwordHash: "scrypt$x" }),
      );
      assertEquals(await store.getShare({ id: "x" }), undefined);
      assertEquals(await store.getShare({ tokenHash: "x" }), undefined);
      assertEquals((await store.listShares()).map((s) => s.id), ["b", "a", "c", "d"]);
      assertEquals((await store.listShares("alice")).map((s) => s.id), ["b", "a", "d"]);
      assertEquals(await store.listShares("nobody"), []);
      assert(await store.revokeShare("a"));
      assertEquals(await store.revokeShare("a"), false);
      assertEquals(await store.revokeShare("missing"), false);
      const revoked = await store.getShare({ id: "a" });
      assert(revoked?.revokedAt !== undefined && Math.abs(revoked.revokedAt - Date.now()) < 60_000);
    },
  },
  {
    name: "shares: the download limit holds under concurrent counting; uploads counted",
    fn: async (store) => {
      await store.createShare(share("lim", { maxDownloads: 5 }));
      await store.createShare(share("free"));
      const results = await Promise.all(
        Array.from({ length: 20 }, () => store.countShareDownload("lim")),
      );
      assertEquals(results.filter(Boolean).length, 5);
      for (let i = 0; i < 7; i++) assert(await store.countShareDownload("free"));
      await Promise.all([store.countShareUpload("lim"), store.countShareUpload("lim")]);
      assertEquals(await store.countShareDownload("missing"), false);
      const lim = await store.getShare({ id: "lim" });
      assertEquals([lim?.downloads, lim?.uploads, lim?.maxDownloads], [5, 2, 5]);
      assertEquals((await store.getShare({ id: "free" }))?.downloads, 7);
    },
  },
  {
    name: "error log: cap, filters, paging, clearing; ids only grow",
    fn: async (store) => {
      const row = (i: number): Omit<ErrorRecord, "id"> => ({
        at: 1000 + i,
        level: i % 2 === 0 ? "warn" : "error",
        source: i % 3 === 0 ? "scrub" : "request",
        code: i % 2 === 0 ? "" : "InternalError",
        bucket: i < 5 ? "b" : "",
        requestId: `R${i}`,
        operation: i % 2 ? "PutObject" : "",
        message: `m${i}`,
        detail: i === 3 ? '{"drive":1}' : "",
      });
      for (let i = 0; i < 12; i++) await store.appendError(row(i), 10);
      const all = await store.queryErrors({ afterId: 0, limit: 100 });
      assertEquals(all.map((e) => e.message), Array.from({ length: 10 }, (_, i) => `m${i + 2}`));
      assertSame(all[1], { id: all[1].id, ...row(3) });
      const errors = await store.queryErrors({ afterId: 0, limit: 100, level: "error" });
      assert(errors.every((e) => e.level === "error" && e.code === "InternalError"));
      assertEquals(errors.length, 5);
      assertEquals(
        (await store.queryErrors({ afterId: 0, limit: 100, source: "scrub" })).map((e) =>
          e.message
        ),
        ["m3", "m6", "m9"],
      );
      assertEquals((await store.queryErrors({ afterId: 0, limit: 100, bucket: "b" })).length, 3);
      assertEquals(
        (await store.queryErrors({ afterId: 0, limit: 100, code: "InternalError", until: 1005 }))
          .length,
        1,
      );
      assertEquals(
        (await store.queryErrors({ afterId: 0, limit: 100, since: 1005, until: 1007 })).length,
        2,
      );
      const first = await store.queryErrors({ afterId: 0, limit: 4 });
      const second = await store.queryErrors({ afterId: first[3].id, limit: 4 });
      assertEquals(second[0].message, "m6");
      assertEquals(await store.clearErrors(1006), 4);
      assertEquals(await store.clearErrors(), 6);
      assertEquals(await store.queryErrors({ afterId: 0, limit: 100 }), []);
      await store.appendError(row(20), 10);
      const [next] = await store.queryErrors({ afterId: 0, limit: 1 });
      assert(next.id > all[9].id);
    },
  },
];
