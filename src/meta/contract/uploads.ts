// Contract cases: multipart uploads, their parts and chunks, completion and abort, listings of
// uploads and the stale-upload queries.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { MissingBucketError, PartChangedError } from "../store.ts";
import type { MetaStore } from "../store.ts";
import {
  assertSame,
  bucket,
  CHUNKED,
  type ContractCase,
  event,
  ids,
  refs,
  rejects,
  upload,
  version,
  withBucket,
} from "./helpers.ts";

const part = (partNumber: number, size = 10) => ({
  partNumber,
  etag: `"p${partNumber}"`,
  size,
  lastModified: 1_700_000_000_000 + partNumber,
});

async function listUploadsAll(store: MetaStore, prefix: string, delimiter: string, max: number) {
  const out: string[] = [];
  let keyMarker = "";
  let uploadIdMarker = "";
  for (;;) {
    const page = await store.listUploads("b", {
      prefix,
      delimiter,
      keyMarker,
      uploadIdMarker,
      maxUploads: max,
    });
    out.push(...page.uploads.map((u) => `${u.key}#${u.uploadId}`), ...page.commonPrefixes);
    if (!page.isTruncated) return out;
    keyMarker = page.nextKeyMarker!;
    uploadIdMarker = page.nextUploadIdMarker ?? "";
  }
}

