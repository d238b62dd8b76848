// Multipart uploads in the object layer: parts are stored as chunks like any object data, and
// completing an upload moves chunk references to the new version: no bytes are copied.
import { createHash } from "node:crypto";
import { S3Error } from "../http/errors.ts";
import {
  type ObjectVersion,
  PartChangedError,
  type PartRecord,
  type UploadRecord,
  VersioningChangedError,
} from "../meta/store.ts";
import { type BodyCheck, type Encryption, type ObjectLayer, versioningChanged } from "./layer.ts";
import { versionIdFor } from "./versioning.ts";
import { type DirectBody, releaseAll, writeBody } from "./write_pipeline.ts";
import {
  completeChecksum,
  type CompleteExpectations,
  type RequestedPart,
} from "./multipart_checksum.ts";
import { type EventOrigin, objectEvent } from "../events/outbox.ts";
import { commitGuard, type WriteCondition } from "./write_condition.ts";

export const MAX_PART_SIZE = 5 * 1024 ** 3;
export const MIN_PART_SIZE = 5 * 1024 ** 2;
export const MAX_PART_NUMBER = 10000;

export function noSuchUpload(uploadId: string): S3Error {
  return new S3Error(
    "NoSuchUpload",
    "The specified multipart upload does not exist. The upload ID may be invalid, or the " +
      "upload may have been aborted or completed.",
    { details: { UploadId: uploadId } },
  );
}

/** Upload ids sort by creation time. */
export function newUploadId(): string {
  const random = crypto.getRandomValues(new Uint8Array(12)).toHex();
  return Date.now().toString(16).padStart(12, "0") + random;
}

export async function uploadPart(
  layer: ObjectLayer,
  upload: UploadRecord,
  input: {
    partNumber: number;
    body: AsyncIterable<Uint8Array> | DirectBody;
    contentMd5?: string;
    checks?: BodyCheck[];
    key?: CryptoKey;
    /** The part's additional checksum, known once the body has been verified. */
    checksum?: () => PartRecord["checksum"];
  },
): Promise<PartRecord> {
  const written = await writeBody(input.body, layer.chunks, {
    inlineMax: -1,
    chunkSize: layer.limits.chunkSize,
    key: input.key,
    checks: input.checks,
    maxSize: MAX_PART_SIZE,
    tooLarge: () => new S3Error("EntityTooLarge", "A part may be at most 5 GiB."),
    buffers: layer.writeBuffers,
  });
  try {
    if (
      input.contentMd5 !== undefined &&
      btoa(String.fromCharCode(...written.md5)) !== input.contentMd5
    ) {
      throw new S3Error(
        "BadDigest",
        "The Content-MD5 you specified did not match what we received.",
      );
    }
    const part: PartRecord = {
      partNumber: input.partNumber,
      etag: `"${written.md5.toHex()}"`,
      size: written.size,
      lastModified: Date.now(),
      checksum: input.checksum?.(),
    };
    const stored = await layer.meta.putPart(upload.uploadId, part, written.chunks);
    if (!stored) throw noSuchUpload(upload.uploadId);
    await layer.chunks.collect(stored.freed);
    return part;
  } finally {
    await releaseAll(layer.chunks, written.chunks);
  }
}

async function allParts(layer: ObjectLayer, uploadId: string): Promise<Map<number, PartRecord>> {
  const parts = new Map<number, PartRecord>();
  let after = 0;
  while (true) {
    const page = await layer.meta.listParts(uploadId, after, 1000);
    for (const p of page) parts.set(p.partNumber, p);
    if (page.length < 1000) return parts;
    after = page[page.length - 1].partNumber;
  }
}

function normalizeEtag(etag: string): string {
  const bare = etag.trim().replace(/^"|"$/g, "");
  return `"${bare}"`;
}

function invalidPart(partNumber: number, etag?: string): S3Error {
  return new S3Error(
    "InvalidPart",
    "One or more of the specified parts could not be found. The part may not have been " +
      "uploaded, or the specified entity tag may not match the part's entity tag.",
    { details: { PartNumber: String(partNumber), ...(etag === undefined ? {} : { ETag: etag }) } },
  );
}

/** Checks the requested part list against the stored parts, as the protocol does. */
function choose(
  requested: { partNumber: number; etag: string }[],
  stored: Map<number, PartRecord>,
): PartRecord[] {
  const chosen: PartRecord[] = [];
  let previous = 0;
  for (const r of requested) {
    if (r.partNumber <= previous) {
      throw new S3Error("InvalidPartOrder", "The list of parts was not in ascending order.");
    }
    previous = r.partNumber;
    const part = stored.get(r.partNumber);
    if (!part || part.etag !== normalizeEtag(r.etag)) throw invalidPart(r.partNumber, r.etag);
    chosen.push(part);
  }
  chosen.slice(0, -1).forEach((p) => {
    if (p.size < MIN_PART_SIZE) {
      throw new S3Error(
        "EntityTooSmall",
        "Your proposed upload is smaller than the minimum allowed size.",
        {
          details: { PartNumber: String(p.partNumber), MinSizeAllowed: String(MIN_PART_SIZE) },
        },
      );
    }
  });
  return chosen;
}

