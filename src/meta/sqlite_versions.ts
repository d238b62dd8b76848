// ListObjectVersions in SQLite: keys in order, each key's versions newest first, resumed after a
// (key, version id) marker and rolled up by the delimiter.
import type { SQLInputValue, StatementSync } from "node:sqlite";
import { compareKeys, prefixSuccessor } from "./keys.ts";
import { parseStamps } from "./version_stamps.ts";
import type { VersionEntry, VersionListPage, VersionListQuery } from "./store.ts";

type Row = Record<string, SQLInputValue>;

const COLUMNS =
  "key, version_id, seq, is_latest, delete_marker, size, etag, last_modified, owner, stamps";
/** Rows per query right after a seek; doubled while rows keep being useful. */
const FIRST_BATCH = 64;
const MAX_BATCH = 1000;

function toEntry(row: Row): VersionEntry {
  return {
    key: row.key as string,
    versionId: row.version_id as string,
    isLatest: row.is_latest === 1,
    deleteMarker: row.delete_marker === 1,
    size: row.size as number,
    etag: row.etag as string,
    lastModified: row.last_modified as number,
    owner: row.owner as string,
    ...(row.stamps ? { stamps: parseStamps(JSON.parse(row.stamps as string)) } : {}),
  };
}

/** The scan position: within `key`, versions with seq below `seq`; or keys after `key`. */
interface Position {
  key: string;
  seq: number;
}

export function listVersions(
  stmt: (sql: string) => StatementSync,
  bucket: string,
  q: VersionListQuery,
): VersionListPage {
  const page: VersionListPage = { versions: [], commonPrefixes: [], isTruncated: false };
  if (q.maxKeys === 0) return page;
  const upper = q.prefix ? prefixSuccessor(q.prefix) : undefined;
  let pos: Position = { key: q.keyMarker, seq: 0 };
  if (q.keyMarker && q.versionIdMarker) {
    const marker = stmt("SELECT seq FROM versions WHERE bucket = ? AND key = ? AND version_id = ?")
      .get(bucket, q.keyMarker, q.versionIdMarker) as Row | undefined;
    pos = { key: q.keyMarker, seq: marker ? marker.seq as number : 0 };
  }
  if (compareKeys(q.prefix, pos.key) > 0) pos = { key: q.prefix, seq: Number.MAX_SAFE_INTEGER };
  let count = 0;
  let batch = FIRST_BATCH;
  while (true) {
    const rows = scan(stmt, bucket, pos, { upper, limit: batch });
    batch = Math.min(batch * 2, MAX_BATCH);
    for (const row of rows) {
      const entry = toEntry(row);
      pos = { key: entry.key, seq: row.seq as number };
      const cut = q.delimiter ? entry.key.indexOf(q.delimiter, q.prefix.length) : -1;
      if (cut >= 0) {
        const common = entry.key.slice(0, cut + q.delimiter.length);
        if (page.commonPrefixes.at(-1) === common || q.keyMarker.startsWith(common)) continue;
        if (count === q.maxKeys) return { ...page, isTruncated: true };
        page.commonPrefixes.push(common);
        page.nextKeyMarker = common;
        page.nextVersionIdMarker = undefined;
        count++;
        // Skip the rest of the prefix with one seek.
        const next = prefixSuccessor(common);
        if (next === undefined) return page;
        pos = { key: next, seq: Number.MAX_SAFE_INTEGER };
        batch = FIRST_BATCH;
        break;
      }
      if (count === q.maxKeys) return { ...page, isTruncated: true };
      page.versions.push(entry);
      page.nextKeyMarker = entry.key;
      page.nextVersionIdMarker = entry.versionId;
      count++;
    }
    if (rows.length === 0) return page;
  }
}

function scan(
  stmt: (sql: string) => StatementSync,
  bucket: string,
  pos: Position,
  opts: { upper?: string; limit: number },
): Row[] {
  const upper = opts.upper;
  // Within the current key: older versions (lower seq) first in descending order; then later keys.
  const sameKey = pos.seq > 0
    ? stmt(
      `SELECT ${COLUMNS} FROM versions WHERE bucket = ? AND key = ? AND seq < ? ` +
        "ORDER BY seq DESC LIMIT ?",
    ).all(bucket, pos.key, pos.seq, opts.limit) as Row[]
    : [];
  if (sameKey.length > 0) return sameKey;
  const args: SQLInputValue[] = [bucket, pos.key];
  if (upper !== undefined) args.push(upper);
  args.push(opts.limit);
  return stmt(
    `SELECT ${COLUMNS} FROM versions WHERE bucket = ? AND key > ?` +
      (upper !== undefined ? " AND key < ?" : "") + " ORDER BY key, seq DESC LIMIT ?",
  ).all(...args) as Row[];
}
