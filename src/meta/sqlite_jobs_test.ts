// Transformation jobs and KMS keys on SQLite (cases in contract/jobs_keys.ts).
import { jobAndKeyCases } from "./contract/jobs_keys.ts";
import { SqliteMetaStore } from "./sqlite.ts";

jobAndKeyCases(
  (name, fn) => Deno.test(`SQLite: ${name}`, fn),
  () => Promise.resolve(new SqliteMetaStore(":memory:")),
);
