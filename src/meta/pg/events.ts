// The event outbox in PostgreSQL; behaves as src/meta/sqlite_events.ts. Several nodes append to
// one log, so sequence numbers come from a head row (event_head) that each append advances: the
// row lock it takes is held until the appending transaction ends, so appends commit one at a
// time in sequence order. A reader that has seen seq N never later sees a smaller seq appear, and
// a rolled-back append gives its numbers back (no gaps). Lock order for a transaction that also
// writes the audit chain: the event head first, then the audit head (as SqliteMetaStore appends).
import type { OutboxEvent, StoredEvent } from "../store.ts";
import { num, type Queryable } from "./sql.ts";

export const EVENTS_DDL = `
  CREATE TABLE event_log (
    seq BIGINT PRIMARY KEY,
    at BIGINT NOT NULL,
    bucket TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    name TEXT NOT NULL,
    detail TEXT NOT NULL
  );
  CREATE INDEX event_log_by_bucket ON event_log (bucket, seq);
  -- The newest sequence number ever assigned (pruning never lowers it).
  CREATE TABLE event_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq BIGINT NOT NULL
  );
  INSERT INTO event_head (id, seq) VALUES (1, 0);
  -- Each consumer reads the log from its own cursor: the last seq it has finished with.
  CREATE TABLE event_cursors (
    consumer TEXT COLLATE "C" PRIMARY KEY,
    seq BIGINT NOT NULL
  );
`;

type Row = Record<string, unknown>;

function toEvent(row: Row): StoredEvent {
  return {
    seq: num(row.seq),
    at: num(row.at),
    bucket: row.bucket as string,
    key: row.key as string,
    name: row.name as string,
    detail: row.detail as string,
  };
}

export class PgEvents {
  /**
   * Appends events in order and returns the head (the last seq assigned). One statement, so it is
   * atomic on the pool too; inside a transaction the head stays locked until it ends.
   */
  async append(q: Queryable, events: OutboxEvent[], at = Date.now()): Promise<number> {
    if (!events.length) return (await this.bounds(q)).head;
    const rows = await q`
      WITH head AS (
        UPDATE event_head SET seq = seq + ${events.length} WHERE id = 1 RETURNING seq
      ), ins AS (
        INSERT INTO event_log (seq, at, bucket, key, name, detail)
        SELECT head.seq - ${events.length} + e.n, ${at}, e.bucket, e.key, e.name, e.detail
        FROM head, unnest(${events.map((e) => e.bucket)}::text[],
          ${events.map((e) => e.key)}::text[], ${events.map((e) => e.name)}::text[],
          ${events.map((e) => e.detail)}::text[]) WITH ORDINALITY AS e(bucket, key, name, detail, n)
      )
      SELECT seq FROM head`;
    return num(rows[0].seq);
  }

  async read(q: Queryable, after: number, limit: number, bucket?: string): Promise<StoredEvent[]> {
    const rows = bucket === undefined
      ? await q`SELECT * FROM event_log WHERE seq > ${after} ORDER BY seq LIMIT ${limit}`
      : await q`
        SELECT * FROM event_log WHERE bucket = ${bucket} AND seq > ${after}
        ORDER BY seq LIMIT ${limit}`;
    return rows.map(toEvent);
  }

  /** The newest seq ever assigned (0 when none) and the oldest still kept. */
  async bounds(q: Queryable): Promise<{ head: number; oldest?: number }> {
    const [row] = await q`
      SELECT (SELECT seq FROM event_head WHERE id = 1) AS head,
        (SELECT min(seq) FROM event_log) AS oldest`;
    return { head: num(row.head), oldest: row.oldest === null ? undefined : num(row.oldest) };
  }

  async count(q: Queryable, after: number, bucket?: string): Promise<number> {
    const [row] = bucket === undefined
      ? await q`SELECT count(*) AS n FROM event_log WHERE seq > ${after}`
      : await q`SELECT count(*) AS n FROM event_log WHERE bucket = ${bucket} AND seq > ${after}`;
    return num(row.n);
  }

  async getCursor(q: Queryable, consumer: string): Promise<number | undefined> {
    const rows = await q`SELECT seq FROM event_cursors WHERE consumer = ${consumer}`;
    return rows.length ? num(rows[0].seq) : undefined;
  }

  async setCursor(q: Queryable, consumer: string, seq: number): Promise<void> {
    await q`
      INSERT INTO event_cursors (consumer, seq) VALUES (${consumer}, ${seq})
      ON CONFLICT (consumer) DO UPDATE SET seq = excluded.seq`;
  }

  async deleteCursor(q: Queryable, consumer: string): Promise<void> {
    await q`DELETE FROM event_cursors WHERE consumer = ${consumer}`;
  }

  async listCursors(q: Queryable): Promise<{ consumer: string; seq: number }[]> {
    const rows = await q`SELECT consumer, seq FROM event_cursors ORDER BY consumer`;
    return rows.map((r) => ({ consumer: r.consumer as string, seq: num(r.seq) }));
  }

  /** Removes events up to `upTo` committed before `before` (epoch ms); returns how many. */
  async prune(q: Queryable, upTo: number, before: number): Promise<number> {
    return (await q`DELETE FROM event_log WHERE seq <= ${upTo} AND at < ${before}`).count;
  }
}
