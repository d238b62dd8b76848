// The audit chain and the error log in SQLite: a change's entry commits with the change or not at
// all, concurrent writes chain linearly, pruning leaves a verifiable chain and a moved anchor is
// found; the error log's cap, filters, paging and clearing.
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { GENESIS_HASH } from "../audit/chain.ts";
import { newScope, runAudited } from "../audit/scope.ts";
import { verifyStored } from "../audit/verify.ts";
import { pruneAudit } from "../audit/retention.ts";
import { DatabaseSync } from "node:sqlite";
import { SqliteMetaStore } from "./sqlite.ts";
import type { ObjectVersion } from "./store.ts";

function version(key: string, size = 1): ObjectVersion {
  return {
    bucket: "b",
    key,
    versionId: "null",
    deleteMarker: false,
    size,
    etag: '"x"',
    lastModified: 0,
    contentType: "text/plain",
    userMeta: {},
    headers: {},
    owner: "o",
    data: { kind: "inline", bytes: new Uint8Array(size) },
  };
}

async function store(audit = true): Promise<SqliteMetaStore> {
  const meta = new SqliteMetaStore(":memory:", { audit });
  await meta.createBucket({
    name: "b",
    owner: "o",
    createdAt: 0,
    region: "r",
    versioning: "",
    objectLock: false,
  });
  return meta;
}

Deno.test("audit: a change and its entry commit together or not at all", async () => {
  const meta = await store();
  const scope = newScope({ requestId: "R1", principal: "user:u", operation: "PutObject" });
  scope.bucket = "b";
  await runAudited(scope, () => meta.putObjectVersion(version("ok", 7)));
  assertEquals(scope.recorded, 1);
  // A write whose guard refuses rolls back, entry included.
  const refused = newScope({ requestId: "R2", operation: "PutObject" });
  let failed = false;
  await runAudited(refused, () =>
    meta.putObjectVersion(version("no"), [], {
      guard: () => {
        throw new Error("precondition");
      },
    })).catch(() => (failed = true));
  assert(failed);
  assertEquals(refused.recorded, 0);
  // Outside any scope (start-up, tests) nothing is recorded.
  await meta.putObjectVersion(version("quiet"));
  const all = await meta.auditPage(0, 100);
  assertEquals(all.length, 1);
  assertEquals(
    [all[0].requestId, all[0].principal, all[0].bucket, all[0].key, all[0].bytes],
    ["R1", "user:u", "b", "ok", 7],
  );
  assert(!(await meta.getObjectVersion("b", "no")));
  await meta.close();
});

Deno.test("audit: writes joined in one group commit chain one after another", async () => {
  const meta = await store();
  await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      runAudited(
        newScope({ requestId: `R${i}`, operation: "PutObject", bucket: "b" }),
        () => meta.putObjectVersion(version(`k${i}`)),
      )),
  );
  const report = await verifyStored(meta);
  assert(report.ok, JSON.stringify(report));
  assertEquals(report.entries, 200);
  assertEquals(new Set((await meta.auditPage(0, 1000)).map((e) => e.requestId)).size, 200);
  await meta.close();
});

Deno.test("audit: STORE_AUDIT=off records nothing", async () => {
  const meta = await store(false);
  await runAudited(newScope({ requestId: "R" }), () => meta.putObjectVersion(version("k")));
  assertEquals(await meta.auditHead(), { seq: 0, hash: GENESIS_HASH });
  await meta.close();
});

Deno.test("error log: cap, filters, paging, clearing", async () => {
  const meta = await store();
  const row = (i: number) => ({
    at: 1000 + i,
    level: i % 2 === 0 ? "warn" as const : "error" as const,
    source: i % 3 === 0 ? "scrub" : "request",
    code: i % 2 === 0 ? "" : "InternalError",
    bucket: i < 5 ? "b" : "",
    requestId: `R${i}`,
    operation: "",
    message: `m${i}`,
    detail: "",
  });
  for (let i = 0; i < 12; i++) await meta.appendError(row(i), 10);
  const all = await meta.queryErrors({ afterId: 0, limit: 100 });
  assertEquals(all.map((e) => e.message), Array.from({ length: 10 }, (_, i) => `m${i + 2}`));
  const errors = await meta.queryErrors({ afterId: 0, limit: 100, level: "error" });
  assert(errors.every((e) => e.level === "error" && e.code === "InternalError"));
  assertEquals(errors.length, 5);
  assertEquals(
    (await meta.queryErrors({ afterId: 0, limit: 100, source: "scrub" })).map((e) => e.message),
    ["m3", "m6", "m9"],
  );
  assertEquals((await meta.queryErrors({ afterId: 0, limit: 100, bucket: "b" })).length, 3);
  assertEquals(
    (await meta.queryErrors({ afterId: 0, limit: 100, since: 1005, until: 1007 })).length,
    2,
  );
  const first = await meta.queryErrors({ afterId: 0, limit: 4 });
  const second = await meta.queryErrors({ afterId: first[3].id, limit: 4 });
  assertEquals(second[0].message, "m6");
  assertEquals(await meta.clearErrors(1006), 4);
  assertEquals(await meta.clearErrors(), 6);
  assertEquals(await meta.queryErrors({ afterId: 0, limit: 100 }), []);
  await meta.close();
});

Deno.test("audit: pruning keeps the rest verifiable; a moved anchor is found", async () => {
  const dir = await Deno.makeTempDir({ prefix: "store-audit-unit-" });
  try {
    const path = `${dir}/meta.db`;
    let meta = await storeAt(path);
    for (let i = 0; i < 10; i++) {
      await runAudited(
        newScope({ requestId: `R${i}`, operation: "PutObject", bucket: "b" }),
        () => meta.putObjectVersion(version(`k${i}`)),
      );
    }
    const pruned = await pruneAudit(meta, Date.now() + 1000);
    // Everything but the newest entry goes; the checkpoint follows it.
    assertEquals(pruned?.pruned, 9);
    const report = await verifyStored(meta);
    assert(report.ok, JSON.stringify(report));
    assertEquals([report.anchor_seq, report.entries], [9, 2]);
    await meta.close();
    // Someone removes entry 10 and makes it the anchor: the checkpoint no longer names it.
    const db = new DatabaseSync(path);
    const tenth = db.prepare("SELECT hash FROM audit_log WHERE seq = 10").get() as { hash: string };
    db.prepare("DELETE FROM audit_log WHERE seq = 10").run();
    db.prepare("UPDATE audit_anchor SET seq = 10, hash = ?").run(tenth.hash);
    db.close();
    meta = await storeAt(path, false);
    const moved = await verifyStored(meta);
    assertEquals([moved.ok, moved.first_bad_seq], [false, 11]);
    await meta.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

async function storeAt(path: string, fresh = true): Promise<SqliteMetaStore> {
  const meta = new SqliteMetaStore(path);
  if (fresh) {
    await meta.createBucket({
      name: "b",
      owner: "o",
      createdAt: 0,
      region: "r",
      versioning: "",
      objectLock: false,
    });
  }
  return meta;
}
