// The error log in PostgreSQL: warnings and errors of requests and background work, at most `max`
// rows (the oldest go first); behaves as src/meta/sqlite_errors.ts.
import type { ErrorQuery, ErrorRecord } from "../store.ts";
import { num, type Queryable } from "./sql.ts";

export const ERRORS_DDL = `
  CREATE TABLE error_log (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at BIGINT NOT NULL,
    level TEXT NOT NULL,
    source TEXT NOT NULL,
    code TEXT NOT NULL,
    bucket TEXT COLLATE "C" NOT NULL,
    request_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    message TEXT NOT NULL,
    detail TEXT NOT NULL
  );
  CREATE INDEX error_log_by_time ON error_log (at);
`;

type Row = Record<string, unknown>;

function toRecord(r: Row): ErrorRecord {
  return {
    id: num(r.id),
    at: num(r.at),
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

export class PgErrors {
  /** Adds a row and drops the oldest beyond `max`, in one statement; ids only grow. */
  async append(q: Queryable, e: Omit<ErrorRecord, "id">, max: number): Promise<void> {
    await q`
      WITH ins AS (
        INSERT INTO error_log (at, level, source, code, bucket, request_id, operation, message,
          detail)
        VALUES (${e.at}, ${e.level}, ${e.source}, ${e.code}, ${e.bucket}, ${e.requestId},
          ${e.operation}, ${e.message}, ${e.detail})
        RETURNING id
      )
      DELETE FROM error_log WHERE id <= (SELECT id FROM ins) - ${max}`;
  }

  async query(q: Queryable, f: ErrorQuery): Promise<ErrorRecord[]> {
    const none = q``;
    const rows = await q`
      SELECT * FROM error_log WHERE id > ${f.afterId}
        ${f.since !== undefined ? q`AND at >= ${f.since}` : none}
        ${f.until !== undefined ? q`AND at < ${f.until}` : none}
        ${f.level !== undefined ? q`AND level = ${f.level}` : none}
        ${f.bucket !== undefined ? q`AND bucket = ${f.bucket}` : none}
        ${f.code !== undefined ? q`AND code = ${f.code}` : none}
        ${f.source !== undefined ? q`AND source = ${f.source}` : none}
      ORDER BY id LIMIT ${f.limit}`;
    return rows.map(toRecord);
  }

  /** Deletes every row, or those older than `before`; returns how many. */
  async clear(q: Queryable, before?: number): Promise<number> {
    const result = before === undefined
      ? await q`DELETE FROM error_log`
      : await q`DELETE FROM error_log WHERE at < ${before}`;
    return result.count;
  }
}
