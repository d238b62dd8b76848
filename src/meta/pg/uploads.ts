// Multipart uploads and their parts in PostgreSQL (part of PgMetaStore). Methods that change
// several rows run inside the caller's transaction.
import type { Row } from "postgres";
import { prefixSuccessor } from "../keys.ts";
import {
  type ChosenPart,
  type ChunkRecord,
  COMPLETED_UPLOAD_RETENTION_MS,
  type CompletedUpload,
  MissingBucketError,
  PartChangedError,
  type PartRecord,
  type UploadListPage,
  type UploadListQuery,
  type UploadRecord,
  type VersionChunk,
} from "../store.ts";
import { type PgChunks, RefChanges } from "./chunks.ts";
import type { Q } from "./connect.ts";

function toUpload(row: Row): UploadRecord {
  return {
    bucket: row.bucket,
    key: row.key,
    uploadId: row.upload_id,
    initiated: row.initiated,
    owner: row.owner,
    contentType: row.content_type,
    userMeta: JSON.parse(row.user_meta),
    headers: JSON.parse(row.headers),
    acl: row.acl ?? undefined,
    sse: row.sse ?? undefined,
    lock: row.lock ?? undefined,
    checksumAlgorithm: row.checksum_algorithm ?? undefined,
    checksumType: row.checksum_type ?? undefined,
    tags: row.tags ? JSON.parse(row.tags) : undefined,
  };
}

function toPart(row: Row): PartRecord {
  return {
    partNumber: row.part_number,
    etag: row.etag,
    size: row.size,
    lastModified: row.last_modified,
    checksum: row.checksum ? JSON.parse(row.checksum) : undefined,
  };
}

export class PgUploads {
  constructor(readonly chunks: PgChunks) {}

  /** Records a new upload; MissingBucketError when its bucket is gone (deleted meanwhile). */
  async create(q: Q, u: UploadRecord): Promise<void> {
    // The bucket row share-locked: a DeleteBucket (which aborts the bucket's uploads) waits.
    const bucket = await q`SELECT 1 FROM buckets WHERE name = ${u.bucket} FOR SHARE`;
    if (bucket.length === 0) throw new MissingBucketError(u.bucket);
    const tags = u.tags && Object.keys(u.tags).length > 0 ? JSON.stringify(u.tags) : null;
    await q`
      INSERT INTO uploads (bucket, key, upload_id, initiated, owner, content_type, user_meta,
        headers, acl, sse, lock, tags, checksum_algorithm, checksum_type)
      VALUES (${u.bucket}, ${u.key}, ${u.uploadId}, ${u.initiated}, ${u.owner}, ${u.contentType},
        ${JSON.stringify(u.userMeta)}, ${JSON.stringify(u.headers)}, ${u.acl ?? null},
        ${u.sse ?? null}, ${u.lock ?? null}, ${tags}, ${u.checksumAlgorithm ?? null},
        ${u.checksumAlgorithm ? u.checksumType ?? null : null})`;
  }

  async get(q: Q, bucket: string, key: string, uploadId: string) {
    const [row] = await q`
      SELECT * FROM uploads WHERE bucket = ${bucket} AND key = ${key} AND upload_id = ${uploadId}`;
    return row ? toUpload(row) : undefined;
  }

  /** Whether the upload exists; inside a transaction its row stays locked until the end. */
  async lock(q: Q, uploadId: string): Promise<boolean> {
    const rows = await q`SELECT 1 FROM uploads WHERE upload_id = ${uploadId} FOR UPDATE`;
    return rows.length > 0;
  }

  async putPart(
    q: Q,
    uploadId: string,
    part: PartRecord,
    chunks: VersionChunk[],
  ): Promise<{ freed: ChunkRecord[] } | undefined> {
    if (!(await this.lock(q, uploadId))) return undefined;
    const refs = new RefChanges();
    const [old] = await q`
      DELETE FROM parts WHERE upload_id = ${uploadId} AND part_number = ${part.partNumber}
      RETURNING data_id`;
    if (old) refs.drop(await this.chunks.unlink(q, old.data_id));
    const dataId = await this.chunks.nextVid(q);
    await q`
      INSERT INTO parts (upload_id, part_number, etag, size, last_modified, data_id, checksum)
      VALUES (${uploadId}, ${part.partNumber}, ${part.etag}, ${part.size}, ${part.lastModified},
        ${dataId}, ${part.checksum ? JSON.stringify(part.checksum) : null})`;
    await this.chunks.link(q, dataId, chunks);
    refs.add(chunks);
    return { freed: await this.chunks.apply(q, refs) };
  }

  async listParts(q: Q, uploadId: string, after: number, max: number): Promise<PartRecord[]> {
    const rows = await q`
      SELECT * FROM parts WHERE upload_id = ${uploadId} AND part_number > ${after}
      ORDER BY part_number LIMIT ${max}`;
    return rows.map(toPart);
  }

