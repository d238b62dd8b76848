// PgAudit and PgErrors against a real PostgreSQL: the chain verifies after concurrent appends
// from several nodes, pruning moves the anchor and appends the checkpoint, queries filter (the
// checkpoint's check of a moved anchor is in the contract suite); the
// error log's cap, filters, paging and clearing.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { type AuditFacts, ChainVerifier, GENESIS_HASH } from "../../audit/chain.ts";
import type { ErrorRecord } from "../store.ts";
import { AUDIT_DDL, PgAudit } from "./audit.ts";
import { ERRORS_DDL, PgErrors } from "./errors.ts";
import type { Queryable } from "./sql.ts";
import { pool, startCluster } from "./test_db.ts";
import { assertSame } from "../contract/helpers.ts";

function facts(i: number, over: Partial<AuditFacts> = {}): AuditFacts {
  return {
    requestId: `R${i}`,
    principal: i % 2 ? "user:a" : "user:b",
    source: "s3",
    operation: i % 3 ? "PutObject" : "DeleteObject",
    bucket: i % 4 ? "b" : "c",
    key: `dir${i % 2}/k${i}`,
    versionId: "",
    status: i % 5 ? 200 : 403,
    errorCode: "",
    bytes: i * 1000,
    detail: "",
    ...over,
  };
}

async function verify(q: Queryable, audit: PgAudit) {
  const v = new ChainVerifier(await audit.anchor(q));
  let after = v.anchor.seq;
  for (;;) {
    const page = await audit.page(q, after, 100);
    if (!page.length) break;
    for (const e of page) v.add(e);
    after = page[page.length - 1].seq;
  }
  return v.report();
}

