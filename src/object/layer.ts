// The object layer: the only code that combines metadata and stored bytes.
import { BytesUnavailableError } from "../meta/shared_holdings.ts";
import { S3Error } from "../http/errors.ts";
import { MissingBucketError, VersioningChangedError } from "../meta/store.ts";
import type {
  BatchDelete,
  BucketConfigKind,
  BucketRecord,
  ChecksumRecord,
  ChunkRecord,
  ListPage,
  ListQuery,
  MetaStore,
  ObjectVersion,
  Retention,
  TagSet,
  UploadRecord,
  VersionChunk,
} from "../meta/store.ts";
import { ChunkLostError, type ChunkStore } from "../storage/chunk_store.ts";
import { ChunkIntegrityError } from "../storage/codec.ts";
import { isDiskFull } from "../storage/disk_errors.ts";
import { assertDeletable } from "./object_lock.ts";
import { removalWins } from "../meta/removal_time.ts";
import { ReadBudget } from "./read_budget.ts";
import { WriteBuffers } from "./write_buffers.ts";
import { chunkStream, type ReadLimits } from "./read_stream.ts";

/** The read budget of a layer built without one (tests): 128 MiB. */
const DEFAULT_READ_BUFFER = 128 * 1024 * 1024;
/** The upload buffers of a layer built without them (tests): 64 MiB. */
const DEFAULT_WRITE_BUFFER = 64 * 1024 * 1024;
import { versionIdFor } from "./versioning.ts";
import { type BodyCheck, type DirectBody, releaseAll, writeBody } from "./write_pipeline.ts";
import { checkWriteCondition, commitGuard, type WriteCondition } from "./write_condition.ts";
import { type ChecksumAlgorithm, ChecksumCheck } from "../http/checksum.ts";
import type { NewJob, WriteRecords } from "../meta/store.ts";
import type { VersionParts } from "../meta/version_stamps.ts";
import type { EventName } from "../events/names.ts";
import { type EventOrigin, objectEvent, removalEvent } from "../events/outbox.ts";
import { Signal } from "../events/signal.ts";

export type { BodyCheck };

export const MAX_PUT_SIZE = 5 * 1024 ** 3;

/** Encryption of a new version: the key to encode with and the record to store. */
export interface Encryption {
  key: CryptoKey;
  /** SSE record JSON kept with the version. */
  record: string;
}

export interface PutInput {
  bucket: string;
  key: string;
  body: AsyncIterable<Uint8Array> | DirectBody;
  contentType: string;
  userMeta: Record<string, string>;
  headers: Record<string, string>;
  owner: string;
  /** Base64 MD5 the body must have (Content-MD5). */
  contentMd5?: string;
  checks?: BodyCheck[];
  /** Stored ACL JSON; undefined means private to the owner. */
  acl?: string;
  encryption?: Encryption;
  lock?: VersionLock;
  /** The new version's tags (none when undefined). */
  tags?: TagSet;
  /** The additional checksum to keep with the version, known once the body has been read. */
  checksum?: () => ChecksumRecord | undefined;
  /** Who wrote it: the event recorded with the version (none when undefined). */
  origin?: EventOrigin;
  /** The event's name; `ObjectCreated:Put` by default. */
  eventName?: EventName;
  /** If-Match / If-None-Match, checked before the body is stored and again at the commit. */
  condition?: WriteCondition;
}

/**
 * A chunk of a version in its stored form (compressed and sealed as on the drives) with the range
 * of the object it holds: how a version this node cannot decrypt (SSE-C) travels between nodes.
 */
export interface StoredChunk {
  form: Omit<ChunkRecord, "dataShards" | "parityShards" | "drives">;
  offset: number;
  size: number;
  stored: Uint8Array;
  /** Gives `stored` back to where it came from (the write buffers), once it is written. */
  release?: () => void;
}

/** Object Lock state a new version starts with. */
export interface VersionLock {
  retention?: Retention;
  legalHold?: boolean;
}

