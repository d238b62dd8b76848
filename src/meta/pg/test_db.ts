// For the PostgreSQL modules' tests: one real PostgreSQL per test file (tests/services), a fresh
// database for each test with the given DDL applied.
import postgres from "postgres";
import { createPostgres, type Postgres } from "../../../tests/services/postgres.ts";

export interface TestCluster {
  /** A new empty database with `ddl` applied; its URL and a pool on it. */
  database(ddl: string, max?: number): Promise<{ url: string; sql: postgres.Sql }>;
  dispose(): Promise<void>;
}

export async function startCluster(): Promise<TestCluster> {
  const pg: Postgres = await createPostgres();
  await pg.start();
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
  const pools: postgres.Sql[] = [];
  let n = 0;
  return {
    async database(ddl, max = 4) {
      const name = `t${++n}`;
      await admin.unsafe(`CREATE DATABASE ${name}`);
      const url = pg.url.replace(/\/postgres$/, `/${name}`);
      const sql = postgres(url, { max, onnotice: () => {} });
      pools.push(sql);
      await sql.unsafe(ddl);
      return { url, sql };
    },
    async dispose() {
      for (const p of pools) await p.end({ timeout: 1 });
      await admin.end({ timeout: 1 });
      await pg.dispose();
    },
  };
}

/** A pool the test closes itself (a second "node" on the same database). */
export function pool(url: string, max = 4): postgres.Sql {
  return postgres(url, { max, onnotice: () => {} });
}
