// What the cluster's queues in PostgreSQL (buckets, users, records, objects) have in common: a
// table of changes by position (`seq`, `queued_at`) and a table of one cursor per other node,
// moved forward only. Each queue extends this with its own changes and pruning rule.
import { num, type Queryable } from "./sql.ts";

export class PgQueueCursors {
  /** `changeTable` and `cursorTable`: the queue's table names (constants of this store). */
  constructor(readonly changeTable: string, readonly cursorTable: string) {}

  async cursor(q: Queryable, node: string): Promise<number> {
    const [row] = await q`SELECT seq FROM ${q(this.cursorTable)} WHERE node = ${node}`;
    return row ? num(row.seq) : 0;
  }

  /** Moves a node's cursor forward (never back). */
  async setCursor(q: Queryable, node: string, seq: number): Promise<void> {
    await q`
      INSERT INTO ${q(this.cursorTable)} AS c (node, seq) VALUES (${node}, ${seq})
      ON CONFLICT (node) DO UPDATE SET seq = GREATEST(c.seq, excluded.seq)`;
  }

  /** Whether any change lies after `after` (one statement, for a poll of an idle queue). */
  async hasChanges(q: Queryable, after: number): Promise<boolean> {
    const [row] = await q`
      SELECT EXISTS (SELECT 1 FROM ${q(this.changeTable)} WHERE seq > ${after}) AS found`;
    return row.found as boolean;
  }

  /** How many changes lie after `after`, and when the oldest of them was queued. */
  async backlog(q: Queryable, after: number): Promise<{ depth: number; oldest?: number }> {
    const [row] = await q`
      SELECT count(*) AS depth, min(queued_at) AS oldest FROM ${q(this.changeTable)}
      WHERE seq > ${after}`;
    return { depth: num(row.depth), oldest: row.oldest === null ? undefined : num(row.oldest) };
  }

  /**
   * The position every node has received up to: the lowest cursor of `nodes` and of every node
   * with a stored cursor (0 when one of `nodes` has none, or nothing is stored).
   */
  async received(q: Queryable, nodes: string[]): Promise<number> {
    const rows = await q`SELECT node, seq FROM ${q(this.cursorTable)}`;
    const cursors = new Map(rows.map((r) => [r.node as string, num(r.seq)]));
    const upTo = Math.min(...cursors.values(), ...nodes.map((n) => cursors.get(n) ?? 0));
    return upTo > 0 ? upTo : 0;
  }

  /** Drops a node's cursor; whether it had one. */
  async forget(q: Queryable, node: string): Promise<boolean> {
    return (await q`DELETE FROM ${q(this.cursorTable)} WHERE node = ${node}`).count > 0;
  }
}
