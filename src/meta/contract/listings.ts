// Contract cases: ListObjects (keys in byte order, common prefixes, paging) and
// ListObjectVersions (newest first within a key, markers, delimiter), against brute-force models.
import { assertEquals } from "../../../tests/integration/assert.ts";
import { compareKeys } from "../keys.ts";
import type { MetaStore } from "../store.ts";
import { type ContractCase, removeVersion, version, withBucket } from "./helpers.ts";

async function listAll(store: MetaStore, prefix: string, delimiter: string, maxKeys: number) {
  const out: string[] = [];
  let after = "";
  let pages = 0;
  while (true) {
    const page = await store.listObjects("b", { prefix, delimiter, after, maxKeys });
    pages++;
    // Objects and prefixes of a page in one key order.
    out.push(...[...page.objects.map((o) => o.key), ...page.commonPrefixes].sort(compareKeys));
    if (!page.isTruncated) return { out, pages };
    after = page.lastReturned!;
  }
}

/** What a listing must return: keys under `prefix`, rolled up at `delimiter`, in order. */
function model(keys: string[], prefix: string, delimiter: string): string[] {
  const expected: string[] = [];
  for (const k of [...keys].sort(compareKeys)) {
    if (!k.startsWith(prefix)) continue;
    const cut = delimiter ? k.indexOf(delimiter, prefix.length) : -1;
    const item = cut >= 0 ? k.slice(0, cut + delimiter.length) : k;
    if (!expected.includes(item)) expected.push(item);
  }
  return expected;
}

async function allVersions(store: MetaStore, prefix: string, delimiter: string, maxKeys: number) {
  const out: string[] = [];
  let keyMarker = "";
  let versionIdMarker = "";
  for (;;) {
    const page = await store.listVersions("b", {
      prefix,
      delimiter,
      keyMarker,
      versionIdMarker,
      maxKeys,
    });
    // Versions and prefixes of a page in one key order (stable: versions keep theirs).
    const items = [
      ...page.versions.map((v) => [v.key, `${v.key}@${v.versionId}${v.isLatest ? "*" : ""}`]),
      ...page.commonPrefixes.map((p) => [p, p]),
    ].sort((x, y) => compareKeys(x[0], y[0]));
    out.push(...items.map((x) => x[1]));
    if (!page.isTruncated) return out;
    keyMarker = page.nextKeyMarker!;
    versionIdMarker = page.nextVersionIdMarker ?? "";
  }
}

