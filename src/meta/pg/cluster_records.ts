// The cluster's queue of bearer tokens, shares, sessions and directory mappings in PostgreSQL
// (see RecordReplicationQueue in store.ts); behaves as src/meta/sqlite_cluster_records.ts. Writes
// run inside the caller's transaction; each enqueue takes an advisory lock, so queue positions
// commit in order.
import { PgQueueCursors } from "./queue_cursors.ts";
import {
  type ChangeStamp,
  mappingKey,
  type RecordChange,
  type ReplicatedRecord,
} from "../store.ts";
import { toToken } from "./users.ts";
import { toShare } from "./shares.ts";
import { newerStamp } from "../version_stamps.ts";
import { PgSts } from "./sts.ts";
import { num, type Queryable, type Tx } from "./sql.ts";

export const CLUSTER_RECORDS_DDL = `
  CREATE TABLE cluster_records (
    kind TEXT NOT NULL,
    id TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    queued_at BIGINT NOT NULL,
    stamp_ms BIGINT NOT NULL,
    stamp_node TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (kind, id)
  );
  CREATE UNIQUE INDEX cluster_records_by_seq ON cluster_records (seq);
  CREATE TABLE cluster_record_cursors (
    node TEXT PRIMARY KEY,
    seq BIGINT NOT NULL
  );
`;

/** The advisory lock that orders this queue's positions (a constant of this store). */
const QUEUE_LOCK = 0x53540c4;
/** The class of the per-record advisory locks (two-key form: class, hash of kind and id). */
const RECORD_LOCK = 0x5356;

type Kind = ReplicatedRecord["kind"];

const sts = new PgSts();

export class PgClusterRecords extends PgQueueCursors {
  /** `node`: this node's id, the stamp of its own changes. */
  constructor(readonly node: string) {
    super("cluster_records", "cluster_record_cursors");
  }

