// Bucket shares in SQLite: only the SHA-256 of a share's token is stored.
import type { SQLInputValue, StatementSync } from "node:sqlite";
import type { ShareRecord } from "./store.ts";

type Prepare = (sql: string) => StatementSync;
type Row = Record<string, SQLInputValue>;

export function toShare(r: Row): ShareRecord {
  return {
    id: r.id as string,
    tokenHash: r.token_hash as string,
    creator: r.creator as string,
    bucket: r.bucket as string,
    ...(r.bucket_created_at !== null && r.bucket_created_at !== undefined
      ? { bucketCreatedAt: r.bucket_created_at as number }
      : {}),
    prefix: r.prefix as string,
    permissions: JSON.parse(r.permissions as string),
    passwordHash: (r.password_hash as string | null) ?? undefined,
    createdAt: r.created_at as number,
    expiresAt: r.expires_at as number,
    maxDownloads: (r.max_downloads as number | null) ?? undefined,
    downloads: r.downloads as number,
    uploads: r.uploads as number,
    revokedAt: (r.revoked_at as number | null) ?? undefined,
  };
}

export class SqliteShares {
  constructor(readonly stmt: Prepare) {}

  create(s: ShareRecord): void {
    this.stmt(
      "INSERT INTO shares (id, token_hash, creator, bucket, prefix, permissions, password_hash, " +
        "created_at, expires_at, max_downloads, downloads, uploads, revoked_at, " +
        "bucket_created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, NULL, ?)",
    ).run(
      s.id,
      s.tokenHash,
      s.creator,
      s.bucket,
      s.prefix,
      JSON.stringify(s.permissions),
      s.passwordHash ?? null,
      s.createdAt,
      s.expiresAt,
      s.maxDownloads ?? null,
      s.bucketCreatedAt ?? null,
    );
  }

  get(by: { id: string } | { tokenHash: string }): ShareRecord | undefined {
    const row = "id" in by
      ? this.stmt("SELECT * FROM shares WHERE id = ?").get(by.id)
      : this.stmt("SELECT * FROM shares WHERE token_hash = ?").get(by.tokenHash);
    return row ? toShare(row as Row) : undefined;
  }

  /** A creator's shares (every share when `creator` is undefined), newest first. */
  list(creator?: string): ShareRecord[] {
    const rows = creator === undefined
      ? this.stmt("SELECT * FROM shares ORDER BY created_at DESC, id").all()
      : this.stmt("SELECT * FROM shares WHERE creator = ? ORDER BY created_at DESC, id")
        .all(creator);
    return (rows as Row[]).map(toShare);
  }

  revoke(id: string, at: number): boolean {
    return this.stmt("UPDATE shares SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL")
      .run(at, id).changes === 1;
  }

  /** Counts one download unless the limit is reached; one statement, so it never overshoots. */
  countDownload(id: string): boolean {
    return this.stmt(
      "UPDATE shares SET downloads = downloads + 1 " +
        "WHERE id = ? AND (max_downloads IS NULL OR downloads < max_downloads)",
    ).run(id).changes === 1;
  }

  countUpload(id: string): void {
    this.stmt("UPDATE shares SET uploads = uploads + 1 WHERE id = ?").run(id);
  }
}
