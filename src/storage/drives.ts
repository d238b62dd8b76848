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
}

async function readIdentity(path: string): Promise<string | undefined> {
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
async function identityFor(
  path: string,
  registry: DriveRegistry,
  warn: (message: string) => void,
): Promise<string | undefined> {
  const own = await readIdentity(path);
  if (own !== undefined) return own;
  const known = await registry.knownAt(path);
  if (!(await exists(path))) {
    if (known !== undefined) {
      warn(`Drive ${path} is missing; its shards are rebuilt from the other drives`);
      return undefined;
    }
    await Deno.mkdir(path, { recursive: true, mode: DIR_MODE });
  } else if (!(await isEmptyOrMissing(path))) {
    warn(`Drive ${path} has no identity file and is not empty; it is not used`);
    return undefined;
  }
  if (known !== undefined) {
    warn(`Drive ${path} was replaced; a scrub (POST /admin/scrub) refills it`);
  }
  const uuid = known ?? crypto.randomUUID();
  await Deno.writeTextFile(join(path, IDENTITY_FILE), JSON.stringify({ uuid }) + "\n", {
    mode: FILE_MODE,
  });
  return uuid;
}

/** Opens every configured drive that can be used (see identityFor). */
export async function openDrives(
  paths: string[],
  registry: DriveRegistry,
  warn: (message: string) => void,
): Promise<DriveSet> {
  const list: Drive[] = [];
  for (const path of paths) {
    const uuid = await identityFor(path, registry, warn);
    if (uuid === undefined) continue;
    const drive: Drive = {
      id: await registry.register(uuid, path),
      uuid,
      path,
      shardDir: join(path, "chunks"),
      tmpDir: join(path, "tmp"),
    };
    await Deno.mkdir(drive.shardDir, { recursive: true, mode: DIR_MODE });
    await Deno.mkdir(drive.tmpDir, { recursive: true, mode: DIR_MODE });
    list.push(drive);
  }
  if (list.length === 0) throw new Error("No usable data directory");
  return { list, byId: new Map(list.map((d) => [d.id, d])) };
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
