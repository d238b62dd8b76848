import { DatabaseSync } from "node:sqlite";
import { assertEquals } from "../../tests/integration/assert.ts";
import { GroupCommit } from "./group_commit.ts";

function fresh(): { db: DatabaseSync; batch: GroupCommit } {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)");
  return { db, batch: new GroupCommit(db) };
}

function rows(db: DatabaseSync): unknown[] {
  return db.prepare("SELECT k, v FROM t ORDER BY k").all().map((r) => [r.k, r.v]);
}

Deno.test("writes queued together commit in one transaction; a failing one rolls back alone", async () => {
  const { db, batch } = fresh();
  const insert = (k: string, v: number) => () =>
    db.prepare("INSERT INTO t VALUES (?, ?)").run(k, v).changes;
  const results = await Promise.allSettled([
    batch.run(insert("a", 1)),
    batch.run(() => {
      insert("b", 2)();
      throw new Error("refused");
    }),
    batch.run(insert("a", 3)), // violates the primary key: fails on its own
    batch.run(insert("c", 4)),
  ]);
  assertEquals(results.map((r) => r.status), ["fulfilled", "rejected", "rejected", "fulfilled"]);
  assertEquals((results[1] as PromiseRejectedResult).reason.message, "refused");
  assertEquals(rows(db), [["a", 1], ["c", 4]]);
  db.close();
});

Deno.test("results arrive only after the commit, and later batches see earlier ones", async () => {
  const { db, batch } = fresh();
  let committedBeforeResolve = false;
  const first = batch.run(() => db.prepare("INSERT INTO t VALUES ('x', 1)").run()).then(() => {
    committedBeforeResolve = !db.isTransaction;
  });
  await first;
  assertEquals(committedBeforeResolve, true);
  const seen = await batch.run(() => db.prepare("SELECT v FROM t WHERE k = 'x'").get()?.v);
  assertEquals(seen, 1);
  db.close();
});

Deno.test("flush commits what is queued right away (used before closing)", async () => {
  const { db, batch } = fresh();
  const pending = batch.run(() => db.prepare("INSERT INTO t VALUES ('y', 2)").run().changes);
  batch.flush();
  assertEquals(rows(db), [["y", 2]]);
  assertEquals(await pending, 1);
  db.close();
});

Deno.test("a write alone in its batch that throws leaves nothing behind; the next one commits", async () => {
  const { db, batch } = fresh();
  const failed = batch.run(() => {
    db.prepare("INSERT INTO t VALUES ('a', 1)").run();
    db.prepare("UPDATE t SET v = 2 WHERE k = 'a'").run();
    throw new Error("refused");
  });
  const error = await failed.then(() => undefined, (err: Error) => err);
  assertEquals(error?.message, "refused");
  assertEquals(db.isTransaction, false);
  assertEquals(rows(db), []);
  assertEquals(await batch.run(() => db.prepare("INSERT INTO t VALUES ('b', 3)").run().changes), 1);
  assertEquals(rows(db), [["b", 3]]);
  db.close();
});

Deno.test("a write alone in its batch is acknowledged only once durable, and fails with its flush", async () => {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)");
  let flush: (ok: boolean) => void = () => {};
  const batch = new GroupCommit(
    db,
    () =>
      new Promise((resolve, reject) => flush = (ok) => ok ? resolve() : reject(new Error("EIO"))),
  );
  let acknowledged = false;
  const write = batch.run(() => db.prepare("INSERT INTO t VALUES ('a', 1)").run().changes)
    .then((n) => (acknowledged = true, n));
  await new Promise((resolve) => setTimeout(resolve, 10));
  assertEquals([acknowledged, rows(db)], [false, [["a", 1]]]);
  flush(true);
  assertEquals(await write, 1);
  const lost = batch.run(() => db.prepare("INSERT INTO t VALUES ('b', 2)").run());
  await new Promise((resolve) => setTimeout(resolve, 10));
  flush(false);
  assertEquals(await lost.then(() => "acknowledged", (err: Error) => err.message), "EIO");
  db.close();
});
