// The event outbox in SQLite: rows appended inside write transactions, read by consumers that
// keep their own cursors (table event_cursors), pruned once every cursor has passed them.
import type { SQLInputValue, StatementSync } from "node:sqlite";
import type { OutboxEvent, StoredEvent } from "./store.ts";

type Row = Record<string, SQLInputValue>;
type Prepare = (sql: string) => StatementSync;

function toEvent(row: Row): StoredEvent {
  return {
    seq: row.seq as number,
    at: row.at as number,
    bucket: row.bucket as string,
    key: row.key as string,
    name: row.name as string,
    detail: row.detail as string,
  };
}

export class SqliteEvents {
  constructor(readonly stmt: Prepare) {}

  /** Appends one event; must run inside the caller's transaction. */
  append(event: OutboxEvent): void {
    this.#insert(Date.now(), event);
  }

  #insert(at: number, event: OutboxEvent): void {
    this.stmt("INSERT INTO event_log (at, bucket, key, name, detail) VALUES (?, ?, ?, ?, ?)")
      .run(at, event.bucket, event.key, event.name, event.detail);
  }

  /**
   * Appends events in order, one time for all; must run inside the caller's transaction. Row by
   * row through one prepared statement: one INSERT of the batch as a JSON array cost more (each
   * event's detail, itself JSON, escaped into the array and extracted again).
   */
  appendMany(events: OutboxEvent[]): void {
    const at = Date.now();
    for (const e of events) this.#insert(at, e);
  }

  read(after: number, limit: number, bucket?: string): StoredEvent[] {
    const rows = bucket === undefined
      ? this.stmt("SELECT * FROM event_log WHERE seq > ? ORDER BY seq LIMIT ?").all(after, limit)
      : this.stmt(
        "SELECT * FROM event_log WHERE bucket = ? AND seq > ? ORDER BY seq LIMIT ?",
      ).all(bucket, after, limit);
    return (rows as Row[]).map(toEvent);
  }

  bounds(): { head: number; oldest?: number } {
    const head = this.stmt("SELECT seq FROM sqlite_sequence WHERE name = 'event_log'")
      .get() as Row | undefined;
    const oldest = this.stmt("SELECT min(seq) AS seq FROM event_log").get() as Row;
    return {
      head: (head?.seq as number | undefined) ?? 0,
      oldest: (oldest.seq as number | null) ?? undefined,
    };
  }

  count(after: number, bucket?: string): number {
    const row = bucket === undefined
      ? this.stmt("SELECT count(*) AS n FROM event_log WHERE seq > ?").get(after)
      : this.stmt("SELECT count(*) AS n FROM event_log WHERE bucket = ? AND seq > ?")
        .get(bucket, after);
    return (row as Row).n as number;
  }

  getCursor(consumer: string): number | undefined {
    const row = this.stmt("SELECT seq FROM event_cursors WHERE consumer = ?").get(consumer) as
      | Row
      | undefined;
    return row ? (row.seq as number) : undefined;
  }

  setCursor(consumer: string, seq: number): void {
    this.stmt(
      "INSERT INTO event_cursors (consumer, seq) VALUES (?, ?) " +
        "ON CONFLICT(consumer) DO UPDATE SET seq = excluded.seq",
    ).run(consumer, seq);
  }

  deleteCursor(consumer: string): void {
    this.stmt("DELETE FROM event_cursors WHERE consumer = ?").run(consumer);
  }

  listCursors(): { consumer: string; seq: number }[] {
    const rows = this.stmt("SELECT consumer, seq FROM event_cursors ORDER BY consumer").all();
    return (rows as Row[]).map((r) => ({ consumer: r.consumer as string, seq: r.seq as number }));
  }

  prune(upTo: number, before: number): number {
    return Number(
      this.stmt("DELETE FROM event_log WHERE seq <= ? AND at < ?").run(upTo, before).changes,
    );
  }
}