export const UPLOAD_CASES: ContractCase[] = [
  {
    name: "uploads: every field round-trips; found by id and by bucket, key and id",
    fn: async (store) => {
      await withBucket(store);
      const full = upload("dir/k", "u1", {
        initiated: 1_700_000_000_000,
        contentType: "video/mp4",
        userMeta: { a: "1" },
        headers: { "cache-control": "max-age=1" },
        acl: '{"g":[]}',
        sse: '{"alg":"aws:kms"}',
        checksumAlgorithm: "SHA256",
        checksumType: "COMPOSITE",
        lock: '{"legalHold":true}',
        tags: { t: "v" },
      });
      await store.createUpload(full);
      await store.createUpload(upload("k2", "u2"));
      assertSame(await store.getUpload("b", "dir/k", "u1"), full);
      assertSame(await store.getUploadById("u1"), full);
      assertSame(await store.getUploadById("u2"), upload("k2", "u2"));
      assertEquals(await store.getUpload("b", "other", "u1"), undefined);
      assertEquals(await store.getUploadById("nope"), undefined);
      // The bucket deleted meanwhile: no upload is recorded in it.
      await rejects(store.createUpload(upload("k3", "u3", { bucket: "gone" })), MissingBucketError);
      assertEquals(await store.getUploadById("u3"), undefined);
    },
  },
  {
    name: "parts: stored, replaced (freeing chunks), listed in pages; none for a missing upload",
    fn: async (store) => {
      await withBucket(store);
      await store.createUpload(upload("k", "u1"));
      assertSame(await store.putPart("u1", part(2), refs("a")), { freed: [] });
      const withSum = { ...part(1), checksum: { algorithm: "CRC32", value: "AAAAAA==" } };
      await store.putPart("u1", withSum, refs("b"));
      await store.putPart("u1", part(3), refs("c"));
      const replaced = await store.putPart("u1", part(2, 20), refs("d", "e"));
      assertEquals(ids(replaced!.freed), ["a"]);
      assertEquals(await store.hasChunk("a"), false);
      assertSame(await store.listParts("u1", 0, 10), [withSum, part(2, 20), part(3)]);
      assertSame(await store.listParts("u1", 1, 1), [part(2, 20)]);
      assertEquals(await store.listParts("u1", 3, 10), []);
      assertEquals(await store.putPart("nope", part(1), refs("x")), undefined);
      assertEquals(await store.hasChunk("x"), false);
    },
  },
  {
    name: "complete: the version gets the chosen parts' chunks in order; the upload ends",
    fn: async (store) => {
      await withBucket(store);
      const u = upload("k", "u1");
      await store.createUpload(u);
      await store.putPart("u1", part(1, 20), refs("p1a", "p1b"));
      await store.putPart("u1", part(2, 10), refs("p2"));
      await store.putPart("u1", part(3, 10), refs("p3"));
      const v = version("k", { ...CHUNKED, size: 30, etag: '"m-2"', parts: [20, 10] });
      const checksum = { algorithm: "CRC32", type: "COMPOSITE" as const, value: "AA==-2" };
      const result = await store.completeUpload(u, [part(1, 20), part(3, 10)], { ...v, checksum }, {
        outbox: event("k"),
      });
      // Part 2 was not chosen: its chunk is freed.
      assertEquals(ids(result!.freed), ["p2"]);
      const got = await store.getObjectVersion("b", "k");
      if (got?.data.kind !== "chunks") throw new Error("chunked version expected");
      const chunks = await store.versionChunks(got.data.vid);
      assertEquals(chunks.map((c) => [c.chunk.id, c.offset]), [["p1a", 0], ["p1b", 10], [
        "p3",
        20,
      ]]);
      assertSame(got.parts, [20, 10]);
      assertEquals(await store.getUploadById("u1"), undefined);
      assertEquals(await store.listParts("u1", 0, 10), []);
      const done = await store.getCompletedUpload("u1");
      assertSame({ ...done, completedAt: 0 }, {
        uploadId: "u1",
        bucket: "b",
        key: "k",
        etag: '"m-2"',
        versionId: "null",
        checksum,
        completedAt: 0,
      });
      assert(Math.abs(done!.completedAt - Date.now()) < 60_000);
      assertEquals(await store.getCompletedUpload("u2"), undefined);
      assertEquals((await store.readEvents(0, 10)).map((e) => e.key), ["k"]);
      // Completing again: the upload is gone.
      assertEquals(await store.completeUpload(u, [part(1), part(3)], v), undefined);
      assertEquals(await store.abortUpload("u1"), undefined);
    },
  },
  {
    name: "complete: a missing part or a refusing guard changes nothing",
    fn: async (store) => {
      await withBucket(store, ["k"]);
      const u = upload("k", "u1");
      await store.createUpload(u);
      await store.putPart("u1", part(1), refs("c1"));
      const v = version("k", { ...CHUNKED, size: 10, etag: '"m"' });
      assertEquals(await store.completeUpload(u, [part(1), part(2)], v), undefined);
      await rejects(store.completeUpload(u, [part(1)], v, {
        guard: (cur) => {
          assertEquals(cur?.etag, '"x"');
          throw new Error("precondition");
        },
      }));
      assertEquals((await store.getObjectVersion("b", "k"))?.etag, '"x"');
      assert(await store.getUploadById("u1"));
      assertEquals((await store.listParts("u1", 0, 10)).length, 1);
      assertEquals(await store.getCompletedUpload("u1"), undefined);
      // A part uploaded again since it was chosen (another ETag): refused, nothing written.
      const again = { ...part(1), etag: '"p1-again"' };
      await store.putPart("u1", again, refs("c1b"));
      await rejects(store.completeUpload(u, [part(1)], v), PartChangedError);
      assertEquals((await store.getObjectVersion("b", "k"))?.etag, '"x"');
      assert(await store.getUploadById("u1"));
      const ok = await store.completeUpload(u, [again], v);
      assertEquals(ok?.displaced.map((d) => d.etag), ['"x"']);
    },
  },
  {
    name: "abort frees the parts' chunks; deleting a bucket aborts its uploads",
    fn: async (store) => {
      await withBucket(store);
      await store.createUpload(upload("k", "u1"));
      await store.putPart("u1", part(1), refs("a", "b"));
      await store.putPart("u1", part(2), refs("b"));
      assertEquals(ids((await store.abortUpload("u1"))!.freed), ["a", "b"]);
      assertEquals(await store.abortUpload("u1"), undefined);
      assertEquals(await store.listChunks("", 10), []);
      await store.createUpload(upload("k", "u2"));
      await store.putPart("u2", part(1), refs("c"));
      const gone = await store.deleteBucket("b");
      assertEquals([gone.outcome, ids(gone.freed)], ["deleted", ["c"]]);
      assertEquals(await store.getUploadById("u2"), undefined);
      await rejects(
        store.putObjectVersion(version("k")),
        MissingBucketError,
      );
    },
  },
  {
    name: "uploads listing: key and id order, markers, prefixes and delimiter; stale uploads",
    fn: async (store) => {
      await withBucket(store);
      await store.createBucket(bucket("other"));
      const made = [
        ["a", "u3", 5],
        ["a", "u1", 1],
        ["d/x", "u4", 2],
        ["d/y", "u5", 9],
        ["é", "u6", 3],
        ["e", "u2", 4],
      ] as const;
      for (const [key, id, at] of made) {
        await store.createUpload(upload(key, id, { initiated: at }));
      }
      await store.createUpload(upload("a", "u9", { bucket: "other", initiated: 0 }));
      const all = ["a#u1", "a#u3", "d/x#u4", "d/y#u5", "e#u2", "é#u6"];
      for (const max of [1, 2, 1000]) {
        assertEquals(await listUploadsAll(store, "", "", max), all, `${max}`);
        assertEquals(
          (await listUploadsAll(store, "", "/", max)).sort(),
          ["a#u1", "a#u3", "d/", "e#u2", "é#u6"].sort(),
          `delimiter ${max}`,
        );
        assertEquals(await listUploadsAll(store, "d/", "", max), ["d/x#u4", "d/y#u5"]);
      }
      const page = await store.listUploads("b", {
        prefix: "",
        delimiter: "",
        keyMarker: "a",
        uploadIdMarker: "u1",
        maxUploads: 2,
      });
      assertEquals(page.uploads.map((u) => u.uploadId), ["u3", "u4"]);
      assertEquals([page.isTruncated, page.nextKeyMarker, page.nextUploadIdMarker], [
        true,
        "d/x",
        "u4",
      ]);
      // A key marker alone starts after every upload of that key.
      const after = await store.listUploads("b", {
        prefix: "",
        delimiter: "",
        keyMarker: "a",
        uploadIdMarker: "",
        maxUploads: 10,
      });
      assertEquals(after.uploads[0].uploadId, "u4");
      assertEquals((await store.listStaleUploads(5, 10)).map((u) => u.uploadId), [
        "u9",
        "u1",
        "u4",
        "u6",
        "u2",
      ]);
      assertEquals((await store.listStaleUploads(5, 2)).map((u) => u.uploadId), ["u9", "u1"]);
      assertEquals(await store.countStaleUploads(5), 5);
      assertEquals(await store.countStaleUploads(0), 0);
    },
  },
];
