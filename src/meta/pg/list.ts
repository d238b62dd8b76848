// Listings in PostgreSQL: range scans over the current-version index (ListObjects) and over
// (key, seq) (ListObjectVersions), in batches; a run of keys under one common prefix ends the
// batch and the next query seeks past the whole prefix instead of walking its keys (as in
// sqlite_list.ts and sqlite_versions.ts, whose logic this follows query for query).
import type { Row } from "postgres";
import { compareKeys, prefixSuccessor } from "../keys.ts";
import { parseStamps } from "../version_stamps.ts";
import type {
  ListPage,
  ListQuery,
  VersionEntry,
  VersionListPage,
  VersionListQuery,
} from "../store.ts";
import type { Q } from "./connect.ts";

/** Keys skipped inside one common prefix before the scan seeks past the prefix instead. */
const SKIP_RUN_BEFORE_SEEK = 32;
/** Rows fetched per query right after a seek; doubled while rows keep being useful. */
const FIRST_BATCH = 64;
const MAX_BATCH = 1000;

export async function listCurrent(q: Q, bucket: string, query: ListQuery): Promise<ListPage> {
  const { prefix, delimiter, maxKeys } = query;
  const upper = prefix ? prefixSuccessor(prefix) : undefined;
  const page: ListPage = { objects: [], commonPrefixes: [], isTruncated: false };
  if (maxKeys === 0) return page;
  const state = compareKeys(prefix, query.after) > 0
    ? { bound: prefix, inclusive: true }
    : { bound: query.after, inclusive: false };
  let batch = delimiter ? FIRST_BATCH : Math.min(maxKeys + 1, MAX_BATCH);
  let count = 0;
  let common: string | undefined;
  while (true) {
    const rows = await q`
      SELECT key, size, etag, last_modified, owner, delete_marker FROM versions
      WHERE bucket = ${bucket} AND is_latest
        AND ${state.inclusive ? q`key >= ${state.bound}` : q`key > ${state.bound}`}
        ${upper === undefined ? q`` : q`AND key < ${upper}`}
      ORDER BY key LIMIT ${batch}`.values();
    let skipRun = 0;
    let seek = false;
    for (const [key, size, etag, lastModified, owner, deleteMarker] of rows) {
      if (common !== undefined && key.startsWith(common)) {
        if (++skipRun > SKIP_RUN_BEFORE_SEEK) {
          seek = true;
          break;
        }
        continue;
      }
      common = undefined;
      const cut = delimiter ? key.indexOf(delimiter, prefix.length) : -1;
      if (cut >= 0) {
        common = key.slice(0, cut + delimiter.length) as string;
        skipRun = 0;
        // A common prefix that holds the marker was returned on an earlier page.
        if (query.after.startsWith(common)) continue;
        if (count === maxKeys) return { ...page, isTruncated: true };
        page.commonPrefixes.push(common);
        page.lastReturned = common;
        count++;
        continue;
      }
      if (deleteMarker) continue;
      if (count === maxKeys) return { ...page, isTruncated: true };
      page.objects.push({ key, size, etag, lastModified, owner });
      page.lastReturned = key;
      count++;
    }
    if (!seek && rows.length < batch) return page;
    const last = rows[rows.length - 1][0] as string;
    if (common !== undefined && last.startsWith(common)) {
      const next = prefixSuccessor(common);
      if (next === undefined) return page;
      Object.assign(state, { bound: next, inclusive: true });
      batch = FIRST_BATCH;
    } else {
      Object.assign(state, { bound: last, inclusive: false });
      batch = Math.min(batch * 2, MAX_BATCH);
    }
  }
}

function toEntry(row: Row): VersionEntry {
  return {
    key: row.key,
    versionId: row.version_id,
    isLatest: row.is_latest,
    deleteMarker: row.delete_marker,
    size: row.size,
    etag: row.etag,
    lastModified: row.last_modified,
    owner: row.owner,
    ...(row.stamps ? { stamps: parseStamps(JSON.parse(row.stamps)) } : {}),
  };
}

/** The scan position: within `key`, versions with seq below `seq`; or keys after `key`. */
interface Position {
  key: string;
  seq: number;
}

export async function listVersions(
  q: Q,
  bucket: string,
  query: VersionListQuery,
): Promise<VersionListPage> {
  const page: VersionListPage = { versions: [], commonPrefixes: [], isTruncated: false };
  if (query.maxKeys === 0) return page;
  const upper = query.prefix ? prefixSuccessor(query.prefix) : undefined;
  let pos: Position = { key: query.keyMarker, seq: 0 };
  if (query.keyMarker && query.versionIdMarker) {
    const [marker] = await q`
      SELECT seq FROM versions WHERE bucket = ${bucket} AND key = ${query.keyMarker}
        AND version_id = ${query.versionIdMarker}`;
    pos = { key: query.keyMarker, seq: marker ? marker.seq : 0 };
  }
  if (compareKeys(query.prefix, pos.key) > 0) {
    pos = { key: query.prefix, seq: Number.MAX_SAFE_INTEGER };
  }
  let count = 0;
  let batch = FIRST_BATCH;
  while (true) {
    const rows = await scanVersions(q, bucket, pos, upper, batch);
    batch = Math.min(batch * 2, MAX_BATCH);
    for (const row of rows) {
      const entry = toEntry(row);
      pos = { key: entry.key, seq: row.seq };
      const cut = query.delimiter ? entry.key.indexOf(query.delimiter, query.prefix.length) : -1;
      if (cut >= 0) {
        const common = entry.key.slice(0, cut + query.delimiter.length);
        if (page.commonPrefixes.at(-1) === common || query.keyMarker.startsWith(common)) continue;
        if (count === query.maxKeys) return { ...page, isTruncated: true };
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
      if (count === query.maxKeys) return { ...page, isTruncated: true };
      page.versions.push(entry);
      page.nextKeyMarker = entry.key;
      page.nextVersionIdMarker = entry.versionId;
      count++;
    }
    if (rows.length === 0) return page;
  }
}

const VERSION_ENTRY =
  "key, version_id, seq, is_latest, delete_marker, size, etag, last_modified, owner, stamps";

async function scanVersions(
  q: Q,
  bucket: string,
  pos: Position,
  upper: string | undefined,
  limit: number,
): Promise<Row[]> {
  // Within the current key: older versions (lower seq) first in descending order; then later keys.
  if (pos.seq > 0) {
    const sameKey = await q`
      SELECT ${q.unsafe(VERSION_ENTRY)} FROM versions
      WHERE bucket = ${bucket} AND key = ${pos.key} AND seq < ${pos.seq}
      ORDER BY seq DESC LIMIT ${limit}`;
    if (sameKey.length > 0) return sameKey;
  }
  return await q`
    SELECT ${q.unsafe(VERSION_ENTRY)} FROM versions
    WHERE bucket = ${bucket} AND key > ${pos.key}
      ${upper === undefined ? q`` : q`AND key < ${upper}`}
    ORDER BY key, seq DESC LIMIT ${limit}`;
}
