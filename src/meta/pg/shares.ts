// Bucket shares in PostgreSQL: only the SHA-256 of a share's token is stored; behaves as
// src/meta/sqlite_shares.ts.
import type { ShareRecord } from "../store.ts";
import { num, type Queryable } from "./sql.ts";

export const SHARES_DDL = `
  CREATE TABLE shares (
    id TEXT COLLATE "C" PRIMARY KEY,
    token_hash TEXT COLLATE "C" NOT NULL UNIQUE,
    creator TEXT COLLATE "C" NOT NULL,
    bucket TEXT COLLATE "C" NOT NULL,
    prefix TEXT COLLATE "C" NOT NULL,
    permissions TEXT NOT NULL,
    password_hash TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    max_downloads BIGINT,
    downloads BIGINT NOT NULL,
    uploads BIGINT NOT NULL,
    revoked_at BIGINT,
    bucket_created_at BIGINT
  );
  CREATE INDEX shares_by_creator ON shares (creator, created_at);
`;

type Row = Record<string, unknown>;

export function toShare(r: Row): ShareRecord {
  return {
    id: r.id as string,
    tokenHash: r.token_hash as string,
    creator: r.creator as string,
    bucket: r.bucket as string,
    ...(r.bucket_created_at !== null && r.bucket_created_at !== undefined
      ? { bucketCreatedAt: num(r.bucket_created_at) }
      : {}),
    prefix: r.prefix as string,
    permissions: JSON.parse(r.permissions as string),
    passwordHash: (r.password_hash as string | null) ?? undefined,
    createdAt: num(r.created_at),
    expiresAt: num(r.expires_at),
    maxDownloads: r.max_downloads === null ? undefined : num(r.max_downloads),
    downloads: num(r.downloads),
    uploads: num(r.uploads),
    revokedAt: r.revoked_at === null ? undefined : num(r.revoked_at),
  };
}

export class PgShares {
  async create(q: Queryable, s: ShareRecord): Promise<void> {
    await q`
      INSERT INTO shares (id, token_hash, creator, bucket, prefix, permissions, password_hash,
        created_at, expires_at, max_downloads, downloads, uploads, revoked_at, bucket_created_at)
      VALUES (${s.id}, ${s.tokenHash}, ${s.creator}, ${s.bucket}, ${s.prefix},
        ${JSON.stringify(s.permissions)}, ${s.passwordHash ?? null}, ${s.createdAt},
        ${s.expiresAt}, ${s.maxDownloads ?? null}, 0, 0, NULL, ${s.bucketCreatedAt ?? null})`;
  }

  async get(
    q: Queryable,
    by: { id: string } | { tokenHash: string },
  ): Promise<ShareRecord | undefined> {
    const rows = "id" in by
      ? await q`SELECT * FROM shares WHERE id = ${by.id}`
      : await q`SELECT * FROM shares WHERE token_hash = ${by.tokenHash}`;
    return rows.length ? toShare(rows[0]) : undefined;
  }

  /** A creator's shares (every share when `creator` is undefined), newest first. */
  async list(q: Queryable, creator?: string): Promise<ShareRecord[]> {
    const rows = creator === undefined
      ? await q`SELECT * FROM shares ORDER BY created_at DESC, id`
      : await q`SELECT * FROM shares WHERE creator = ${creator} ORDER BY created_at DESC, id`;
    return rows.map(toShare);
  }

  async revoke(q: Queryable, id: string, at: number): Promise<boolean> {
    return (await q`UPDATE shares SET revoked_at = ${at} WHERE id = ${id} AND revoked_at IS NULL`)
      .count === 1;
  }

  /**
   * Counts one download unless the limit is reached. One statement: the row lock it takes makes
   * concurrent counters (on any node) re-check the limit, so it never overshoots.
   */
  async countDownload(q: Queryable, id: string): Promise<boolean> {
    return (await q`
      UPDATE shares SET downloads = downloads + 1
      WHERE id = ${id} AND (max_downloads IS NULL OR downloads < max_downloads)`).count === 1;
  }

  async countUpload(q: Queryable, id: string): Promise<void> {
    await q`UPDATE shares SET uploads = uploads + 1 WHERE id = ${id}`;
  }
}