export const LISTING_CASES: ContractCase[] = [
  {
    name: "listing matches a brute-force model for every page size (byte order keys)",
    fn: async (store) => {
      const keys: string[] = [];
      for (const a of ["", "x/", "x/y/", "é/", "\u{1F600}/", "A/"]) {
        for (const b of ["1", "2", "z/3", "z/4", "\ue000", "\u{1F601}", "Z", "a b", "%"]) {
          keys.push(a + b);
        }
      }
      await withBucket(store, keys);
      const cases = [["", ""], ["", "/"], ["x/", "/"], ["x/y", "/"], ["é/", ""], ["", "z"], [
        "x/",
        "",
      ], ["nothing", "/"]];
      for (const [prefix, delimiter] of cases) {
        const expected = model(keys, prefix, delimiter);
        for (const maxKeys of [1, 2, 3, 7, 1000]) {
          const { out } = await listAll(store, prefix, delimiter, maxKeys);
          assertEquals(out, expected, `${prefix}|${delimiter}|${maxKeys}`);
        }
      }
      const entry = (await store.listObjects("b", {
        prefix: "x/y/1",
        delimiter: "",
        after: "",
        maxKeys: 1,
      })).objects[0];
      assertEquals(entry, { key: "x/y/1", size: 1, etag: '"x"', lastModified: 0, owner: "o" });
    },
  },
  {
    name: "listing: delete markers are not listed; deleting the newest restores the previous",
    fn: async (store) => {
      await withBucket(store, ["a", "b", "c"]);
      await store.putObjectVersion(version("b", { versionId: "v2", deleteMarker: true }));
      let page = await store.listObjects("b", {
        prefix: "",
        delimiter: "",
        after: "",
        maxKeys: 10,
      });
      assertEquals(page.objects.map((o) => o.key), ["a", "c"]);
      const { removed } = await removeVersion(store, "b", "b", "v2");
      assertEquals(removed?.deleteMarker, true);
      page = await store.listObjects("b", { prefix: "", delimiter: "", after: "", maxKeys: 10 });
      assertEquals(page.objects.map((o) => o.key), ["a", "b", "c"]);
      // Another bucket's keys stay out.
      await store.createBucket({ ...(await store.getBucket("b"))!, name: "other" });
      await store.putObjectVersion(version("a2", { bucket: "other" }));
      page = await store.listObjects("b", { prefix: "a", delimiter: "", after: "", maxKeys: 10 });
      assertEquals(page.objects.map((o) => o.key), ["a"]);
    },
  },
  {
    name: "listing seeks past long common prefixes and pages through them",
    fn: async (store) => {
      const keys: string[] = [];
      for (let f = 0; f < 5; f++) {
        for (let i = 0; i < 150; i++) keys.push(`f${f}/k${String(i).padStart(3, "0")}`);
        keys.push(`f${f}x`);
      }
      await withBucket(store, keys);
      for (const maxKeys of [1, 2, 3, 1000]) {
        const rolled = await listAll(store, "", "/", maxKeys);
        assertEquals(rolled.out, model(keys, "", "/"));
        const inside = await listAll(store, "f2/", "/", maxKeys === 1000 ? 1000 : 40);
        assertEquals(inside.out.length, 150);
      }
      const pages = await listAll(store, "", "/", 2);
      assertEquals(pages.pages, 5);
    },
  },
  {
    name: "listVersions: newest first within a key, markers, delimiter, every page size",
    fn: async (store) => {
      await withBucket(store);
      await store.setBucketVersioning("b", "Enabled");
      const expected: string[] = [];
      const keys = ["a", "d/1", "d/2", "e", "é", "\u{1F600}"];
      for (const k of keys) {
        for (let v = 1; v <= 3; v++) {
          await store.putObjectVersion(
            version(k, { versionId: `v${v}`, deleteMarker: v === 3 && k === "e" }),
          );
        }
      }
      for (const k of keys) {
        for (let v = 3; v >= 1; v--) expected.push(`${k}@v${v}${v === 3 ? "*" : ""}`);
      }
      for (const maxKeys of [1, 2, 4, 1000]) {
        assertEquals(await allVersions(store, "", "", maxKeys), expected, `${maxKeys}`);
        assertEquals(
          await allVersions(store, "", "/", maxKeys),
          [...expected.slice(0, 3), "d/", ...expected.slice(9)],
          `delimiter ${maxKeys}`,
        );
        assertEquals(
          await allVersions(store, "d/", "", maxKeys),
          expected.slice(3, 9),
          `prefix ${maxKeys}`,
        );
      }
      const page = await store.listVersions("b", {
        prefix: "",
        delimiter: "",
        keyMarker: "a",
        versionIdMarker: "v2",
        maxKeys: 2,
      });
      assertEquals(page.versions.map((v) => `${v.key}@${v.versionId}`), ["a@v1", "d/1@v3"]);
      assertEquals([page.isTruncated, page.nextKeyMarker, page.nextVersionIdMarker], [
        true,
        "d/1",
        "v3",
      ]);
      // A key marker alone starts after every version of that key.
      const after = await store.listVersions("b", {
        prefix: "",
        delimiter: "",
        keyMarker: "e",
        versionIdMarker: "",
        maxKeys: 1,
      });
      assertEquals(after.versions.map((v) => `${v.key}@${v.versionId}`), ["é@v3"]);
      const marker = (await store.listVersions("b", {
        prefix: "e",
        delimiter: "",
        keyMarker: "",
        versionIdMarker: "",
        maxKeys: 1,
      })).versions[0];
      assertEquals([marker.deleteMarker, marker.isLatest, marker.owner], [true, true, "o"]);
      const none = await store.listVersions("b", {
        prefix: "",
        delimiter: "",
        keyMarker: "",
        versionIdMarker: "",
        maxKeys: 0,
      });
      assertEquals([none.versions.length, none.isTruncated], [0, false]);
    },
  },
];
