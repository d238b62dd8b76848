// Metadata backups: a snapshot taken while writes go on restores (scripts/restore.ts) to a
// server where every object acknowledged before the backup started reads back; snapshots are
// downloadable, pruned to the kept count, and STORE_CHECK_ON_START refuses a damaged database.
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { ADMIN_PASSWORD, ADMIN_USER, randomBytes, startServer, type TestServer } from "./server.ts";
import {
  CHUNK,
  createBucket,
  expectBytes,
  put,
  removeSetup,
  sleep,
  type StorageSetup,
} from "./storage_helpers.ts";

const AUTH = { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) };
const RESTORE = new URL("../../scripts/restore.ts", import.meta.url).pathname;

async function backup(server: TestServer, query = "") {
  const res = await fetch(`${server.url}/admin/backup${query}`, { method: "POST", headers: AUTH });
  return res;
}

async function restore(snapshot: string, dataDir: string) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", RESTORE, snapshot, dataDir],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    text: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
  };
}

Deno.test("backup under write load restores every object acknowledged before it", async () => {
  const root = await Deno.makeTempDir({ prefix: "store-backup-test-" });
  const setup: StorageSetup = { root, drives: [root] };
  const backupDir = join(root, "backups");
  const env = { STORE_BACKUP_DIR: backupDir, STORE_CHUNK_SIZE: String(CHUNK) };
  try {
    let server = await startServer({ dataDir: root, env });
    const acked: { key: string; bytes: Uint8Array; at: number }[] = [];
    let backupStarted = 0;
    let snapshot = "";
    try {
      await createBucket(server, "load");
      let stop = false;
      // Four writers of small (inline) and chunked objects, each key written once.
      const writer = async (w: number) => {
        for (let i = 0; !stop; i++) {
          const key = `w${w}/obj-${i}`;
          const bytes = randomBytes(i % 3 === 0 ? 3 * CHUNK + 7 : 2000 + i);
          const r = await put(server, "load", key, bytes);
          assertEquals(r.status, 200, r.text);
          acked.push({ key, bytes, at: performance.now() });
        }
      };
      const writers = [0, 1, 2, 3].map(writer);
      await sleep(800);
      backupStarted = performance.now();
      const res = await backup(server);
      const report = await res.json();
      assertEquals(res.status, 200, JSON.stringify(report));
      snapshot = report.path;
      assertMatch(snapshot, /backups\/meta-\d{8}T\d{9}Z\.db$/);
      assert(report.bytes > 0);
      await sleep(500);
      stop = true;
      await Promise.all(writers);
      const last = await fetch(`${server.url}/admin/backup`, { headers: AUTH });
      assertEquals((await last.json()).path, snapshot);
    } finally {
      await server.stop();
    }
    const expected = acked.filter((a) => a.at < backupStarted);
    const later = acked.length - expected.length;
    assert(expected.length >= 8, `enough writes before the backup (${expected.length})`);
    assert(later > 0, "writes went on during and after the backup");

    // A running server's database is not replaced.
    const running = await startServer({ dataDir: root, env });
    try {
      const refused = await restore(snapshot, root);
      assertEquals(refused.code, 2, refused.text);
      assertMatch(refused.text, /stop the server first/);
    } finally {
      await running.stop();
    }

    // Restore: the server stopped, the snapshot copied into place, the server started.
    const r = await restore(snapshot, root);
    assertEquals(r.code, 0, r.text);
    assertMatch(r.text, /restored into/);
    server = await startServer({ dataDir: root, env });
    try {
      for (const a of expected) await expectBytes(server, "load", a.key, a.bytes);
    } finally {
      await server.stop();
    }
  } finally {
    await removeSetup(setup);
  }
});

Deno.test("backup: download, kept count, refusals, integrity check at start-up", async () => {
  const root = await Deno.makeTempDir({ prefix: "store-backup-test-" });
  const backupDir = join(root, "backups");
  try {
    // Without STORE_BACKUP_DIR only the download works.
    let server = await startServer({ dataDir: root });
    try {
      const refused = await backup(server);
      assertEquals(refused.status, 409);
      assertEquals((await refused.json()).error.code, "no_backup_dir");
      const unauthorized = await fetch(`${server.url}/admin/backup`, { method: "POST" });
      assertEquals(unauthorized.status, 401);
      await unauthorized.body?.cancel();
      await createBucket(server, "kept");
      assertEquals((await put(server, "kept", "a", randomBytes(100))).status, 200);
      const dl = await backup(server, "?download=true");
      assertEquals(dl.status, 200);
      assertMatch(dl.headers.get("content-disposition")!, /attachment; filename="meta-.*\.db"/);
      const bytes = new Uint8Array(await dl.arrayBuffer());
      assertEquals(Number(dl.headers.get("content-length")), bytes.byteLength);
      assertEquals(new TextDecoder().decode(bytes.subarray(0, 15)), "SQLite format 3");
      // The scratch copy is gone.
      const left = [...Deno.readDirSync(root)].filter((e) => e.name.endsWith(".download"));
      assertEquals(left, []);
    } finally {
      await server.stop();
    }

    // Scheduled snapshots, pruned to STORE_BACKUP_KEEP.
    server = await startServer({
      dataDir: root,
      env: { STORE_BACKUP_DIR: backupDir, STORE_BACKUP_INTERVAL: "1", STORE_BACKUP_KEEP: "2" },
    });
    try {
      const deadline = Date.now() + 15_000;
      while (!(server.logs().match(/Metadata backup written/g)?.length! >= 3)) {
        assert(Date.now() < deadline, `no scheduled backups:\n${server.logs()}`);
        await sleep(200);
      }
    } finally {
      await server.stop();
    }
    const kept = [...Deno.readDirSync(backupDir)].map((e) => e.name).sort();
    assertEquals(kept.length, 2, kept.join());
    assert(kept.every((n) => /^meta-\d{8}T\d{9}Z\.db$/.test(n)));

    // A snapshot that is not a database is refused by the restore.
    await Deno.writeTextFile(join(root, "junk.db"), "not a database at all".repeat(100));
    const junk = await restore(join(root, "junk.db"), root);
    assertEquals(junk.code, 2, junk.text);

    // STORE_CHECK_ON_START=true: a clean database passes; a damaged one stops the start with
    // one line and exit code 2.
    server = await startServer({ dataDir: root, env: { STORE_CHECK_ON_START: "true" } });
    assertMatch(server.logs(), /Metadata integrity check passed/);
    await server.stop();
    // Garbage over the root page of the versions table (not the schema, whose pages may be
    // anywhere in the file once migrations grew it): the database opens, the integrity check
    // finds the damage.
    const meta = new DatabaseSync(join(root, "meta.db"));
    const { rootpage } = meta.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'versions'")
      .get() as { rootpage: number };
    const { page_size } = meta.prepare("PRAGMA page_size").get() as { page_size: number };
    meta.close();
    const db = await Deno.open(join(root, "meta.db"), { read: true, write: true });
    await db.seek((rootpage - 1) * page_size, Deno.SeekMode.Start);
    await db.write(new Uint8Array(page_size).fill(0x5a));
    db.close();
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("../../main.ts", import.meta.url).pathname],
      env: {
        STORE_DATA_DIR: root,
        STORE_PORT: "0",
        STORE_ADDRESS: "127.0.0.1",
        STORE_CHECK_ON_START: "true",
        STORE_ADMIN_USER: ADMIN_USER,
        STORE_ADMIN_PASSWORD: ADMIN_PASSWORD,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 2, text);
    assertMatch(text, /integrity check \(STORE_CHECK_ON_START\)/);
  } finally {
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});
