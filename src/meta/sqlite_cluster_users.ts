// The cluster's user-change queue in SQLite (tables cluster_user_changes, cluster_user_stamps
// and cluster_user_cursors; see UserReplicationQueue in store.ts). Writes run inside the caller's
// transaction; the merging itself is user_stamps.ts.
import { SqliteQueueCursors } from "./sqlite_queue_cursors.ts";
import type { SQLInputValue, StatementSync } from "node:sqlite";
import type { UserRecord } from "./store.ts";
import { toUser } from "./sqlite_users.ts";
import {
  keepsName,
  mergeUser,
  stampLocal,
  type UserChange,
  type UserItem,
  type UserStamps,
  type UserState,
  userState,
} from "./user_stamps.ts";

type Row = Record<string, SQLInputValue>;
type Prepare = (sql: string) => StatementSync;

export class SqliteClusterUsers extends SqliteQueueCursors {
  /** `node`: this node's id, the stamp of its own changes. */
  constructor(stmt: Prepare, readonly node: string) {
    super(stmt, "cluster_user_changes", "cluster_user_cursors");
  }

  #stamps(id: string): UserStamps {
    const row = this.stmt("SELECT stamps FROM cluster_user_stamps WHERE user_id = ?").get(id) as
      | Row
      | undefined;
    return row ? JSON.parse(row.stamps as string) : {};
  }

  #setStamps(id: string, stamps: UserStamps): void {
    this.stmt(
      "INSERT INTO cluster_user_stamps (user_id, stamps) VALUES (?, ?) " +
        "ON CONFLICT(user_id) DO UPDATE SET stamps = excluded.stamps",
    ).run(id, JSON.stringify(stamps));
  }

  #enqueue(id: string): void {
    this.stmt(
      "INSERT INTO cluster_user_changes (user_id, seq, queued_at) " +
        "VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM cluster_user_changes), ?) " +
        "ON CONFLICT(user_id) DO UPDATE SET seq = excluded.seq, queued_at = excluded.queued_at",
    ).run(id, Date.now());
  }

  /** The user as stored now (read inside a change's transaction, before it). */
  user(id: string): UserRecord | undefined {
    const row = this.stmt("SELECT * FROM users WHERE id = ?").get(id) as Row | undefined;
    return row ? toUser(row) : undefined;
  }

  /** A change made here: stamps the parts it changed and queues the user. */
  changed(id: string, items: UserItem[]): void {
    if (items.length === 0) return;
    this.#setStamps(id, stampLocal(this.#stamps(id), items, this.node));
    this.#enqueue(id);
  }

  #deleteUser(id: string): void {
    this.stmt("DELETE FROM tokens WHERE user_id = ?").run(id);
    this.stmt("DELETE FROM users WHERE id = ?").run(id);
  }

  apply(s: UserState): "applied" | "stale" | "conflict" {
    const plan = mergeUser(this.user(s.id), this.#stamps(s.id), s);
    if (plan.outcome === "stale") return "stale";
    const user = plan.user;
    if (user) {
      const others = (this.stmt(
        "SELECT * FROM users WHERE (name = ? OR access_key = ?) AND id <> ?",
      ).all(user.name, user.accessKey, user.id) as Row[]).map(toUser);
      if (others.some((other) => keepsName(other, user))) return "conflict";
      for (const other of others) {
        this.#deleteUser(other.id);
        this.changed(other.id, ["record"]);
      }
      this.stmt(
        "INSERT INTO users (id, name, description, email, access_key, sealed_secret, enabled, " +
          "created_at, key_created_at, bucket_access) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) " +
          "ON CONFLICT(id) DO UPDATE SET name = excluded.name, " +
          "description = excluded.description, email = excluded.email, " +
          "access_key = excluded.access_key, sealed_secret = excluded.sealed_secret, " +
          "enabled = excluded.enabled, key_created_at = excluded.key_created_at, " +
          "bucket_access = excluded.bucket_access",
      ).run(
        user.id,
        user.name,
        user.description,
        user.email,
        user.accessKey,
        user.sealedSecret,
        user.enabled ? 1 : 0,
        user.createdAt,
        user.keyCreatedAt,
        JSON.stringify(user.bucketAccess),
      );
      if (plan.revokeTokens) this.stmt("DELETE FROM tokens WHERE user_id = ?").run(user.id);
    } else this.#deleteUser(s.id);
    this.#setStamps(s.id, plan.stamps);
    this.#enqueue(s.id);
    return "applied";
  }

  /** Stamps and queues every user with no stamps (made before clustering), at its creation. */
  queueUnstamped(): number {
    const rows = this.stmt(
      "SELECT id, created_at FROM users WHERE NOT EXISTS (SELECT 1 FROM cluster_user_stamps " +
        "WHERE cluster_user_stamps.user_id = users.id) ORDER BY name",
    ).all() as Row[];
    for (const row of rows) {
      const stamp = { ms: row.created_at as number, node: this.node };
      const id = row.id as string;
      this.#setStamps(id, { record: stamp, enabled: stamp, access: stamp, key: stamp });
      this.#enqueue(id);
    }
    return rows.length;
  }

  changes(after: number, limit: number): UserChange[] {
    const rows = this.stmt(
      "SELECT * FROM cluster_user_changes WHERE seq > ? ORDER BY seq LIMIT ?",
    ).all(after, limit) as Row[];
    return rows.map((row) => {
      const id = row.user_id as string;
      return {
        ...userState(id, this.user(id), this.#stamps(id)),
        seq: row.seq as number,
        queuedAt: row.queued_at as number,
      };
    });
  }

  /** Deletes the rows of deleted users every node has received (never the newest row). */
  prune(nodes: string[]): number {
    const upTo = this.received(nodes);
    if (upTo === 0) return 0;
    return Number(
      this.stmt(
        "DELETE FROM cluster_user_changes WHERE seq <= ? " +
          "AND seq < (SELECT max(seq) FROM cluster_user_changes) " +
          "AND NOT EXISTS (SELECT 1 FROM users WHERE id = cluster_user_changes.user_id)",
      ).run(upTo).changes,
    );
  }
}
