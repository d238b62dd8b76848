// The answering side of anti-entropy (POST /cluster/anti-entropy, signed like every cluster
// call): what this node holds, as digests, so the calling node can tell what it lacks.
//
//   {"op": "buckets", "after": <queue position>}  -> {"buckets": [{"bucket", "d"}], "next"}
//   {"op": "digests", "bucket", "after", "bounds"} -> {"exists", "digests": [{"n", "x"}]}
//   {"op": "have", "bucket", "versions": [facts]}  -> {"exists", "missing": [index],
//                                 "stale": [index], "gone": [{"i": index, "at": ms}], "busy"}
//
// Nothing is changed here: the caller repairs by sending what this node lacks through the
// object and bucket replication calls.
import { ApiError } from "../api/json.ts";
import type { BucketState, MetaStore } from "../meta/store.ts";
import { digestRanges, listRange, newerParts, type VersionFacts } from "./anti_entropy_digest.ts";
import { parseStamps } from "../meta/version_stamps.ts";
import { sha256Hex } from "./signature.ts";
import { wire } from "./replication.ts";

/** Bucket digests per answer (an answer is at most 1 MiB: about 80 bytes each). */
export const BUCKETS_PER_ANSWER = 1000;
/** Ranges one digests call may ask for. */
export const MAX_BOUNDS = 64;
/** Versions one have call may ask about. */
export const MAX_HAVE = 500;
/** Queued changes still to send to the caller that a have answer looks through for deletions. */
const PENDING_SCAN = 10_000;
const MAX_KEY = 1024;
const LIST_PAGE = 1000;

/** A bucket state's digest: its parts' stamps (equal stamps carry equal values). */
export function stateDigest(state: BucketState): string {
  const stamp = (p?: { stamp: { ms: number; node: string } }) =>
    p ? `${p.stamp.ms}/${p.stamp.node}` : "";
  const configs = Object.entries(state.configs)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([kind, part]) => `${kind}=${stamp(part)}`);
  const text = [stamp(state.record), stamp(state.versioning), stamp(state.objectLock), ...configs];
  return sha256Hex(text.join("\n")).slice(0, 32);
}

function invalid(message: string): ApiError {
  return new ApiError(400, "invalid_message", message);
}

const isKey = (v: unknown): v is string =>
  typeof v === "string" && v.length > 0 && v.length <= MAX_KEY;

function bucketName(json: Record<string, unknown>): string {
  const { bucket } = json;
  // Only looked up: a name no bucket has is answered as not existing.
  if (typeof bucket !== "string" || bucket === "" || bucket.length > 63) {
    throw invalid("An anti-entropy call needs a bucket name.");
  }
  return bucket;
}

/** Version facts from a have call, or undefined when one is malformed. */
export function parseFacts(value: unknown): VersionFacts | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { key, versionId, etag, deleteMarker, lastModified } = value as Record<string, unknown>;
  if (!isKey(key) || typeof versionId !== "string" || versionId === "" || versionId.length > 256) {
    return undefined;
  }
  if (typeof etag !== "string" || etag.length > 256 || typeof deleteMarker !== "boolean") return;
  if (!Number.isSafeInteger(lastModified)) return undefined;
  const raw = (value as Record<string, unknown>).stamps;
  const stamps = raw === undefined ? undefined : parseStamps(raw);
  if (raw !== undefined && stamps === undefined) return undefined;
  return {
    key,
    versionId,
    etag,
    deleteMarker,
    lastModified: lastModified as number,
    ...(stamps ? { stamps } : {}),
  };
}

export class AntiEntropyAnswers {
  constructor(readonly meta: MetaStore, readonly pendingScan = PENDING_SCAN) {}

  /** Answers one verified call from `from` (the node that signed it). */
  answer(from: string, json: Record<string, unknown>): Promise<unknown> {
    switch (json.op) {
      case "buckets":
        return this.#buckets(json);
      case "digests":
        return this.#digests(json);
      case "have":
        return this.#have(from, json);
    }
    throw invalid("Unknown anti-entropy operation.");
  }

