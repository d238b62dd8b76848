// The MetaStore contract against SQLite: a fresh database file in a temp directory per case.
import { SqliteMetaStore } from "../sqlite.ts";
import { runContract } from "./mod.ts";

Deno.test("MetaStore contract: SQLite", async (t) => {
  await runContract(t, async () => {
    const dir = await Deno.makeTempDir({ prefix: "store-contract-" });
    const store = new SqliteMetaStore(`${dir}/meta.db`);
    return {
      store,
      close: async () => {
        await store.close();
        await Deno.remove(dir, { recursive: true });
      },
    };
  });
});