export interface ReadResult {
  version: ObjectVersion;
  body: ReadableStream<Uint8Array> | Uint8Array;
}

export interface CopyInput {
  source: ObjectVersion;
  /** Key to decrypt the source with, when it is encrypted. */
  sourceKey?: CryptoKey;
  bucket: string;
  key: string;
  owner: string;
  acl?: string;
  /** New metadata (REPLACE), or undefined to keep the source's (COPY). */
  replace?: {
    contentType: string;
    userMeta: Record<string, string>;
    headers: Record<string, string>;
  };
  /** Encryption of the copy; with `shareChunks` the source's chunks are reused as they are. */
  encryption?: Encryption;
  /** True when the copy may refer to the source's chunks (same encryption or none). */
  shareChunks: boolean;
  lock?: VersionLock;
  /** Tags of the copy (the source's, or the request's with the REPLACE tagging directive). */
  tags?: TagSet;
  origin?: EventOrigin;
  /** `x-*-checksum-algorithm`: the copy gets a FULL_OBJECT checksum of this algorithm. */
  checksumAlgorithm?: ChecksumAlgorithm;
}

/**
 * The addressed version is a delete marker: 404 NoSuchKey when it is the current version,
 * 405 MethodNotAllowed when it was asked for by id. The responder adds the marker's headers.
 */
/** One key of a DeleteObjects batch. */
export interface DeleteTarget {
  key: string;
  versionId?: string;
  bypassGovernance?: boolean;
  /**
   * Removes the version only while it is still as the caller saw it (lifecycle, which decided
   * from an earlier read): the same write, and current or not as `current` says; otherwise the
   * outcome is a VersionChangedError. A delete marker (versioned bucket, no version id) goes on
   * only while that write is the current version.
   */
  unchanged?: { lastModified: number; etag: string; current: boolean };
}

/** The version a removal named is no longer the one its caller decided on (see DeleteTarget). */
export class VersionChangedError extends Error {
  constructor(key: string) {
    super(`${key} changed since it was looked at; left as it is`);
  }
}

/** What a delete reports: the version removed or the marker created. */
export interface DeleteResult {
  versionId?: string;
  deleteMarker: boolean;
}

function deleteMarker(bucket: BucketRecord, key: string, owner: string): ObjectVersion {
  return {
    bucket: bucket.name,
    key,
    versionId: versionIdFor(bucket),
    deleteMarker: true,
    size: 0,
    etag: "",
    lastModified: Date.now(),
    contentType: "",
    userMeta: {},
    headers: {},
    owner,
    data: { kind: "none" },
  };
}

export class DeleteMarkerError extends S3Error {
  constructor(key: string, readonly versionId: string, byId: boolean) {
    super(
      byId ? "MethodNotAllowed" : "NoSuchKey",
      byId
        ? "The specified method is not allowed against this resource."
        : "The specified key does not exist.",
      { details: { Key: key } },
    );
  }
}

/**
 * A write that raced a change of its bucket's versioning state (its version id was chosen by the
 * state before): nothing was written; the client's retry takes the new state.
 */
export function versioningChanged(bucket: string): S3Error {
  return retryLater(`The versioning state of bucket ${bucket} changed during the write.`);
}

/** 503 with Retry-After: nothing was done, and the same request a moment later may succeed. */
function retryLater(why: string): S3Error {
  return new S3Error("ServiceUnavailable", `${why} Please retry.`, {
    headers: { "retry-after": "1" },
  });
}

/** The outcome of a change of `bucket`, a bucket deleted meanwhile answered as NoSuchBucket. */
export async function inBucket<T>(bucket: string, change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (err) {
    if (err instanceof MissingBucketError) throw noSuchBucket(bucket);
    throw err;
  }
}

export function noSuchBucket(bucket: string): S3Error {
  return new S3Error("NoSuchBucket", "The specified bucket does not exist.", {
    details: { BucketName: bucket },
  });
}

function tooLarge(): S3Error {
  return new S3Error(
    "EntityTooLarge",
    "Your proposed upload exceeds the maximum allowed object size.",
  );
}

