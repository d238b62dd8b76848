// The integration core with the server's metadata in PostgreSQL (STORE_META_URL): the existing
// suites for objects, listings, copy and delete, versioning and multipart (with their chunk
// counts) run again, each server on a fresh database of one real PostgreSQL.
import { MIGRATIONS } from "../../src/meta/pg/schema.ts";
import { assert, assertEquals } from "./assert.ts";
import { startPgMeta } from "./postgres_meta_helpers.ts";
import { useMetaDatabase } from "./server.ts";

const pg = await startPgMeta();
useMetaDatabase(() => pg.database());

await import("./sdk_objects_test.ts");
await import("./sdk_list_test.ts");
await import("./sdk_copy_delete_test.ts");
await import("./versioning_test.ts");
await import("./multipart_test.ts");

Deno.test("every server kept its metadata in its own PostgreSQL database", async () => {
  try {
    assert(pg.urls.length >= 8, `only ${pg.urls.length} servers on PostgreSQL`);
    for (const url of pg.urls) {
      const sql = pg.query(url);
      const [row] = await sql`SELECT version FROM schema_version`;
      const [buckets] = await sql`SELECT count(*)::int AS n FROM buckets`;
      assertEquals(row.version, MIGRATIONS.length);
      assert(buckets.n > 0, `no bucket in ${url}`);
    }
  } finally {
    await pg.dispose();
  }
});
