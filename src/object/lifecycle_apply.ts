// One lifecycle pass over one bucket: expire current versions, remove expired delete markers and
// noncurrent versions, abort old multipart uploads. Every walk goes page by page through the
// metadata listings, so a bucket is never loaded whole.
import { S3Error } from "../http/errors.ts";
import { log } from "../log.ts";
import type { BucketRecord, ListEntry, VersionEntry } from "../meta/store.ts";
import { type ObjectLayer, VersionChangedError } from "./layer.ts";
import type { EventOrigin } from "../events/outbox.ts";
import {
  coveringPrefixes,
  dueAt,
  expirationDue,
  ruleMatches,
  ruleMayMatch,
  rulePrefix,
  ruleTags,
} from "./lifecycle_match.ts";
import type { LifecycleRule } from "./lifecycle_rules.ts";
import { abortUpload } from "./multipart.ts";

export interface LifecycleCounts {
  /** Current versions expired: removed (unversioned) or covered by a new delete marker. */
  expired: number;
  deleteMarkersRemoved: number;
  noncurrentExpired: number;
  uploadsAborted: number;
  /** Versions whose deletion Object Lock refused (retention or legal hold). */
  locked: number;
  /** Actions that failed for another reason (logged). */
  errors: number;
}

/**
 * What lifecycle did to one object or upload. This is the hook for the event feed once events
 * exist: every action reports here, named as the protocol's event would be.
 */
export interface LifecycleAction {
  event:
    | "LifecycleExpiration:Delete"
    | "LifecycleExpiration:DeleteMarkerCreated"
    | "AbortIncompleteMultipartUpload";
  bucket: string;
  key: string;
  versionId?: string;
  uploadId?: string;
}

export interface ApplyOptions {
  /** The time the run counts from (epoch milliseconds). */
  now: number;
  /** Length of one lifecycle day in milliseconds. */
  dayMs: number;
  /** Entries per listing page (default 1000). */
  pageSize?: number;
  /** Polled between pages: true ends the pass early (shutdown). */
  stopped?: () => boolean;
  onAction?: (action: LifecycleAction) => void;
}

export function emptyCounts(): LifecycleCounts {
  return {
    expired: 0,
    deleteMarkersRemoved: 0,
    noncurrentExpired: 0,
    uploadsAborted: 0,
    locked: 0,
    errors: 0,
  };
}

interface Pass {
  layer: ObjectLayer;
  bucket: BucketRecord;
  opts: ApplyOptions;
  page: number;
  counts: LifecycleCounts;
}

/** Applies the bucket's enabled rules once and counts what was done. */
export async function applyLifecycle(
  layer: ObjectLayer,
  bucket: BucketRecord,
  rules: LifecycleRule[],
  opts: ApplyOptions,
): Promise<LifecycleCounts> {
  const pass: Pass = { layer, bucket, opts, page: opts.pageSize ?? 1000, counts: emptyCounts() };
  const enabled = rules.filter((r) => r.status === "Enabled");
  await expireCurrent(pass, enabled);
  await expireVersions(pass, enabled);
  await abortUploads(pass, enabled);
  return pass.counts;
}

/** Lifecycle actions are recorded as the bucket owner's, from no address. */
function lifecycleOrigin(pass: Pass): EventOrigin {
  return {
    principal: pass.bucket.owner,
    sourceIp: "",
    requestId: "lifecycle",
    lifecycle: true,
  };
}

function emit(pass: Pass, action: Omit<LifecycleAction, "bucket">): void {
  // Reporting hook (counts, tests); the events themselves are recorded by deleteObject.
  pass.opts.onAction?.({ bucket: pass.bucket.name, ...action });
}

/** Runs one deletion; Object Lock refusals count as locked, other failures as errors. */
async function attempt(pass: Pass, what: string, key: string, fn: () => Promise<void>) {
  try {
    await fn();
  } catch (err) {
    if (err instanceof S3Error && err.code === "AccessDenied") {
      pass.counts.locked++;
      return;
    }
    if (err instanceof S3Error && (err.code === "NoSuchUpload" || err.code === "NoSuchVersion")) {
      return; // Gone meanwhile.
    }
    if (err instanceof VersionChangedError) return; // Written or made current again meanwhile.
    pass.counts.errors++;
    log("warn", "Lifecycle action failed", {
      source: "lifecycle",
      bucket: pass.bucket.name,
      key,
      action: what,
      error: err instanceof Error ? err.message : String(err),
    });
  }
}

