// Contract cases: the audit chain. A change's entry commits with the change or not at all,
// concurrent changes chain one after another, pruning leaves a verifiable chain behind a
// checkpoint, queries filter.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { type AuditFacts, GENESIS_HASH } from "../../audit/chain.ts";
import { pruneAudit } from "../../audit/retention.ts";
import { newScope, runAudited } from "../../audit/scope.ts";
import { CHECKPOINT_OPERATION, verifyStored } from "../../audit/verify.ts";
import { assertSame, type ContractCase, version, withBucket } from "./helpers.ts";

function facts(i: number, over: Partial<AuditFacts> = {}): AuditFacts {
  return {
    requestId: `R${i}`,
    principal: i % 2 ? "user:a" : "user:b",
    source: "s3",
    operation: i % 3 ? "GetObject" : "HeadObject",
    bucket: i % 4 ? "b" : "c",
    key: `dir${i % 2}/k${i}`,
    versionId: "",
    status: i % 5 ? 200 : 403,
    errorCode: i % 5 ? "" : "AccessDenied",
    bytes: i * 1000,
    detail: "",
    ...over,
  };
}

export const AUDIT_CASES: ContractCase[] = [
  {
    name: "audit: a change and its entry commit together or not at all",
    fn: async (store) => {
      await withBucket(store);
      assertEquals(await store.auditHead(), { seq: 0, hash: GENESIS_HASH });
      const scope = newScope({ requestId: "R1", principal: "user:u", operation: "PutObject" });
      scope.bucket = "b";
      scope.detail = { via: "test" };
      await runAudited(scope, () => store.putObjectVersion(version("ok", { size: 7 })));
      assertEquals(scope.recorded, 1);
      // A write whose guard refuses rolls back, entry included.
      const refused = newScope({ requestId: "R2", operation: "PutObject" });
      let failed = false;
      await runAudited(refused, () =>
        store.putObjectVersion(version("no"), [], {
          guard: () => {
            throw new Error("precondition");
          },
        })).catch(() => (failed = true));
      assert(failed);
      assertEquals(refused.recorded, 0);
      // A change that changed nothing records nothing.
      const nothing = newScope({ requestId: "R3", operation: "DeleteObject" });
      await runAudited(
        nothing,
        () => store.deleteObjects([{ bucket: "b", key: "absent", versionId: "null" }]),
      );
      assertEquals(nothing.recorded, 0);
      // Outside any scope (start-up, tests) nothing is recorded.
      await store.putObjectVersion(version("quiet"));
      const all = await store.auditPage(0, 100);
      assertEquals(all.length, 1);
      assertEquals(
        [all[0].seq, all[0].requestId, all[0].principal, all[0].bucket, all[0].key, all[0].bytes],
        [1, "R1", "user:u", "b", "ok", 7],
      );
      assertEquals([all[0].versionId, all[0].status, all[0].detail], [
        "null",
        200,
        '{"via":"test"}',
      ]);
      assertEquals(await store.auditHead(), { seq: 1, hash: all[0].hash });
      assert(!(await store.getObjectVersion("b", "no")));
    },
  },
  {
    name: "audit: every kind of change in a scope writes its entry",
    fn: async (store) => {
      const scope = newScope({ requestId: "R", operation: "Admin" });
      await runAudited(scope, async () => {
        await store.createBucket({
          name: "b",
          owner: "o",
          createdAt: 0,
          region: "r",
          versioning: "",
          objectLock: false,
        });
        await store.putObjectVersion(version("k"));
        await store.setObjectTags({ bucket: "b", key: "k", versionId: "null" }, { a: "1" });
        await store.setObjectAcl({ bucket: "b", key: "k", versionId: "null" }, "{}");
        await store.deleteObjects([{ bucket: "b", key: "k", versionId: "null" }]);
        await store.createShare({
          id: "s",
          tokenHash: "h",
          creator: "c",
          bucket: "b",
          prefix: "",
          permissions: ["read"],
          createdAt: 0,
          expiresAt: Date.now() + 1e6,
          downloads: 0,
          uploads: 0,
        });
        await store.revokeShare("s");
      });
      const ops = (await store.auditPage(0, 100)).map((e) => [e.seq, e.key, e.versionId]);
      assertEquals(ops.length, scope.recorded);
      assert(scope.recorded >= 6, `${scope.recorded} entries`);
      const report = await verifyStored(store);
      assert(report.ok, JSON.stringify(report));
    },
  },
  {
    name: "audit: concurrent changes and appends chain one after another",
    fn: async (store) => {
      await withBucket(store);
      await Promise.all([
        ...Array.from({ length: 100 }, (_, i) =>
          runAudited(
            newScope({ requestId: `P${i}`, operation: "PutObject", bucket: "b" }),
            () => store.putObjectVersion(version(`k${i}`)),
          )),
        ...Array.from({ length: 100 }, (_, i) => store.appendAudit(facts(i))),
      ]);
      const report = await verifyStored(store);
      assert(report.ok, JSON.stringify(report));
      assertEquals(report.entries, 200);
      const page = await store.auditPage(0, 1000);
      assertEquals(new Set(page.map((e) => e.requestId)).size, 200);
      assertEquals(page.map((e) => e.seq), Array.from({ length: 200 }, (_, i) => i + 1));
      assertEquals(await store.auditHead(), { seq: 200, hash: page[199].hash });
    },
  },
  {
    name: "audit: appended entries, pages and queries by every filter",
    fn: async (store) => {
      const written = [];
      for (let i = 1; i <= 20; i++) written.push(await store.appendAudit(facts(i)));
      assertEquals(written.map((e) => e.seq), Array.from({ length: 20 }, (_, i) => i + 1));
      assertSame(await store.auditPage(0, 100), written);
      assertSame(await store.auditPage(18, 100), written.slice(18));
      assertSame(await store.auditPage(0, 2), written.slice(0, 2));
      const seqs = async (f: Record<string, unknown>) =>
        (await store.queryAudit({ afterSeq: 0, limit: 100, ...f })).map((e) => e.seq);
      assertEquals(await seqs({ bucket: "c" }), [4, 8, 12, 16, 20]);
      assertEquals(await seqs({ status: 403 }), [5, 10, 15, 20]);
      assertEquals(await seqs({ operation: "HeadObject", principal: "user:a" }), [3, 9, 15]);
      const at = written[4].at;
      assertEquals((await seqs({ since: at, until: at + 1 })).includes(5), true);
      assertEquals(await seqs({ since: written[19].at + 1 }), []);
      assertEquals(await seqs({ keyPrefix: "dir1/k1" }), [1, 11, 13, 15, 17, 19]);
      assertEquals(await seqs({ keyPrefix: "dir1/k1", afterSeq: 13, limit: 2 }), [15, 17]);
      assertEquals(await seqs({ keyPrefix: "dir_" }), []);
      assertEquals(await seqs({ keyPrefix: "dir%" }), []);
      assertSame(
        (await store.queryAudit({ afterSeq: 0, limit: 1, status: 403 }))[0],
        written[4],
      );
      const report = await verifyStored(store);
      assert(report.ok, JSON.stringify(report));
    },
  },
  {
    name: "audit: pruning keeps the rest verifiable behind a checkpoint entry",
    fn: async (store) => {
      assertEquals(await pruneAudit(store, Date.now() + 1000), undefined);
      for (let i = 0; i < 10; i++) await store.appendAudit(facts(i));
      assertEquals(await pruneAudit(store, 0), undefined);
      const tenth = (await store.auditPage(9, 1))[0];
      const pruned = await pruneAudit(store, Date.now() + 1000);
      // Everything but the newest entry goes; the checkpoint follows it.
      assertEquals(pruned?.pruned, 9);
      assertEquals(pruned?.anchor.seq, 9);
      assertEquals(await store.auditAnchor(), pruned!.anchor);
      const rest = await store.auditPage(0, 100);
      assertEquals(rest.map((e) => e.seq), [10, 11]);
      assertEquals(rest[0].hash, tenth.hash);
      assertEquals(rest[1].operation, CHECKPOINT_OPERATION);
      assertEquals(JSON.parse(rest[1].detail).anchor_seq, 9);
      assertEquals(await store.auditHead(), { seq: 11, hash: rest[1].hash });
      const report = await verifyStored(store);
      assert(report.ok, JSON.stringify(report));
      assertEquals([report.anchor_seq, report.entries], [9, 2]);
      // The chain goes on from the head.
      assertEquals((await store.appendAudit(facts(99))).seq, 12);
      assert((await verifyStored(store)).ok);
    },
  },
];