/** The jobs a new version starts (the transformation rules, src/transform/), committed with it. */
export type JobsFor = (
  version: ObjectVersion,
  event: EventName,
  origin: EventOrigin,
) => Promise<NewJob[]>;

export class ObjectLayer {
  /** Fired after every commit that recorded events (outbox consumers and feeds wait on it). */
  readonly committed = new Signal();
  /** Set when transformations run (main.ts); writes without an origin start no job. */
  jobsFor?: JobsFor;
  readonly #read: ReadLimits;
  /** The chunk buffers all uploads share (STORE_WRITE_BUFFER_MAX). */
  readonly writeBuffers: WriteBuffers;

  constructor(
    readonly meta: MetaStore,
    readonly chunks: ChunkStore,
    readonly limits: {
      inlineMax: number;
      chunkSize: number;
      read?: ReadLimits;
      write?: WriteBuffers;
    },
  ) {
    this.#read = limits.read ?? { budget: new ReadBudget(DEFAULT_READ_BUFFER), stallMs: 30_000 };
    this.writeBuffers = limits.write ?? new WriteBuffers(DEFAULT_WRITE_BUFFER);
  }

  async requireBucket(name: string): Promise<BucketRecord> {
    const bucket = await this.meta.getBucket(name);
    if (!bucket) throw noSuchBucket(name);
    return bucket;
  }

