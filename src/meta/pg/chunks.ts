// Chunk records, their reference counts and the chunk lists of versions and parts, in
// PostgreSQL (part of PgMetaStore). Counts change by atomic row updates in the writer's
// transaction: the row lock orders concurrent writers of any node, so counts never drift.
import type { Row } from "postgres";
import type { ChunkRecord, VersionChunk } from "../store.ts";
import type { Q } from "./connect.ts";

export function toChunk(row: Row): ChunkRecord {
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

/** How many references each chunk id gets, in id order (one lock order for every writer). */
function tally(ids: string[]): [string[], number[]] {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  const sorted = [...counts.keys()].sort();
  return [sorted, sorted.map((id) => counts.get(id)!)];
}

export class PgChunks {
  /** Records `chunks` as the data of `vid`, raising (or creating) their counts. */
  async addRefs(q: Q, vid: number, chunks: VersionChunk[]): Promise<void> {
    if (chunks.length === 0) return;
    const [ids, counts] = tally(chunks.map((c) => c.chunk.id));
    const byId = new Map(chunks.map((c) => [c.chunk.id, c.chunk]));
    const now = Date.now();
    for (let i = 0; i < ids.length; i++) {
      const c = byId.get(ids[i])!;
      await q`
        INSERT INTO chunks (id, refcount, plain_size, stored_size, compression, encrypted,
          segment_size, data_shards, parity_shards, drives, created_at)
        VALUES (${c.id}, ${counts[i]}, ${c.plainSize}, ${c.storedSize}, ${c.compression},
          ${c.encrypted}, ${c.segmentSize ?? 0}, ${c.dataShards}, ${c.parityShards},
          ${c.drives}::integer[], ${now})
        ON CONFLICT (id) DO UPDATE SET refcount = chunks.refcount + excluded.refcount`;
    }
    await q`
      INSERT INTO version_chunks (version_id, idx, chunk_id, "offset", size)
      SELECT ${vid}, i - 1, c, o, s FROM unnest(
        ${chunks.map((c) => c.chunk.id)}::text[],
        ${chunks.map((c) => c.offset)}::bigint[],
        ${chunks.map((c) => c.size)}::bigint[]
      ) WITH ORDINALITY AS t(c, o, s, i)`;
  }

  /** Drops the chunk references of `vid`; returns the chunks nothing refers to now. */
  async dropRefs(q: Q, vid: number): Promise<ChunkRecord[]> {
    const links = await q`DELETE FROM version_chunks WHERE version_id = ${vid} RETURNING chunk_id`;
    if (links.length === 0) return [];
    const [ids, counts] = tally(links.map((r) => r.chunk_id as string));
    const freed: ChunkRecord[] = [];
    for (let i = 0; i < ids.length; i++) {
      const [row] = await q`
        UPDATE chunks SET refcount = refcount - ${counts[i]} WHERE id = ${ids[i]}
        RETURNING refcount`;
      if (row && row.refcount <= 0) {
        const [gone] = await q`DELETE FROM chunks WHERE id = ${ids[i]} RETURNING *`;
        freed.push(toChunk(gone));
      }
    }
    return freed;
  }

  /** Of `freed`, the chunks still without a row (not referenced again in the same write). */
  async stillFree(q: Q, freed: ChunkRecord[]): Promise<ChunkRecord[]> {
    if (freed.length === 0) return freed;
    const back = await q`SELECT id FROM chunks WHERE id = ANY(${freed.map((c) => c.id)}::text[])`;
    const present = new Set(back.map((r) => r.id as string));
    return freed.filter((c) => !present.has(c.id));
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

  async driveId(q: Q, uuid: string, path: string): Promise<number> {
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
