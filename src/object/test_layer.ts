// For tests: an object layer over a SQLite metadata file and one drive in a temp directory,
// removed afterwards; a bucket in it; a metadata store that reports when a call was made.
import { SqliteMetaStore } from "../meta/sqlite.ts";
import type { MetaStore } from "../meta/store.ts";
import { ChunkStore, type ErasureLayout } from "../storage/chunk_store.ts";
import { openDrives } from "../storage/drives.ts";
import { ObjectLayer } from "./layer.ts";

export async function withTestLayer(
  fn: (layer: ObjectLayer, dir: string) => Promise<void>,
  opts: {
    layout?: ErasureLayout;
    dedup?: boolean;
    prefix?: string;
    /** Chunk size of the layer's uploads (1 MiB unless given). */
    chunkSize?: number;
    /** What the layer sees of the metadata store (e.g. a Proxy that reports calls). */
    wrapMeta?: (meta: MetaStore) => MetaStore;
  } = {},
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: opts.prefix ?? "test-layer-" });
  const meta = new SqliteMetaStore(`${dir}/meta.db`);
  try {
    const drives = await openDrives([dir], {
      register: (uuid, path) => meta.driveId(uuid, path),
      knownAt: (path) => meta.driveAt(path),
    }, () => {});
    const chunks = new ChunkStore(meta, {
      drives,
      layout: opts.layout ?? { dataShards: 1, parityShards: 0 },
      compression: "off",
      dedup: opts.dedup ?? false,
    });
    const seen = opts.wrapMeta?.(meta) ?? meta;
    await fn(
      new ObjectLayer(seen, chunks, {
        inlineMax: 65536,
        chunkSize: opts.chunkSize ?? 1024 * 1024,
      }),
      dir,
    );
    await chunks.reclaimer.drained();
  } finally {
    await meta.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Creates bucket `name` (unversioned unless `versioning` says, owned by `owner`). */
export async function createTestBucket(
  meta: MetaStore,
  name: string,
  opts: { owner?: string; versioning?: "" | "Enabled"; createdAt?: number } = {},
): Promise<void> {
  await meta.createBucket({
    name,
    owner: opts.owner ?? "owner-id",
    createdAt: opts.createdAt ?? Date.now(),
    region: "us-east-1",
    versioning: opts.versioning ?? "",
    objectLock: false,
  });
}

/**
 * A metadata store wrapper (`wrap`) that resolves `called` once `method` has been called after
 * `arm()`: a write is then queued in the group commit but not yet committed, and what the test
 * runs next races it.
 */
export function reporting(method: string) {
  let armed = false;
  let resolve!: () => void;
  const called = new Promise<void>((r) => resolve = r);
  const wrap = (meta: MetaStore) =>
    new Proxy(meta, {
      get(target, name) {
        const value = Reflect.get(target, name, target);
        if (typeof value !== "function") return value;
        if (name !== method) return value.bind(target);
        return (...args: unknown[]) => {
          const result = value.apply(target, args);
          if (armed) resolve();
          return result;
        };
      },
    });
  return { wrap, called, arm: () => armed = true };
}
