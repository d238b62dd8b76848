// Anti-entropy digests: what a node holds of a bucket, summed over key ranges without holding
// the versions in memory. A range is (after, upTo]: the keys strictly after `after` and up to
// `upTo` (null: no upper end), in the store's key order (code points, src/meta/keys.ts). A range's
// digest is how many versions it holds and the XOR of their fingerprints, so it does not depend
// on the order a store lists a key's versions in (replicas are placed by time, not by arrival).
import { createHash } from "node:crypto";
import { compareKeys } from "../meta/keys.ts";
import type { MetaStore, VersionEntry } from "../meta/store.ts";
import { newerStamp, VERSION_PARTS, type VersionStamps } from "../meta/version_stamps.ts";

/**
 * The fields that make two copies of a version the same (bytes by ETag, placement by time, later
 * changes of tags, ACL, retention and legal hold by their stamps: equal stamps, equal values).
 */
export type VersionFacts = Pick<
  VersionEntry,
  "key" | "versionId" | "etag" | "deleteMarker" | "lastModified" | "stamps"
>;

/** Bytes of each fingerprint kept (128 bits: collisions are out of reach). */
const FINGERPRINT_BYTES = 16;

/** The stamps as text in a fixed order ("" when none: a version never changed since written). */
export function stampsText(stamps: VersionStamps | undefined): string {
  return VERSION_PARTS.flatMap((p) => {
    const s = stamps?.[p];
    return s ? [`${p}=${s.ms}/${s.node}`] : [];
  }).join(",");
}

export function fingerprint(v: VersionFacts): Uint8Array {
  const hash = createHash("sha256");
  const fields: unknown[] = [v.key, v.versionId, v.etag, v.deleteMarker, v.lastModified];
  // A version never changed since written keeps the fingerprint it had before stamps counted.
  const stamps = stampsText(v.stamps);
  if (stamps !== "") fields.push(stamps);
  // JSON keeps the fields apart whatever characters a key holds.
  hash.update(JSON.stringify(fields));
  return hash.digest().subarray(0, FINGERPRINT_BYTES);
}

/** Whether `a` carries a later change of some part than `b` has. */
export function newerParts(a: VersionStamps | undefined, b: VersionStamps | undefined): boolean {
  return VERSION_PARTS.some((p) => {
    const s = a?.[p];
    return s !== undefined && newerStamp(s, b?.[p]);
  });
}

export interface RangeDigest {
  /** Versions in the range. */
  n: number;
  /** Hex XOR of their fingerprints. */
  x: string;
}

export class DigestSum {
  #n = 0;
  #x = new Uint8Array(FINGERPRINT_BYTES);

  add(v: VersionFacts): void {
    const f = fingerprint(v);
    for (let i = 0; i < FINGERPRINT_BYTES; i++) this.#x[i] ^= f[i];
    this.#n++;
  }

  get count(): number {
    return this.#n;
  }

  digest(): RangeDigest {
    return { n: this.#n, x: Array.from(this.#x, (b) => b.toString(16).padStart(2, "0")).join("") };
  }
}

export function sameDigest(a: RangeDigest, b: RangeDigest): boolean {
  return a.n === b.n && a.x === b.x;
}

/** Whether `key` lies at or below a range's upper end. */
export function withinUpper(key: string, upTo: string | null): boolean {
  return upTo === null || compareKeys(key, upTo) <= 0;
}

/**
 * The digests of consecutive ranges (after, bounds[0]], (bounds[0], bounds[1]], ... from
 * versions listed in key order starting after `after`; stops reading past the last bound.
 */
export async function digestRanges(
  versions: AsyncIterable<VersionFacts>,
  bounds: (string | null)[],
): Promise<RangeDigest[]> {
  const sums = bounds.map(() => new DigestSum());
  let i = 0;
  for await (const v of versions) {
    while (i < bounds.length && !withinUpper(v.key, bounds[i])) i++;
    if (i === bounds.length) break;
    sums[i].add(v);
  }
  return sums.map((s) => s.digest());
}

/** A range of the local listing with its digest; `upTo` null for the last one. */
export interface Segment {
  after: string;
  upTo: string | null;
  digest: RangeDigest;
}

/**
 * Cuts a listing (in key order) into ranges of about `size` versions each, always between two
 * keys (a key's versions stay in one range); the last range has no upper end, so it also covers
 * keys the other node holds past this one's last. Holds one digest at a time, never the versions.
 */
export async function* segments(
  versions: AsyncIterable<VersionFacts>,
  size: number,
): AsyncGenerator<Segment> {
  let after = "";
  let sum = new DigestSum();
  let last: string | undefined;
  for await (const v of versions) {
    if (last !== undefined && v.key !== last && sum.count >= size) {
      yield { after, upTo: last, digest: sum.digest() };
      after = last;
      sum = new DigestSum();
    }
    sum.add(v);
    last = v.key;
  }
  yield { after, upTo: null, digest: sum.digest() };
}

/**
 * The versions of (after, upTo] in key order, read `page` at a time (each page reported to
 * `read`, which may wait: the throttle). Stops at the first key past `upTo`.
 */
export async function* listRange(
  meta: Pick<MetaStore, "listVersions">,
  bucket: string,
  range: { after: string; upTo: string | null },
  page: number,
  read: (n: number) => Promise<void> = () => Promise.resolve(),
): AsyncGenerator<VersionEntry> {
  let keyMarker = range.after;
  let versionIdMarker = "";
  while (true) {
    const got = await meta.listVersions(bucket, {
      prefix: "",
      delimiter: "",
      keyMarker,
      versionIdMarker,
      maxKeys: page,
    });
    await read(got.versions.length);
    for (const v of got.versions) {
      if (!withinUpper(v.key, range.upTo)) return;
      yield v;
    }
    if (!got.isTruncated || got.nextKeyMarker === undefined) return;
    keyMarker = got.nextKeyMarker;
    versionIdMarker = got.nextVersionIdMarker ?? "";
  }
}
