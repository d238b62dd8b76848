// Chunk records, their reference counts and the chunk lists of versions and parts, in
// PostgreSQL (part of PgMetaStore). A transaction collects the references it adds and drops
// (RefChanges) and applies the net change per chunk at the end, in chunk id order: concurrent
// writers on any node lock chunk rows in one order (no deadlock), and each count moves by one
// atomic update, so counts never drift.
import type { Row } from "postgres";
import type { ChunkRecord, VersionChunk } from "../store.ts";
import type { Q } from "./connect.ts";

function toChunk(row: Row): ChunkRecord {
  return {
    id: row.id,
    plainSize: row.plain_size,
    storedSize: row.stored_size,
    compression: row.compression,
    encrypted: row.encrypted,
    ...(row.segment_size ? { segmentSize: row.segment_size } : {}),
    dataShards: row.data_shards,
    parityShards: row.parity_shards,
    drives: row.drives,
  };
}

/** The references a transaction adds and drops, netted per chunk. */
export class RefChanges {
  readonly #delta = new Map<string, { n: number; chunk?: ChunkRecord }>();

  add(chunks: VersionChunk[]): void {
    for (const { chunk } of chunks) {
      const d = this.#delta.get(chunk.id) ?? { n: 0 };
      d.n++;
      d.chunk = chunk;
      this.#delta.set(chunk.id, d);
    }
  }

  drop(ids: string[]): void {
    for (const id of ids) {
      const d = this.#delta.get(id) ?? { n: 0 };
      d.n--;
      this.#delta.set(id, d);
    }
  }

