// The MetaStore contract against PostgreSQL: one real server for the file (tests/services), a
// fresh database per case, the store migrating it on open as a node does at start-up (the
// second node of the node cases is another store with its own pool on the same database).
import postgres from "postgres";
import { createPostgres } from "../../../tests/services/postgres.ts";
import { PgMetaStore } from "../pg/store.ts";
import { runContract } from "./mod.ts";

Deno.test("MetaStore contract: PostgreSQL", async (t) => {
  const pg = await createPostgres();
  await pg.start();
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
  let n = 0;
  try {
    await runContract(t, async () => {
      const name = `contract${++n}`;
      await admin.unsafe(`CREATE DATABASE ${name}`);
      const url = pg.url.replace(/\/postgres$/, `/${name}`);
      const store = await PgMetaStore.open({ url, pool: 4 });
      return {
        store,
        peer: () => PgMetaStore.open({ url, pool: 4 }),
        close: () => store.close(),
      };
    });
  } finally {
    await admin.end({ timeout: 1 });
    await pg.dispose();
  }
});