  /** The chunks of the chosen parts, in order, at their offsets in the final object. */
  /**
   * The chunks of the chosen parts, in order, at their offsets in the final object; undefined
   * when the upload or a part is gone. A part with another ETag (uploaded again since it was
   * chosen) throws PartChangedError.
   */
  async partChunks(
    q: Q,
    uploadId: string,
    parts: ChosenPart[],
  ): Promise<VersionChunk[] | undefined> {
    if (!(await this.lock(q, uploadId))) return undefined;
    const numbers = parts.map((p) => p.partNumber);
    const rows = await q`
      SELECT part_number, data_id, size, etag FROM parts
      WHERE upload_id = ${uploadId} AND part_number = ANY(${numbers}::integer[])`;
    const byNumber = new Map(rows.map((r) => [r.part_number as number, r]));
    const out: VersionChunk[] = [];
    let base = 0;
    for (const { partNumber, etag } of parts) {
      const row = byNumber.get(partNumber);
      if (!row) return undefined;
      if (row.etag !== etag) throw new PartChangedError(partNumber);
      for (const c of await this.chunks.versionChunks(q, row.data_id)) {
        out.push({ chunk: c.chunk, offset: base + c.offset, size: c.size });
      }
      base += row.size as number;
    }
    return out;
  }

  /** Drops every part and the upload; the parts' references join `refs`. */
  async remove(q: Q, uploadId: string, refs: RefChanges): Promise<void> {
    const parts = await q`DELETE FROM parts WHERE upload_id = ${uploadId} RETURNING data_id`;
    for (const row of parts) refs.drop(await this.chunks.unlink(q, row.data_id));
    await q`DELETE FROM uploads WHERE upload_id = ${uploadId}`;
  }

  /** Keeps the answer of a completion; drops those older than the retention. */
  async recordCompleted(q: Q, c: CompletedUpload): Promise<void> {
    await q`DELETE FROM completed_uploads
      WHERE completed_at < ${c.completedAt - COMPLETED_UPLOAD_RETENTION_MS}`;
    await q`
      INSERT INTO completed_uploads
        (upload_id, bucket, key, etag, version_id, checksum, completed_at)
      VALUES (${c.uploadId}, ${c.bucket}, ${c.key}, ${c.etag}, ${c.versionId},
        ${c.checksum ? JSON.stringify(c.checksum) : null}, ${c.completedAt})
      ON CONFLICT (upload_id) DO UPDATE SET bucket = excluded.bucket, key = excluded.key,
        etag = excluded.etag, version_id = excluded.version_id, checksum = excluded.checksum,
        completed_at = excluded.completed_at`;
  }

  async getCompleted(q: Q, uploadId: string, now: number): Promise<CompletedUpload | undefined> {
    const [row] = await q`
      SELECT * FROM completed_uploads
      WHERE upload_id = ${uploadId} AND completed_at >= ${now - COMPLETED_UPLOAD_RETENTION_MS}`;
    if (!row) return undefined;
    return {
      uploadId,
      bucket: row.bucket,
      key: row.key,
      etag: row.etag,
      versionId: row.version_id,
      checksum: row.checksum ? JSON.parse(row.checksum) : undefined,
      completedAt: row.completed_at,
    };
  }

  /** Aborts every upload of a bucket; their references join `refs`. */
  async removeAll(q: Q, bucket: string, refs: RefChanges): Promise<void> {
    const ids = await q`
      SELECT upload_id FROM uploads WHERE bucket = ${bucket} ORDER BY upload_id FOR UPDATE`;
    for (const row of ids) await this.remove(q, row.upload_id, refs);
  }

  async countStale(q: Q, before: number): Promise<number> {
    const [row] = await q`SELECT count(*) AS n FROM uploads WHERE initiated < ${before}`;
    return row.n;
  }

  async getById(q: Q, uploadId: string): Promise<UploadRecord | undefined> {
    const [row] = await q`SELECT * FROM uploads WHERE upload_id = ${uploadId}`;
    return row ? toUpload(row) : undefined;
  }

  async listStale(q: Q, before: number, limit: number): Promise<UploadRecord[]> {
    const rows = await q`
      SELECT * FROM uploads WHERE initiated < ${before} ORDER BY initiated LIMIT ${limit}`;
    return rows.map(toUpload);
  }

  /** Uploads in (key, upload id) order after the markers, rolled up by the delimiter. */
  async list(q: Q, bucket: string, query: UploadListQuery): Promise<UploadListPage> {
    const page: UploadListPage = { uploads: [], commonPrefixes: [], isTruncated: false };
    const upper = query.prefix ? prefixSuccessor(query.prefix) ?? null : null;
    let key = query.keyMarker;
    let uploadId = query.keyMarker ? query.uploadIdMarker || "\u{10FFFF}" : "";
    let count = 0;
    while (true) {
      const rows = await q`
        SELECT * FROM uploads WHERE bucket = ${bucket}
          AND (key > ${key} OR (key = ${key} AND upload_id > ${uploadId}))
          AND key >= ${query.prefix} AND (${upper}::text IS NULL OR key < ${upper})
        ORDER BY key, upload_id LIMIT 1000`;
      for (const row of rows) {
        const u = toUpload(row);
        key = u.key;
        uploadId = u.uploadId;
        const cut = query.delimiter ? u.key.indexOf(query.delimiter, query.prefix.length) : -1;
        const common = cut >= 0 ? u.key.slice(0, cut + query.delimiter.length) : undefined;
        if (common !== undefined && page.commonPrefixes.at(-1) === common) continue;
        if (common !== undefined && query.keyMarker.startsWith(common)) continue;
        if (count === query.maxUploads) {
          page.isTruncated = true;
          return page;
        }
        count++;
        if (common !== undefined) {
          page.commonPrefixes.push(common);
          page.nextKeyMarker = common;
          page.nextUploadIdMarker = undefined;
        } else {
          page.uploads.push(u);
          page.nextKeyMarker = u.key;
          page.nextUploadIdMarker = u.uploadId;
        }
      }
      if (rows.length < 1000) return page;
    }
  }
}
