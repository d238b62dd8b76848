// Anti-entropy digests and range comparison (anti_entropy_digest.ts), and the answering side
// (anti_entropy_answer.ts) on a real SQLite store.
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import {
  digestRanges,
  DigestSum,
  listRange,
  sameDigest,
  type Segment,
  segments,
  type VersionFacts,
} from "./anti_entropy_digest.ts";
import { AntiEntropyAnswers, stateDigest } from "./anti_entropy_answer.ts";
import { SqliteMetaStore } from "../meta/sqlite.ts";
import { bucket, version } from "../meta/contract/helpers.ts";
import { compareKeys } from "../meta/keys.ts";
import type { VersionEntry } from "../meta/store.ts";

const v = (key: string, versionId = "v1", lastModified = 1000): VersionFacts => ({
  key,
  versionId,
  etag: `"${key}-${versionId}"`,
  deleteMarker: false,
  lastModified,
});

async function* iter<T>(items: T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

function sum(items: VersionFacts[]) {
  const s = new DigestSum();
  items.forEach((i) => s.add(i));
  return s.digest();
}

/** A sorted listing of `n` keys, `per` versions each. */
function listing(n: number, per = 1): VersionFacts[] {
  const out: VersionFacts[] = [];
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < per; j++) out.push(v(`k${String(i).padStart(5, "0")}`, `v${j}`));
  }
  return out;
}

Deno.test("digest: order does not matter; every field and every version does", () => {
  const a = [v("a"), v("a", "v2"), v("b"), v("c/d")];
  assert(sameDigest(sum(a), sum([...a].reverse())));
  assertEquals(sum(a).n, 4);
  assertEquals(sum([]), { n: 0, x: "0".repeat(32) });
  const changed: VersionFacts[] = [
    { ...a[0], etag: '"other"' },
    { ...a[0], lastModified: 1001 },
    { ...a[0], deleteMarker: true },
    { ...a[0], versionId: "v9" },
    { ...a[0], key: "a2" },
  ];
  for (const c of changed) assert(!sameDigest(sum(a), sum([c, ...a.slice(1)])), JSON.stringify(c));
  // One version more or less.
  assert(!sameDigest(sum(a), sum(a.slice(1))));
  assert(!sameDigest(sum(a), sum([...a, v("z")])));
  // Fields cannot shift into each other.
  assert(!sameDigest(sum([v("ab", "c")]), sum([v("a", "bc")])));
});

Deno.test("segments: cut between keys, about `size` versions each, the last open-ended", async () => {
  const items = listing(10, 3);
  const segs = await collect(segments(iter(items), 5));
  // 6 versions (two keys of three) per range, the last one holds what remains.
  assertEquals(segs.map((s) => [s.after, s.upTo, s.digest.n]), [
    ["", "k00001", 6],
    ["k00001", "k00003", 6],
    ["k00003", "k00005", 6],
    ["k00005", "k00007", 6],
    ["k00007", null, 6],
  ]);
  assertEquals(segs.reduce((n, s) => n + s.digest.n, 0), 30);
  assertEquals(await collect(segments(iter([]), 5)), [
    { after: "", upTo: null, digest: { n: 0, x: "0".repeat(32) } },
  ]);
});

Deno.test("digestRanges: the same ranges on another listing find exactly where they differ", async () => {
  const mine = listing(1000);
  // The other node lacks three versions, holds one differently, and has two keys past the end.
  const theirs = mine.filter((_, i) => ![10, 11, 555].includes(i));
  theirs[700] = { ...theirs[700], etag: '"changed"' };
  theirs.push(v("zz1"), v("zz2"));
  const segs: Segment[] = await collect(segments(iter(mine), 64));
  const bounds = segs.map((s) => s.upTo);
  const other = await digestRanges(iter(theirs), bounds);
  const differing = segs.flatMap((s, i) => sameDigest(s.digest, other[i]) ? [] : [i]);
  const where = (key: string) =>
    segs.findIndex((s) => compareKeys(key, s.after) > 0 && (s.upTo === null || key <= s.upTo));
  assertEquals(
    differing,
    [
      ...new Set([where("k00010"), where("k00555"), where(theirs[700].key), segs.length - 1]),
    ].sort((a, b) => a - b),
  );
  // Equal listings: no range differs; ranges after `after` only, nothing read past the last.
  assert((await digestRanges(iter(mine), bounds)).every((d, i) => sameDigest(d, segs[i].digest)));
  const tail = await digestRanges(
    iter(mine.filter((m) => m.key > segs[3].after)),
    bounds.slice(3, 5),
  );
  assertEquals(tail, [segs[3].digest, segs[4].digest]);
});

