// What the cluster's queues in SQLite (buckets, users, records, objects) have in common: a table
// of changes by position (`seq`, `queued_at`) and a table of one cursor per other node, moved
// forward only. Each queue extends this with its own changes and pruning rule.
import type { SQLInputValue, StatementSync } from "node:sqlite";

type Row = Record<string, SQLInputValue>;

export class SqliteQueueCursors {
  /** `changeTable` and `cursorTable`: the queue's table names (constants of this store). */
  constructor(
    readonly stmt: (sql: string) => StatementSync,
    readonly changeTable: string,
    readonly cursorTable: string,
  ) {}

  cursor(node: string): number {
    const row = this.stmt(`SELECT seq FROM ${this.cursorTable} WHERE node = ?`).get(node) as
      | Row
      | undefined;
    return (row?.seq as number | undefined) ?? 0;
  }

  /** Moves a node's cursor forward (never back). */
  setCursor(node: string, seq: number): void {
    this.stmt(
      `INSERT INTO ${this.cursorTable} (node, seq) VALUES (?, ?) ` +
        "ON CONFLICT(node) DO UPDATE SET seq = max(seq, excluded.seq)",
    ).run(node, seq);
  }

  /** How many changes lie after `after`, and when the oldest of them was queued. */
  backlog(after: number): { depth: number; oldest?: number } {
    const row = this.stmt(
      `SELECT count(*) AS depth, min(queued_at) AS oldest FROM ${this.changeTable} WHERE seq > ?`,
    ).get(after) as Row;
    return { depth: row.depth as number, oldest: (row.oldest as number | null) ?? undefined };
  }

  /**
   * The position every node has received up to: the lowest cursor of `nodes` and of every node
   * with a stored cursor (0 when one of `nodes` has none, or nothing is stored).
   */
  received(nodes: string[]): number {
    const rows = this.stmt(`SELECT node, seq FROM ${this.cursorTable}`).all() as Row[];
    const cursors = new Map(rows.map((r) => [r.node as string, r.seq as number]));
    const upTo = Math.min(...cursors.values(), ...nodes.map((n) => cursors.get(n) ?? 0));
    return upTo > 0 ? upTo : 0;
  }

  /** Drops a node's cursor; whether it had one. */
  forget(node: string): boolean {
    return this.stmt(`DELETE FROM ${this.cursorTable} WHERE node = ?`).run(node).changes > 0;
  }
}
