// PgSts and PgShares against a real PostgreSQL.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import type { SessionRecord, ShareRecord } from "../store.ts";
import { PgShares, SHARES_DDL } from "./shares.ts";
import { PgSts, STS_DDL } from "./sts.ts";
import { pool, startCluster } from "./test_db.ts";
import { assertSame } from "../contract/helpers.ts";

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

Deno.test("PgSts and PgShares", async (t) => {
  const cluster = await startCluster();
  const sts = new PgSts();
  const shares = new PgShares();
  try {
    await t.step(
      "sessions round trip with and without directory fields; expired dropped",
      async () => {
        const { sql } = await cluster.database(STS_DDL);
        await sts.createSession(sql, session("old", { expiresAt: 1 }));
        const ldap = session("L", {
          parentKind: "ldap",
          parentId: "bob",
          ldapDn: "uid=bob,dc=x",
          ldapGroups: ["g1", "g2"],
          policy: "{}",
        });
        await sts.createSession(sql, ldap);
        assertSame(await sts.getSession(sql, "L"), ldap);
        assertEquals(await sts.getSession(sql, "old"), undefined);
        const plain = session("P");
        await sts.createSession(sql, plain);
        assertSame(await sts.getSession(sql, "P"), plain);
      },
    );

    await t.step("LDAP mappings: upsert, list in kind and name order, delete", async () => {
      const { sql } = await cluster.database(STS_DDL);
      await sts.putMapping(sql, { kind: "user", name: "bob", bucketAccess: [], isAdmin: false });
      await sts.putMapping(sql, {
        kind: "group",
        name: "ops",
        bucketAccess: [{ bucket: "b", permission: "write" }],
        isAdmin: false,
      });
      await sts.putMapping(sql, { kind: "group", name: "ops", bucketAccess: [], isAdmin: true });
      assertEquals(await sts.listMappings(sql), [
        { kind: "group", name: "ops", bucketAccess: [], isAdmin: true },
        { kind: "user", name: "bob", bucketAccess: [], isAdmin: false },
      ]);
      assert(await sts.deleteMapping(sql, "group", "ops"));
      assertEquals(await sts.deleteMapping(sql, "group", "ops"), false);
      assertEquals((await sts.listMappings(sql)).length, 1);
    });

    await t.step(
      "shares: create, get by id and token hash, list newest first, revoke",
      async () => {
        const { sql } = await cluster.database(SHARES_DDL);
        await shares.create(sql, share("a"));
        await shares.create(sql, share("b", { createdAt: 1_700_000_000_500, maxDownloads: 3 }));
        await shares.create(sql, share("c", { creator: "bob", passwordHash: "scrypt$x" }));
        assertSame(await shares.get(sql, { id: "a" }), share("a"));
        assertSame(
          await shares.get(sql, { tokenHash: "h-c" }),
          share("c", { creator: "bob", passwordHash: "scrypt$x" }),
        );
        assertEquals(await shares.get(sql, { id: "x" }), undefined);
        assertEquals((await shares.list(sql)).map((s) => s.id), ["b", "a", "c"]);
        assertEquals((await shares.list(sql, "alice")).map((s) => s.id), ["b", "a"]);
        assert(await shares.revoke(sql, "a", 42));
        assertEquals(await shares.revoke(sql, "a", 43), false);
        assertEquals((await shares.get(sql, { id: "a" }))?.revokedAt, 42);
        assertEquals(await shares.revoke(sql, "missing", 1), false);
      },
    );

    await t.step("download limit holds under concurrent counters on two pools", async () => {
      const { sql, url } = await cluster.database(SHARES_DDL, 8);
      const other = pool(url, 8);
      try {
        await shares.create(sql, share("lim", { maxDownloads: 10 }));
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, i) => shares.countDownload(i % 2 ? sql : other, "lim")),
        );
        assertEquals(results.filter(Boolean).length, 10);
        await shares.countUpload(sql, "lim");
        await shares.countUpload(other, "lim");
        const got = await shares.get(sql, { id: "lim" });
        assertEquals([got?.downloads, got?.uploads], [10, 2]);
        await shares.create(sql, share("free"));
        for (let i = 0; i < 5; i++) assert(await shares.countDownload(sql, "free"));
        assertEquals(await shares.countDownload(sql, "missing"), false);
      } finally {
        await other.end({ timeout: 1 });
      }
    });
  } finally {
    await cluster.dispose();
  }
});