/** The multipart ETag: MD5 of the concatenated binary part MD5s, then `-<parts>`. */
export function multipartEtag(parts: Pick<PartRecord, "etag">[]): string {
  const hash = createHash("md5");
  for (const p of parts) {
    hash.update(Uint8Array.from(p.etag.slice(1, 33).match(/../g)!, (b) => parseInt(b, 16)));
  }
  return `"${hash.digest("hex")}-${parts.length}"`;
}

/**
 * Whether `requested` names the parts whose multipart ETag is `etag`: a repeated completion of a
 * finished upload (a retry whose answer was lost) names the same list; one that lost a race
 * with another list does not.
 */
export function sameCompletion(requested: { etag: string }[], etag: string): boolean {
  const etags = requested.map((r) => normalizeEtag(r.etag));
  if (!etags.every((e) => /^"[0-9a-f]{32}"$/i.test(e))) return false;
  return multipartEtag(etags.map((e) => ({ etag: e.toLowerCase() }))) === etag;
}

export async function completeUpload(
  layer: ObjectLayer,
  upload: UploadRecord,
  requested: RequestedPart[],
  opts: { expected?: CompleteExpectations; condition?: WriteCondition; origin?: EventOrigin } = {},
): Promise<ObjectVersion> {
  const { expected, condition } = opts;
  if (condition) await layer.checkCondition(upload.bucket, upload.key, condition);
  const chosen = choose(requested, await allParts(layer, upload.uploadId));
  const checksum = completeChecksum(upload, chosen, requested, expected);
  const bucket = await layer.requireBucket(upload.bucket);
  const version: ObjectVersion = {
    bucket: upload.bucket,
    key: upload.key,
    versionId: versionIdFor(bucket),
    deleteMarker: false,
    size: chosen.reduce((n, p) => n + p.size, 0),
    etag: multipartEtag(chosen),
    lastModified: Date.now(),
    contentType: upload.contentType,
    userMeta: upload.userMeta,
    headers: upload.headers,
    owner: upload.owner,
    acl: upload.acl,
    sse: upload.sse,
    parts: chosen.map((p) => p.size),
    checksum,
    tags: upload.tags,
    ...(upload.lock ? JSON.parse(upload.lock) : {}),
    data: { kind: "chunks", vid: 0 },
  };
  const outbox = opts.origin &&
    objectEvent("ObjectCreated:CompleteMultipartUpload", version, {
      origin: opts.origin,
      owner: bucket.owner,
    });
  const jobs = await layer.jobsOf(version, "ObjectCreated:CompleteMultipartUpload", opts.origin);
  let result;
  try {
    result = await layer.meta.completeUpload(
      upload,
      chosen.map((p) => ({ partNumber: p.partNumber, etag: p.etag })),
      version,
      {
        guard: commitGuard(condition, upload.key),
        outbox,
        jobs,
        bucketCreatedAt: bucket.createdAt,
      },
    );
  } catch (err) {
    // Uploaded again since the parts were chosen: the size, ETag and checksum computed here
    // would not describe the bytes.
    if (err instanceof PartChangedError) throw invalidPart(err.partNumber);
    if (err instanceof VersioningChangedError) throw versioningChanged(upload.bucket);
    throw err;
  }
  if (!result) throw noSuchUpload(upload.uploadId);
  if (outbox) layer.committed.fire();
  await layer.chunks.collect(result.freed);
  return version;
}

export async function abortUpload(layer: ObjectLayer, uploadId: string): Promise<void> {
  const result = await layer.meta.abortUpload(uploadId);
  if (!result) throw noSuchUpload(uploadId);
  await layer.chunks.collect(result.freed);
}

/** The byte range of part `n` of a version (partNumber reads). */
export function partRange(version: ObjectVersion, n: number): { offset: number; length: number } {
  const sizes = version.parts ?? [version.size];
  if (n < 1 || n > sizes.length) {
    throw new S3Error("InvalidPartNumber", "The requested partnumber is not satisfiable.", {
      details: { PartNumberRequested: String(n), ActualPartCount: String(sizes.length) },
    });
  }
  const offset = sizes.slice(0, n - 1).reduce((a, b) => a + b, 0);
  return { offset, length: sizes[n - 1] };
}

export type { Encryption };
