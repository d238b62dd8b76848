// A node's member list and the nodes an administrator forgot, in SQLite (table cluster_members;
// see MemberListStore in store.ts): replaced whole on each save, read once at start-up.
import type { SQLInputValue, StatementSync } from "node:sqlite";
import type { SavedMembers } from "./store.ts";

type Row = Record<string, SQLInputValue>;

export class SqliteClusterMembers {
  constructor(readonly stmt: (sql: string) => StatementSync) {}

  load(owner: string): SavedMembers {
    const rows = this.stmt(
      "SELECT id, url, forgotten_at FROM cluster_members WHERE owner = ? ORDER BY id",
    ).all(owner) as Row[];
    return {
      members: rows.filter((r) => r.forgotten_at === null).map((r) => ({
        id: r.id as string,
        url: r.url as string,
      })),
      forgotten: rows.filter((r) => r.forgotten_at !== null).map((r) => ({
        id: r.id as string,
        at: r.forgotten_at as number,
      })),
    };
  }

  /** Inside the caller's transaction. */
  save(owner: string, list: SavedMembers): void {
    this.stmt("DELETE FROM cluster_members WHERE owner = ?").run(owner);
    const insert = this.stmt(
      "INSERT OR REPLACE INTO cluster_members (owner, id, url, forgotten_at) VALUES (?, ?, ?, ?)",
    );
    for (const m of list.members) insert.run(owner, m.id, m.url, null);
    for (const f of list.forgotten) insert.run(owner, f.id, null, f.at);
  }
}
