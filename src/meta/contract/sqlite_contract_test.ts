// The MetaStore contract against SQLite: a fresh database file in a temp directory per case (the
// second node of the node cases opens the same file).
import { SqliteMetaStore } from "../sqlite.ts";
import { runContract } from "./mod.ts";

Deno.test("MetaStore contract: SQLite", async (t) => {
  await runContract(t, async () => {
    const dir = await Deno.makeTempDir({ prefix: "store-contract-" });
    const path = `${dir}/meta.db`;
    const store = new SqliteMetaStore(path);
    return {
      store,
      peer: () => Promise.resolve(new SqliteMetaStore(path)),
      close: async () => {
        await store.close();
        await Deno.remove(dir, { recursive: true });
      },
    };
  });
});
