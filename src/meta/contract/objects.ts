// Contract cases: buckets and their configurations, object versions, deletes, chunks, locks,
// ACLs, tags, usage, drives and the outbox events written with changes.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { LockedVersioningError, MissingBucketError, VersioningChangedError } from "../store.ts";
import type { ObjectVersion } from "../store.ts";
import {
  assertSame,
  bucket,
  chunk,
  CHUNKED,
  type ContractCase,
  event,
  ids,
  refs,
  rejects,
  removeVersion,
  version,
  withBucket,
} from "./helpers.ts";

export const OBJECT_CASES: ContractCase[] = [
  {
    name: "buckets: create once, get, list by owner with prefix and paging, delete",
    fn: async (store) => {
      assertEquals(await store.createBucket(bucket("b2")), "created");
      assertEquals(await store.createBucket(bucket("b2", { owner: "other" })), "exists");
      await store.createBucket(bucket("a1", { versioning: "Enabled", objectLock: true }));
      await store.createBucket(bucket("b1"));
      await store.createBucket(bucket("c1", { owner: "other", region: "eu" }));
      assertSame(await store.getBucket("b2"), bucket("b2"));
      assertSame(
        await store.getBucket("a1"),
        bucket("a1", { versioning: "Enabled", objectLock: true }),
      );
      assertEquals(await store.getBucket("zz"), undefined);
      assertEquals((await store.listBuckets("o")).map((b) => b.name), ["a1", "b1", "b2"]);
      assertEquals((await store.listBuckets("other")).map((b) => b.name), ["c1"]);
      // The administrator's view: every owner's, in name order, limited.
      assertEquals((await store.listAllBuckets(10)).map((b) => b.name), ["a1", "b1", "b2", "c1"]);
      assertEquals((await store.listAllBuckets(2)).map((b) => b.name), ["a1", "b1"]);
      const page = (prefix: string, after: string, limit: number) =>
        store.listBuckets("o", { prefix, after, limit }).then((r) => r.map((b) => b.name));
      assertEquals(await page("", "", 2), ["a1", "b1"]);
      assertEquals(await page("", "b1", 2), ["b2"]);
      assertEquals(await page("b", "", 10), ["b1", "b2"]);
      assertEquals(await page("b", "b1", 10), ["b2"]);
      assertEquals(await page("c", "", 10), []);
      assertSame(await store.deleteBucket("b1"), { outcome: "deleted", freed: [] });
      assertSame(await store.deleteBucket("b1"), { outcome: "missing", freed: [] });
      assertEquals(await store.getBucket("b1"), undefined);
    },
  },
  {
    name: "bucket versioning and Object Lock settings; a missing bucket is refused",
    fn: async (store) => {
      await withBucket(store);
      await store.setBucketVersioning("b", "Enabled");
      assertEquals((await store.getBucket("b"))?.versioning, "Enabled");
      await store.setBucketVersioning("b", "Suspended");
      assertEquals((await store.getBucket("b"))?.versioning, "Suspended");
      await rejects(store.setBucketVersioning("nope", "Enabled"), MissingBucketError);
      await store.setBucketObjectLock("b");
      const b = await store.getBucket("b");
      assertEquals([b?.objectLock, b?.versioning], [true, "Enabled"]);
    },
  },
  {
    name: "bucket configurations: put, replace, get, list by kind, delete; gone with the bucket",
    fn: async (store) => {
      // Decided on a bucket of that name created at another time (deleted and made again since):
      // refused, nothing changed.
      await store.createBucket(bucket("again", { createdAt: 5 }));
      await store.putBucketConfig("again", "cors", "[1]", { createdAt: 5 });
      await rejects(
        store.putBucketConfig("again", "cors", "[2]", { createdAt: 4 }),
        MissingBucketError,
      );
      await rejects(
        store.deleteBucketConfig("again", "cors", { createdAt: 4 }),
        MissingBucketError,
      );
      assertEquals(await store.getBucketConfig("again", "cors"), "[1]");
      await store.deleteBucketConfig("again", "cors", { createdAt: 5 });
      assertEquals(await store.getBucketConfig("again", "cors"), undefined);
      for (const name of ["a", "b", "c"]) await store.createBucket(bucket(name));
      await store.putBucketConfig("b", "policy", '{"v":1}');
      await store.putBucketConfig("b", "policy", '{"v":2}');
      await store.putBucketConfig("a", "policy", '{"a":1}');
      await store.putBucketConfig("c", "policy", '{"c":1}');
      await store.putBucketConfig("b", "cors", "<cors/>");
      await rejects(store.putBucketConfig("nope", "policy", "{}"), MissingBucketError);
      assertEquals(await store.getBucketConfig("b", "policy"), '{"v":2}');
      assertEquals(await store.getBucketConfig("b", "lifecycle"), undefined);
      assertEquals(await store.listBucketConfigs("policy", "", 2), [
        { bucket: "a", value: '{"a":1}' },
        { bucket: "b", value: '{"v":2}' },
      ]);
      assertEquals(await store.listBucketConfigs("policy", "b", 10), [
        { bucket: "c", value: '{"c":1}' },
      ]);
      assertEquals(await store.listBucketConfigs("cors", "", 10), [
        { bucket: "b", value: "<cors/>" },
      ]);
      await store.deleteBucketConfig("b", "cors");
      await store.deleteBucketConfig("b", "cors");
      assertEquals(await store.getBucketConfig("b", "cors"), undefined);
      assertEquals((await store.deleteBucket("b")).outcome, "deleted");
      await store.createBucket(bucket("b"));
      assertEquals(await store.getBucketConfig("b", "policy"), undefined);
    },
  },
  {
    name: "versions: every field round-trips; current and specific versions",
    fn: async (store) => {
      await withBucket(store);
      await store.setBucketVersioning("b", "Enabled");
      const full: ObjectVersion = version("dir/é \u{1F600}", {
        versionId: "v1",
        size: 3,
        etag: '"abc-2"',
        lastModified: 1_700_000_000_123,
        contentType: "image/png",
        userMeta: { color: "blue", "x-y": "ü" },
        headers: { "cache-control": "no-cache", "content-encoding": "gzip" },
        owner: "u1",
        data: { kind: "inline", bytes: new Uint8Array([0, 255, 7]) },
        acl: '{"grants":[]}',
        sse: '{"alg":"AES256"}',
        parts: [2, 1],
        checksum: { algorithm: "CRC32", type: "COMPOSITE", value: "AAAA-2", parts: ["a", "b"] },
        retention: { mode: "GOVERNANCE", until: 1_900_000_000_000 },
        legalHold: true,
        tags: { k: "v" },
      });
      await store.putObjectVersion(full);
      const plainOne = version("dir/é \u{1F600}", { versionId: "v2", data: { kind: "none" } });
      await store.putObjectVersion(plainOne);
      assertSame(await store.getObjectVersion("b", full.key, "v1"), full);
      // No ACL, SSE, parts, checksum, retention or tags: absent; no legal hold: false.
      assertSame(await store.getObjectVersion("b", full.key), { ...plainOne, legalHold: false });
      assertEquals(await store.getObjectVersion("b", full.key, "v3"), undefined);
      assertEquals(await store.getObjectVersion("b", "other"), undefined);
      assertEquals(await store.getObjectVersion("nope", full.key), undefined);
    },
  },
  {
    name: "versions: the null version is replaced, ids are kept; a missing bucket is refused",
    fn: async (store) => {
      await withBucket(store);
      const first = await store.putObjectVersion(version("k", { etag: '"1"' }));
      assertSame(first, { displaced: [], freed: [] });
      const second = await store.putObjectVersion(version("k", { etag: '"2"' }));
      assertEquals(second.displaced.map((v) => v.etag), ['"1"']);
      await store.setBucketVersioning("b", "Enabled");
      await store.putObjectVersion(version("k", { versionId: "v1", etag: '"3"' }));
      assertEquals((await store.getObjectVersion("b", "k"))?.etag, '"3"');
      assertEquals((await store.getObjectVersion("b", "k", "null"))?.etag, '"2"');
      // Suspended: a new null version replaces the old one, v1 stays.
      await store.setBucketVersioning("b", "Suspended");
      const third = await store.putObjectVersion(version("k", { etag: '"4"' }));
      assertEquals(third.displaced.map((v) => v.etag), ['"2"']);
      const listed = await store.listVersions("b", {
        prefix: "",
        delimiter: "",
        keyMarker: "",
        versionIdMarker: "",
        maxKeys: 10,
      });
      assertEquals(listed.versions.map((v) => [v.versionId, v.isLatest]), [
        ["null", true],
        ["v1", false],
      ]);
      await rejects(store.putObjectVersion(version("k", { bucket: "nope" })), MissingBucketError);
    },
  },
  {
    name: "a write's guard sees the current version and may refuse it; nothing changes then",
    fn: async (store) => {
      await withBucket(store);
      const seen: (string | undefined)[] = [];
      await store.putObjectVersion(version("k", { etag: '"1"' }), [], {
        guard: (cur) => seen.push(cur?.etag),
      });
      await store.putObjectVersion(version("k", { etag: '"2"' }), [], {
        guard: (cur) => seen.push(cur?.etag),
        outbox: event("k"),
      });
      assertEquals(seen, [undefined, '"1"']);
      const err = await rejects(
        store.putObjectVersion(version("k", { etag: '"3"' }), refs("c1"), {
          guard: () => {
            throw new Error("precondition failed");
          },
          outbox: event("refused"),
        }),
      );
      assertEquals((err as Error).message, "precondition failed");
      assertEquals((await store.getObjectVersion("b", "k"))?.etag, '"2"');
      assertEquals(await store.hasChunk("c1"), false);
      assertEquals((await store.readEvents(0, 10)).map((e) => e.key), ["k"]);
    },
  },
  {
    name: "outbox: an event commits with its change; no change, no event",
    fn: async (store) => {
      await withBucket(store);
      await store.putObjectVersion(version("a"), [], { outbox: event("a") });
      await store.putObjectVersion(version("x", { bucket: "nope" }), [], {
        outbox: event("x", "nope"),
      }).catch(() => {});
      const removed = await removeVersion(store, "b", "gone", "null", () => event("gone"));
      assertEquals(removed.removed, undefined);
      assertEquals(
        await store.setObjectTags(
          { bucket: "b", key: "absent", versionId: "null" },
          {},
          event("t"),
        ),
        false,
      );
      assertEquals(
        await store.setObjectAcl(
          { bucket: "b", key: "absent", versionId: "null" },
          "{}",
          event("c"),
        ),
        false,
      );
      await store.setObjectAcl({ bucket: "b", key: "a", versionId: "null" }, "{}", event("acl"));
      await store.setObjectTags(
        { bucket: "b", key: "a", versionId: "null" },
        { t: "1" },
        event("tag"),
      );
      await removeVersion(store, "b", "a", "null", (v) => ({ ...event(v.key), name: "Removed" }));
      const got = await store.readEvents(0, 10);
      assertEquals(got.map((e) => [e.seq, e.key, e.name]), [
        [1, "a", "ObjectCreated:Put"],
        [2, "acl", "ObjectCreated:Put"],
        [3, "tag", "ObjectCreated:Put"],
        [4, "a", "Removed"],
      ]);
      assert(got.every((e) => e.at > 1_600_000_000_000 && e.bucket === "b" && e.detail === "{}"));
    },
  },
  {
    name: "outbox: ids grow after pruning; counts; cursors; one bucket's events",
    fn: async (store) => {
      assertEquals(await store.eventBounds(), { head: 0, oldest: undefined });
      assertEquals(await store.appendEvents([event("1"), event("2", "c"), event("3")]), 3);
      assertEquals(await store.eventBounds(), { head: 3, oldest: 1 });
      assertEquals((await store.readEvents(0, 10, "b")).map((e) => e.seq), [1, 3]);
      assertEquals((await store.readEvents(1, 1)).map((e) => e.seq), [2]);
      assertEquals(await store.countEvents(1), 2);
      assertEquals(await store.countEvents(0, "c"), 1);
      assertEquals(await store.pruneEvents(2, Date.now() + 1000), 2);
      assertEquals(await store.eventBounds(), { head: 3, oldest: 3 });
      assertEquals(await store.pruneEvents(3, Date.now() + 1000), 1);
      assertEquals(await store.eventBounds(), { head: 3, oldest: undefined });
      assertEquals(await store.appendEvents([event("4")]), 4);
      assertEquals((await store.readEvents(0, 10)).map((e) => e.seq), [4]);
      // Pruning keeps what is younger than the cut-off time.
      assertEquals(await store.pruneEvents(4, 0), 0);
      assertEquals(await store.getCursor("a"), undefined);
      await store.setCursor("target:webhook:b", 2);
      await store.setCursor("target:webhook:b", 4);
      await store.setCursor("target:amqp:a", 1);
      assertEquals(await store.getCursor("target:webhook:b"), 4);
      assertEquals(await store.listCursors(), [
        { consumer: "target:amqp:a", seq: 1 },
        { consumer: "target:webhook:b", seq: 4 },
      ]);
      await store.deleteCursor("target:webhook:b");
      assertEquals(await store.getCursor("target:webhook:b"), undefined);
      assertEquals((await store.listCursors()).length, 1);
    },
  },
  {
    name: "outbox: concurrent appends get distinct, gap-free sequence numbers",
    fn: async (store) => {
      await withBucket(store);
      await Promise.all([
        ...Array.from({ length: 40 }, (_, i) => store.appendEvents([event(`e${i}`)])),
        ...Array.from(
          { length: 40 },
          (_, i) => store.putObjectVersion(version(`p${i}`), [], { outbox: event(`p${i}`) }),
        ),
      ]);
      const all = await store.readEvents(0, 100);
      assertEquals(all.map((e) => e.seq), Array.from({ length: 80 }, (_, i) => i + 1));
      assertEquals(new Set(all.map((e) => e.key)).size, 80);
      assertEquals((await store.eventBounds()).head, 80);
    },
  },
  {
    name: "deleteObjects: markers and removals in one batch; a refused item rolls back alone",
    fn: async (store) => {
      await withBucket(store);
      await store.setBucketVersioning("b", "Enabled");
      await store.putObjectVersion(version("a", { versionId: "a1" }));
      await store.putObjectVersion(version("a", { versionId: "a2" }));
      await store.putObjectVersion(version("b", { versionId: "b1" }));
      await store.putObjectVersion(version("c", { versionId: "c1" }), refs("x1"));
      const outcomes = await store.deleteObjects([
        { bucket: "b", key: "a", versionId: "a2", outbox: (v) => event(`rm-${v.versionId}`) },
        {
          marker: version("b", { versionId: "m1", deleteMarker: true, data: { kind: "none" } }),
          outbox: event("marker-b"),
        },
        {
          bucket: "b",
          key: "c",
          versionId: "c1",
          guard: () => {
            throw new Error("locked");
          },
          outbox: () => event("never"),
        },
        { bucket: "b", key: "zz", versionId: "none" },
      ]);
      assertEquals(outcomes.map((o) => o.ok), [true, true, false, true]);
      const [removedA, marker, locked, nothing] = outcomes;
      assertEquals(removedA.ok && removedA.removed?.versionId, "a2");
      assertSame(marker.ok && marker.freed, []);
      assertEquals(!locked.ok && (locked.error as Error).message, "locked");
      assertEquals(nothing.ok && nothing.removed, undefined);
      // The next newest becomes current; the marker hides b; c keeps its version and chunk.
      assertEquals((await store.getObjectVersion("b", "a"))?.versionId, "a1");
      assertEquals((await store.getObjectVersion("b", "b"))?.deleteMarker, true);
      assertEquals((await store.getObjectVersion("b", "c"))?.versionId, "c1");
      assert(await store.hasChunk("x1"));
      assertEquals((await store.readEvents(0, 10)).map((e) => e.key), ["rm-a2", "marker-b"]);
      const listed = await store.listObjects("b", {
        prefix: "",
        delimiter: "",
        after: "",
        maxKeys: 10,
      });
      assertEquals(listed.objects.map((o) => o.key), ["a", "c"]);
      const last = await removeVersion(store, "b", "c", "c1");
      assertEquals(ids(last.freed), ["x1"]);
      assertEquals(await store.getObjectVersion("b", "c"), undefined);
      // A marker's guard sees the current version first and may refuse: nothing added then.
      const current = (await store.getObjectVersion("b", "a"))!;
      const [refused, added] = await store.deleteObjects([
        {
          marker: version("a", { versionId: "m-no", deleteMarker: true, data: { kind: "none" } }),
          guard: (cur: ObjectVersion | undefined) => {
            if (cur?.versionId === current.versionId) throw new Error("still current");
          },
        },
        {
          marker: version("c", { versionId: "m-c", deleteMarker: true, data: { kind: "none" } }),
          guard: (cur: ObjectVersion | undefined) => assertEquals(cur, undefined),
        },
      ]);
      assertEquals([refused.ok, added.ok], [false, true]);
      assertEquals((await store.getObjectVersion("b", "a"))?.versionId, current.versionId);
      assertEquals((await store.getObjectVersion("b", "c", "m-c"))?.deleteMarker, true);
    },
  },
  {
    name: "chunk reference counts follow versions: shared, replaced, deleted",
    fn: async (store) => {
      await withBucket(store);
      await store.putObjectVersion(version("a", CHUNKED), refs("c1", "c2"));
      await store.putObjectVersion(version("b", CHUNKED), refs("c2", "c3"));
      // Overwriting "a" drops c1 (only "a" had it) but keeps c2 (shared with "b").
      const replaced = await store.putObjectVersion(version("a", CHUNKED), refs("c4"));
      assertEquals(ids(replaced.freed), ["c1"]);
      assertEquals(replaced.displaced.length, 1);
      assertEquals(await store.hasChunk("c2"), true);
      assertEquals(await store.hasChunk("c1"), false);
      // Re-referencing a chunk in the same write keeps it.
      const same = await store.putObjectVersion(version("a", CHUNKED), refs("c4"));
      assertSame(same.freed, []);
      const current = await store.getObjectVersion("b", "b");
      if (current?.data.kind !== "chunks") throw new Error("chunked version expected");
      const listed = await store.versionChunks(current.data.vid, { from: 10, to: 11 });
      assertEquals(listed.map((c) => [c.chunk.id, c.offset, c.size]), [["c3", 10, 10]]);
      assertEquals((await store.deleteBucket("b")).outcome, "not_empty");
      const gone = await removeVersion(store, "b", "b", "null");
      assertEquals(ids(gone.freed), ["c2", "c3"]);
      const last = await removeVersion(store, "b", "a", "null");
      assertEquals(ids(last.freed), ["c4"]);
      assertEquals(await store.listChunks("", 10), []);
      assertEquals((await store.deleteBucket("b")).outcome, "deleted");
    },
  },
  {
    name: "chunk reference counts: a chunk a version holds twice is counted twice",
    fn: async (store) => {
      await withBucket(store);
      // Two equal chunks of one object (zeros, say) are one chunk referred to twice.
      await store.putObjectVersion(version("a", CHUNKED), refs("z", "z", "y"));
      await store.putObjectVersion(version("b", CHUNKED), refs("z"));
      const a = await removeVersion(store, "b", "a", "null");
      assertEquals(ids(a.freed), ["y"]);
      assertEquals(await store.hasChunk("z"), true);
      const b = await removeVersion(store, "b", "b", "null");
      assertEquals(ids(b.freed), ["z"]);
      assertEquals(await store.listChunks("", 10), []);
    },
  },
  {
    name: "chunk reference counts: a batch frees each chunk once, when its last reference goes",
    fn: async (store) => {
      await withBucket(store);
      await store.putObjectVersion(version("a", CHUNKED), refs("z", "z", "y"));
      await store.putObjectVersion(version("b", CHUNKED), refs("z", "x"));
      await store.putObjectVersion(version("c", CHUNKED), refs("z", "w"));
      await store.putObjectVersion(version("d", CHUNKED), refs("v"));
      await store.putObjectVersion(version("e", CHUNKED), refs("u"));
      await store.putObjectVersion(version("f", CHUNKED), refs("u", "t"));
      const removal = (key: string) => ({ bucket: "b", key, versionId: "null" });
      const first = await store.deleteObjects(["a", "b"].map(removal));
      assertEquals(first.map((o) => o.ok && ids(o.freed)), [["y"], ["x"]]);
      assertEquals(await store.hasChunk("z"), true, "c still refers to z");
      const second = await store.deleteObjects(["c", "d", "missing", "e", "f"].map(removal));
      const freed = second.map((o) => o.ok ? ids(o.freed) : []);
      assertEquals(freed.slice(0, 3), [["w", "z"], ["v"], []]);
      // u, held by e and f of the same batch, is freed once, with one of them.
      assertEquals(ids(freed.slice(3).flat().map((id) => ({ id }))), ["t", "u"]);
      assertEquals(await store.listChunks("", 10), []);
    },
  },
  {
    name: "chunks: records round-trip, ranges of a version, paged listing in id order",
    fn: async (store) => {
      await withBucket(store);
      const special = chunk("c-b", {
        plainSize: 1_000_000,
        storedSize: 400_000,
        compression: "zstd",
        encrypted: true,
        segmentSize: 65_536,
        dataShards: 4,
        parityShards: 2,
        drives: [3, 1, 2, 6, 5, 4],
      });
      const parts = [
        { chunk: chunk("c-a"), offset: 0, size: 10 },
        { chunk: special, offset: 10, size: 1_000_000 },
        { chunk: chunk("c-c"), offset: 1_000_010, size: 10 },
      ];
      await store.putObjectVersion(version("k", { ...CHUNKED, size: 1_000_020 }), parts);
      assertSame(await store.getChunk("c-b"), special);
      assertSame(await store.getChunk("c-a"), chunk("c-a"));
      assertEquals(await store.getChunk("nope"), undefined);
      const v = await store.getObjectVersion("b", "k");
      if (v?.data.kind !== "chunks") throw new Error("chunked version expected");
      const vid = v.data.vid;
      assertSame(await store.versionChunks(vid), parts);
      const range = async (from: number, to: number) =>
        (await store.versionChunks(vid, { from, to })).map((c) => c.chunk.id);
      assertEquals(await range(0, 10), ["c-a"]);
      assertEquals(await range(9, 11), ["c-a", "c-b"]);
      assertEquals(await range(1_000_009, 1_000_011), ["c-b", "c-c"]);
      assertEquals(await range(2_000_000, 2_000_001), []);
      assertEquals((await store.listChunks("", 2)).map((c) => c.id), ["c-a", "c-b"]);
      assertEquals((await store.listChunks("c-b", 2)).map((c) => c.id), ["c-c"]);
    },
  },
  {
    name: "Object Lock of a version: retention and legal hold set and cleared, guarded",
    fn: async (store) => {
      await withBucket(store);
      await store.putObjectVersion(version("k"));
      const target = { bucket: "b", key: "k", versionId: "null" };
      const retention = { mode: "COMPLIANCE" as const, until: 1_900_000_000_000 };
      assert(await store.setObjectLock(target, { retention }));
      let v = await store.getObjectVersion("b", "k");
      assertSame([v?.retention, v?.legalHold], [retention, false]);
      assert(await store.setObjectLock(target, { legalHold: true }));
      v = await store.getObjectVersion("b", "k");
      assertSame([v?.retention, v?.legalHold], [retention, true]);
      const err = await rejects(store.setObjectLock(target, { retention: null }, (seen) => {
        assertSame(seen.retention, retention);
        throw new Error("compliance");
      }));
      assertEquals((err as Error).message, "compliance");
      assertSame((await store.getObjectVersion("b", "k"))?.retention, retention);
      assert(await store.setObjectLock(target, { retention: null, legalHold: false }));
      v = await store.getObjectVersion("b", "k");
      assertSame([v?.retention, v?.legalHold], [undefined, false]);
      assertEquals(await store.setObjectLock({ ...target, versionId: "v9" }, {}), false);
    },
  },
  {
    name: "ACL and tags of a version: set, replaced, removed; delete markers take no tags",
    fn: async (store) => {
      await withBucket(store);
      await store.setBucketVersioning("b", "Enabled");
      await store.putObjectVersion(version("k", { versionId: "v1", tags: { a: "1", b: "" } }));
      await store.putObjectVersion(version("k", { versionId: "v2" }));
      assertSame((await store.getObjectVersion("b", "k", "v1"))?.tags, { a: "1", b: "" });
      assertEquals((await store.getObjectVersion("b", "k"))?.tags, undefined);
      const target = { bucket: "b", key: "k", versionId: "v2" };
      assertEquals(await store.setObjectTags(target, { c: "3" }), true);
      assertSame((await store.getObjectVersion("b", "k"))?.tags, { c: "3" });
      assertSame((await store.getObjectVersion("b", "k", "v1"))?.tags, { a: "1", b: "" });
      assertEquals(await store.setObjectTags(target, {}), true);
      assertEquals((await store.getObjectVersion("b", "k"))?.tags, undefined);
      assertEquals(await store.setObjectTags({ ...target, versionId: "nope" }, { c: "3" }), false);
      assert(await store.setObjectAcl(target, '{"owner":"o"}'));
      assertEquals((await store.getObjectVersion("b", "k"))?.acl, '{"owner":"o"}');
      assertEquals((await store.getObjectVersion("b", "k", "v1"))?.acl, undefined);
      assertEquals(await store.setObjectAcl({ ...target, versionId: "nope" }, "{}"), false);
      await store.putObjectVersion(
        version("k", {
          versionId: "m",
          deleteMarker: true,
          tags: { x: "y" },
          data: { kind: "none" },
        }),
      );
      assertEquals((await store.getObjectVersion("b", "k", "m"))?.tags, undefined);
      assertEquals(await store.setObjectTags({ ...target, versionId: "m" }, { c: "3" }), false);
      // Named with the write it was decided on: only while the version is still that write
      // (an unversioned key overwritten keeps its id "null").
      await store.createBucket(bucket("plain"));
      const plain = (etag: string) => ({ ...version("u", { etag }), bucket: "plain" });
      await store.putObjectVersion(plain('"old"'));
      const old = await store.getObjectVersion("plain", "u");
      await store.putObjectVersion(plain('"new"'));
      assertEquals(await store.setObjectAcl(old!, '{"owner":"stale"}'), false);
      assertEquals(await store.setObjectTags(old!, { stale: "yes" }), false);
      const now = await store.getObjectVersion("plain", "u");
      assertEquals([now?.acl, now?.tags], [undefined, undefined]);
      assertEquals(await store.setObjectAcl(now!, '{"owner":"o"}'), true);
      assertEquals(await store.setObjectTags(now!, { fresh: "1" }), true);
    },
  },
  {
    name: "versioning races: no null version into an Enabled bucket; no Suspended with Object Lock",
    fn: async (store) => {
      await withBucket(store, ["k"]);
      // A write whose "null" id was chosen before versioning was enabled: refused, nothing
      // replaced (the null version stays, as versioning keeps it).
      await store.setBucketVersioning("b", "Enabled");
      await rejects(
        store.putObjectVersion(version("k", { etag: '"late"' })),
        VersioningChangedError,
      );
      assertEquals((await store.getObjectVersion("b", "k", "null"))?.etag, '"x"');
      // A replica carries its own id: taken.
      await store.putObjectVersion(version("r", { replication: "REPLICA" }));
      assert(await store.getObjectVersion("b", "r", "null"));
      // Object Lock set since a PutBucketVersioning looked: Suspended is refused there.
      await store.setBucketObjectLock("b");
      await rejects(store.setBucketVersioning("b", "Suspended"), LockedVersioningError);
      assertEquals((await store.getBucket("b"))?.versioning, "Enabled");
      await rejects(store.setBucketVersioning("gone", "Enabled"), MissingBucketError);
    },
  },
  {
    name: "usage counters follow every kind of write",
    fn: async (store) => {
      await withBucket(store);
      assertSame(await store.usage(), { objects: 0, bytes: 0, chunks: 0, shardBytes: 0 });
      await store.putObjectVersion(version("a", { size: 5 }));
      await store.putObjectVersion(version("b", { ...CHUNKED, size: 20 }), refs("c1", "c2"));
      assertSame(await store.usage(), { objects: 2, bytes: 25, chunks: 2, shardBytes: 20 });
      await store.putObjectVersion(version("a", { size: 7 })); // replaces the null version
      await store.putObjectVersion(version("b", { ...CHUNKED, size: 10 }), refs("c2"));
      assertSame(await store.usage(), { objects: 2, bytes: 17, chunks: 1, shardBytes: 10 });
      await store.setBucketVersioning("b", "Enabled");
      await store.putObjectVersion(version("a", { versionId: "v1", size: 100 }));
      await store.putObjectVersion(version("a", { versionId: "dm", deleteMarker: true, size: 0 }));
      assertSame(await store.usage(), { objects: 3, bytes: 117, chunks: 1, shardBytes: 10 });
      await removeVersion(store, "b", "a", "dm");
      await removeVersion(store, "b", "b", "null");
      assertSame(await store.usage(), { objects: 2, bytes: 107, chunks: 0, shardBytes: 0 });
      // Parity counts: 25 stored bytes in 2 data shards of 13, plus one parity shard.
      const coded = chunk("e1", {
        storedSize: 25,
        dataShards: 2,
        parityShards: 1,
        drives: [1, 2, 3],
      });
      await store.putObjectVersion(version("c", { ...CHUNKED, versionId: "vc", size: 30 }), [
        { chunk: coded, offset: 0, size: 30 },
      ]);
      assertSame(await store.usage(), { objects: 3, bytes: 137, chunks: 1, shardBytes: 39 });
    },
  },
  {
    name: "drives: stable ids by identity, the identity last seen at a path, heal flags",
    fn: async (store) => {
      const a = await store.driveId("uuid-a", "/d1");
      const b = await store.driveId("uuid-b", "/d2");
      assert(a !== b);
      assertEquals(await store.driveId("uuid-a", "/d1"), a);
      assertEquals(await store.driveAt("/d1"), "uuid-a");
      assertEquals(await store.driveAt("/none"), undefined);
      // Drive a moved to another path: same id, found at its new path.
      assertEquals(await store.driveId("uuid-a", "/d3"), a);
      assertEquals(await store.driveAt("/d3"), "uuid-a");
      assertEquals(await store.drivesNeedingHeal(), []);
      await store.setDriveNeedsHeal(b, true);
      await store.setDriveNeedsHeal(a, true);
      assertEquals(await store.drivesNeedingHeal(), [a, b].sort((x, y) => x - y));
      await store.setDriveNeedsHeal(a, false);
      assertEquals(await store.drivesNeedingHeal(), [b]);
    },
  },
  {
    name: "operations: the write probe commits, the integrity check answers ok",
    fn: async (store) => {
      await store.probeWrite();
      await store.probeWrite();
      assertEquals(await store.quickCheck(), ["ok"]);
    },
  },
];
