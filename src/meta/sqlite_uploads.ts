// Multipart uploads and their parts in SQLite (part of SqliteMetaStore). Methods that change
// several rows run inside the caller's transaction.
import type { SQLInputValue, StatementSync } from "node:sqlite";
import { prefixSuccessor } from "./keys.ts";
import type { SqliteChunks } from "./sqlite_chunks.ts";
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
} from "./store.ts";

type Row = Record<string, SQLInputValue>;

function toUpload(row: Row): UploadRecord {
  return {
    bucket: row.bucket as string,
    key: row.key as string,
    uploadId: row.upload_id as string,
    initiated: row.initiated as number,
    owner: row.owner as string,
    contentType: row.content_type as string,
    userMeta: JSON.parse(row.user_meta as string),
    headers: JSON.parse(row.headers as string),
    acl: (row.acl as string | null) ?? undefined,
    sse: (row.sse as string | null) ?? undefined,
    lock: (row.lock as string | null) ?? undefined,
    checksumAlgorithm: (row.checksum_algorithm as string | null) ?? undefined,
    checksumType: (row.checksum_type as UploadRecord["checksumType"] | null) ?? undefined,
    tags: row.tags ? JSON.parse(row.tags as string) : undefined,
  };
}

function toPart(row: Row): PartRecord {
  return {
    partNumber: row.part_number as number,
    etag: row.etag as string,
    size: row.size as number,
    lastModified: row.last_modified as number,
    checksum: row.checksum ? JSON.parse(row.checksum as string) : undefined,
  };
}

export class SqliteUploads {
  constructor(readonly stmt: (sql: string) => StatementSync, readonly chunks: SqliteChunks) {}

  /** Records a new upload; MissingBucketError when its bucket is gone (deleted meanwhile). */
  create(u: UploadRecord): void {
    if (!this.stmt("SELECT 1 FROM buckets WHERE name = ?").get(u.bucket)) {
      throw new MissingBucketError(u.bucket);
    }
    this.stmt(
      "INSERT INTO uploads (bucket, key, upload_id, initiated, owner, content_type, user_meta, " +
        "headers, acl, sse, lock) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ).run(
      u.bucket,
      u.key,
      u.uploadId,
      u.initiated,
      u.owner,
      u.contentType,
      JSON.stringify(u.userMeta),
      JSON.stringify(u.headers),
      u.acl ?? null,
      u.sse ?? null,
      u.lock ?? null,
    );
    if (u.tags && Object.keys(u.tags).length > 0) {
      this.stmt("UPDATE uploads SET tags = ? WHERE upload_id = ?")
        .run(JSON.stringify(u.tags), u.uploadId);
    }
    if (u.checksumAlgorithm) {
      this.stmt("UPDATE uploads SET checksum_algorithm = ?, checksum_type = ? WHERE upload_id = ?")
        .run(u.checksumAlgorithm, u.checksumType ?? null, u.uploadId);
    }
  }

  get(bucket: string, key: string, uploadId: string): UploadRecord | undefined {
    const row = this.stmt("SELECT * FROM uploads WHERE bucket = ? AND key = ? AND upload_id = ?")
      .get(bucket, key, uploadId) as Row | undefined;
    return row ? toUpload(row) : undefined;
  }

  exists(uploadId: string): boolean {
    return this.stmt("SELECT 1 FROM uploads WHERE upload_id = ?").get(uploadId) !== undefined;
  }

  putPart(
    uploadId: string,
    part: PartRecord,
    chunks: VersionChunk[],
  ): { freed: ChunkRecord[] } | undefined {
    if (!this.exists(uploadId)) return undefined;
    const freed: ChunkRecord[] = [];
    const old = this.stmt("SELECT data_id FROM parts WHERE upload_id = ? AND part_number = ?")
      .get(uploadId, part.partNumber) as Row | undefined;
    if (old) {
      freed.push(...this.chunks.dropRefs(old.data_id as number));
      this.stmt("DELETE FROM parts WHERE upload_id = ? AND part_number = ?")
        .run(uploadId, part.partNumber);
    }
    const dataId = this.chunks.nextVid();
    this.stmt(
      "INSERT INTO parts (upload_id, part_number, etag, size, last_modified, data_id) " +
        "VALUES (?, ?, ?, ?, ?, ?)",
    ).run(uploadId, part.partNumber, part.etag, part.size, part.lastModified, dataId);
    if (part.checksum) {
      this.stmt("UPDATE parts SET checksum = ? WHERE data_id = ?")
        .run(JSON.stringify(part.checksum), dataId);
    }
    this.chunks.addRefs(dataId, chunks);
    return { freed: freed.filter((c) => !this.chunks.hasChunk(c.id)) };
  }

  listParts(uploadId: string, after: number, max: number): PartRecord[] {
    return (this.stmt(
      "SELECT * FROM parts WHERE upload_id = ? AND part_number > ? ORDER BY part_number LIMIT ?",
    ).all(uploadId, after, max) as Row[]).map(toPart);
  }

