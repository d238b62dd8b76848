// The drives (data directories) shards are spread over. Each drive carries an identity file,
// so a chunk's shards are found by drive id even if the directories are listed in another order.
import { join } from "node:path";
import { DIR_MODE, FILE_MODE } from "./private_modes.ts";

const IDENTITY_FILE = "drive.json";

export interface Drive {
  id: number;
  uuid: string;
  path: string;
  /** Where shard files live on this drive. */
  shardDir: string;
  tmpDir: string;
}

export interface DriveSet {
  /** Drives present now, by id. */
  byId: Map<number, Drive>;
  /** Drives in configuration order. */
  list: Drive[];
  /** Known drives whose directory was missing at start-up (see DriveMonitor). */
  missing: MissingDrive[];
  /** Drives that came back empty (replaced) at start-up: they need a heal. */
  replaced: number[];
}

export interface MissingDrive {
  id: number;
  uuid: string;
  path: string;
}

/** The uuid in the drive's identity file; undefined when there is none. */
export async function readIdentity(path: string): Promise<string | undefined> {
  try {
    const parsed = JSON.parse(await Deno.readTextFile(join(path, IDENTITY_FILE)));
    return typeof parsed.uuid === "string" ? parsed.uuid : undefined;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw new Error(`${join(path, IDENTITY_FILE)} is unreadable: ${err}`);
  }
}

/** What the metadata remembers of drives: the identity last seen at a path. */
export interface DriveRegistry {
  register(uuid: string, path: string): Promise<number>;
  knownAt(path: string): Promise<string | undefined>;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/**
 * The identity of the drive at `path`, or undefined when it must not be used. A directory that
 * is missing but was a drive before is not re-created (it may be an unmounted mount point): its
 * shards count as lost and are rebuilt from the others. An empty directory where a known drive
 * was is its replacement: it takes over the old identity, so healing and scrubs refill it.
 */
type Identity =
  | { state: "ok" | "replaced"; uuid: string }
  | { state: "missing"; uuid: string }
  | { state: "unusable" };

async function identityFor(
  path: string,
  registry: DriveRegistry,
  warn: (message: string) => void,
): Promise<Identity> {
  const own = await readIdentity(path);
  if (own !== undefined) return { state: "ok", uuid: own };
  const known = await registry.knownAt(path);
  if (!(await exists(path))) {
    if (known !== undefined) {
      warn(`Drive ${path} is missing; its shards are rebuilt from the other drives`);
      return { state: "missing", uuid: known };
    }
    await Deno.mkdir(path, { recursive: true, mode: DIR_MODE });
  } else if (!(await isEmptyOrMissing(path))) {
    warn(`Drive ${path} has no identity file and is not empty; it is not used`);
    return { state: "unusable" };
  }
  if (known !== undefined) warn(`Drive ${path} was replaced; it is healed in the background`);
  const uuid = known ?? crypto.randomUUID();
  await writeIdentity(path, uuid);
  return { state: known !== undefined ? "replaced" : "ok", uuid };
}

async function writeIdentity(path: string, uuid: string): Promise<void> {
  await Deno.writeTextFile(join(path, IDENTITY_FILE), JSON.stringify({ uuid }) + "\n", {
    mode: FILE_MODE,
  });
}

/** Makes the drive's directories and answers it. */
async function prepare(id: number, uuid: string, path: string): Promise<Drive> {
  const drive = { id, uuid, path, shardDir: join(path, "chunks"), tmpDir: join(path, "tmp") };
  await Deno.mkdir(drive.shardDir, { recursive: true, mode: DIR_MODE });
  await Deno.mkdir(drive.tmpDir, { recursive: true, mode: DIR_MODE });
  return drive;
}

/**
 * A drive missing at start-up, once its directory is back: with its own identity file, or empty
 * (a replacement, which takes the identity over). Undefined while it is still absent or holds
 * something else.
 */
export async function reopenDrive(missing: MissingDrive): Promise<Drive | undefined> {
  if (!(await exists(missing.path))) return undefined;
  const own = await readIdentity(missing.path).catch(() => undefined);
  if (own === undefined) {
    if (!(await isEmptyOrMissing(missing.path))) return undefined;
    await writeIdentity(missing.path, missing.uuid);
  } else if (own !== missing.uuid) {
    return undefined;
  }
  return await prepare(missing.id, missing.uuid, missing.path);
}

/** Whether the drive answers: its identity file reads back and a probe file can be written. */
export async function probeDrive(drive: Drive): Promise<boolean> {
  try {
    if ((await readIdentity(drive.path)) !== drive.uuid) return false;
    if (!(await Deno.stat(drive.shardDir)).isDirectory) return false;
    const probe = join(drive.tmpDir, `probe-${crypto.randomUUID()}`);
    const file = await Deno.open(probe, { write: true, createNew: true, mode: FILE_MODE });
    try {
      await file.write(new Uint8Array([1]));
      await file.sync();
    } finally {
      file.close();
    }
    await Deno.remove(probe);
    return true;
  } catch {
    return false;
  }
}

/** Opens every configured drive that can be used (see identityFor). */
export async function openDrives(
  paths: string[],
  registry: DriveRegistry,
  warn: (message: string) => void,
): Promise<DriveSet> {
  const set: DriveSet = { list: [], byId: new Map(), missing: [], replaced: [] };
  for (const path of paths) {
    const identity = await identityFor(path, registry, warn);
    if (identity.state === "unusable") continue;
    const id = await registry.register(identity.uuid, path);
    if (identity.state === "missing") {
      set.missing.push({ id, uuid: identity.uuid, path });
      continue;
    }
    if (identity.state === "replaced") set.replaced.push(id);
    const drive = await prepare(id, identity.uuid, path);
    set.list.push(drive);
    set.byId.set(id, drive);
  }
  if (set.list.length === 0) throw new Error("No usable data directory");
  return set;
}

async function isEmptyOrMissing(path: string): Promise<boolean> {
  try {
    for await (const entry of Deno.readDir(path)) {
      // The one-drive layout shares its directory with the metadata and credentials.
      if (
        !["meta.db", "meta.db-wal", "meta.db-shm", "admin-credentials.json", "master.key"].includes(
          entry.name,
        )
      ) {
        return false;
      }
    }
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return true;
    throw err;
  }
}

/**
 * Places the n shards of a chunk on drives: consecutive drives from a start derived from the
 * chunk id, so shards of one chunk land on distinct drives whenever there are enough of them.
 */
export function placeShards(chunkId: string, shards: number, drives: Drive[]): number[] {
  const start = parseInt(chunkId.slice(0, 8), 16) % drives.length || 0;
  return Array.from({ length: shards }, (_, i) => drives[(start + i) % drives.length].id);
}
