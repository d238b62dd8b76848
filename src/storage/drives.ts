// The drives (data directories) shards are spread over. Each drive carries an identity file,
// so a chunk's shards are found by drive id even if the directories are listed in another order.
import { join } from "node:path";

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

/**
 * Opens every configured drive, giving a new (empty) directory an identity. A drive whose
 * directory is missing entirely is skipped with a warning: its shards count as lost and are
 * rebuilt from the others.
 */
export async function openDrives(
  paths: string[],
  register: (uuid: string, path: string) => Promise<number>,
  warn: (message: string) => void,
): Promise<DriveSet> {
  const list: Drive[] = [];
  for (const path of paths) {
    let uuid = await readIdentity(path);
    if (uuid === undefined) {
      const fresh = await isEmptyOrMissing(path);
      if (!fresh) {
        warn(`Drive ${path} has no identity file and is not empty; it is not used`);
        continue;
      }
      await Deno.mkdir(path, { recursive: true });
      uuid = crypto.randomUUID();
      await Deno.writeTextFile(join(path, IDENTITY_FILE), JSON.stringify({ uuid }) + "\n");
    }
    const drive: Drive = {
      id: await register(uuid, path),
      uuid,
      path,
      shardDir: join(path, "chunks"),
      tmpDir: join(path, "tmp"),
    };
    await Deno.mkdir(drive.shardDir, { recursive: true });
    await Deno.mkdir(drive.tmpDir, { recursive: true });
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