  /**
   * The chunks of the chosen parts, in order, at their offsets in the final object; undefined
   * when the upload or a part is gone. A part with another ETag (uploaded again since it was
   * chosen) throws PartChangedError.
   */
  partChunks(uploadId: string, parts: ChosenPart[]): VersionChunk[] | undefined {
    if (!this.exists(uploadId)) return undefined;
    const out: VersionChunk[] = [];
    let base = 0;
    for (const { partNumber, etag } of parts) {
      const row = this.stmt(
        "SELECT data_id, size, etag FROM parts WHERE upload_id = ? AND part_number = ?",
      )
        .get(uploadId, partNumber) as Row | undefined;
      if (!row) return undefined;
      if (row.etag !== etag) throw new PartChangedError(partNumber);
      for (const c of this.chunks.versionChunks(row.data_id as number)) {
        out.push({ chunk: c.chunk, offset: base + c.offset, size: c.size });
      }
      base += row.size as number;
    }
    return out;
  }

  /** Drops every part and the upload; returns the chunks nothing refers to any more. */
  remove(uploadId: string): ChunkRecord[] {
    const parts = this.stmt("SELECT data_id FROM parts WHERE upload_id = ?").all(uploadId) as Row[];
    const freed = this.chunks.dropRefsOfMany(parts.map((row) => row.data_id as number)).flat();
    this.stmt("DELETE FROM parts WHERE upload_id = ?").run(uploadId);
    this.stmt("DELETE FROM uploads WHERE upload_id = ?").run(uploadId);
    return freed;
  }

  /** Keeps the answer of a completion; drops those older than the retention. */
  recordCompleted(c: CompletedUpload): void {
    this.stmt("DELETE FROM completed_uploads WHERE completed_at < ?")
      .run(c.completedAt - COMPLETED_UPLOAD_RETENTION_MS);
    this.stmt(
      "INSERT OR REPLACE INTO completed_uploads " +
        "(upload_id, bucket, key, etag, version_id, checksum, completed_at) " +
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
    ).run(
      c.uploadId,
      c.bucket,
      c.key,
      c.etag,
      c.versionId,
      c.checksum ? JSON.stringify(c.checksum) : null,
      c.completedAt,
    );
  }

  getCompleted(uploadId: string, now: number): CompletedUpload | undefined {
    const row = this.stmt(
      "SELECT * FROM completed_uploads WHERE upload_id = ? AND completed_at >= ?",
    ).get(uploadId, now - COMPLETED_UPLOAD_RETENTION_MS) as Row | undefined;
    if (!row) return undefined;
    return {
      uploadId,
      bucket: row.bucket as string,
      key: row.key as string,
      etag: row.etag as string,
      versionId: row.version_id as string,
      checksum: row.checksum ? JSON.parse(row.checksum as string) : undefined,
      completedAt: row.completed_at as number,
    };
  }

  /** Aborts every upload of a bucket; returns the chunks nothing refers to any more. */
  removeAll(bucket: string): ChunkRecord[] {
    const ids = this.stmt("SELECT upload_id FROM uploads WHERE bucket = ?").all(bucket) as Row[];
    return ids.flatMap((row) => this.remove(row.upload_id as string));
  }

  countStale(before: number): number {
    return (this.stmt("SELECT COUNT(*) AS n FROM uploads WHERE initiated < ?").get(before) as Row)
      .n as number;
  }

  getById(uploadId: string): UploadRecord | undefined {
    const row = this.stmt("SELECT * FROM uploads WHERE upload_id = ?").get(uploadId) as
      | Row
      | undefined;
    return row ? toUpload(row) : undefined;
  }

  listStale(before: number, limit: number): UploadRecord[] {
    return (this.stmt("SELECT * FROM uploads WHERE initiated < ? ORDER BY initiated LIMIT ?")
      .all(before, limit) as Row[]).map(toUpload);
  }

  /** Uploads in (key, upload id) order after the markers, rolled up by the delimiter. */
  list(bucket: string, q: UploadListQuery): UploadListPage {
    const page: UploadListPage = { uploads: [], commonPrefixes: [], isTruncated: false };
    const upper = q.prefix ? prefixSuccessor(q.prefix) : undefined;
    let key = q.keyMarker;
    let uploadId = q.keyMarker ? q.uploadIdMarker || "\u{10FFFF}" : "";
    let count = 0;
    while (true) {
      const rows = this.stmt(
        "SELECT * FROM uploads WHERE bucket = ? AND (key > ? OR (key = ? AND upload_id > ?)) " +
          "AND key >= ? AND (? IS NULL OR key < ?) ORDER BY key, upload_id LIMIT 1000",
      ).all(bucket, key, key, uploadId, q.prefix, upper ?? null, upper ?? null) as Row[];
      for (const row of rows) {
        const u = toUpload(row);
        key = u.key;
        uploadId = u.uploadId;
        const cut = q.delimiter ? u.key.indexOf(q.delimiter, q.prefix.length) : -1;
        const common = cut >= 0 ? u.key.slice(0, cut + q.delimiter.length) : undefined;
        if (common !== undefined && page.commonPrefixes.at(-1) === common) continue;
        if (common !== undefined && q.keyMarker.startsWith(common)) continue;
        if (count === q.maxUploads) {
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
