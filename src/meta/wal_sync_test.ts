import { DatabaseSync } from "node:sqlite";
import { assertEquals } from "../../tests/integration/assert.ts";
import { type Flushable, WalSync } from "./wal_sync.ts";
import { GroupCommit } from "./group_commit.ts";

/** A stand-in file whose flushes finish when the test says so. */
class HeldFile implements Flushable {
  started = 0;
  syncNow = 0;
  closed = false;
  #finish: ((err?: Error) => void)[] = [];

  syncData(): Promise<void> {
    this.started++;
    return new Promise((resolve, reject) => {
      this.#finish.push((err) => err ? reject(err) : resolve());
    });
  }
  syncDataSync(): void {
    this.syncNow++;
  }
  close(): void {
    this.closed = true;
  }
  /** Ends the oldest flush under way. */
  finish(err?: Error): void {
    this.#finish.shift()!(err);
  }
}

const turn = () => new Promise((r) => setTimeout(r, 0));

Deno.test("every commit starts its own flush, up to the limit at once", async () => {
  const file = new HeldFile();
  const wal = new WalSync(() => file, 2);
  const done: string[] = [];
  wal.durable().then(() => done.push("first"));
  wal.durable().then(() => done.push("second"));
  wal.durable().then(() => done.push("third"));
  assertEquals(file.started, 2);
  file.finish();
  await turn();
  // The first flush ended: its commit is acknowledged and the third's flush starts in its place.
  assertEquals([done, file.started], [["first"], 3]);
  file.finish();
  file.finish();
  await turn();
  assertEquals(done, ["first", "second", "third"]);
  await wal.close();
});

Deno.test("a commit made while every flush is busy waits for the next, which covers all made meanwhile", async () => {
  const file = new HeldFile();
  const wal = new WalSync(() => file, 1);
  const done: string[] = [];
  wal.durable().then(() => done.push("first"));
  await turn();
  assertEquals(file.started, 1);
  // Two commits while the first flush runs: neither is covered by it, one flush covers both.
  wal.durable().then(() => done.push("second"));
  wal.durable().then(() => done.push("third"));
  await turn();
  assertEquals(file.started, 1);
  file.finish();
  await turn();
  assertEquals(done, ["first"]);
  assertEquals(file.started, 2);
  file.finish();
  await turn();
  assertEquals(done, ["first", "second", "third"]);
  // Idle again: the next commit starts a flush at once.
  wal.durable();
  assertEquals(file.started, 3);
  file.finish();
  await wal.close();
  assertEquals(file.closed, true);
});

Deno.test("a failed flush rejects its waiters; the next commit flushes again", async () => {
  const file = new HeldFile();
  const wal = new WalSync(() => file);
  const failed = wal.durable();
  file.finish(new Error("EIO"));
  assertEquals(await failed.then(() => "flushed", (err) => err.message), "EIO");
  const next = wal.durable();
  file.finish();
  await next;
  assertEquals(file.started, 2);
});

Deno.test("close waits for the flushes under way and the one queued behind them", async () => {
  const file = new HeldFile();
  const wal = new WalSync(() => file, 1);
  wal.durable();
  const queued = wal.durable();
  let closed = false;
  const closing = wal.close().then(() => closed = true);
  file.finish();
  await turn();
  assertEquals(closed, false);
  file.finish();
  await queued;
  await closing;
  assertEquals([closed, file.closed, file.started], [true, true, 2]);
});

Deno.test("group commit: writers hear back only after the flush, and the loop runs meanwhile", async () => {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)");
  const file = new HeldFile();
  const wal = new WalSync(() => file);
  const batch = new GroupCommit(db, () => wal.durable());
  let acknowledged = false;
  const write = batch.run(() => db.prepare("INSERT INTO t VALUES ('a')").run().changes)
    .then((n) => (acknowledged = true, n));
  await turn();
  await turn();
  // Committed (another batch would see it) but not acknowledged: the flush is still running.
  assertEquals([db.isTransaction, file.started, acknowledged], [false, 1, false]);
  let secondAcknowledged = false;
  const second = batch.run(() => db.prepare("INSERT INTO t VALUES ('b')").run().changes)
    .then((n) => (secondAcknowledged = true, n));
  await turn();
  assertEquals(file.started, 2); // the second batch committed and flushes alongside the first
  file.finish();
  assertEquals(await write, 1);
  assertEquals(secondAcknowledged, false);
  file.finish();
  assertEquals(await second, 1);
  db.close();
});

Deno.test("a failed flush fails every write of its batch, even those that succeeded", async () => {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)");
  const batch = new GroupCommit(db, () => Promise.reject(new Error("EIO")));
  const results = await Promise.allSettled([
    batch.run(() => db.prepare("INSERT INTO t VALUES ('a')").run()),
    batch.run(() => db.prepare("INSERT INTO t VALUES ('b')").run()),
  ]);
  assertEquals(results.map((r) => r.status), ["rejected", "rejected"]);
  db.close();
});

Deno.test("a real WAL: committed rows are flushed and survive reopening", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/t.db`;
    const db = new DatabaseSync(path);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    db.exec("CREATE TABLE t (k TEXT PRIMARY KEY)");
    const wal = WalSync.forDatabase(path);
    const batch = new GroupCommit(db, () => wal.durable());
    await Promise.all(
      ["a", "b", "c"].map((k) => batch.run(() => db.prepare("INSERT INTO t VALUES (?)").run(k))),
    );
    await wal.close();
    db.close();
    const again = new DatabaseSync(path);
    assertEquals(again.prepare("SELECT count(*) AS n FROM t").get()?.n, 3);
    again.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
