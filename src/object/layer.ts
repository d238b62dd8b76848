// The object layer: the only code that combines metadata and stored bytes.
import { createHash } from "node:crypto";
import { S3Error } from "../http/errors.ts";
import { MissingBucketError } from "../meta/sqlite.ts";
import type { BucketRecord, ListPage, ListQuery, MetaStore, ObjectVersion } from "../meta/store.ts";
import { type BlobStore, type BlobWriter, isDiskFull } from "../storage/blob_store.ts";

export const MAX_PUT_SIZE = 5 * 1024 ** 3;

/** Something that watches the body go by and may refuse it at the end (checksums). */
export interface BodyCheck {
  update(chunk: Uint8Array): void;
  /** Throws an S3Error when the body does not match. */
  finish(): void;
}

export interface PutInput {
  bucket: string;
  key: string;
  body: AsyncIterable<Uint8Array>;
  contentType: string;
  userMeta: Record<string, string>;
  headers: Record<string, string>;
  owner: string;
  /** Base64 MD5 the body must have (Content-MD5). */
  contentMd5?: string;
  checks?: BodyCheck[];
  /** Stored ACL JSON; undefined means private to the owner. */
  acl?: string;
}

export interface ReadResult {
  version: ObjectVersion;
  body: ReadableStream<Uint8Array> | Uint8Array;
}

export interface CopyInput {
  source: ObjectVersion;
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
}

function noSuchBucket(bucket: string): S3Error {
  return new S3Error("NoSuchBucket", "The specified bucket does not exist.", {
    details: { BucketName: bucket },
  });
}

export class ObjectLayer {
  constructor(
    readonly meta: MetaStore,
    readonly blobs: BlobStore,
    readonly inlineMax: number,
  ) {}

  async requireBucket(name: string): Promise<BucketRecord> {
    const bucket = await this.meta.getBucket(name);
    if (!bucket) throw noSuchBucket(name);
    return bucket;
  }

  /**
   * Streams the body into storage (inline when small), verifies digests, then commits the new
   * version. Bytes are durable before the metadata that makes them visible.
   */
  async putObject(input: PutInput): Promise<ObjectVersion> {
    await this.requireBucket(input.bucket);
    const md5 = createHash("md5");
    const pending: Uint8Array[] = [];
    let pendingSize = 0;
    let writer: BlobWriter | undefined;
    try {
      for await (const chunk of input.body) {
        md5.update(chunk);
        for (const c of input.checks ?? []) c.update(chunk);
        if (writer) {
          if (writer.size + chunk.byteLength > MAX_PUT_SIZE) throw tooLarge();
          await writer.write(chunk);
          continue;
        }
        pending.push(chunk);
        pendingSize += chunk.byteLength;
        if (pendingSize > this.inlineMax) {
          writer = await this.blobs.create();
          for (const p of pending) await writer.write(p);
          pending.length = 0;
        }
      }
      const digest = md5.digest();
      if (input.contentMd5 !== undefined && digest.toString("base64") !== input.contentMd5) {
        throw new S3Error(
          "BadDigest",
          "The Content-MD5 you specified did not match what we received.",
        );
      }
      for (const c of input.checks ?? []) c.finish();
      if (writer) await writer.commit();
      const version: ObjectVersion = {
        bucket: input.bucket,
        key: input.key,
        versionId: "null",
        deleteMarker: false,
        size: writer ? writer.size : pendingSize,
        etag: `"${digest.toString("hex")}"`,
        lastModified: Date.now(),
        contentType: input.contentType,
        userMeta: input.userMeta,
        headers: input.headers,
        owner: input.owner,
        acl: input.acl,
        data: writer
          ? { kind: "blob", id: writer.id }
          : { kind: "inline", bytes: concat(pending, pendingSize) },
      };
      await this.#commit(version);
      return version;
    } catch (err) {
      if (writer) {
        await writer.abort();
        await this.blobs.remove(writer.id);
      }
      if (isDiskFull(err)) {
        throw new S3Error(
          "InsufficientStorage",
          "The server has no space left to store the object.",
        );
      }
      throw err;
    }
  }