  /** Digests of every bucket state the queue holds (tombstones too), a page at a time. */
  async #buckets(json: Record<string, unknown>) {
    const after = json.after ?? 0;
    if (!Number.isSafeInteger(after) || (after as number) < 0) {
      throw invalid("after must be a queue position.");
    }
    const page = await this.meta.bucketChanges(after as number, BUCKETS_PER_ANSWER);
    return {
      buckets: page.map((c) => ({ bucket: c.bucket, d: stateDigest(wire(c)) })),
      next: page.length < BUCKETS_PER_ANSWER ? null : page[page.length - 1].seq,
    };
  }

  async #digests(json: Record<string, unknown>) {
    const bucket = bucketName(json);
    const { after, bounds } = json;
    if (typeof after !== "string" || after.length > MAX_KEY) {
      throw invalid("after must be a key (or empty).");
    }
    if (
      !Array.isArray(bounds) || bounds.length === 0 || bounds.length > MAX_BOUNDS ||
      !bounds.every((b, i) => isKey(b) || (b === null && i === bounds.length - 1))
    ) {
      throw invalid(`bounds must be 1 to ${MAX_BOUNDS} keys, the last one may be null.`);
    }
    if (!await this.meta.getBucket(bucket)) return { exists: false, digests: [] };
    const versions = listRange(
      this.meta,
      bucket,
      { after, upTo: bounds.at(-1) as string | null },
      LIST_PAGE,
    );
    return { exists: true, digests: await digestRanges(versions, bounds as (string | null)[]) };
  }

  /**
   * Which of the versions listed this node lacks (or holds otherwise), which it holds with
   * older later changes (stale: the caller sends their stamped parts), and which it removed after
   * the caller's copy was written (gone: its tombstone; the caller removes its copy). A version this node
   * removed and has not told the caller yet is not lacking: its deletion is on its way, and the
   * caller must not send it back. When more changes wait for the caller than are looked through,
   * the answer is busy and the caller repairs nothing this time.
   */
  async #have(from: string, json: Record<string, unknown>) {
    const bucket = bucketName(json);
    const { versions } = json;
    if (!Array.isArray(versions) || versions.length > MAX_HAVE) {
      throw invalid(`versions must be a list of at most ${MAX_HAVE}.`);
    }
    const facts = versions.map(parseFacts);
    if (facts.some((f) => f === undefined)) throw invalid("A version is malformed.");
    if (!await this.meta.getBucket(bucket)) return { exists: false, missing: [], busy: false };
    const missing: number[] = [];
    const stale: number[] = [];
    const gone: { i: number; at: number }[] = [];
    for (const [i, f] of (facts as VersionFacts[]).entries()) {
      const v = await this.meta.getObjectVersion(bucket, f.key, f.versionId);
      // Removed here after that copy was written: the caller is to remove it, not send it.
      const at = v === undefined
        ? await this.meta.versionTombstone({ bucket, key: f.key, versionId: f.versionId })
        : undefined;
      if (at !== undefined && at >= f.lastModified) {
        gone.push({ i, at });
        continue;
      }
      // A newer copy of the version here (a later write of the `null` version) is not lacking.
      const lacking = v === undefined || v.lastModified < f.lastModified ||
        (v.lastModified === f.lastModified &&
          (v.etag !== f.etag || v.deleteMarker !== f.deleteMarker));
      if (lacking) missing.push(i);
      // The same copy, with a later change of its tags, ACL or lock there than here.
      else if (v.lastModified === f.lastModified && newerParts(f.stamps, v.stamps)) stale.push(i);
    }
    if (missing.length === 0) return { exists: true, missing, stale, gone, busy: false };
    const deleting = await this.#pendingDeletions(from, bucket);
    if (deleting === "busy") return { exists: true, missing: [], stale: [], gone: [], busy: true };
    return {
      exists: true,
      missing: missing.filter((i) => {
        const f = facts[i]!;
        return !deleting.has(`${f.key}\n${f.versionId}`);
      }),
      stale,
      gone,
      busy: false,
    };
  }

  /** Versions of `bucket` whose removal here is queued and not yet delivered to `node`. */
  async #pendingDeletions(node: string, bucket: string): Promise<Set<string> | "busy"> {
    const found = new Set<string>();
    let after = await this.meta.objectReplicationCursor(node);
    // One row more than the bound tells whether there are more.
    for (let scanned = 0; scanned <= this.pendingScan;) {
      const limit = Math.min(LIST_PAGE, this.pendingScan + 1 - scanned);
      const page = await this.meta.objectChanges(after, limit);
      for (const c of page) {
        if (c.op === "delete" && c.bucket === bucket) found.add(`${c.key}\n${c.versionId}`);
      }
      if (page.length < limit) return found;
      scanned += page.length;
      after = page[page.length - 1].seq;
    }
    return "busy";
  }
}
