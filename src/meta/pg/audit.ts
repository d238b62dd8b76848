// The audit chain in PostgreSQL (src/audit/chain.ts); behaves as src/meta/sqlite_audit.ts. Nodes
// sharing the database append to one chain: each append reads the head row with SELECT ... FOR
// UPDATE and advances it in the same transaction, so appends queue on that row lock and the
// chain never forks. Entries join the transaction of the change they record (no change without
// its entry). Lock order with the outbox: event head first, then the audit head.
import {
  type AuditAnchor,
  type AuditEntry,
  type AuditFacts,
  entryHash,
  GENESIS_HASH,
} from "../../audit/chain.ts";
import type { AuditQuery } from "../store.ts";
import { num, type Queryable, type Tx } from "./sql.ts";

export const AUDIT_DDL = `
  CREATE TABLE audit_log (
    seq BIGINT PRIMARY KEY,
    at BIGINT NOT NULL,
    request_id TEXT NOT NULL,
    principal TEXT COLLATE "C" NOT NULL,
    source TEXT NOT NULL,
    operation TEXT NOT NULL,
    bucket TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    version_id TEXT NOT NULL,
    status INTEGER NOT NULL,
    error_code TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    detail TEXT NOT NULL,
    hash TEXT NOT NULL
  );
  -- The newest entry's position and hash (the anchor's once every entry is pruned): the row every
  -- append locks.
  CREATE TABLE audit_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL
  );
  INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '${GENESIS_HASH}');
  -- The last entry retention removed: what remains verifies from it.
  CREATE TABLE audit_anchor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL
  );
`;

const COLUMNS = "seq, at, request_id, principal, source, operation, bucket, key, version_id, " +
  "status, error_code, bytes, detail, hash";

function toEntry(r: Record<string, unknown>): AuditEntry {
  return {
    seq: num(r.seq),
    at: num(r.at),
    requestId: r.request_id as string,
    principal: r.principal as string,
    source: r.source as string,
    operation: r.operation as string,
    bucket: r.bucket as string,
    key: r.key as string,
    versionId: r.version_id as string,
    status: num(r.status),
    errorCode: r.error_code as string,
    bytes: num(r.bytes),
    detail: r.detail as string,
    hash: r.hash as string,
  };
}

export class PgAudit {
  /** Appends one entry inside the caller's transaction, holding the head row until it ends. */
  async append(tx: Tx, facts: AuditFacts, at = Date.now()): Promise<AuditEntry> {
    const [head] = await tx`SELECT seq, hash FROM audit_head WHERE id = 1 FOR UPDATE`;
    const entry = { ...facts, seq: num(head.seq) + 1, at, hash: "" };
    entry.hash = entryHash(head.hash as string, entry);
    await tx`
      WITH ins AS (
        INSERT INTO audit_log (seq, at, request_id, principal, source, operation, bucket, key,
          version_id, status, error_code, bytes, detail, hash)
        VALUES (${entry.seq}, ${entry.at}, ${entry.requestId}, ${entry.principal},
          ${entry.source}, ${entry.operation}, ${entry.bucket}, ${entry.key}, ${entry.versionId},
          ${entry.status}, ${entry.errorCode}, ${entry.bytes}, ${entry.detail}, ${entry.hash})
      )
      UPDATE audit_head SET seq = ${entry.seq}, hash = ${entry.hash} WHERE id = 1`;
    return entry;
  }

  /** The newest entry's position and hash (the anchor's when every entry was pruned). */
  async head(q: Queryable): Promise<AuditAnchor> {
    const [row] = await q`SELECT seq, hash FROM audit_head WHERE id = 1`;
    return { seq: num(row.seq), hash: row.hash as string };
  }

  async anchor(q: Queryable): Promise<AuditAnchor> {
    const rows = await q`SELECT seq, hash FROM audit_anchor WHERE id = 1`;
    return rows.length
      ? { seq: num(rows[0].seq), hash: rows[0].hash as string }
      : { seq: 0, hash: GENESIS_HASH };
  }

  /** Entries after `afterSeq` in order, for verification and export. */
  async page(q: Queryable, afterSeq: number, limit: number): Promise<AuditEntry[]> {
    const rows = await q`
      SELECT ${q.unsafe(COLUMNS)} FROM audit_log WHERE seq > ${afterSeq}
      ORDER BY seq LIMIT ${limit}`;
    return rows.map(toEntry);
  }

  async query(q: Queryable, f: AuditQuery): Promise<AuditEntry[]> {
    const rows = await q`
      SELECT ${q.unsafe(COLUMNS)} FROM audit_log WHERE seq > ${f.afterSeq}
        ${f.since !== undefined ? q`AND at >= ${f.since}` : q``}
        ${f.until !== undefined ? q`AND at < ${f.until}` : q``}
        ${f.bucket !== undefined ? q`AND bucket = ${f.bucket}` : q``}
        ${f.principal !== undefined ? q`AND principal = ${f.principal}` : q``}
        ${f.operation !== undefined ? q`AND operation = ${f.operation}` : q``}
        ${f.status !== undefined ? q`AND status = ${f.status}` : q``}
        ${f.keyPrefix !== undefined ? q`AND starts_with(key, ${f.keyPrefix})` : q``}
      ORDER BY seq LIMIT ${f.limit}`;
    return rows.map(toEntry);
  }

  /**
   * Removes entries older than `before` (never the newest): the last removed entry becomes the
   * anchor the rest verifies from, and the entry `checkpoint` builds is appended, all in the
   * caller's transaction. Undefined when nothing was old enough.
   */
  async prune(
    tx: Tx,
    before: number,
    checkpoint: (anchor: AuditAnchor, pruned: number) => AuditFacts,
  ): Promise<{ anchor: AuditAnchor; pruned: number } | undefined> {
    // Lock the head first: appends on other nodes wait, and the newest entry stays.
    const [head] = await tx`SELECT seq FROM audit_head WHERE id = 1 FOR UPDATE`;
    const rows = await tx`
      SELECT seq, hash FROM audit_log WHERE at < ${before} AND seq < ${num(head.seq)}
      ORDER BY seq DESC LIMIT 1`;
    if (!rows.length) return undefined;
    const anchor = { seq: num(rows[0].seq), hash: rows[0].hash as string };
    const pruned = (await tx`DELETE FROM audit_log WHERE seq <= ${anchor.seq}`).count;
    await tx`
      INSERT INTO audit_anchor (id, seq, hash) VALUES (1, ${anchor.seq}, ${anchor.hash})
      ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`;
    await this.append(tx, checkpoint(anchor, pruned));
    return { anchor, pruned };
  }
}