/** Expiration by Days or Date: the current version goes (or gets a delete marker). */
async function expireCurrent(pass: Pass, rules: LifecycleRule[]): Promise<void> {
  const active = rules.filter((r) =>
    r.expiration?.days !== undefined || r.expiration?.date !== undefined
  );
  if (active.length === 0) return;
  const { meta } = pass.layer;
  for (const prefix of coveringPrefixes(active.map(rulePrefix))) {
    let after = "";
    while (!pass.opts.stopped?.()) {
      const page = await meta.listObjects(pass.bucket.name, {
        prefix,
        delimiter: "",
        after,
        maxKeys: pass.page,
      });
      for (const entry of page.objects) {
        const due = active.filter((r) =>
          ruleMayMatch(r, entry.key, entry.size) && expirationDue(r, entry.lastModified, pass.opts)
        );
        if (due.length > 0) await expireObject(pass, entry, due);
      }
      if (!page.isTruncated || page.lastReturned === undefined) break;
      after = page.lastReturned;
    }
  }
}

/** Expires the current version of `entry` when one of the `due` rules matches its tags too. */
async function expireObject(pass: Pass, entry: ListEntry, due: LifecycleRule[]): Promise<void> {
  const name = pass.bucket.name;
  // The listing may be stale: act only on the version it showed.
  const current = await pass.layer.meta.getObjectVersion(name, entry.key);
  if (
    !current || current.deleteMarker || current.lastModified !== entry.lastModified ||
    current.etag !== entry.etag || !due.some((r) => ruleMatches(r, current))
  ) return;
  await attempt(pass, "Expiration", entry.key, async () => {
    const result = await pass.layer.deleteObject(name, entry.key, {
      owner: pass.bucket.owner,
      origin: lifecycleOrigin(pass),
      // A PUT that replaced it since (not due yet) must stay, and not be covered by the marker
      // of a versioned bucket: checked in the removal's transaction.
      unchanged: { lastModified: current.lastModified, etag: current.etag, current: true },
    });
    pass.counts.expired++;
    emit(pass, {
      event: result.deleteMarker
        ? "LifecycleExpiration:DeleteMarkerCreated"
        : "LifecycleExpiration:Delete",
      key: entry.key,
      versionId: result.deleteMarker ? result.versionId : current.versionId,
    });
  });
}

/** The versions of one key seen so far in a version walk. */
interface KeyState {
  key: string;
  latest: VersionEntry;
  /** LastModified of the previous (newer) version: when the next one became noncurrent. */
  newerModified: number;
  /** Noncurrent versions seen so far (the newest noncurrent is number 0). */
  noncurrentSeen: number;
  /** Versions not chosen for removal. */
  kept: number;
}

/**
 * NoncurrentVersionExpiration and ExpiredObjectDeleteMarker, in one walk over the versions.
 * Removals chosen on a page run after the next page has been fetched, so the listing marker
 * (the last entry of a page) still exists when the walk resumes from it.
 */
async function expireVersions(pass: Pass, rules: LifecycleRule[]): Promise<void> {
  const noncurrent = rules.filter((r) => r.noncurrentVersionExpiration);
  const markers = rules.filter((r) => r.expiration?.expiredObjectDeleteMarker === true);
  if (pass.bucket.versioning === "" || (noncurrent.length === 0 && markers.length === 0)) return;
  const prefixes = coveringPrefixes([...noncurrent, ...markers].map(rulePrefix));
  for (const prefix of prefixes) {
    let pending: (() => Promise<void>)[] = [];
    let state: KeyState | undefined;
    let keyMarker = "";
    let versionIdMarker = "";
    while (!pass.opts.stopped?.()) {
      const page = await pass.layer.meta.listVersions(pass.bucket.name, {
        prefix,
        delimiter: "",
        keyMarker,
        versionIdMarker,
        maxKeys: pass.page,
      });
      for (const run of pending) await run();
      pending = [];
      for (const v of page.versions) {
        if (state?.key !== v.key) {
          if (state) finishKey(pass, state, markers, pending);
          state = {
            key: v.key,
            latest: v,
            newerModified: v.lastModified,
            noncurrentSeen: 0,
            kept: 1,
          };
          continue;
        }
        noncurrentVersion(pass, state, v, noncurrent, pending);
      }
      if (!page.isTruncated || page.nextKeyMarker === undefined) break;
      keyMarker = page.nextKeyMarker;
      versionIdMarker = page.nextVersionIdMarker ?? "";
    }
    if (state && !pass.opts.stopped?.()) finishKey(pass, state, markers, pending);
    for (const run of pending) await run();
  }
}

