// The cluster's bucket-change queue in SQLite (tables cluster_changes, cluster_stamps and
// cluster_cursors; see ReplicationQueue in store.ts). Writes run inside the caller's transaction.
import { SqliteQueueCursors } from "./sqlite_queue_cursors.ts";
import type { SQLInputValue, StatementSync } from "node:sqlite";
import type { BucketChange, BucketConfigKind, BucketState, ChangeStamp, Stamped } from "./store.ts";

type Row = Record<string, SQLInputValue>;
type Prepare = (sql: string) => StatementSync;

/** The parts of a bucket stamped separately; documents are `config:<kind>`. */
export type BucketItem = "record" | "versioning" | "objectLock" | `config:${BucketConfigKind}`;

/** Whether stamp `a` comes after `b` (milliseconds, then node id). */
export function newer(a: ChangeStamp, b: ChangeStamp | undefined): boolean {
  if (!b) return true;
  return a.ms !== b.ms ? a.ms > b.ms : a.node > b.node;
}

export class SqliteCluster extends SqliteQueueCursors {
  /** `node`: this node's id, the stamp of its own changes. */
  constructor(stmt: Prepare, readonly node: string) {
    super(stmt, "cluster_changes", "cluster_cursors");
  }

  #stamps(bucket: string): Map<string, ChangeStamp> {
    const rows = this.stmt("SELECT item, stamp_ms, stamp_node FROM cluster_stamps WHERE bucket = ?")
      .all(bucket) as Row[];
    return new Map(rows.map((r) => [r.item as string, {
      ms: r.stamp_ms as number,
      node: r.stamp_node as string,
    }]));
  }

  #stampItem(bucket: string, item: string, stamp: ChangeStamp): void {
    this.stmt(
      "INSERT INTO cluster_stamps (bucket, item, stamp_ms, stamp_node) VALUES (?, ?, ?, ?) " +
        "ON CONFLICT(bucket, item) DO UPDATE SET stamp_ms = excluded.stamp_ms, " +
        "stamp_node = excluded.stamp_node",
    ).run(bucket, item, stamp.ms, stamp.node);
  }

  /** Moves the bucket's row to the end of the queue. */
  #enqueue(bucket: string): void {
    this.stmt(
      "INSERT INTO cluster_changes (bucket, seq, queued_at) " +
        "VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM cluster_changes), ?) " +
        "ON CONFLICT(bucket) DO UPDATE SET seq = excluded.seq, queued_at = excluded.queued_at",
    ).run(bucket, Date.now());
  }

  /** A change made here; its stamp comes after every earlier change of the bucket. */
  changed(bucket: string, items: BucketItem[]): void {
    const latest = Math.max(0, ...[...this.#stamps(bucket).values()].map((s) => s.ms));
    const stamp = { ms: Math.max(Date.now(), latest + 1), node: this.node };
    for (const item of items) this.#stampItem(bucket, item, stamp);
    this.#enqueue(bucket);
  }

  /** The bucket's stamped parts with their values now. */
  #state(bucket: string): BucketState {
    const row = this.stmt("SELECT * FROM buckets WHERE name = ?").get(bucket) as Row | undefined;
    const docs = new Map(
      (this.stmt("SELECT kind, value FROM bucket_configs WHERE bucket = ?").all(bucket) as Row[])
        .map((d) => [d.kind as string, d.value as string]),
    );
    const state: BucketState = { bucket, configs: {} };
    for (const [item, stamp] of this.#stamps(bucket)) {
      if (item === "record") {
        state.record = {
          stamp,
          value: row
            ? {
              owner: row.owner as string,
              createdAt: row.created_at as number,
              region: row.region as string,
            }
            : null,
        };
      } else if (!row) continue;
      else if (item === "versioning") {
        state.versioning = { stamp, value: row.versioning as "" | "Enabled" | "Suspended" };
      } else if (item === "objectLock") state.objectLock = { stamp, value: row.object_lock === 1 };
      else {
        const kind = item.slice("config:".length) as BucketConfigKind;
        state.configs[kind] = { stamp, value: docs.get(kind) ?? null };
      }
    }
    return state;
  }

  /**
   * Stamps and queues every bucket with no stamp yet (made before clustering was turned on), its
   * creation time as the stamp: a change made in the cluster since wins over it. How many.
   */
  queueUnstamped(): number {
    const rows = this.stmt(
      "SELECT name, created_at FROM buckets WHERE NOT EXISTS (SELECT 1 FROM cluster_stamps " +
        "WHERE cluster_stamps.bucket = buckets.name AND item = 'record') ORDER BY name",
    ).all() as Row[];
    for (const row of rows) {
      const bucket = row.name as string;
      const stamp = { ms: row.created_at as number, node: this.node };
      const kinds = this.stmt("SELECT kind FROM bucket_configs WHERE bucket = ?").all(
        bucket,
      ) as Row[];
      for (
        const item of [
          "record",
          "versioning",
          "objectLock",
          ...kinds.map((k) => `config:${k.kind}`),
        ]
      ) {
        this.#stampItem(bucket, item, stamp);
      }
      this.#enqueue(bucket);
    }
    return rows.length;
  }

  changes(after: number, limit: number): BucketChange[] {
    const rows = this.stmt(
      "SELECT * FROM cluster_changes WHERE seq > ? ORDER BY seq LIMIT ?",
    ).all(after, limit) as Row[];
    return rows.map((row) => ({
      ...this.#state(row.bucket as string),
      seq: row.seq as number,
      queuedAt: row.queued_at as number,
    }));
  }

  /** Merges another node's state part by part, newer stamps winning; in the caller's transaction. */
  apply(s: BucketState): "applied" | "stale" | "kept" {
    const local = this.#stamps(s.bucket);
    let applied = false;
    if (s.record && newer(s.record.stamp, local.get("record"))) {
      if (s.record.value === null) {
        const busy = this.stmt(
          "SELECT EXISTS (SELECT 1 FROM versions WHERE bucket = ?1) OR " +
            "EXISTS (SELECT 1 FROM uploads WHERE bucket = ?1) AS busy",
        ).get(s.bucket) as Row;
        if (busy.busy === 1) return "kept";
        this.stmt("DELETE FROM bucket_configs WHERE bucket = ?").run(s.bucket);
        this.stmt("DELETE FROM buckets WHERE name = ?").run(s.bucket);
      } else {
        const r = s.record.value;
        this.stmt(
          "INSERT INTO buckets (name, owner, created_at, region) VALUES (?, ?, ?, ?) " +
            "ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, " +
            "created_at = excluded.created_at, region = excluded.region",
        ).run(s.bucket, r.owner, r.createdAt, r.region);
      }
      this.#stampItem(s.bucket, "record", s.record.stamp);
      applied = true;
    }
    // The other parts only apply to a bucket that exists here.
    if (!this.stmt("SELECT 1 FROM buckets WHERE name = ?").get(s.bucket)) {
      if (applied) this.#enqueue(s.bucket);
      return applied ? "applied" : "stale";
    }
    const take = <T>(item: string, part: Stamped<T> | undefined, set: (value: T) => void) => {
      if (!part || !newer(part.stamp, local.get(item))) return;
      set(part.value);
      this.#stampItem(s.bucket, item, part.stamp);
      applied = true;
    };
    take("versioning", s.versioning, (v) => {
      this.stmt("UPDATE buckets SET versioning = ? WHERE name = ?").run(v, s.bucket);
    });
    take("objectLock", s.objectLock, (v) => {
      this.stmt("UPDATE buckets SET object_lock = ? WHERE name = ?").run(v ? 1 : 0, s.bucket);
    });
    for (const [kind, part] of Object.entries(s.configs)) {
      take(`config:${kind}`, part, (v) => {
        if (v === null) {
          this.stmt("DELETE FROM bucket_configs WHERE bucket = ? AND kind = ?").run(s.bucket, kind);
        } else {
          this.stmt(
            "INSERT INTO bucket_configs (bucket, kind, value) VALUES (?, ?, ?) " +
              "ON CONFLICT(bucket, kind) DO UPDATE SET value = excluded.value",
          ).run(s.bucket, kind, v);
        }
      });
    }
    if (applied) this.#enqueue(s.bucket);
    return applied ? "applied" : "stale";
  }

  prune(nodes: string[]): number {
    const upTo = this.received(nodes);
    if (upTo === 0) return 0;
    return Number(
      this.stmt(
        "DELETE FROM cluster_changes WHERE seq <= ? " +
          "AND seq < (SELECT max(seq) FROM cluster_changes) " +
          "AND NOT EXISTS (SELECT 1 FROM buckets WHERE name = cluster_changes.bucket)",
      ).run(upTo).changes,
    );
  }
}
