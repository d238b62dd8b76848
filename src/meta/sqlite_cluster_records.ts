// The cluster's queue of bearer tokens, shares, token-service sessions and directory access
// mappings in SQLite (tables cluster_records and cluster_record_cursors; see
// RecordReplicationQueue in store.ts): one row per record with the stamp of its last change;
// writes run inside the caller's transaction.
import { SqliteQueueCursors } from "./sqlite_queue_cursors.ts";
import type { SQLInputValue, StatementSync } from "node:sqlite";
import { type ChangeStamp, mappingKey, type RecordChange, type ReplicatedRecord } from "./store.ts";
import { toToken } from "./sqlite_users.ts";
import { toShare } from "./sqlite_shares.ts";
import { SqliteSts } from "./sqlite_sts.ts";
import { newerStamp } from "./version_stamps.ts";

type Row = Record<string, SQLInputValue>;
type Prepare = (sql: string) => StatementSync;
type Kind = ReplicatedRecord["kind"];

export class SqliteClusterRecords extends SqliteQueueCursors {
  readonly #sts: SqliteSts;

  /** `node`: this node's id, the stamp of its own changes. */
  constructor(stmt: Prepare, readonly node: string) {
    super(stmt, "cluster_records", "cluster_record_cursors");
    this.#sts = new SqliteSts(stmt);
  }

  #stamp(kind: Kind, id: string): ChangeStamp | undefined {
    const row = this.stmt(
      "SELECT stamp_ms, stamp_node FROM cluster_records WHERE kind = ? AND id = ?",
    ).get(kind, id) as Row | undefined;
    return row ? { ms: row.stamp_ms as number, node: row.stamp_node as string } : undefined;
  }

  /** Stores the record's stamp and moves its row to the end of the queue. */
  #enqueue(kind: Kind, id: string, stamp: ChangeStamp, expiresAt: number): void {
    this.stmt(
      "INSERT INTO cluster_records (kind, id, seq, queued_at, stamp_ms, stamp_node, expires_at) " +
        "VALUES (?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM cluster_records), ?, ?, ?, ?) " +
        "ON CONFLICT(kind, id) DO UPDATE SET seq = excluded.seq, queued_at = excluded.queued_at, " +
        "stamp_ms = excluded.stamp_ms, stamp_node = excluded.stamp_node, " +
        "expires_at = excluded.expires_at",
    ).run(kind, id, Date.now(), stamp.ms, stamp.node, expiresAt);
  }

  /** A change made here. */
  changed(kind: Kind, id: string, expiresAt: number): void {
    const latest = this.#stamp(kind, id)?.ms ?? 0;
    this.#enqueue(kind, id, { ms: Math.max(Date.now(), latest + 1), node: this.node }, expiresAt);
  }

  /** The record as stored now (inside a change's transaction, before it); null when none. */
  current(kind: Kind, id: string) {
    if (kind === "session") return this.#sts.getSession(id) ?? null;
    if (kind === "mapping") return this.#sts.getMapping(...mappingKey(id)) ?? null;
    const row = kind === "token"
      ? this.stmt("SELECT * FROM tokens WHERE hash = ?").get(id)
      : this.stmt("SELECT * FROM shares WHERE id = ?").get(id);
    if (!row) return null;
    return kind === "token" ? toToken(row as Row) : toShare(row as Row);
  }

  changes(after: number, limit: number): RecordChange[] {
    const rows = this.stmt("SELECT * FROM cluster_records WHERE seq > ? ORDER BY seq LIMIT ?")
      .all(after, limit) as Row[];
    return rows.map((r) => {
      const kind = r.kind as Kind;
      return {
        kind,
        id: r.id as string,
        stamp: { ms: r.stamp_ms as number, node: r.stamp_node as string },
        expiresAt: r.expires_at as number,
        value: this.current(kind, r.id as string),
        seq: r.seq as number,
        queuedAt: r.queued_at as number,
      } as RecordChange;
    });
  }

  apply(s: ReplicatedRecord): "applied" | "stale" {
    if (!newerStamp(s.stamp, this.#stamp(s.kind, s.id))) return "stale";
    if (s.kind === "session") {
      if (s.value === null) this.#sts.deleteSession(s.id);
      else this.#sts.saveSession(s.value);
    } else if (s.kind === "mapping") {
      if (s.value === null) this.#sts.deleteMapping(...mappingKey(s.id));
      else this.#sts.putMapping(s.value);
    } else if (s.kind === "token") {
      const t = s.value;
      if (t === null) this.stmt("DELETE FROM tokens WHERE hash = ?").run(s.id);
      else {
        this.stmt(
          "INSERT INTO tokens (hash, user_id, created_at, expires_at, access_key) " +
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(hash) DO UPDATE SET user_id = excluded.user_id, " +
            "created_at = excluded.created_at, expires_at = excluded.expires_at, " +
            "access_key = excluded.access_key",
        ).run(s.id, t.userId, t.createdAt, t.expiresAt, t.accessKey ?? null);
      }
    } else if (s.value === null) this.stmt("DELETE FROM shares WHERE id = ?").run(s.id);
    else {
      const v = s.value;
      // The counts stay this node's own.
      this.stmt(
        "INSERT INTO shares (id, token_hash, creator, bucket, prefix, permissions, password_hash, " +
          "created_at, expires_at, max_downloads, downloads, uploads, revoked_at, " +
          "bucket_created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?) " +
          "ON CONFLICT(id) DO UPDATE SET bucket_created_at = excluded.bucket_created_at, " +
          "token_hash = excluded.token_hash, creator = excluded.creator, " +
          "bucket = excluded.bucket, prefix = excluded.prefix, " +
          "permissions = excluded.permissions, password_hash = excluded.password_hash, " +
          "created_at = excluded.created_at, expires_at = excluded.expires_at, " +
          "max_downloads = excluded.max_downloads, revoked_at = excluded.revoked_at",
      ).run(
        s.id,
        v.tokenHash,
        v.creator,
        v.bucket,
        v.prefix,
        JSON.stringify(v.permissions),
        v.passwordHash ?? null,
        v.createdAt,
        v.expiresAt,
        v.maxDownloads ?? null,
        v.revokedAt ?? null,
        v.bucketCreatedAt ?? null,
      );
    }
    this.#enqueue(s.kind, s.id, s.stamp, s.expiresAt);
    return "applied";
  }

  prune(nodes: string[], now: number): number {
    const upTo = this.received(nodes);
    if (upTo === 0) return 0;
    return Number(
      this.stmt(
        "DELETE FROM cluster_records WHERE seq <= ? AND expires_at < ? " +
          "AND seq < (SELECT max(seq) FROM cluster_records)",
      ).run(upTo, now).changes,
    );
  }
}