function noncurrentVersion(
  pass: Pass,
  state: KeyState,
  v: VersionEntry,
  rules: LifecycleRule[],
  pending: (() => Promise<void>)[],
): void {
  const since = state.newerModified;
  const index = state.noncurrentSeen++;
  state.newerModified = v.lastModified;
  const due = rules.filter((r) => {
    const n = r.noncurrentVersionExpiration!;
    return ruleMayMatch(r, v.key, v.size) && index >= (n.newerNoncurrentVersions ?? 0) &&
      pass.opts.now >= dueAt(since, n.noncurrentDays, pass.opts.dayMs);
  });
  if (due.length === 0) {
    state.kept++;
    return;
  }
  pending.push(() =>
    attempt(pass, "NoncurrentVersionExpiration", v.key, async () => {
      const name = pass.bucket.name;
      const current = await pass.layer.meta.getObjectVersion(name, v.key);
      if (!current || current.versionId === v.versionId) return; // Current again: keep it.
      if (!(await tagsMatch(pass, v, due))) return;
      await pass.layer.deleteObject(name, v.key, {
        versionId: v.versionId,
        owner: pass.bucket.owner,
        origin: lifecycleOrigin(pass),
        // Made current again meanwhile (a newer version deleted): kept, checked in the removal's
        // transaction.
        unchanged: { lastModified: v.lastModified, etag: v.etag, current: false },
      });
      pass.counts.noncurrentExpired++;
      emit(pass, { event: "LifecycleExpiration:Delete", key: v.key, versionId: v.versionId });
    })
  );
}

/**
 * Whether one of the `due` rules matches the version with its tags. Listings carry no tags, so
 * the version is read only when every due rule names some.
 */
async function tagsMatch(pass: Pass, v: VersionEntry, due: LifecycleRule[]): Promise<boolean> {
  if (due.some((r) => ruleTags(r).length === 0)) return true;
  const version = await pass.layer.meta.getObjectVersion(pass.bucket.name, v.key, v.versionId);
  return version !== undefined && due.some((r) => ruleMatches(r, version));
}

/** A key whose only version left is a delete marker: the marker has expired. */
function finishKey(
  pass: Pass,
  state: KeyState,
  rules: LifecycleRule[],
  pending: (() => Promise<void>)[],
): void {
  const marker = state.latest;
  if (!marker.deleteMarker || state.kept !== 1) return;
  // A delete marker has no tags, so rules with tag filters never match one.
  if (!rules.some((r) => ruleMatches(r, { key: marker.key, size: 0 }))) return;
  pending.push(() =>
    attempt(pass, "ExpiredObjectDeleteMarker", marker.key, async () => {
      if (!(await soleDeleteMarker(pass, marker))) return;
      await pass.layer.deleteObject(pass.bucket.name, marker.key, {
        versionId: marker.versionId,
        owner: pass.bucket.owner,
        origin: lifecycleOrigin(pass),
      });
      pass.counts.deleteMarkersRemoved++;
      emit(pass, {
        event: "LifecycleExpiration:Delete",
        key: marker.key,
        versionId: marker.versionId,
      });
    })
  );
}

/** Checked again just before removal: the marker is still the key's only version. */
async function soleDeleteMarker(pass: Pass, marker: VersionEntry): Promise<boolean> {
  const page = await pass.layer.meta.listVersions(pass.bucket.name, {
    prefix: marker.key,
    delimiter: "",
    keyMarker: "",
    versionIdMarker: "",
    maxKeys: 2,
  });
  const versions = page.versions.filter((v) => v.key === marker.key);
  return versions.length === 1 && versions[0].versionId === marker.versionId &&
    versions[0].deleteMarker;
}

/** AbortIncompleteMultipartUpload: uploads initiated DaysAfterInitiation days ago or more. */
async function abortUploads(pass: Pass, rules: LifecycleRule[]): Promise<void> {
  const active = rules.filter((r) => r.abortIncompleteMultipartUpload);
  if (active.length === 0) return;
  for (const prefix of coveringPrefixes(active.map(rulePrefix))) {
    let keyMarker = "";
    let uploadIdMarker = "";
    while (!pass.opts.stopped?.()) {
      const page = await pass.layer.meta.listUploads(pass.bucket.name, {
        prefix,
        delimiter: "",
        keyMarker,
        uploadIdMarker,
        maxUploads: pass.page,
      });
      for (const u of page.uploads) {
        const due = active.some((r) =>
          ruleMatches(r, { key: u.key, size: 0 }) &&
          pass.opts.now >=
            dueAt(
              u.initiated,
              r.abortIncompleteMultipartUpload!.daysAfterInitiation,
              pass.opts.dayMs,
            )
        );
        if (!due) continue;
        await attempt(pass, "AbortIncompleteMultipartUpload", u.key, async () => {
          await abortUpload(pass.layer, u.uploadId);
          pass.counts.uploadsAborted++;
          emit(pass, { event: "AbortIncompleteMultipartUpload", key: u.key, uploadId: u.uploadId });
        });
      }
      if (!page.isTruncated || page.nextKeyMarker === undefined) break;
      keyMarker = page.nextKeyMarker;
      uploadIdMarker = page.nextUploadIdMarker ?? "";
    }
  }
}
