// PgUsers against a real PostgreSQL: unique names and access keys, tokens.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { DuplicateError, type UserRecord } from "../store.ts";
import { startCluster } from "./test_db.ts";
import { PgUsers, USERS_DDL } from "./users.ts";

function user(id: string, over: Partial<UserRecord> = {}): UserRecord {
  return {
    id,
    name: `name-${id}`,
    description: "d",
    email: "e@x",
    accessKey: `AK${id}`,
    sealedSecret: "sealed",
    enabled: true,
    createdAt: 1_700_000_000_000,
    keyCreatedAt: 1_700_000_000_001,
    bucketAccess: [{ bucket: "b", permission: "read" }],
    ...over,
  };
}

async function rejectsDuplicate(p: Promise<unknown>, field: string): Promise<void> {
  try {
    await p;
  } catch (err) {
    assert(err instanceof DuplicateError, `DuplicateError expected, got ${err}`);
    assertEquals(err.field, field);
    return;
  }
  throw new Error("no DuplicateError");
}

Deno.test("PgUsers", async (t) => {
  const cluster = await startCluster();
  const users = new PgUsers();
  try {
    await t.step("create, get by each key, list in name order, round trip of fields", async () => {
      const { sql } = await cluster.database(USERS_DDL);
      await users.create(sql, user("2", { name: "zed" }));
      await users.create(sql, user("1", { name: "Alpha", enabled: false }));
      assertEquals(await users.get(sql, { id: "1" }), user("1", { name: "Alpha", enabled: false }));
      assertEquals((await users.get(sql, { accessKey: "AK2" }))?.id, "2");
      assertEquals((await users.get(sql, { name: "zed" }))?.id, "2");
      assertEquals(await users.get(sql, { name: "none" }), undefined);
      assertEquals((await users.list(sql)).map((u) => u.name), ["Alpha", "zed"]);
    });

    await t.step("duplicate name or access key: DuplicateError, name reported first", async () => {
      const { sql } = await cluster.database(USERS_DDL);
      await users.create(sql, user("1"));
      await users.create(sql, user("2"));
      await rejectsDuplicate(users.create(sql, user("3", { name: "name-1" })), "name");
      await rejectsDuplicate(users.create(sql, user("3", { accessKey: "AK1" })), "access_key");
      await rejectsDuplicate(
        users.create(sql, user("3", { name: "name-1", accessKey: "AK2" })),
        "name",
      );
      await rejectsDuplicate(users.update(sql, user("2", { accessKey: "AK1" })), "access_key");
      // Keeping its own name and key is no conflict.
      assert(await users.update(sql, user("2", { description: "new" })));
      assertEquals((await users.get(sql, { id: "2" }))?.description, "new");
      assertEquals(await users.update(sql, user("9")), false);
    });

    await t.step("concurrent creates of one name: one wins, the other DuplicateError", async () => {
      const { sql } = await cluster.database(USERS_DDL, 8);
      const results = await Promise.allSettled(
        Array.from(
          { length: 8 },
          (_, i) => sql.begin((tx) => users.create(tx, user(`c${i}`, { name: "same" }))),
        ),
      );
      assertEquals(results.filter((r) => r.status === "fulfilled").length, 1);
      for (const r of results) {
        if (r.status === "rejected") assert(r.reason instanceof DuplicateError);
      }
    });

    await t.step("tokens: create drops expired ones; delete one or a user's", async () => {
      const { sql } = await cluster.database(USERS_DDL);
      const now = Date.now();
      await users.createToken(sql, { hash: "old", userId: "u", createdAt: 0, expiresAt: 1 });
      await users.createToken(sql, {
        hash: "t1",
        userId: "u",
        createdAt: now,
        expiresAt: now + 1e6,
      });
      assertEquals(await users.getToken(sql, "old"), undefined);
      assertEquals(await users.getToken(sql, "t1"), {
        hash: "t1",
        userId: "u",
        createdAt: now,
        expiresAt: now + 1e6,
      });
      await users.createToken(sql, {
        hash: "t2",
        userId: "u",
        createdAt: now,
        expiresAt: now + 1e6,
      });
      await users.createToken(sql, {
        hash: "t3",
        userId: "v",
        createdAt: now,
        expiresAt: now + 1e6,
      });
      assert(await users.deleteToken(sql, "t1"));
      assertEquals(await users.deleteToken(sql, "t1"), false);
      await users.deleteUserTokens(sql, "u");
      assertEquals(await users.getToken(sql, "t2"), undefined);
      assert(await users.getToken(sql, "t3"));
    });

    await t.step("deleting a user removes its tokens", async () => {
      const { sql } = await cluster.database(USERS_DDL);
      await users.create(sql, user("1"));
      const later = Date.now() + 1e6;
      await users.createToken(sql, { hash: "t", userId: "1", createdAt: 0, expiresAt: later });
      assert(await users.delete(sql, "1"));
      assertEquals(await users.delete(sql, "1"), false);
      assertEquals(await users.getToken(sql, "t"), undefined);
      assertEquals(await users.get(sql, { id: "1" }), undefined);
    });
  } finally {
    await cluster.dispose();
  }
});
