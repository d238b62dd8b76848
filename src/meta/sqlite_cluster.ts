// The cluster's bucket-change queue in SQLite (tables cluster_changes and cluster_cursors, see
// ReplicationQueue in store.ts). Writes run inside the caller's transaction.
import type { SQLInputValue, StatementSync } from "node:sqlite";
import type { BucketChange, BucketConfigKind, BucketState, ChangeStamp } from "./store.ts";

type Row = Record<string, SQLInputValue>;
type Prepare = (sql: string) => StatementSync;

/** Whether stamp `a` comes after `b` (milliseconds, then node id). */
export function newer(a: ChangeStamp, b: ChangeStamp): boolean {
  return a.ms !== b.ms ? a.ms > b.ms : a.node > b.node;
}

export class SqliteCluster {
  /** `node`: this node's id, the stamp of its own changes. */
  constructor(readonly stmt: Prepare, readonly node: string) {}

  #stamp(bucket: string): ChangeStamp | undefined {
    const row = this.stmt("SELECT stamp_ms, stamp_node FROM cluster_changes WHERE bucket = ?")
      .get(bucket) as Row | undefined;
    return row ? { ms: row.stamp_ms as number, node: row.stamp_node as string } : undefined;
  }

  /** Moves the bucket's row to the end of the queue with this stamp. */
  #record(bucket: string, stamp: ChangeStamp): void {
    this.stmt(
      "INSERT INTO cluster_changes (bucket, seq, stamp_ms, stamp_node, queued_at) " +
        "VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM cluster_changes), ?, ?, ?) " +
        "ON CONFLICT(bucket) DO UPDATE SET seq = excluded.seq, stamp_ms = excluded.stamp_ms, " +
        "stamp_node = excluded.stamp_node, queued_at = excluded.queued_at",
    ).run(bucket, stamp.ms, stamp.node, Date.now());
  }

  /** A change made here; its stamp comes after every earlier change of the bucket. */
  changed(bucket: string): void {
    const last = this.#stamp(bucket);
    this.#record(bucket, { ms: Math.max(Date.now(), (last?.ms ?? 0) + 1), node: this.node });
  }

  #state(bucket: string): BucketState["state"] {
    const row = this.stmt("SELECT * FROM buckets WHERE name = ?").get(bucket) as Row | undefined;
    if (!row) return null;
    const configs: Partial<Record<BucketConfigKind, string>> = {};
    const docs = this.stmt("SELECT kind, value FROM bucket_configs WHERE bucket = ?").all(bucket);
    for (const doc of docs as Row[]) configs[doc.kind as BucketConfigKind] = doc.value as string;
    return {
      owner: row.owner as string,
      createdAt: row.created_at as number,
      region: row.region as string,
      versioning: row.versioning as "" | "Enabled" | "Suspended",
      objectLock: row.object_lock === 1,
      configs,
    };
  }

  changes(after: number, limit: number): BucketChange[] {
    const rows = this.stmt(
      "SELECT * FROM cluster_changes WHERE seq > ? ORDER BY seq LIMIT ?",
    ).all(after, limit) as Row[];
    return rows.map((row) => ({
      bucket: row.bucket as string,
      seq: row.seq as number,
      queuedAt: row.queued_at as number,
      stamp: { ms: row.stamp_ms as number, node: row.stamp_node as string },
      state: this.#state(row.bucket as string),
    }));
  }

  /** Must run inside the caller's transaction. */
  apply(s: BucketState): "applied" | "stale" | "kept" {
    const last = this.#stamp(s.bucket);
    if (last && !newer(s.stamp, last)) return "stale";
    if (s.state === null) {
      const busy = this.stmt(
        "SELECT EXISTS (SELECT 1 FROM versions WHERE bucket = ?1) OR " +
          "EXISTS (SELECT 1 FROM uploads WHERE bucket = ?1) AS busy",
      ).get(s.bucket) as Row;
      if (busy.busy === 1) return "kept";
      this.stmt("DELETE FROM bucket_configs WHERE bucket = ?").run(s.bucket);
      this.stmt("DELETE FROM buckets WHERE name = ?").run(s.bucket);
    } else {
      const b = s.state;
      this.stmt(
        "INSERT INTO buckets (name, owner, created_at, region, versioning, object_lock) " +
          "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, " +
          "created_at = excluded.created_at, region = excluded.region, " +
          "versioning = excluded.versioning, object_lock = excluded.object_lock",
      ).run(s.bucket, b.owner, b.createdAt, b.region, b.versioning, b.objectLock ? 1 : 0);
      this.stmt("DELETE FROM bucket_configs WHERE bucket = ?").run(s.bucket);
      for (const [kind, value] of Object.entries(b.configs)) {
        this.stmt("INSERT INTO bucket_configs (bucket, kind, value) VALUES (?, ?, ?)")
          .run(s.bucket, kind, value as string);
      }
    }
    this.#record(s.bucket, s.stamp);
    return "applied";
  }

  cursor(node: string): number {
    const row = this.stmt("SELECT seq FROM cluster_cursors WHERE node = ?").get(node) as
      | Row
      | undefined;
    return (row?.seq as number | undefined) ?? 0;
  }

  setCursor(node: string, seq: number): void {
    this.stmt(
      "INSERT INTO cluster_cursors (node, seq) VALUES (?, ?) " +
        "ON CONFLICT(node) DO UPDATE SET seq = max(seq, excluded.seq)",
    ).run(node, seq);
  }

  backlog(after: number): { depth: number; oldest?: number } {
    const row = this.stmt(
      "SELECT count(*) AS depth, min(queued_at) AS oldest FROM cluster_changes WHERE seq > ?",
    ).get(after) as Row;
    return {
      depth: row.depth as number,
      oldest: (row.oldest as number | null) ?? undefined,
    };
  }
}