  /**
   * Streams the body into storage, verifies digests, then commits the new version. Every chunk
   * is durable before the metadata that makes it visible.
   */
  async putObject(input: PutInput): Promise<ObjectVersion> {
    const bucket = await this.requireBucket(input.bucket);
    if (input.condition) await this.checkCondition(input.bucket, input.key, input.condition);
    let written;
    try {
      written = await writeBody(input.body, this.chunks, {
        inlineMax: this.limits.inlineMax,
        chunkSize: this.limits.chunkSize,
        key: input.encryption?.key,
        checks: input.checks,
        maxSize: MAX_PUT_SIZE,
        tooLarge,
        buffers: this.writeBuffers,
      });
    } catch (err) {
      if (isDiskFull(err)) {
        throw new S3Error(
          "InsufficientStorage",
          "The server has no space left to store the object.",
        );
      }
      throw err;
    }
    try {
      const md5 = btoa(String.fromCharCode(...written.md5));
      if (input.contentMd5 !== undefined && md5 !== input.contentMd5) {
        throw new S3Error(
          "BadDigest",
          "The Content-MD5 you specified did not match what we received.",
        );
      }
      const version: ObjectVersion = {
        bucket: input.bucket,
        key: input.key,
        versionId: versionIdFor(bucket),
        deleteMarker: false,
        size: written.size,
        etag: `"${written.md5.toHex()}"`,
        lastModified: Date.now(),
        contentType: input.contentType,
        userMeta: input.userMeta,
        headers: input.headers,
        owner: input.owner,
        acl: input.acl,
        sse: input.encryption?.record,
        checksum: input.checksum?.(),
        retention: input.lock?.retention,
        legalHold: input.lock?.legalHold,
        tags: input.tags,
        data: written.inline
          ? { kind: "inline", bytes: written.inline }
          : { kind: "chunks", vid: 0 },
      };
      const eventName = input.eventName ?? "ObjectCreated:Put";
      const outbox = input.origin &&
        objectEvent(eventName, version, { origin: input.origin, owner: bucket.owner });
      await this.#commit(version, written.chunks, {
        guard: commitGuard(input.condition, input.key),
        outbox,
        jobs: await this.jobsOf(version, eventName, input.origin),
        // The bucket it was authorized on: not one of that name made since by someone else.
        bucketCreatedAt: bucket.createdAt,
      });
      return version;
    } finally {
      await releaseAll(this.chunks, written.chunks);
    }
  }

  /**
   * Deletes a bucket that holds no object version, aborting its multipart uploads (their
   * chunks are freed): NoSuchBucket, or BucketNotEmpty while versions remain.
   */
  async deleteBucket(name: string): Promise<void> {
    const { outcome, freed } = await this.meta.deleteBucket(name);
    await this.chunks.collect(freed);
    if (outcome === "missing") throw noSuchBucket(name);
    if (outcome === "not_empty") {
      throw new S3Error("BucketNotEmpty", "The bucket you tried to delete is not empty.", {
        details: { BucketName: name },
      });
    }
  }

  /** Checks a write condition against the key's current version (412 / 404 when it fails). */
  async checkCondition(bucket: string, key: string, condition: WriteCondition): Promise<void> {
    checkWriteCondition(condition, await this.meta.getObjectVersion(bucket, key), key);
  }

  /**
   * Records the version with its chunks and its event (one transaction, after `guard` allowed
   * it); collects the chunks nothing refers to any more.
   */
  async #commit(
    version: ObjectVersion,
    chunks: VersionChunk[],
    opts: WriteRecords = {},
  ): Promise<void> {
    try {
      const { freed } = await this.meta.putObjectVersion(version, chunks, opts);
      if (opts.outbox) this.committed.fire();
      await this.chunks.collect(freed);
    } catch (err) {
      if (err instanceof MissingBucketError) throw noSuchBucket(version.bucket);
      if (err instanceof VersioningChangedError) throw versioningChanged(version.bucket);
      throw err;
    }
  }

  /** The jobs a write by `origin` starts (none without one, or without transformations). */
  async jobsOf(
    version: ObjectVersion,
    event: EventName,
    origin: EventOrigin | undefined,
  ): Promise<NewJob[] | undefined> {
    return origin && this.jobsFor ? await this.jobsFor(version, event, origin) : undefined;
  }

  /**
   * Stores a document of `bucket` as the request found it: a bucket of that name deleted and made
   * again since (perhaps by another owner) answers NoSuchBucket and gets nothing.
   */
  setBucketConfig(bucket: BucketRecord, kind: BucketConfigKind, value: string): Promise<void> {
    const asDecided = { createdAt: bucket.createdAt };
    return inBucket(
      bucket.name,
      () => this.meta.putBucketConfig(bucket.name, kind, value, asDecided),
    );
  }

  /** Removes a document of `bucket` as the request found it (see setBucketConfig). */
  removeBucketConfig(bucket: BucketRecord, kind: BucketConfigKind): Promise<void> {
    const asDecided = { createdAt: bucket.createdAt };
    return inBucket(bucket.name, () => this.meta.deleteBucketConfig(bucket.name, kind, asDecided));
  }

  /** Records a new multipart upload; NoSuchBucket when its bucket was deleted meanwhile. */
  createUpload(upload: UploadRecord): Promise<void> {
    return inBucket(upload.bucket, () => this.meta.createUpload(upload));
  }

  /** The version to read, or NoSuchKey / NoSuchVersion. */
  async headObject(bucket: string, key: string, versionId?: string): Promise<ObjectVersion> {
    const version = await this.meta.getObjectVersion(bucket, key, versionId);
    // A version is only ever in a bucket that exists (a bucket must be empty to be deleted): the
    // bucket is looked up only to tell NoSuchBucket from NoSuchKey.
    if (!version) await this.requireBucket(bucket);
    if (!version && versionId !== undefined) {
      throw new S3Error("NoSuchVersion", "The specified version does not exist.", {
        details: { Key: key, VersionId: versionId },
      });
    }
    if (version?.deleteMarker) {
      throw new DeleteMarkerError(key, version.versionId, versionId !== undefined);
    }
    if (!version) {
      throw new S3Error("NoSuchKey", "The specified key does not exist.", {
        details: { Key: key },
      });
    }
    return version;
  }

  /** Opens the bytes of a version (a byte range of it when given). */
  async openObject(
    version: ObjectVersion,
    range?: { offset: number; length: number },
    key?: CryptoKey,
  ): Promise<ReadResult> {
    const data = version.data;
    const r = range ?? { offset: 0, length: version.size };
    if (data.kind === "inline") {
      return { version, body: data.bytes.subarray(r.offset, r.offset + r.length) };
    }
    if (data.kind === "none" || r.length === 0) return { version, body: new Uint8Array(0) };
    const chunks = await this.meta.versionChunks(data.vid, {
      from: r.offset,
      to: r.offset + r.length,
    });
    // The version was deleted or replaced since it was looked up, and its chunks went with it:
    // an error the client retries, not a body shorter than the length already promised.
    if (!covers(chunks, r.offset, r.offset + r.length)) {
      throw retryLater(`${version.bucket}/${version.key} changed while it was being read.`);
    }
    try {
      const body = await chunkStream(this.chunks, chunks, { ...r, key, limits: this.#read });
      return { version, body };
    } catch (err) {
      throw readFailure(err, version);
    }
  }

  /**
   * Deletes one version (when `versionId` is given), or the object as the bucket's versioning
   * state says: unversioned buckets drop the "null" version; versioned ones gain a delete marker
   * ("null" while suspended). Returns what the response reports.
   */
  async deleteObject(
    bucket: string,
    key: string,
    opts: {
      versionId?: string;
      owner: string;
      bypassGovernance?: boolean;
      origin?: EventOrigin;
      unchanged?: DeleteTarget["unchanged"];
    },
  ): Promise<DeleteResult> {
    const target = {
      key,
      versionId: opts.versionId,
      bypassGovernance: opts.bypassGovernance,
      unchanged: opts.unchanged,
    };
    const [outcome] = await this.deleteObjects(bucket, [target], opts);
    if (outcome instanceof S3Error) throw outcome;
    return outcome;
  }

  /**
   * Deletes keys of one bucket as deleteObject does each, in one metadata transaction (a locked
   * version fails alone), one commit, freed chunks collected
   * together after it. Outcomes in the order of `targets`; a failure that is not the protocol's
   * is thrown (after the collection).
   */
  async deleteObjects(
    bucket: string,
    targets: DeleteTarget[],
    opts: { owner: string; origin?: EventOrigin },
  ): Promise<(DeleteResult | S3Error)[]> {
    const record = await this.requireBucket(bucket);
    const origin = opts.origin;
    const event = (v: ObjectVersion, marker: boolean) =>
      origin && objectEvent(removalEvent(origin, marker), v, { origin, owner: record.owner });
    const items: BatchDelete[] = targets.map((t) => {
      if (t.versionId === undefined && record.versioning !== "") {
        const marker = deleteMarker(record, t.key, opts.owner);
        const seen = t.unchanged;
        // The marker goes on the write the caller decided on, not on one committed since.
        const guard = seen &&
          ((current: ObjectVersion | undefined) => {
            if (current?.lastModified !== seen.lastModified || current.etag !== seen.etag) {
              throw new VersionChangedError(t.key);
            }
          });
        return { marker, outbox: event(marker, true), ...(guard ? { guard } : {}) };
      }
      return {
        bucket,
        key: t.key,
        versionId: t.versionId ?? "null",
        ...(t.bypassGovernance ? { bypassGovernance: true } : {}),
        guard: (v: ObjectVersion, current: boolean) => {
          const seen = t.unchanged;
          if (
            seen &&
            (v.lastModified !== seen.lastModified || v.etag !== seen.etag ||
              current !== seen.current)
          ) throw new VersionChangedError(t.key);
          assertDeletable(v, { bypassGovernance: t.bypassGovernance ?? false, now: Date.now() });
        },
        outbox: origin && ((v: ObjectVersion) => event(v, false)),
      };
    });
    const outcomes = await this.meta.deleteObjects(items);
    let changed = false;
    let failure: unknown;
    const results = outcomes.map((o, i): DeleteResult | S3Error => {
      const item = items[i];
      if (!o.ok) {
        if (o.error instanceof MissingBucketError) return noSuchBucket(bucket);
        if (o.error instanceof VersioningChangedError) return versioningChanged(bucket);
        if (o.error instanceof S3Error) return o.error;
        failure ??= o.error;
        return new S3Error("InternalError", "The delete failed.");
      }
      if ("marker" in item) {
        changed = true;
        return { versionId: item.marker.versionId, deleteMarker: true };
      }
      if (o.removed) changed = true;
      if (targets[i].versionId === undefined) return { deleteMarker: false };
      return { versionId: item.versionId, deleteMarker: o.removed?.deleteMarker ?? false };
    });
    if (changed && origin) this.committed.fire();
    await this.chunks.collect(outcomes.flatMap((o) => o.ok ? o.freed : []));
    if (failure !== undefined) throw failure;
    return results;
  }

  /**
   * A new version with the source's bytes. Chunks are shared (no bytes copied) when the
   * encryption allows it; otherwise the data is decoded and stored again.
   */
  async copyObject(input: CopyInput): Promise<ObjectVersion> {
    const bucket = await this.requireBucket(input.bucket);
    const src = input.source;
    const base = {
      bucket: input.bucket,
      key: input.key,
      versionId: versionIdFor(bucket),
      deleteMarker: false,
      lastModified: Date.now(),
      contentType: input.replace?.contentType ?? src.contentType,
      userMeta: input.replace?.userMeta ?? src.userMeta,
      headers: input.replace?.headers ?? src.headers,
      owner: input.owner,
      acl: input.acl,
      retention: input.lock?.retention,
      legalHold: input.lock?.legalHold,
      tags: input.tags,
    };
    const algorithm = input.checksumAlgorithm;
    // A requested checksum the source does not have already is computed over the bytes.
    const recompute = algorithm !== undefined &&
      !(src.checksum?.algorithm === algorithm && src.checksum.type === "FULL_OBJECT");
    if (src.data.kind !== "chunks" || !input.shareChunks || recompute) {
      const { body } = await this.openObject(src, undefined, input.sourceKey);
      const check = recompute ? new ChecksumCheck(algorithm) : undefined;
      // The ETag stays the MD5 of the bytes, the same as the source's for a single-part object.
      return await this.putObject({
        ...base,
        origin: input.origin,
        eventName: "ObjectCreated:Copy",
        body: body instanceof Uint8Array ? single(body) : body,
        encryption: input.encryption,
        lock: input.lock,
        checks: check ? [check] : undefined,
        // The bytes are the same; a composite checksum needs the parts, which a copy drops.
        checksum: () =>
          check
            ? { algorithm: check.algorithm, type: "FULL_OBJECT", value: check.value! }
            : src.checksum?.type === "FULL_OBJECT"
            ? src.checksum
            : undefined,
      });
    }
    const chunks = await this.meta.versionChunks(src.data.vid);
    const deleted = () =>
      new S3Error("NoSuchKey", "The source object was deleted during the copy.");
    // Removed since it was looked up: its chunk rows went with it.
    if (!covers(chunks, 0, src.size)) throw deleted();
    for (const c of chunks) await this.chunks.claims.claim(c.chunk.id);
    try {
      for (const c of chunks) {
        if (!(await this.meta.hasChunk(c.chunk.id))) throw deleted();
      }
      const version: ObjectVersion = {
        ...base,
        size: src.size,
        etag: src.etag,
        sse: src.sse,
        parts: src.parts,
        checksum: src.checksum,
        data: { kind: "chunks", vid: 0 },
      };
      const outbox = input.origin &&
        objectEvent("ObjectCreated:Copy", version, { origin: input.origin, owner: bucket.owner });
      const jobs = await this.jobsOf(version, "ObjectCreated:Copy", input.origin);
      await this.#commit(version, chunks, { outbox, jobs, bucketCreatedAt: bucket.createdAt });
      return version;
    } finally {
      await releaseAll(this.chunks, chunks);
    }
  }

  /**
   * Replaces a version's tags (an empty set removes them) with its ObjectTagging event; false
   * when the version does not exist or is a delete marker.
   */
  async setObjectTags(
    version: ObjectVersion,
    tags: TagSet,
    origin: EventOrigin,
  ): Promise<boolean> {
    const bucket = await this.requireBucket(version.bucket);
    const name = Object.keys(tags).length > 0 ? "ObjectTagging:Put" : "ObjectTagging:Delete";
    const outbox = objectEvent(name, version, { origin, owner: bucket.owner });
    const done = await this.meta.setObjectTags(version, tags, outbox);
    if (done) this.committed.fire();
    return done;
  }

  /** Sets a version's ACL (stored JSON) with its ObjectAcl:Put event. */
  async setObjectAcl(version: ObjectVersion, acl: string, origin: EventOrigin): Promise<boolean> {
    const bucket = await this.requireBucket(version.bucket);
    const outbox = objectEvent("ObjectAcl:Put", version, { origin, owner: bucket.owner });
    const done = await this.meta.setObjectAcl(version, acl, outbox);
    if (done) this.committed.fire();
    return done;
  }

  /**
   * Stores a version received from another node (src/cluster/objects.ts) as it is there: the same
   * version id, ETag, dates and metadata, marked REPLICA so it is never queued again. `checks`
   * see every byte and may refuse the body before anything commits; a body of another size than
   * the version's is refused too. With `encryption` the bytes are stored encrypted under it.
   */
  async putReplica(
    version: Omit<ObjectVersion, "data" | "replication" | "sse">,
    body: AsyncIterable<Uint8Array>,
    checks: BodyCheck[],
    encryption?: Encryption,
  ): Promise<void> {
    await this.requireBucket(version.bucket);
    const written = await writeBody(body, this.chunks, {
      inlineMax: this.limits.inlineMax,
      chunkSize: this.limits.chunkSize,
      key: encryption?.key,
      checks,
      maxSize: MAX_PUT_SIZE,
      tooLarge,
      buffers: this.writeBuffers,
    });
    try {
      if (written.size !== version.size) {
        throw new S3Error("IncompleteBody", "The body is not as long as the version.");
      }
      const data = version.deleteMarker
        ? { kind: "none" as const }
        : written.inline
        ? { kind: "inline" as const, bytes: written.inline }
        : { kind: "chunks" as const, vid: 0 };
      await this.#commit(
        { ...version, sse: encryption?.record, data, replication: "REPLICA" },
        written.chunks,
      );
    } finally {
      await releaseAll(this.chunks, written.chunks);
    }
  }

  /**
   * The chunks of a version as they are stored (never decrypted), one at a time: what travels for
   * a version sealed with a key this node does not hold (SSE-C).
   */
  async *storedChunks(version: ObjectVersion): AsyncGenerator<StoredChunk> {
    if (version.data.kind !== "chunks") throw new Error("The version's bytes are not in chunks");
    const chunks = await this.meta.versionChunks(version.data.vid);
    if (!covers(chunks, 0, version.size)) throw new VersionGoneError(version);
    for (const { chunk, offset, size } of chunks) {
      const { dataShards: _k, parityShards: _m, drives: _d, ...form } = chunk;
      let stored: Uint8Array;
      try {
        stored = await this.chunks.readStoredBytes(chunk);
      } catch (err) {
        throw readFailure(err, version);
      }
      yield { form, offset, size, stored };
    }
  }

  /**
   * Stores a version received from another node in its stored form (SSE-C: sealed with the
   * customer's key), each chunk under its id there, which its seal is bound to; `sse` is the
   * version's record (the key's MD5). `chunks` may throw to refuse the body: nothing commits
   * before it has ended.
   */
  async putStoredReplica(
    version: Omit<ObjectVersion, "data" | "replication" | "sse">,
    sse: string,
    chunks: AsyncIterable<StoredChunk>,
  ): Promise<void> {
    await this.requireBucket(version.bucket);
    const written: VersionChunk[] = [];
    try {
      for await (const { form, offset, size, stored, release } of chunks) {
        try {
          await this.chunks.claims.claim(form.id);
          try {
            const chunk = await this.chunks.writeStoredBytes(
              { ...form, dataShards: 0, parityShards: 0, drives: [] },
              stored,
            );
            written.push({ chunk, offset, size });
          } catch (err) {
            await this.chunks.release(form.id);
            throw err;
          }
        } finally {
          release?.();
        }
      }
      // A sender whose version went meanwhile may end its chunks early: nothing short commits.
      if (!covers(written, 0, version.size)) throw new VersionGoneError(version);
      await this.#commit(
        { ...version, sse, data: { kind: "chunks", vid: 0 }, replication: "REPLICA" },
        written,
      );
    } finally {
      await releaseAll(this.chunks, written);
    }
  }

  /**
   * Takes a version's tags, ACL, retention and legal hold as another node changed them, each only
   * when its stamp is newer than the one here (not queued again); false when it is not here.
   */
  async mergeReplicaParts(
    target: { bucket: string; key: string; versionId: string },
    parts: VersionParts,
  ): Promise<boolean> {
    await this.requireBucket(target.bucket);
    return await this.meta.mergeVersionParts(target, parts);
  }

  /**
   * Removes a version as another node did (not queued again). Object Lock is checked here too: a
   * version under retention or legal hold here is kept, refused with AccessDenied, unless the
   * source could bypass governance retention (`bypassGovernance`: a GOVERNANCE retention yields,
   * never COMPLIANCE nor a legal hold). With `deletedAt` (the removal's time at its source), a
   * copy written after it (a later write of the `null` version) is kept (PreconditionFailed), and
   * the tombstone here takes that time, even when nothing was removed (removal_time.ts).
   */
  async deleteReplica(
    bucket: string,
    key: string,
    versionId: string,
    opts: { deletedAt?: number; bypassGovernance?: boolean } = {},
  ): Promise<void> {
    await this.requireBucket(bucket);
    const [outcome] = await this.meta.deleteObjects([{
      bucket,
      key,
      versionId,
      replica: true,
      ...(opts.deletedAt === undefined ? {} : { deletedAt: opts.deletedAt }),
      guard: (v: ObjectVersion) => {
        if (opts.deletedAt !== undefined && !removalWins(opts.deletedAt, v.lastModified)) {
          throw new S3Error("PreconditionFailed", "The version was written after its removal.");
        }
        assertDeletable(v, { bypassGovernance: opts.bypassGovernance ?? false, now: Date.now() });
      },
    }]);
    if (!outcome.ok) throw outcome.error;
    await this.chunks.collect(outcome.freed);
  }

  async listObjects(bucket: string, query: ListQuery): Promise<ListPage> {
    await this.requireBucket(bucket);
    return this.meta.listObjects(bucket, query);
  }
}