  /** Records the version; frees the data of whatever it displaced. */
  async #commit(version: ObjectVersion): Promise<void> {
    try {
      const { displaced } = await this.meta.putObjectVersion(version);
      for (const old of displaced) await this.#free(old);
    } catch (err) {
      if (err instanceof MissingBucketError) throw noSuchBucket(version.bucket);
      throw err;
    }
  }

  async #free(version: ObjectVersion): Promise<void> {
    if (version.data.kind === "blob") await this.blobs.remove(version.data.id);
  }

  /** The version to read, or NoSuchKey / NoSuchVersion. */
  async headObject(bucket: string, key: string, versionId?: string): Promise<ObjectVersion> {
    await this.requireBucket(bucket);
    const version = await this.meta.getObjectVersion(bucket, key, versionId);
    if (!version && versionId !== undefined) {
      throw new S3Error("NoSuchVersion", "The specified version does not exist.", {
        details: { Key: key, VersionId: versionId },
      });
    }
    if (!version || version.deleteMarker) {
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
  ): Promise<ReadResult> {
    const data = version.data;
    if (data.kind === "inline") {
      const bytes = range
        ? data.bytes.subarray(range.offset, range.offset + range.length)
        : data.bytes;
      return { version, body: bytes };
    }
    if (data.kind === "none") return { version, body: new Uint8Array(0) };
    try {
      return { version, body: await this.blobs.read(data.id, range) };
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
      // Overwritten between the metadata read and the open: read the newer version instead.
      const fresh = await this.headObject(version.bucket, version.key);
      if (fresh.data.kind === "blob" && fresh.data.id === data.id) throw err;
      return this.openObject(
        fresh,
        range && fresh.size >= range.offset + range.length ? range : undefined,
      );
    }
  }

  async deleteObject(
    bucket: string,
    key: string,
    versionId?: string,
  ): Promise<ObjectVersion | undefined> {
    await this.requireBucket(bucket);
    const removed = await this.meta.deleteObjectVersion(bucket, key, versionId ?? "null");
    if (removed) await this.#free(removed);
    return removed;
  }

  /** A new version with the source's bytes: inline bytes are copied, blobs are hard-linked. */
  async copyObject(input: CopyInput): Promise<ObjectVersion> {
    await this.requireBucket(input.bucket);
    const src = input.source;
    let data = src.data;
    if (data.kind === "blob") data = { kind: "blob", id: await this.blobs.link(data.id) };
    const version: ObjectVersion = {
      bucket: input.bucket,
      key: input.key,
      versionId: "null",
      deleteMarker: false,
      size: src.size,
      etag: src.etag,
      lastModified: Date.now(),
      contentType: input.replace?.contentType ?? src.contentType,
      userMeta: input.replace?.userMeta ?? src.userMeta,
      headers: input.replace?.headers ?? src.headers,
      owner: input.owner,
      acl: input.acl,
      data,
    };
    try {
      await this.#commit(version);
    } catch (err) {
      if (data.kind === "blob") await this.blobs.remove(data.id);
      throw err;
    }
    return version;
  }

  async listObjects(bucket: string, query: ListQuery): Promise<ListPage> {
    await this.requireBucket(bucket);
    return this.meta.listObjects(bucket, query);
  }

  /** Removes what a crash left behind; runs in the background after start-up. */
  sweep(before: number): Promise<{ tmp: number; orphans: number }> {
    return this.blobs.sweep(before, (id) => this.meta.isBlobReferenced(id));
  }
}

function tooLarge(): S3Error {
  return new S3Error(
    "EntityTooLarge",
    "Your proposed upload exceeds the maximum allowed object size.",
  );
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(size);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.byteLength;
  }
  return out;
}
