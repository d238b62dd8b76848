// Contract cases for stores that several server nodes share (one SQLite file opened twice, one
// PostgreSQL database from two pools): concurrent writers on both nodes keep chunk reference
// counts exact, the outbox gap-free, the audit chain linear, limits and unique names intact.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { verifyStored } from "../../audit/verify.ts";
import { newScope, runAudited } from "../../audit/scope.ts";
import { DuplicateError, type MetaStore } from "../store.ts";
import { bucket, chunk, CHUNKED, event, removeVersion, version } from "./helpers.ts";

export interface NodeCase {
  name: string;
  /** Two stores on the same data, as two server nodes see it. */
  fn: (a: MetaStore, b: MetaStore) => Promise<void>;
}

/** Every chunk freed by the outcomes, counting repeats. */
function freedCounts(all: { freed: { id: string }[] }[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of all) for (const c of r.freed) counts.set(c.id, (counts.get(c.id) ?? 0) + 1);
  return counts;
}

export const NODE_CASES: NodeCase[] = [
  {
    name: "two nodes: shared chunks are counted exactly through concurrent puts and deletes",
    fn: async (a, b) => {
      await a.createBucket(bucket("b"));
      const nodes = [a, b];
      // 40 keys, each with its own chunk and the shared chunk "s", written from both nodes.
      await Promise.all(
        Array.from(
          { length: 40 },
          (_, i) =>
            nodes[i % 2].putObjectVersion(version(`k${i}`, { ...CHUNKED, size: 20 }), [
              { chunk: chunk("s"), offset: 0, size: 10 },
              { chunk: chunk(`own${i}`), offset: 10, size: 10 },
            ]),
        ),
      );
      assertEquals((await b.usage()).chunks, 41);
      const removed = await Promise.all(
        Array.from(
          { length: 40 },
          (_, i) => removeVersion(nodes[(i + 1) % 2], "b", `k${i}`, "null"),
        ),
      );
      const counts = freedCounts(removed);
      // The shared chunk is freed once, by the last reference to go; each own chunk once.
      assertEquals(counts.get("s"), 1);
      assertEquals(counts.size, 41);
      assert([...counts.values()].every((n) => n === 1));
      assertEquals(await a.listChunks("", 100), []);
      assertEquals((await a.usage()).chunks, 0);
    },
  },
  {
    name: "two nodes: racing overwrites of one key free every replaced chunk exactly once",
    fn: async (a, b) => {
      await a.createBucket(bucket("b"));
      const nodes = [a, b];
      const results = await Promise.all(
        Array.from(
          { length: 30 },
          (_, i) =>
            nodes[i % 2].putObjectVersion(version("k", { ...CHUNKED, size: 20 }), [
              { chunk: chunk(`c${i}`), offset: 0, size: 10 },
              { chunk: chunk("keep"), offset: 10, size: 10 },
            ]),
        ),
      );
      const counts = freedCounts(results);
      assert([...counts.values()].every((n) => n === 1), JSON.stringify([...counts]));
      // All but the winner's own chunk are freed; the chunk every write shares stays.
      assertEquals(counts.size, 29);
      assert(!counts.has("keep"));
      const current = await b.getObjectVersion("b", "k");
      if (current?.data.kind !== "chunks") throw new Error("chunked version expected");
      const held = (await b.versionChunks(current.data.vid)).map((c) => c.chunk.id);
      assertEquals(held.length, 2);
      assertEquals(
        (await a.listChunks("", 100)).map((c) => c.id).sort(),
        [...held].sort(),
      );
      assertEquals(results.filter((r) => r.displaced.length === 1).length, 29);
    },
  },
  {
    name: "two nodes: the outbox stays gap-free and the audit chain linear",
    fn: async (a, b) => {
      await a.createBucket(bucket("b"));
      const nodes = [a, b];
      await Promise.all([
        ...Array.from({ length: 60 }, (_, i) =>
          runAudited(
            newScope({ requestId: `P${i}`, operation: "PutObject", bucket: "b" }),
            () => nodes[i % 2].putObjectVersion(version(`k${i}`), [], { outbox: event(`k${i}`) }),
          )),
        ...Array.from({ length: 30 }, (_, i) => nodes[i % 2].appendEvents([event(`e${i}`)])),
        ...Array.from({ length: 30 }, (_, i) =>
          nodes[(i + 1) % 2].appendAudit({
            requestId: `A${i}`,
            principal: "p",
            source: "",
            operation: "GetObject",
            bucket: "b",
            key: "",
            versionId: "",
            status: 200,
            errorCode: "",
            bytes: 0,
            detail: "",
          })),
      ]);
      const events = await b.readEvents(0, 1000);
      assertEquals(events.map((e) => e.seq), Array.from({ length: 90 }, (_, i) => i + 1));
      assertEquals((await a.eventBounds()).head, 90);
      const report = await verifyStored(a);
      assert(report.ok, JSON.stringify(report));
      assertEquals(report.entries, 90);
    },
  },
  {
    name: "two nodes: a share's download limit and a user name are taken once",
    fn: async (a, b) => {
      await a.createShare({
        id: "s",
        tokenHash: "h",
        creator: "c",
        bucket: "b",
        prefix: "",
        permissions: ["read"],
        createdAt: 0,
        expiresAt: Date.now() + 1e6,
        maxDownloads: 7,
        downloads: 0,
        uploads: 0,
      });
      const counted = await Promise.all(
        Array.from({ length: 30 }, (_, i) => [a, b][i % 2].countShareDownload("s")),
      );
      assertEquals(counted.filter(Boolean).length, 7);
      assertEquals((await b.getShare({ id: "s" }))?.downloads, 7);
      const made = await Promise.allSettled(
        Array.from({ length: 6 }, (_, i) =>
          [a, b][i % 2].createUser({
            id: `u${i}`,
            name: "same",
            description: "",
            email: "",
            accessKey: `AK${i}`,
            sealedSecret: "x",
            enabled: true,
            createdAt: 0,
            keyCreatedAt: 0,
            bucketAccess: [],
          })),
      );
      assertEquals(made.filter((r) => r.status === "fulfilled").length, 1);
      for (const r of made) {
        if (r.status === "rejected") {
          assert(r.reason instanceof DuplicateError, String(r.reason));
        }
      }
      assertEquals((await a.listUsers()).length, 1);
    },
  },
];
