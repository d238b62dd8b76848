// Servers whose metadata lives in a real PostgreSQL (STORE_META_URL): one PostgreSQL per test
// file (tests/services), a fresh database per scenario, read back directly to check counts.
import postgres from "postgres";
import { createPostgres, type Postgres } from "../services/postgres.ts";
import { type StartOptions, startServer, type TestServer } from "./server.ts";

export interface PgMeta {
  pg: Postgres;
  /** The databases created so far. */
  readonly urls: string[];
  /** A new empty database; its URL. */
  database(): Promise<string>;
  /** A pool on a database, closed by dispose(). */
  query(url: string): postgres.Sql;
  dispose(): Promise<void>;
}

export async function startPgMeta(): Promise<PgMeta> {
  const pg = await createPostgres();
  await pg.start();
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
  const pools: postgres.Sql[] = [];
  const urls: string[] = [];
  return {
    pg,
    urls,
    async database() {
      const name = `meta${urls.length + 1}`;
      await admin.unsafe(`CREATE DATABASE ${name}`);
      urls.push(pg.url.replace(/\/postgres$/, `/${name}`));
      return urls[urls.length - 1];
    },
    query(url) {
      const sql = postgres(url, { max: 2, onnotice: () => {} });
      pools.push(sql);
      return sql;
    },
    async dispose() {
      for (const p of pools) await p.end({ timeout: 1 });
      await admin.end({ timeout: 1 });
      await pg.dispose();
    },
  };
}

/** A server on its own temp data directory with its metadata in the database at `url`. */
export function startPgServer(url: string, opts: StartOptions = {}): Promise<TestServer> {
  return startServer({ ...opts, env: { STORE_META_URL: url, ...opts.env } });
}

/** Stops a server and removes its data directory. */
export async function stopServer(server: TestServer): Promise<void> {
  await server.stop();
  await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
}

/** Chunk id -> reference count, and whether every count equals the references to the chunk. */
export async function chunkCounts(
  sql: postgres.Sql,
): Promise<{ counts: Map<string, number>; exact: boolean }> {
  const rows = await sql`
    SELECT c.id, c.refcount,
      (SELECT count(*) FROM version_chunks vc WHERE vc.chunk_id = c.id)::int AS refs
    FROM chunks c ORDER BY c.id`;
  return {
    counts: new Map(rows.map((r) => [r.id as string, Number(r.refcount)])),
    exact: rows.every((r) => Number(r.refcount) === r.refs),
  };
}
