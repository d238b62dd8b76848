// The error log in SQLite: warnings and errors of requests and background work, at most `max`
// rows (the oldest go first).
import type { SQLInputValue, StatementSync } from "node:sqlite";
import { Where } from "./sqlite_where.ts";
import type { ErrorQuery, ErrorRecord } from "./store.ts";

type Prepare = (sql: string) => StatementSync;
type Row = Record<string, SQLInputValue>;

function toRecord(r: Row): ErrorRecord {
  return {
    id: r.id as number,
    at: r.at as number,
    level: r.level as ErrorRecord["level"],
    source: r.source as string,
    code: r.code as string,
    bucket: r.bucket as string,
    requestId: r.request_id as string,
    operation: r.operation as string,
    message: r.message as string,
    detail: r.detail as string,
  };
}

export class SqliteErrors {
  constructor(readonly stmt: Prepare) {}

  /** Adds a row and drops the oldest beyond `max`; ids only grow (AUTOINCREMENT). */
  append(e: Omit<ErrorRecord, "id">, max: number): void {
    const id = Number(
      this.stmt(
        "INSERT INTO error_log (at, level, source, code, bucket, request_id, operation, message, " +
          "detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      ).run(
        e.at,
        e.level,
        e.source,
        e.code,
        e.bucket,
        e.requestId,
        e.operation,
        e.message,
        e.detail,
      )
        .lastInsertRowid,
    );
    this.stmt("DELETE FROM error_log WHERE id <= ?").run(id - max);
  }

  query(q: ErrorQuery): ErrorRecord[] {
    const where = new Where().add("id > ?", q.afterId)
      .add("at >= ?", q.since)
      .add("at < ?", q.until)
      .add("level = ?", q.level)
      .add("bucket = ?", q.bucket)
      .add("code = ?", q.code)
      .add("source = ?", q.source);
    const rows = this.stmt(`SELECT * FROM error_log WHERE ${where.sql} ORDER BY id LIMIT ?`)
      .all(...where.args, q.limit) as Row[];
    return rows.map(toRecord);
  }

  /** Deletes every row, or those older than `before`; returns how many. */
  clear(before?: number): number {
    const result = before === undefined
      ? this.stmt("DELETE FROM error_log").run()
      : this.stmt("DELETE FROM error_log WHERE at < ?").run(before);
    return Number(result.changes);
  }
}