  async #stamp(q: Queryable, kind: Kind, id: string): Promise<ChangeStamp | undefined> {
    const [row] = await q`
      SELECT stamp_ms, stamp_node FROM cluster_records WHERE kind = ${kind} AND id = ${id}`;
    return row ? { ms: num(row.stamp_ms), node: row.stamp_node as string } : undefined;
  }

  async #enqueue(tx: Tx, kind: Kind, id: string, stamp: ChangeStamp, expiresAt: number) {
    await tx`SELECT pg_advisory_xact_lock(${QUEUE_LOCK})`;
    await tx`
      INSERT INTO cluster_records (kind, id, seq, queued_at, stamp_ms, stamp_node, expires_at)
      VALUES (${kind}, ${id}, (SELECT coalesce(max(seq), 0) + 1 FROM cluster_records),
        ${Date.now()}, ${stamp.ms}, ${stamp.node}, ${expiresAt})
      ON CONFLICT (kind, id) DO UPDATE SET seq = excluded.seq, queued_at = excluded.queued_at,
        stamp_ms = excluded.stamp_ms, stamp_node = excluded.stamp_node,
        expires_at = excluded.expires_at`;
  }

  /** A change made here. */
  async changed(tx: Tx, kind: Kind, id: string, expiresAt: number) {
    const latest = (await this.#stamp(tx, kind, id))?.ms ?? 0;
    const stamp = { ms: Math.max(Date.now(), latest + 1), node: this.node };
    await this.#enqueue(tx, kind, id, stamp, expiresAt);
  }

  /** The record as stored now (inside a change's transaction, before it). */
  async current(q: Queryable, kind: Kind, id: string) {
    if (kind === "session") return (await sts.getSession(q, id)) ?? null;
    if (kind === "mapping") return (await sts.getMapping(q, ...mappingKey(id))) ?? null;
    const [row] = kind === "token"
      ? await q`SELECT * FROM tokens WHERE hash = ${id}`
      : await q`SELECT * FROM shares WHERE id = ${id}`;
    if (!row) return null;
    return kind === "token" ? toToken(row) : toShare(row);
  }

  async changes(q: Queryable, after: number, limit: number): Promise<RecordChange[]> {
    const rows = await q`
      SELECT * FROM cluster_records WHERE seq > ${after} ORDER BY seq LIMIT ${limit}`;
    const out: RecordChange[] = [];
    for (const r of rows) {
      const kind = r.kind as Kind;
      out.push({
        kind,
        id: r.id as string,
        stamp: { ms: num(r.stamp_ms), node: r.stamp_node as string },
        expiresAt: num(r.expires_at),
        value: await this.current(q, kind, r.id as string),
        seq: num(r.seq),
        queuedAt: num(r.queued_at),
      } as RecordChange);
    }
    return out;
  }

  /** Serializes the changes of one token or share, local and replicated. */
  async lock(tx: Tx, kind: Kind, id: string): Promise<void> {
    await tx`SELECT pg_advisory_xact_lock(${RECORD_LOCK}, hashtext(${`${kind}:${id}`}))`;
  }

  async apply(tx: Tx, s: ReplicatedRecord): Promise<"applied" | "stale"> {
    await this.lock(tx, s.kind, s.id);
    if (!newerStamp(s.stamp, await this.#stamp(tx, s.kind, s.id))) return "stale";
    if (s.kind === "session") {
      if (s.value === null) await sts.deleteSession(tx, s.id);
      else await sts.saveSession(tx, s.value);
    } else if (s.kind === "mapping") {
      if (s.value === null) await sts.deleteMapping(tx, ...mappingKey(s.id));
      else await sts.putMapping(tx, s.value);
    } else if (s.kind === "token") {
      const t = s.value;
      if (t === null) await tx`DELETE FROM tokens WHERE hash = ${s.id}`;
      else {
        await tx`
          INSERT INTO tokens (hash, user_id, created_at, expires_at, access_key)
          VALUES (${s.id}, ${t.userId}, ${t.createdAt}, ${t.expiresAt}, ${t.accessKey ?? null})
          ON CONFLICT (hash) DO UPDATE SET user_id = excluded.user_id,
            created_at = excluded.created_at, expires_at = excluded.expires_at,
            access_key = excluded.access_key`;
      }
    } else if (s.value === null) await tx`DELETE FROM shares WHERE id = ${s.id}`;
    else {
      const v = s.value;
      // The counts stay this node's own.
      await tx`
        INSERT INTO shares (id, token_hash, creator, bucket, prefix, permissions, password_hash,
          created_at, expires_at, max_downloads, downloads, uploads, revoked_at,
          bucket_created_at)
        VALUES (${s.id}, ${v.tokenHash}, ${v.creator}, ${v.bucket}, ${v.prefix},
          ${JSON.stringify(v.permissions)}, ${v.passwordHash ?? null}, ${v.createdAt},
          ${v.expiresAt}, ${v.maxDownloads ?? null}, 0, 0, ${v.revokedAt ?? null},
          ${v.bucketCreatedAt ?? null})
        ON CONFLICT (id) DO UPDATE SET token_hash = excluded.token_hash,
          bucket_created_at = excluded.bucket_created_at,
          creator = excluded.creator, bucket = excluded.bucket, prefix = excluded.prefix,
          permissions = excluded.permissions, password_hash = excluded.password_hash,
          created_at = excluded.created_at, expires_at = excluded.expires_at,
          max_downloads = excluded.max_downloads, revoked_at = excluded.revoked_at`;
    }
    await this.#enqueue(tx, s.kind, s.id, s.stamp, s.expiresAt);
    return "applied";
  }

  async prune(q: Queryable, nodes: string[], now: number): Promise<number> {
    const upTo = await this.received(q, nodes);
    if (upTo === 0) return 0;
    const result = await q`
      DELETE FROM cluster_records WHERE seq <= ${upTo} AND expires_at < ${now}
        AND seq < (SELECT max(seq) FROM cluster_records)`;
    return result.count;
  }
}