  /** Ids whose references this dropped more than it added. */
  droppedIds(): string[] {
    return [...this.#delta].filter(([, d]) => d.n < 0).map(([id]) => id);
  }

  merge(other: RefChanges): void {
    for (const [id, d] of other.#delta) {
      const mine = this.#delta.get(id) ?? { n: 0 };
      mine.n += d.n;
      mine.chunk ??= d.chunk;
      this.#delta.set(id, mine);
    }
  }

  /** Net changes in chunk id order (changes that cancel out are left out). */
  sorted(): [string, { n: number; chunk?: ChunkRecord }][] {
    return [...this.#delta].filter(([, d]) => d.n !== 0).sort(([a], [b]) => a < b ? -1 : 1);
  }
}

export class PgChunks {
  /** Lists `chunks` as the data of `vid` (their counts change in apply). */
  async link(q: Q, vid: number, chunks: VersionChunk[]): Promise<void> {
    if (chunks.length === 0) return;
    await q`
      INSERT INTO version_chunks (version_id, idx, chunk_id, "offset", size)
      SELECT ${vid}, i - 1, c, o, s FROM unnest(
        ${chunks.map((c) => c.chunk.id)}::text[],
        ${chunks.map((c) => c.offset)}::bigint[],
        ${chunks.map((c) => c.size)}::bigint[]
      ) WITH ORDINALITY AS t(c, o, s, i)`;
  }

  /** Removes the chunk list of `vid`; returns the chunk ids it referred to (for drop). */
  async unlink(q: Q, vid: number): Promise<string[]> {
    const rows = await q`DELETE FROM version_chunks WHERE version_id = ${vid} RETURNING chunk_id`;
    return rows.map((r) => r.chunk_id as string);
  }

  /**
   * Applies the net changes; returns the chunks nothing refers to any more (rows deleted). A few
   * statements whatever the number of chunks (one or two per chunk before: 32 round trips for a
   * 64 MiB object's DELETE). Of several chunks, the rows that exist are locked first, in id order,
   * as the statements per chunk took them, so that two changes sharing chunks (deduplicated
   * content) wait for each other. A row another change inserts between that lock and this INSERT
   * can still close a cycle of three; PostgreSQL then aborts one after `deadlock_timeout`, and
   * `transaction` (tx.ts) runs it again.
   */
  async apply(q: Q, refs: RefChanges): Promise<ChunkRecord[]> {
    const changes = refs.sorted();
    if (changes.length === 0) return [];
    if (changes.length > 1) {
      await q`
        SELECT 1 FROM chunks WHERE id = ANY(${changes.map(([id]) => id)}::text[])
        ORDER BY id FOR UPDATE`;
    }
    // A net gain comes from add(), which keeps the record.
    const gains = changes.filter(([, d]) => d.n > 0).map(([, { n, chunk }]) => ({ n, c: chunk! }));
    if (gains.length > 0) {
      const col = <T>(f: (g: { n: number; c: ChunkRecord }) => T) => gains.map(f);
      await q`
        INSERT INTO chunks (id, refcount, plain_size, stored_size, compression, encrypted,
          segment_size, data_shards, parity_shards, drives, created_at)
        SELECT id, n, plain, stored, compression, encrypted <> 0, segment, k, m,
          string_to_array(drives, ',')::integer[], ${Date.now()}
        FROM unnest(${col((g) => g.c.id)}::text[], ${col((g) => g.n)}::integer[],
          ${col((g) => g.c.plainSize)}::bigint[], ${col((g) => g.c.storedSize)}::bigint[],
          ${col((g) => g.c.compression)}::text[], ${col((g) => g.c.encrypted ? 1 : 0)}::integer[],
          ${col((g) => g.c.segmentSize ?? 0)}::integer[], ${col((g) => g.c.dataShards)}::integer[],
          ${col((g) => g.c.parityShards)}::integer[], ${col((g) => g.c.drives.join(","))}::text[])
          AS t(id, n, plain, stored, compression, encrypted, segment, k, m, drives)
        ORDER BY id COLLATE "C"
        ON CONFLICT (id) DO UPDATE SET refcount = chunks.refcount + excluded.refcount`;
    }
    const drops = changes.filter(([, d]) => d.n < 0);
    if (drops.length === 0) return [];
    const left = await q`
      UPDATE chunks c SET refcount = c.refcount + t.n
      FROM unnest(${drops.map(([id]) => id)}::text[], ${drops.map(([, d]) => d.n)}::integer[])
        AS t(id, n)
      WHERE c.id = t.id RETURNING c.id, c.refcount`;
    const unreferenced = left.filter((r) => r.refcount <= 0).map((r) => r.id as string);
    if (unreferenced.length === 0) return [];
    const gone = await q`DELETE FROM chunks WHERE id = ANY(${unreferenced}::text[]) RETURNING *`;
    return gone.map(toChunk);
  }

  async versionChunks(
    q: Q,
    vid: number,
    range?: { from: number; to: number },
  ): Promise<VersionChunk[]> {
    const rows = range
      ? await q`
        SELECT vc."offset" AS vc_offset, vc.size AS vc_size, c.* FROM version_chunks vc
        JOIN chunks c ON c.id = vc.chunk_id
        WHERE vc.version_id = ${vid} AND vc."offset" < ${range.to}
          AND vc."offset" + vc.size > ${range.from}
        ORDER BY vc.idx`
      : await q`
        SELECT vc."offset" AS vc_offset, vc.size AS vc_size, c.* FROM version_chunks vc
        JOIN chunks c ON c.id = vc.chunk_id WHERE vc.version_id = ${vid} ORDER BY vc.idx`;
    return rows.map((r) => ({ chunk: toChunk(r), offset: r.vc_offset, size: r.vc_size }));
  }

  async getChunk(q: Q, id: string): Promise<ChunkRecord | undefined> {
    const [row] = await q`SELECT * FROM chunks WHERE id = ${id}`;
    return row ? toChunk(row) : undefined;
  }

  async listChunks(q: Q, after: string, limit: number): Promise<ChunkRecord[]> {
    const rows = await q`SELECT * FROM chunks WHERE id > ${after} ORDER BY id LIMIT ${limit}`;
    return rows.map(toChunk);
  }

  /** The drive's id; a new one only for a new identity (an upsert would skip ids each start). */
  async driveId(q: Q, uuid: string, path: string): Promise<number> {
    const [known] = await q`UPDATE drives SET path = ${path} WHERE uuid = ${uuid} RETURNING id`;
    if (known) return known.id;
    const [row] = await q`
      INSERT INTO drives (uuid, path) VALUES (${uuid}, ${path})
      ON CONFLICT (uuid) DO UPDATE SET path = excluded.path RETURNING id`;
    return row.id;
  }

  /** A new data id for a version or a part (one sequence for both). */
  async nextVid(q: Q): Promise<number> {
    const [row] = await q`SELECT nextval('data_ids') AS v`;
    return row.v;
  }
}
