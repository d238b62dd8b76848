// The cluster's user-change queue in PostgreSQL (see UserReplicationQueue in store.ts); behaves
// as src/meta/sqlite_cluster_users.ts. Writes run inside the caller's transaction; each enqueue
// takes a transaction-scoped advisory lock, so queue positions commit in order.
import { PgQueueCursors } from "./queue_cursors.ts";
import type { UserRecord } from "../store.ts";
import { toUser } from "./users.ts";
import {
  keepsName,
  mergeUser,
  stampLocal,
  type UserChange,
  type UserItem,
  type UserStamps,
  type UserState,
  userState,
} from "../user_stamps.ts";
import { num, type Queryable, type Tx } from "./sql.ts";

export const CLUSTER_USERS_DDL = `
  CREATE TABLE cluster_user_changes (
    user_id TEXT COLLATE "C" PRIMARY KEY,
    seq BIGINT NOT NULL,
    queued_at BIGINT NOT NULL
  );
  CREATE UNIQUE INDEX cluster_user_changes_by_seq ON cluster_user_changes (seq);
  CREATE TABLE cluster_user_stamps (
    user_id TEXT COLLATE "C" PRIMARY KEY,
    stamps TEXT NOT NULL
  );
  CREATE TABLE cluster_user_cursors (
    node TEXT PRIMARY KEY,
    seq BIGINT NOT NULL
  );
`;

/** The advisory lock that orders the user queue's positions (a constant of this store). */
const QUEUE_LOCK = 0x53540c3;
/** The class of the per-user advisory locks (two-key form: class, hash of the user id). */
const USER_LOCK = 0x5355;

export class PgClusterUsers extends PgQueueCursors {
  /** `node`: this node's id, the stamp of its own changes. */
  constructor(readonly node: string) {
    super("cluster_user_changes", "cluster_user_cursors");
  }

  async #stamps(q: Queryable, id: string): Promise<UserStamps> {
    const [row] = await q`SELECT stamps FROM cluster_user_stamps WHERE user_id = ${id}`;
    return row ? JSON.parse(row.stamps as string) : {};
  }

  async #setStamps(q: Queryable, id: string, stamps: UserStamps): Promise<void> {
    await q`
      INSERT INTO cluster_user_stamps (user_id, stamps) VALUES (${id}, ${JSON.stringify(stamps)})
      ON CONFLICT (user_id) DO UPDATE SET stamps = excluded.stamps`;
  }

  async #enqueue(tx: Tx, id: string): Promise<void> {
    await tx`SELECT pg_advisory_xact_lock(${QUEUE_LOCK})`;
    await tx`
      INSERT INTO cluster_user_changes (user_id, seq, queued_at)
      VALUES (${id}, (SELECT coalesce(max(seq), 0) + 1 FROM cluster_user_changes), ${Date.now()})
      ON CONFLICT (user_id) DO UPDATE SET seq = excluded.seq, queued_at = excluded.queued_at`;
  }

  /**
   * Serializes the changes of one user, local and replicated (READ COMMITTED would otherwise let
   * a merge overwrite a change committed after it read the user); first in each transaction.
   */
  async lock(tx: Tx, id: string): Promise<void> {
    await tx`SELECT pg_advisory_xact_lock(${USER_LOCK}, hashtext(${id}))`;
  }

  /** The user as stored now (read inside a change's transaction, before it). */
  async user(q: Queryable, id: string): Promise<UserRecord | undefined> {
    const [row] = await q`SELECT * FROM users WHERE id = ${id}`;
    return row ? toUser(row) : undefined;
  }

  /** A change made here: stamps the parts it changed and queues the user. */
  async changed(tx: Tx, id: string, items: UserItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.#setStamps(tx, id, stampLocal(await this.#stamps(tx, id), items, this.node));
    await this.#enqueue(tx, id);
  }

  async #deleteUser(tx: Tx, id: string): Promise<void> {
    await tx`DELETE FROM tokens WHERE user_id = ${id}`;
    await tx`DELETE FROM users WHERE id = ${id}`;
  }

  async apply(tx: Tx, s: UserState): Promise<"applied" | "stale" | "conflict"> {
    await this.lock(tx, s.id);
    const plan = mergeUser(await this.user(tx, s.id), await this.#stamps(tx, s.id), s);
    if (plan.outcome === "stale") return "stale";
    const user = plan.user;
    if (user) {
      const others = (await tx`
        SELECT * FROM users WHERE (name = ${user.name} OR access_key = ${user.accessKey})
          AND id <> ${user.id}`).map(toUser);
      if (others.some((other) => keepsName(other, user))) return "conflict";
      for (const other of others) {
        await this.#deleteUser(tx, other.id);
        await this.changed(tx, other.id, ["record"]);
      }
      await tx`
        INSERT INTO users (id, name, description, email, access_key, sealed_secret, enabled,
          created_at, key_created_at, bucket_access)
        VALUES (${user.id}, ${user.name}, ${user.description}, ${user.email}, ${user.accessKey},
          ${user.sealedSecret}, ${user.enabled}, ${user.createdAt}, ${user.keyCreatedAt},
          ${JSON.stringify(user.bucketAccess)})
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description,
          email = excluded.email, access_key = excluded.access_key,
          sealed_secret = excluded.sealed_secret, enabled = excluded.enabled,
          key_created_at = excluded.key_created_at, bucket_access = excluded.bucket_access`;
      if (plan.revokeTokens) await tx`DELETE FROM tokens WHERE user_id = ${user.id}`;
    } else await this.#deleteUser(tx, s.id);
    await this.#setStamps(tx, s.id, plan.stamps);
    await this.#enqueue(tx, s.id);
    return "applied";
  }

  /** Stamps and queues every user with no stamps (made before clustering), at its creation. */
  async queueUnstamped(tx: Tx): Promise<number> {
    const rows = await tx`
      SELECT id, created_at FROM users WHERE NOT EXISTS (SELECT 1 FROM cluster_user_stamps
        WHERE cluster_user_stamps.user_id = users.id) ORDER BY name`;
    for (const row of rows) {
      const stamp = { ms: num(row.created_at), node: this.node };
      const id = row.id as string;
      await this.#setStamps(tx, id, { record: stamp, enabled: stamp, access: stamp, key: stamp });
      await this.#enqueue(tx, id);
    }
    return rows.length;
  }

  async changes(q: Queryable, after: number, limit: number): Promise<UserChange[]> {
    const rows = await q`
      SELECT * FROM cluster_user_changes WHERE seq > ${after} ORDER BY seq LIMIT ${limit}`;
    const out: UserChange[] = [];
    for (const row of rows) {
      const id = row.user_id as string;
      out.push({
        ...userState(id, await this.user(q, id), await this.#stamps(q, id)),
        seq: num(row.seq),
        queuedAt: num(row.queued_at),
      });
    }
    return out;
  }

  /** Deletes the rows of deleted users every node has received (never the newest row). */
  async prune(q: Queryable, nodes: string[]): Promise<number> {
    const upTo = await this.received(q, nodes);
    if (upTo === 0) return 0;
    const result = await q`
      DELETE FROM cluster_user_changes c WHERE c.seq <= ${upTo}
        AND c.seq < (SELECT max(seq) FROM cluster_user_changes)
        AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = c.user_id)`;
    return result.count;
  }
}
