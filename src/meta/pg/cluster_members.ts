// A node's member list and the nodes an administrator forgot, in PostgreSQL (see MemberListStore
// in store.ts); behaves as src/meta/sqlite_cluster_members.ts. Nodes sharing the database each
// keep their own rows (`owner`: the node's id).
import type { SavedMembers } from "../store.ts";
import { num, type Queryable } from "./sql.ts";

export const CLUSTER_MEMBERS_DDL = `
  CREATE TABLE cluster_members (
    owner TEXT COLLATE "C" NOT NULL,
    id TEXT COLLATE "C" NOT NULL,
    url TEXT,
    forgotten_at BIGINT,
    PRIMARY KEY (owner, id)
  );
`;

export class PgClusterMembers {
  async load(q: Queryable, owner: string): Promise<SavedMembers> {
    const rows = await q`
      SELECT id, url, forgotten_at FROM cluster_members WHERE owner = ${owner} ORDER BY id`;
    return {
      members: rows.filter((r) => r.forgotten_at === null).map((r) => ({
        id: r.id as string,
        url: r.url as string,
      })),
      forgotten: rows.filter((r) => r.forgotten_at !== null).map((r) => ({
        id: r.id as string,
        at: num(r.forgotten_at),
      })),
    };
  }

  /** Inside the caller's transaction. */
  async save(q: Queryable, owner: string, list: SavedMembers): Promise<void> {
    await q`DELETE FROM cluster_members WHERE owner = ${owner}`;
    for (const m of list.members) {
      await q`INSERT INTO cluster_members (owner, id, url) VALUES (${owner}, ${m.id}, ${m.url})`;
    }
    for (const f of list.forgotten) {
      await q`
        INSERT INTO cluster_members (owner, id, forgotten_at) VALUES (${owner}, ${f.id}, ${f.at})
        ON CONFLICT (owner, id) DO UPDATE SET url = NULL, forgotten_at = excluded.forgotten_at`;
    }
  }
}
