import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { Checkpointer } from "./checkpointer.ts";
import { setLogSink } from "../log.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A WAL database whose own connection never checkpoints, as the server's after its backstop. */
function open(path: string): DatabaseSync {
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA wal_autocheckpoint = 0");
  db.exec("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v BLOB)");
  return db;
}

function writeBatch(db: DatabaseSync, from: number, rows: number): void {
  const insert = db.prepare("INSERT INTO t VALUES (?, ?)");
  db.exec("BEGIN IMMEDIATE");
  for (let i = from; i < from + rows; i++) insert.run(i, new Uint8Array(2000));
  db.exec("COMMIT");
}

/** Runs `fn` with a WAL database in a temp directory and a checkpointer on it; cleans up. */
async function withCheckpointer(
  opts: ConstructorParameters<typeof Checkpointer>[1],
  fn: (db: DatabaseSync, checkpointer: Checkpointer, path: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/meta.db`;
  const db = open(path);
  const checkpointer = new Checkpointer(path, opts);
  try {
    await fn(db, checkpointer, path);
  } finally {
    await checkpointer.close();
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("checkpoints run in the background after commits and keep the WAL from growing", () =>
  withCheckpointer(
    { everyMs: 50, idleStopMs: 60_000, minCommits: 1 },
    async (db, checkpointer, path) => {
      writeBatch(db, 0, 500); // ~250 pages
      checkpointer.committed();
      await until("a checkpoint", () => checkpointer.runs >= 1);
      assert(checkpointer.last!.frames > 200, `frames ${checkpointer.last!.frames}`);
      assertEquals(checkpointer.last!.copied, checkpointer.last!.frames);
      const walAfterFirst = Deno.statSync(`${path}-wal`).size;
      // Ten more such batches, each followed by its checkpoint: the WAL starts over every time
      // instead of growing to ten times its size.
      for (let b = 1; b <= 10; b++) {
        const runs = checkpointer.runs;
        writeBatch(db, b * 500, 500);
        checkpointer.committed();
        await until("the next checkpoint", () => checkpointer.runs > runs);
      }
      const wal = Deno.statSync(`${path}-wal`).size;
      assert(wal <= walAfterFirst * 1.5, `WAL grew from ${walAfterFirst} to ${wal} bytes`);
      assertEquals(db.prepare("SELECT count(*) AS n FROM t").get()?.n, 5_500);
    },
  ));

Deno.test("the worker runs only while checkpoints come", () =>
  withCheckpointer({ everyMs: 30, idleStopMs: 200, minCommits: 1 }, async (db, checkpointer) => {
    assertEquals(checkpointer.working, false);
    writeBatch(db, 0, 10);
    checkpointer.committed();
    await until("a checkpoint", () => checkpointer.runs === 1);
    assertEquals(checkpointer.working, true);
    await until("the worker to stop", () => !checkpointer.working, 5_000);
    assertEquals(checkpointer.runs, 1); // nothing was committed since: no second checkpoint
    writeBatch(db, 10, 10);
    checkpointer.committed();
    await until("a checkpoint by a new worker", () => checkpointer.runs === 2);
    assertEquals(checkpointer.last, {
      frames: checkpointer.last!.frames,
      copied: checkpointer.last!.frames,
    });
  }));

Deno.test("commits that come slowly keep no worker between checkpoints", () =>
  // A checkpoint every 4 commits, a commit every 150 ms: ~600 ms between checkpoints, in which
  // commits never pause for idleStopMs, yet the worker is not kept.
  withCheckpointer({ everyMs: 20, idleStopMs: 300, minCommits: 4 }, async (db, checkpointer) => {
    let stoppedBetween = 0;
    for (let i = 0; i < 16; i++) {
      writeBatch(db, i * 10, 10);
      checkpointer.committed();
      await sleep(150);
      if (checkpointer.runs >= 1 && !checkpointer.working) stoppedBetween++;
    }
    assert(checkpointer.runs >= 3, `checkpoints ${checkpointer.runs}`);
    assert(stoppedBetween >= 2, `the worker was seen stopped ${stoppedBetween} times`);
    assertEquals(db.prepare("SELECT count(*) AS n FROM t").get()?.n, 160);
  }));

Deno.test("a failed checkpoint is logged and the next commit tries again", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/later/meta.db`;
  const checkpointer = new Checkpointer(path, { everyMs: 20, minCommits: 1 });
  const warnings: string[] = [];
  setLogSink((_level, message) => warnings.push(message));
  try {
    checkpointer.committed(); // no database there yet: the worker cannot open it
    await until("the warning", () => warnings.length > 0);
    assertEquals(
      warnings[0],
      "A background checkpoint of the metadata failed; SQLite's own runs later",
    );
    assertEquals(checkpointer.runs, 0);
    await Deno.mkdir(`${dir}/later`);
    const db = open(path);
    writeBatch(db, 0, 10);
    checkpointer.committed();
    await until("a checkpoint", () => checkpointer.runs === 1);
    await checkpointer.close();
    db.close();
  } finally {
    setLogSink(undefined);
    await checkpointer.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a few commits call for no checkpoint and start no worker", () =>
  withCheckpointer({ everyMs: 20, minCommits: 5 }, async (db, checkpointer) => {
    for (let i = 0; i < 4; i++) {
      writeBatch(db, i * 10, 10);
      checkpointer.committed();
    }
    await sleep(200);
    assertEquals([checkpointer.runs, checkpointer.working], [0, false]);
    writeBatch(db, 40, 10);
    checkpointer.committed(); // the fifth
    await until("a checkpoint", () => checkpointer.runs === 1);
  }));

Deno.test("closing while a checkpoint runs waits for it, and each reply reaches its request", () =>
  withCheckpointer({ everyMs: 0, minCommits: 1 }, async (db, checkpointer) => {
    writeBatch(db, 0, 2_000);
    checkpointer.committed();
    await sleep(10); // the checkpoint is asked for; the worker is still starting
    await checkpointer.close();
    assertEquals([checkpointer.runs, checkpointer.working], [1, false]);
  }));