Deno.test("listRange: pages cut in a key's versions resume at the version", async () => {
  const items = listing(7, 3) as VersionEntry[];
  let calls = 0;
  const meta = {
    listVersions(
      _bucket: string,
      q: { keyMarker: string; versionIdMarker: string; maxKeys: number },
    ) {
      calls++;
      let start = items.findIndex((i) =>
        q.versionIdMarker ? i.key === q.keyMarker && i.versionId === q.versionIdMarker : false
      );
      start = start >= 0 ? start + 1 : items.findIndex((i) => compareKeys(i.key, q.keyMarker) > 0);
      const versions = start < 0 ? [] : items.slice(start, start + q.maxKeys);
      const last = versions.at(-1);
      return Promise.resolve({
        versions,
        commonPrefixes: [],
        isTruncated: start >= 0 && start + q.maxKeys < items.length,
        nextKeyMarker: last?.key,
        nextVersionIdMarker: last?.versionId,
      });
    },
  };
  const read: number[] = [];
  const got = await collect(
    listRange(meta, "b", { after: "k00001", upTo: "k00004" }, 4, (n) => {
      read.push(n);
      return Promise.resolve();
    }),
  );
  assertEquals(got.map((g) => `${g.key}/${g.versionId}`), [
    ...["k00002", "k00003", "k00004"].flatMap((k) => [`${k}/v0`, `${k}/v1`, `${k}/v2`]),
  ]);
  // Stopped at the first key past the range: three pages of four.
  assertEquals([calls, read], [3, [4, 4, 4]]);
  assertEquals((await collect(listRange(meta, "b", { after: "", upTo: null }, 5))).length, 21);
});

