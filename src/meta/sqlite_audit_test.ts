// SQLite-only checks of the audit chain (the behaviour every store shares is the contract suite,
// src/meta/contract): STORE_AUDIT=off, and an anchor moved by editing the database file is found.
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

Deno.test("audit: STORE_AUDIT=off records nothing", async () => {
  const meta = await store(false);
  await runAudited(newScope({ requestId: "R" }), () => meta.putObjectVersion(version("k")));
  assertEquals(await meta.auditHead(), { seq: 0, hash: GENESIS_HASH });
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