/** A stored object that cannot be read back is a server fault, never wrong bytes. */
/** The chunks of a version do not hold all its bytes: it was removed or replaced meanwhile. */
export class VersionGoneError extends Error {
  constructor(version: { bucket: string; key: string; versionId: string }) {
    super(
      `The chunks of ${version.bucket}/${version.key} (version ${version.versionId}) do not ` +
        "hold all its bytes: it was removed or replaced meanwhile",
    );
  }
}

/** Whether `chunks` (in order) hold every byte of [from, to) of the object. */
function covers(chunks: VersionChunk[], from: number, to: number): boolean {
  let at = from;
  for (const { offset, size } of chunks) {
    if (offset > at) return false;
    at = Math.max(at, offset + size);
  }
  return at >= to;
}

function readFailure(err: unknown, version: ObjectVersion): unknown {
  // Shared metadata: no node holding the bytes answered (yet).
  if (err instanceof BytesUnavailableError) {
    return retryLater(
      `The data of ${version.bucket}/${version.key} is on a node that cannot be reached now.`,
    );
  }
  if (err instanceof ChunkLostError || err instanceof ChunkIntegrityError) {
    return new S3Error(
      "InternalError",
      `The data of ${version.bucket}/${version.key} cannot be read: ${err.message}`,
    );
  }
  return err;
}

/** A body of bytes already in memory, as the async iterable writes take. */
export async function* single(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}
