// The cluster's object-change queue in PostgreSQL (see ObjectReplicationQueue in store.ts);
// behaves as src/meta/sqlite_object_queue.ts. Appends run inside the write's transaction and take
// a transaction-scoped advisory lock, so queue positions commit in order: a sender that read up to
// seq N never misses a smaller seq committed later.
import { PgQueueCursors } from "./queue_cursors.ts";
import type { ObjectChange } from "../store.ts";
import type { Q } from "./connect.ts";
import { num, type Queryable } from "./sql.ts";

export const OBJECT_QUEUE_DDL = `
  CREATE TABLE cluster_object_changes (
    seq BIGINT PRIMARY KEY,
    op TEXT NOT NULL,
    bucket TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    version_id TEXT NOT NULL,
    queued_at BIGINT NOT NULL
  );
  CREATE TABLE cluster_object_cursors (
    node TEXT PRIMARY KEY,
    seq BIGINT NOT NULL
  );
  ALTER TABLE versions ADD COLUMN replication TEXT;
`;

/** Versions removed while clustering is on, and when (see the SQLite migration). */
export const TOMBSTONES_DDL = `
  CREATE TABLE cluster_tombstones (
    bucket TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    version_id TEXT NOT NULL,
    deleted_at BIGINT NOT NULL,
    PRIMARY KEY (bucket, key, version_id)
  );
  CREATE INDEX cluster_tombstones_by_time ON cluster_tombstones(deleted_at);
`;

/** The advisory lock that orders queue positions (an arbitrary constant of this store). */
const OBJECT_QUEUE_LOCK = 0x53540c2;

export class PgObjectQueue extends PgQueueCursors {
  constructor() {
    super("cluster_object_changes", "cluster_object_cursors");
  }

  async append(
    q: Q,
    op: ObjectChange["op"],
    v: { bucket: string; key: string; versionId: string },
    opts: { at?: number; bypassGovernance?: boolean } = {},
  ): Promise<void> {
    await q`SELECT pg_advisory_xact_lock(${OBJECT_QUEUE_LOCK})`;
    await q`
      INSERT INTO cluster_object_changes (seq, op, bucket, key, version_id, queued_at,
        bypass_governance)
      VALUES ((SELECT coalesce(max(seq), 0) + 1 FROM cluster_object_changes), ${op}, ${v.bucket},
        ${v.key}, ${v.versionId}, ${opts.at ?? Date.now()}, ${opts.bypassGovernance ?? false})`;
  }

  async changes(q: Queryable, after: number, limit: number): Promise<ObjectChange[]> {
    const rows = await q`
      SELECT * FROM cluster_object_changes WHERE seq > ${after} ORDER BY seq LIMIT ${limit}`;
    return rows.map((r) => ({
      seq: num(r.seq),
      op: r.op as ObjectChange["op"],
      bucket: r.bucket as string,
      key: r.key as string,
      versionId: r.version_id as string,
      queuedAt: num(r.queued_at),
      ...(r.bypass_governance === true ? { bypassGovernance: true } : {}),
    }));
  }

  async prune(q: Queryable, nodes: string[]): Promise<number> {
    const upTo = await this.received(q, nodes);
    if (upTo === 0) return 0;
    const result = await q`
      DELETE FROM cluster_object_changes WHERE seq <= ${upTo}
        AND seq < (SELECT max(seq) FROM cluster_object_changes)`;
    return result.count;
  }

  /** Records a version removed now (in the removal's transaction). */
  async tombstone(
    q: Q,
    v: { bucket: string; key: string; versionId: string },
    at: number,
  ): Promise<void> {
    await q`
      INSERT INTO cluster_tombstones (bucket, key, version_id, deleted_at)
      VALUES (${v.bucket}, ${v.key}, ${v.versionId}, ${at})
      ON CONFLICT (bucket, key, version_id)
        DO UPDATE SET deleted_at = GREATEST(cluster_tombstones.deleted_at, excluded.deleted_at)`;
  }

  async tombstoneOf(
    q: Queryable,
    v: { bucket: string; key: string; versionId: string },
  ): Promise<number | undefined> {
    const [row] = await q`
      SELECT deleted_at FROM cluster_tombstones
      WHERE bucket = ${v.bucket} AND key = ${v.key} AND version_id = ${v.versionId}`;
    return row ? num(row.deleted_at) : undefined;
  }

  async pruneTombstones(q: Queryable, before: number): Promise<number> {
    const result = await q`DELETE FROM cluster_tombstones WHERE deleted_at < ${before}`;
    return result.count;
  }

  async setStatus(
    q: Queryable,
    t: { bucket: string; key: string; versionId: string },
    status: string | null,
  ): Promise<boolean> {
    const result = await q`
      UPDATE versions SET replication = ${status} WHERE bucket = ${t.bucket} AND key = ${t.key}
        AND version_id = ${t.versionId} AND replication = 'PENDING'`;
    return result.count === 1;
  }
}
