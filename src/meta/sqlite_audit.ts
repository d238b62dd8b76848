// The audit chain in SQLite (src/audit/chain.ts): entries appended inside the write transaction
// of the change they record, so there is no change without its entry and no entry without its
// change. All writes of the store run on one connection, one transaction at a time, which keeps
// the chain linear: each append reads the current head inside its own transaction.
import type { SQLInputValue, StatementSync } from "node:sqlite";
import { Where } from "./sqlite_where.ts";
import { returnArrays } from "./sqlite_arrays.ts";
import {
  type AuditAnchor,
  type AuditEntry,
  type AuditFacts,
  entryHash,
  GENESIS_HASH,
} from "../audit/chain.ts";
import type { AuditQuery } from "./store.ts";

type Prepare = (sql: string) => StatementSync;
const COLUMNS = "seq, at, request_id, principal, source, operation, bucket, key, version_id, " +
  "status, error_code, bytes, detail, hash";

const COLUMN_LIST = COLUMNS.split(", ");
const INSERT = `INSERT INTO audit_log (${COLUMNS}) VALUES (${
  COLUMN_LIST.map(() => "?").join(", ")
})`;

/** An entry's values in COLUMNS order. */
function values(e: AuditEntry): SQLInputValue[] {
  return [
    e.seq,
    e.at,
    e.requestId,
    e.principal,
    e.source,
    e.operation,
    e.bucket,
    e.key,
    e.versionId,
    e.status,
    e.errorCode,
    e.bytes,
    e.detail,
    e.hash,
  ];
}

/** A row read in array mode, in COLUMNS order. */
function toEntry(r: SQLInputValue[]): AuditEntry {
  return {
    seq: r[0] as number,
    at: r[1] as number,
    requestId: r[2] as string,
    principal: r[3] as string,
    source: r[4] as string,
    operation: r[5] as string,
    bucket: r[6] as string,
    key: r[7] as string,
    versionId: r[8] as string,
    status: r[9] as number,
    errorCode: r[10] as string,
    bytes: r[11] as number,
    detail: r[12] as string,
    hash: r[13] as string,
  };
}

export class SqliteAudit {
  constructor(readonly stmt: Prepare) {}

  /** Appends one entry; must run inside the caller's transaction. */
  append(facts: AuditFacts, at = Date.now()): AuditEntry {
    const entry = this.#chain(this.head(), facts, at);
    this.stmt(INSERT).run(...values(entry));
    return entry;
  }

  /**
   * Appends entries in order (a batch of changes in one transaction); the same chain as appending
   * each alone, the head read once. Must run inside the caller's transaction. Row by row through
   * one prepared statement: one INSERT of the whole batch as a JSON array cost three times as
   * much per entry (SQLite extracting 14 JSON fields of every row).
   */
  appendMany(facts: AuditFacts[], at = Date.now()): void {
    if (facts.length === 0) return;
    let head: AuditAnchor = this.head();
    const insert = this.stmt(INSERT);
    for (const f of facts) insert.run(...values(head = this.#chain(head, f, at)));
  }

  /** The entry that follows `head`. */
  #chain(head: AuditAnchor, facts: AuditFacts, at: number): AuditEntry {
    const entry = { ...facts, seq: head.seq + 1, at, hash: "" };
    entry.hash = entryHash(head.hash, entry);
    return entry;
  }

  /** The newest entry's position and hash (the anchor's when every entry was pruned). */
  head(): AuditAnchor {
    const row = this.stmt("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1").get() as
      | { seq: number; hash: string }
      | undefined;
    return row ? { seq: row.seq, hash: row.hash } : this.anchor();
  }

  anchor(): AuditAnchor {
    const row = this.stmt("SELECT seq, hash FROM audit_anchor WHERE id = 1").get() as
      | { seq: number; hash: string }
      | undefined;
    return row ? { seq: row.seq, hash: row.hash } : { seq: 0, hash: GENESIS_HASH };
  }

  /** Entries after `afterSeq` in order, for verification and export. */
  page(afterSeq: number, limit: number): AuditEntry[] {
    const s = this.stmt(`SELECT ${COLUMNS} FROM audit_log WHERE seq > ? ORDER BY seq LIMIT ?`);
    returnArrays(s);
    return (s.all(afterSeq, limit) as unknown as SQLInputValue[][]).map(toEntry);
  }

  query(q: AuditQuery): AuditEntry[] {
    const where = new Where().add("seq > ?", q.afterSeq)
      .add("at >= ?", q.since)
      .add("at < ?", q.until)
      .add("bucket = ?", q.bucket)
      .add("principal = ?", q.principal)
      .add("operation = ?", q.operation)
      .add("status = ?", q.status)
      .add("substr(key, 1, ?) = ?", q.keyPrefix?.length, q.keyPrefix);
    const s = this.stmt(`SELECT ${COLUMNS} FROM audit_log WHERE ${where.sql} ORDER BY seq LIMIT ?`);
    returnArrays(s);
    return (s.all(...where.args, q.limit) as unknown as SQLInputValue[][]).map(toEntry);
  }

  /**
   * Removes entries older than `before` (never the newest): the last removed entry becomes the
   * anchor the rest verifies from. Runs inside the caller's transaction; returns the new anchor
   * and how many entries went, or undefined when nothing was old enough.
   */
  prune(before: number): { anchor: AuditAnchor; pruned: number } | undefined {
    const head = this.head();
    const row = this.stmt(
      "SELECT seq, hash FROM audit_log WHERE at < ? AND seq < ? ORDER BY seq DESC LIMIT 1",
    ).get(before, head.seq) as { seq: number; hash: string } | undefined;
    if (!row) return undefined;
    const pruned = Number(this.stmt("DELETE FROM audit_log WHERE seq <= ?").run(row.seq).changes);
    this.stmt(
      "INSERT INTO audit_anchor (id, seq, hash) VALUES (1, ?, ?) " +
        "ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
    ).run(row.seq, row.hash);
    return { anchor: { seq: row.seq, hash: row.hash }, pruned };
  }
}
