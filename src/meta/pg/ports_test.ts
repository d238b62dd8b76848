// Transformation jobs, KMS keys and the cluster's bucket, object and user queues on a real
// PostgreSQL: the cases SQLite runs too (contract/jobs_keys.ts, contract/*replication.ts), each store on a fresh
// database (or on the database a case names again, for a restart).
import postgres from "postgres";
import { createPostgres } from "../../../tests/services/postgres.ts";
import { jobAndKeyCases } from "../contract/jobs_keys.ts";
import { replicationCases } from "../contract/replication.ts";
import { objectReplicationCases } from "../contract/object_replication.ts";
import { userReplicationCases } from "../contract/user_replication.ts";
import { recordReplicationCases } from "../contract/record_replication.ts";
import { memberListCases } from "../contract/member_list.ts";
import { PgMetaStore } from "./store.ts";

Deno.test("PostgreSQL: jobs, KMS keys and the bucket-change queue", async (t) => {
  const pg = await createPostgres();
  await pg.start();
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
  const named = new Map<string, string>();
  let n = 0;
  const open = async (opts: { clusterNode?: string; data?: string } = {}) => {
    let db = opts.data === undefined ? undefined : named.get(opts.data);
    if (!db) {
      db = `ports${++n}`;
      await admin.unsafe(`CREATE DATABASE ${db}`);
      if (opts.data !== undefined) named.set(opts.data, db);
    }
    const url = pg.url.replace(/\/postgres$/, `/${db}`);
    return await PgMetaStore.open({ url, pool: 2, clusterNode: opts.clusterNode });
  };
  const cases: [string, () => Promise<void>][] = [];
  const collect = (name: string, fn: () => Promise<void>) => void cases.push([name, fn]);
  jobAndKeyCases(collect, () => open());
  replicationCases(collect, open);
  objectReplicationCases(collect, open);
  userReplicationCases(collect, open);
  recordReplicationCases(collect, open);
  memberListCases(collect, open);
  try {
    for (const [name, fn] of cases) await t.step(name, fn);
  } finally {
    await admin.end({ timeout: 1 });
    await pg.dispose();
  }
});