Deno.test("PgAudit and PgErrors", async (t) => {
  const cluster = await startCluster();
  const audit = new PgAudit();
  const errors = new PgErrors();
  try {
    await t.step("append chains from genesis; page, head, query filters", async () => {
      const { sql } = await cluster.database(AUDIT_DDL);
      assertEquals(await audit.head(sql), { seq: 0, hash: GENESIS_HASH });
      assertEquals(await audit.anchor(sql), { seq: 0, hash: GENESIS_HASH });
      const written = [];
      for (let i = 1; i <= 20; i++) {
        written.push(await sql.begin((tx) => audit.append(tx, facts(i), 1000 + i)));
      }
      assertSame(await audit.page(sql, 0, 100), written);
      assertEquals(await audit.head(sql), { seq: 20, hash: written[19].hash });
      const report = await verify(sql, audit);
      assert(report.ok, JSON.stringify(report));
      assertEquals(report.entries, 20);
      const seqs = async (f: Partial<Parameters<PgAudit["query"]>[1]>) =>
        (await audit.query(sql, { afterSeq: 0, limit: 100, ...f })).map((e) => e.seq);
      assertEquals(await seqs({ bucket: "c" }), [4, 8, 12, 16, 20]);
      assertEquals(await seqs({ status: 403 }), [5, 10, 15, 20]);
      assertEquals(await seqs({ operation: "DeleteObject", principal: "user:a" }), [3, 9, 15]);
      assertEquals(await seqs({ since: 1005, until: 1008 }), [5, 6, 7]);
      assertEquals(await seqs({ keyPrefix: "dir1/k1" }), [1, 11, 13, 15, 17, 19]);
      assertEquals(await seqs({ keyPrefix: "dir1/k1", afterSeq: 13, limit: 2 }), [15, 17]);
      // A LIKE pattern character in the prefix is taken literally.
      assertEquals(await seqs({ keyPrefix: "dir_" }), []);
    });

    await t.step("a rolled-back change leaves no entry and no fork", async () => {
      const { sql } = await cluster.database(AUDIT_DDL);
      await sql.begin((tx) => audit.append(tx, facts(1)));
      await sql.begin(async (tx) => {
        await audit.append(tx, facts(2));
        throw new Error("change refused");
      }).catch(() => {});
      await sql.begin((tx) => audit.append(tx, facts(3)));
      const all = await audit.page(sql, 0, 10);
      assertEquals(all.map((e) => [e.seq, e.requestId]), [[1, "R1"], [2, "R3"]]);
      assert((await verify(sql, audit)).ok);
    });

    await t.step("three nodes append at once: one linear chain that verifies", async () => {
      const { sql, url } = await cluster.database(AUDIT_DDL);
      const nodes = [pool(url, 6), pool(url, 6), pool(url, 6)];
      try {
        await Promise.all(
          Array.from(
            { length: 450 },
            (_, i) => nodes[i % 3].begin((tx) => audit.append(tx, facts(i))),
          ),
        );
      } finally {
        for (const n of nodes) await n.end({ timeout: 1 });
      }
      const report = await verify(sql, audit);
      assert(report.ok, JSON.stringify(report));
      assertEquals(report.entries, 450);
      const ids = new Set((await audit.page(sql, 0, 1000)).map((e) => e.requestId));
      assertEquals(ids.size, 450);
    });

    await t.step("prune: old entries go, the anchor moves, the checkpoint follows", async () => {
      const { sql } = await cluster.database(AUDIT_DDL);
      for (let i = 1; i <= 10; i++) await sql.begin((tx) => audit.append(tx, facts(i), 100 * i));
      const checkpoint = (a: { seq: number }, n: number) =>
        facts(0, { operation: "AuditCheckpoint", detail: JSON.stringify({ anchor: a.seq, n }) });
      assertEquals(await sql.begin((tx) => audit.prune(tx, 50, checkpoint)), undefined);
      // Everything is old: all but the newest entry go.
      const done = await sql.begin((tx) => audit.prune(tx, 1_000_000, checkpoint));
      assertEquals(done?.pruned, 9);
      assertEquals(done?.anchor.seq, 9);
      assertEquals(await audit.anchor(sql), done!.anchor);
      const rest = await audit.page(sql, 0, 10);
      assertEquals(rest.map((e) => e.seq), [10, 11]);
      assertEquals(rest[1].detail, JSON.stringify({ anchor: 9, n: 9 }));
      assertEquals(await audit.head(sql), { seq: 11, hash: rest[1].hash });
      const report = await verify(sql, audit);
      assert(report.ok, JSON.stringify(report));
      assertEquals([report.anchor_seq, report.entries], [9, 2]);
    });

    await t.step("error log: cap, filters, paging, clearing", async () => {
      const { sql } = await cluster.database(ERRORS_DDL);
      const row = (i: number): Omit<ErrorRecord, "id"> => ({
        at: 1000 + i,
        level: i % 2 === 0 ? "warn" : "error",
        source: i % 3 === 0 ? "scrub" : "request",
        code: i % 2 === 0 ? "" : "InternalError",
        bucket: i < 5 ? "b" : "",
        requestId: `R${i}`,
        operation: "",
        message: `m${i}`,
        detail: "",
      });
      for (let i = 0; i < 12; i++) await errors.append(sql, row(i), 10);
      const all = await errors.query(sql, { afterId: 0, limit: 100 });
      assertEquals(all.map((e) => e.message), Array.from({ length: 10 }, (_, i) => `m${i + 2}`));
      assertEquals(all[0], { id: all[0].id, ...row(2) });
      const errs = await errors.query(sql, { afterId: 0, limit: 100, level: "error" });
      assert(errs.every((e) => e.level === "error" && e.code === "InternalError"));
      assertEquals(errs.length, 5);
      assertEquals(
        (await errors.query(sql, { afterId: 0, limit: 100, source: "scrub" })).map((e) =>
          e.message
        ),
        ["m3", "m6", "m9"],
      );
      assertEquals((await errors.query(sql, { afterId: 0, limit: 100, bucket: "b" })).length, 3);
      assertEquals(
        (await errors.query(sql, { afterId: 0, limit: 100, code: "InternalError", since: 1005 }))
          .length,
        4,
      );
      assertEquals(
        (await errors.query(sql, { afterId: 0, limit: 100, since: 1005, until: 1007 })).length,
        2,
      );
      const first = await errors.query(sql, { afterId: 0, limit: 4 });
      const second = await errors.query(sql, { afterId: first[3].id, limit: 4 });
      assertEquals(second[0].message, "m6");
      assertEquals(await errors.clear(sql, 1006), 4);
      assertEquals(await errors.clear(sql), 6);
      assertEquals(await errors.query(sql, { afterId: 0, limit: 100 }), []);
      // Ids keep growing after clearing.
      await errors.append(sql, row(20), 10);
      assert((await errors.query(sql, { afterId: 0, limit: 1 }))[0].id > all[9].id);
    });
  } finally {
    await cluster.dispose();
  }
});