Deno.test("answers: digests and have from a real store; pending deletions are not lacking", async () => {
  const meta = new SqliteMetaStore(":memory:", { clusterNode: "b" });
  try {
    await meta.createBucket(bucket("b", { versioning: "Enabled" }));
    for (const key of ["k1", "k2", "k3", "k4"]) {
      await meta.putObjectVersion(version(key, { versionId: `${key}v`, lastModified: 5000 }));
    }
    const answers = new AntiEntropyAnswers(meta);
    const fact = async (key: string) => {
      const got = (await meta.getObjectVersion("b", key))!;
      return {
        key,
        versionId: got.versionId,
        etag: got.etag,
        deleteMarker: got.deleteMarker,
        lastModified: got.lastModified,
      };
    };
    const here = await Promise.all(["k1", "k2", "k3", "k4"].map(fact));
    const digests = await answers.answer("a", {
      op: "digests",
      bucket: "b",
      after: "",
      bounds: ["k2", null],
    }) as { exists: boolean; digests: { n: number; x: string }[] };
    assertEquals(digests, { exists: true, digests: [sum(here.slice(0, 2)), sum(here.slice(2))] });
    assertEquals(
      await answers.answer("a", { op: "digests", bucket: "nope", after: "", bounds: [null] }),
      { exists: false, digests: [] },
    );
    // Lacking: an unknown version, an older copy here; not lacking: the same, a newer copy here.
    const asked = [
      here[0],
      { ...here[1], versionId: "other" },
      { ...here[2], lastModified: 6000 },
      { ...here[3], lastModified: 4000, etag: '"old"' },
      // The same copy with a later change of its tags there: stale here.
      { ...here[2], stamps: { tags: { ms: 7000, node: "a" } } },
    ];
    assertEquals(await answers.answer("a", { op: "have", bucket: "b", versions: asked }), {
      exists: true,
      missing: [1, 2],
      stale: [4],
      gone: [],
      busy: false,
    });
    // A version removed here (after that copy was written) is gone, whether node a has received
    // the removal or not: its tombstone says when.
    const before = Date.now();
    await meta.deleteObjects([{ bucket: "b", key: "k1", versionId: "k1v" }]);
    const removed = async (): Promise<Record<string, unknown>> => {
      const got = await answers.answer("a", {
        op: "have",
        bucket: "b",
        versions: [here[0]],
      }) as Record<string, unknown>;
      const gone = got.gone as { i: number; at: number }[];
      assert(gone.length === 1 && gone[0].at >= before, JSON.stringify(got));
      return { ...got, gone: gone.map((g) => g.i) };
    };
    assertEquals(await removed(), { exists: true, missing: [], stale: [], gone: [0], busy: false });
    const changes = await meta.objectChanges(0, 100);
    await meta.setObjectReplicationCursor("a", changes.at(-1)!.seq);
    assertEquals(await removed(), { exists: true, missing: [], stale: [], gone: [0], busy: false });
    // A copy written after the removal is lacking; without the tombstone, so is the removed one
    // (unless its removal is still on its way to node a, as below).
    assertEquals(
      await answers.answer("a", {
        op: "have",
        bucket: "b",
        versions: [{ ...here[0], lastModified: Date.now() + 60_000 }],
      }),
      { exists: true, missing: [0], stale: [], gone: [], busy: false },
    );
    assertEquals(await meta.pruneTombstones(Date.now() + 1), 1);
    assertEquals(await answers.answer("a", { op: "have", bucket: "b", versions: [here[0]] }), {
      exists: true,
      missing: [0],
      stale: [],
      gone: [],
      busy: false,
    });
    // With more changes waiting for node a than are looked through, nothing is lacking: busy.
    await meta.putObjectVersion(version("k5", { versionId: "k5v" }));
    await meta.putObjectVersion(version("k6", { versionId: "k6v" }));
    const unknown = { ...here[1], versionId: "other" };
    assertEquals(
      await new AntiEntropyAnswers(meta, 1).answer("a", {
        op: "have",
        bucket: "b",
        versions: [unknown],
      }),
      { exists: true, missing: [], stale: [], gone: [], busy: true },
    );
    assertEquals(
      await new AntiEntropyAnswers(meta, 2).answer("a", {
        op: "have",
        bucket: "b",
        versions: [unknown],
      }),
      { exists: true, missing: [0], stale: [], gone: [], busy: false },
    );
    // Bucket states: one digest per bucket, equal for equal stamps.
    const page = await answers.answer("a", { op: "buckets", after: 0 }) as {
      buckets: { bucket: string; d: string }[];
      next: number | null;
    };
    const [state] = await meta.bucketChanges(0, 1);
    assertEquals(page, { buckets: [{ bucket: "b", d: stateDigest(state) }], next: null });
    // Malformed calls are refused before anything is read.
    for (
      const bad of [
        { op: "what" },
        { op: "digests", bucket: "b", after: "", bounds: [] },
        { op: "digests", bucket: "b", after: "", bounds: [null, "k"] },
        { op: "have", bucket: "b", versions: [{ key: "k" }] },
        { op: "have", bucket: "b".repeat(64), versions: [] },
        { op: "buckets", after: -1 },
      ]
    ) {
      let code = "";
      try {
        await answers.answer("a", bad);
      } catch (err) {
        code = (err as { code?: string }).code ?? String(err);
      }
      assertEquals(code, "invalid_message", JSON.stringify(bad));
    }
  } finally {
    await meta.close();
  }
});
