// Chunk holdings of the nodes sharing this database (src/meta/shared_holdings.ts).
import type { ChunkRecord } from "../store.ts";
import type { SharedHoldings } from "../shared_holdings.ts";
import type { Q } from "./connect.ts";
import { num } from "./sql.ts";

export const HOLDINGS_DDL = `
  CREATE TABLE cluster_shared_nodes (
    node TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    seen BIGINT NOT NULL
  );
  CREATE TABLE chunk_holdings (
    chunk_id TEXT COLLATE "C" NOT NULL,
    node TEXT NOT NULL,
    plain_size BIGINT NOT NULL,
    stored_size BIGINT NOT NULL,
    compression TEXT NOT NULL,
    encrypted BOOLEAN NOT NULL,
    segment_size INTEGER NOT NULL,
    data_shards INTEGER NOT NULL,
    parity_shards INTEGER NOT NULL,
    drives INTEGER[] NOT NULL,
    -- Set when the chunk row is gone (or was not there yet): what collection looks at.
    freed BOOLEAN NOT NULL,
    PRIMARY KEY (node, chunk_id)
  );
  CREATE INDEX chunk_holdings_by_chunk ON chunk_holdings (chunk_id);
  CREATE INDEX chunk_holdings_freed ON chunk_holdings (node, chunk_id) WHERE freed;
  CREATE FUNCTION chunk_holdings_freed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE chunk_holdings SET freed = true WHERE chunk_id = OLD.id;
    RETURN NULL;
  END $$;
  CREATE TRIGGER chunk_holdings_freed AFTER DELETE ON chunks
    FOR EACH ROW EXECUTE FUNCTION chunk_holdings_freed();
`;

function toRecord(row: Record<string, unknown>): ChunkRecord {
  return {
    id: row.chunk_id as string,
    plainSize: num(row.plain_size),
    storedSize: num(row.stored_size),
    compression: row.compression as ChunkRecord["compression"],
    encrypted: row.encrypted as boolean,
    ...(row.segment_size ? { segmentSize: row.segment_size as number } : {}),
    dataShards: row.data_shards as number,
    parityShards: row.parity_shards as number,
    drives: row.drives as number[],
  };
}

export class PgHoldings implements SharedHoldings {
  constructor(readonly read: <T>(fn: (q: Q) => Promise<T>) => Promise<T>) {}

  registerNode(node: string, url: string): Promise<void> {
    return this.read(async (q) => {
      await q`
        INSERT INTO cluster_shared_nodes (node, url, seen) VALUES (${node}, ${url}, ${Date.now()})
        ON CONFLICT (node) DO UPDATE SET url = excluded.url, seen = excluded.seen`;
    });
  }

  sharedNodes(): Promise<{ id: string; url: string }[]> {
    return this.read(async (q) =>
      (await q`SELECT node, url FROM cluster_shared_nodes ORDER BY node`).map((r) => ({
        id: r.node as string,
        url: r.url as string,
      }))
    );
  }

  recordHolding(node: string, c: ChunkRecord): Promise<void> {
    return this.read(async (q) => {
      await q`
        INSERT INTO chunk_holdings (chunk_id, node, plain_size, stored_size, compression,
          encrypted, segment_size, data_shards, parity_shards, drives, freed)
        VALUES (${c.id}, ${node}, ${c.plainSize}, ${c.storedSize}, ${c.compression},
          ${c.encrypted}, ${c.segmentSize ?? 0}, ${c.dataShards}, ${c.parityShards},
          ${c.drives}::integer[], NOT EXISTS (SELECT 1 FROM chunks WHERE id = ${c.id}))
        ON CONFLICT (node, chunk_id) DO UPDATE SET plain_size = excluded.plain_size,
          stored_size = excluded.stored_size, compression = excluded.compression,
          encrypted = excluded.encrypted, segment_size = excluded.segment_size,
          data_shards = excluded.data_shards, parity_shards = excluded.parity_shards,
          drives = excluded.drives, freed = excluded.freed`;
    });
  }

  holding(node: string, id: string): Promise<ChunkRecord | undefined> {
    return this.read(async (q) => {
      const [row] = await q`
        SELECT * FROM chunk_holdings WHERE node = ${node} AND chunk_id = ${id}`;
      return row ? toRecord(row) : undefined;
    });
  }

  holders(id: string): Promise<string[]> {
    return this.read(async (q) =>
      (await q`SELECT node FROM chunk_holdings WHERE chunk_id = ${id}`).map((r) => r.node as string)
    );
  }

  orphanHoldings(node: string, limit: number): Promise<ChunkRecord[]> {
    return this.read(async (q) => {
      // Flagged ones whose chunk is there (again, or committed since) are not orphans.
      await q`
        UPDATE chunk_holdings h SET freed = false WHERE h.node = ${node} AND h.freed
          AND EXISTS (SELECT 1 FROM chunks c WHERE c.id = h.chunk_id)`;
      return (await q`
        SELECT h.* FROM chunk_holdings h WHERE h.node = ${node} AND h.freed
        ORDER BY h.chunk_id LIMIT ${limit}`).map(toRecord);
    });
  }

  flagOrphans(node: string): Promise<void> {
    return this.read(async (q) => {
      await q`
        UPDATE chunk_holdings h SET freed = true WHERE h.node = ${node} AND NOT h.freed
          AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = h.chunk_id)`;
    });
  }

  forgetNode(node: string): Promise<void> {
    return this.read(async (q) => {
      await q`DELETE FROM cluster_shared_nodes WHERE node = ${node}`;
      await q`DELETE FROM chunk_holdings WHERE node = ${node}`;
    });
  }

  dropHolding(node: string, id: string): Promise<void> {
    return this.read(async (q) => {
      await q`DELETE FROM chunk_holdings WHERE node = ${node} AND chunk_id = ${id}`;
    });
  }

  bucketQueueHead(): Promise<number> {
    return this.read(async (q) => {
      const [row] = await q`SELECT coalesce(max(seq), 0) AS head FROM cluster_changes`;
      return num(row.head);
    });
  }
}
