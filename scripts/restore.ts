// Restores a metadata snapshot (from POST /admin/backup or STORE_BACKUP_DIR) into a data
// directory. Run it with the server stopped:
//   deno task restore <snapshot.db> [data-dir]      (data dir default: STORE_DATA_DIR or ./data)
// The snapshot is checked (PRAGMA quick_check, a schema this version knows), the current meta.db
// is kept as meta.db.before-restore-<time>, and the snapshot is copied into place durably.
// Objects written after the snapshot was taken are not in it; their shard files are removed by
// the start-up sweep of the next start.
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { MIGRATIONS } from "../src/meta/sqlite_schema.ts";

function fail(message: string): never {
  console.error(`restore: ${message}`);
  Deno.exit(2);
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

function checkSnapshot(path: string): void {
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { readOnly: true });
  } catch (err) {
    fail(`${path} cannot be opened as a database: ${err}`);
  }
  try {
    const result = (db.prepare("PRAGMA quick_check").all() as Record<string, unknown>[])
      .map((r) => String(Object.values(r)[0]));
    if (result.join() !== "ok") fail(`${path} fails its integrity check: ${result.join("; ")}`);
    const version = (db.prepare("PRAGMA user_version").get() as { user_version: number })
      .user_version;
    if (version === 0) fail(`${path} is not a metadata snapshot of this server`);
    if (version > MIGRATIONS.length) {
      fail(`${path} comes from a newer version of the server (schema ${version})`);
    }
  } catch (err) {
    fail(`${path} cannot be checked: ${err}`);
  } finally {
    db.close();
  }
}

async function syncPath(path: string): Promise<void> {
  const file = await Deno.open(path, { read: true });
  try {
    await file.sync();
  } finally {
    file.close();
  }
}

async function main(): Promise<void> {
  const [snapshot, dirArg] = Deno.args;
  if (!snapshot || Deno.args.length > 2) {
    fail("usage: deno task restore <snapshot.db> [data-dir]");
  }
  const dataDir = dirArg ?? Deno.env.get("STORE_DATA_DIR") ?? "./data";
  if (!(await exists(snapshot))) fail(`${snapshot} does not exist`);
  if (!(await exists(dataDir))) fail(`the data directory ${dataDir} does not exist`);
  const target = join(dataDir, "meta.db");
  // A clean shutdown removes the write-ahead log; while it is there the server runs (or
  // crashed): restoring under a running server would be overwritten by it.
  for (const suffix of ["-wal", "-shm"]) {
    if (await exists(target + suffix)) {
      fail(
        `${target}${suffix} exists: stop the server first (start and stop it once if it crashed)`,
      );
    }
  }
  checkSnapshot(snapshot);
  const staging = `${target}.restoring`;
  await Deno.copyFile(snapshot, staging);
  await syncPath(staging);
  if (await exists(target)) {
    const kept = `${target}.before-restore-${new Date().toISOString().replace(/[-:.]/g, "")}`;
    await Deno.rename(target, kept);
    console.log(`restore: the previous metadata is kept as ${kept}`);
  }
  await Deno.rename(staging, target);
  await syncPath(dataDir);
  console.log(`restore: ${snapshot} restored into ${target}; start the server`);
}

await main();
