// The cluster's object-change queue in SQLite (tables cluster_object_changes and
// cluster_object_cursors; see ObjectReplicationQueue in store.ts). Writes run inside the
// caller's transaction.
import { SqliteQueueCursors } from "./sqlite_queue_cursors.ts";
import type { SQLInputValue, StatementSync } from "node:sqlite";
import type { ObjectChange } from "./store.ts";

type Row = Record<string, SQLInputValue>;
type Prepare = (sql: string) => StatementSync;

export class SqliteObjectQueue extends SqliteQueueCursors {
  constructor(stmt: Prepare) {
    super(stmt, "cluster_object_changes", "cluster_object_cursors");
  }

  append(
    op: ObjectChange["op"],
    bucket: string,
    key: string,
    versionId: string,
    opts: { at?: number; bypassGovernance?: boolean } = {},
  ): void {
    this.stmt(
      "INSERT INTO cluster_object_changes (op, bucket, key, version_id, queued_at, " +
        "bypass_governance) VALUES (?, ?, ?, ?, ?, ?)",
    ).run(op, bucket, key, versionId, opts.at ?? Date.now(), opts.bypassGovernance ? 1 : 0);
  }

  changes(after: number, limit: number): ObjectChange[] {
    const rows = this.stmt(
      "SELECT * FROM cluster_object_changes WHERE seq > ? ORDER BY seq LIMIT ?",
    ).all(after, limit) as Row[];
    return rows.map((r) => ({
      seq: r.seq as number,
      op: r.op as ObjectChange["op"],
      bucket: r.bucket as string,
      key: r.key as string,
      versionId: r.version_id as string,
      queuedAt: r.queued_at as number,
      ...(r.bypass_governance === 1 ? { bypassGovernance: true } : {}),
    }));
  }

  prune(nodes: string[]): number {
    const upTo = this.received(nodes);
    if (upTo === 0) return 0;
    return Number(
      this.stmt(
        "DELETE FROM cluster_object_changes WHERE seq <= ? " +
          "AND seq < (SELECT max(seq) FROM cluster_object_changes)",
      ).run(upTo).changes,
    );
  }

  /** Records a version removed now (in the removal's transaction). */
  tombstone(v: { bucket: string; key: string; versionId: string }, at: number): void {
    this.stmt(
      "INSERT INTO cluster_tombstones (bucket, key, version_id, deleted_at) VALUES (?, ?, ?, ?) " +
        "ON CONFLICT(bucket, key, version_id) DO UPDATE SET " +
        "deleted_at = max(deleted_at, excluded.deleted_at)",
    ).run(v.bucket, v.key, v.versionId, at);
  }

  tombstoneOf(v: { bucket: string; key: string; versionId: string }): number | undefined {
    const row = this.stmt(
      "SELECT deleted_at FROM cluster_tombstones WHERE bucket = ? AND key = ? AND version_id = ?",
    ).get(v.bucket, v.key, v.versionId) as Row | undefined;
    return row ? row.deleted_at as number : undefined;
  }

  pruneTombstones(before: number): number {
    return Number(
      this.stmt("DELETE FROM cluster_tombstones WHERE deleted_at < ?").run(before).changes,
    );
  }

  setStatus(bucket: string, key: string, versionId: string, status: string | null): boolean {
    return this.stmt(
      "UPDATE versions SET replication = ? WHERE bucket = ? AND key = ? AND version_id = ? " +
        "AND replication = 'PENDING'",
    ).run(status, bucket, key, versionId).changes === 1;
  }
}
