// For tests: an object layer over a SQLite metadata file and one drive in a temp directory,
// removed afterwards.
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
    await fn(new ObjectLayer(seen, chunks, { inlineMax: 65536, chunkSize: 1024 * 1024 }), dir);
    await chunks.reclaimer.drained();
  } finally {
    await meta.close();
    await Deno.remove(dir, { recursive: true });
  }
}
