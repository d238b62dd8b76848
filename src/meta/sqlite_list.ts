// Listing current objects: a range scan over the current-version index, in batches.
import type { SQLInputValue, StatementSync } from "node:sqlite";
import { compareKeys, prefixSuccessor } from "./keys.ts";
import { returnArrays } from "./sqlite_arrays.ts";
import type { ListPage, ListQuery } from "./store.ts";

/** Keys skipped inside one common prefix before the scan seeks past the prefix instead. */
const SKIP_RUN_BEFORE_SEEK = 32;
/** Rows fetched per query right after a seek; doubled while rows keep being useful. */
const FIRST_BATCH = 64;
const MAX_BATCH = 1000;

type Row = [string, number, string, number, string, number];

interface ScanState {
  bound: string;
  inclusive: boolean;
}

/**
 * Current, non-deleted objects in key order from `query.after`, rolled up into common prefixes.
 * Rows come in batches (`all()` with LIMIT is several times faster per row than iterating);
 * a long run of keys under one common prefix ends the batch and the next query seeks past it.
 */
export function listCurrent(
  stmt: (sql: string) => StatementSync,
  bucket: string,
  query: ListQuery,
): ListPage {
  const { prefix, delimiter, maxKeys } = query;
  const upper = prefix ? prefixSuccessor(prefix) : undefined;
  const page: ListPage = { objects: [], commonPrefixes: [], isTruncated: false };
  if (maxKeys === 0) return page;
  const state: ScanState = compareKeys(prefix, query.after) > 0
    ? { bound: prefix, inclusive: true }
    : { bound: query.after, inclusive: false };
  let batch = delimiter ? FIRST_BATCH : Math.min(maxKeys + 1, MAX_BATCH);
  let count = 0;
  let common: string | undefined;
  while (true) {
    const rows = scan(stmt, bucket, { ...state, upper, limit: batch });
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
        common = key.slice(0, cut + delimiter.length);
        skipRun = 0;
        // A common prefix that holds the marker was returned on an earlier page.
        if (query.after.startsWith(common)) continue;
        if (count === maxKeys) return { ...page, isTruncated: true };
        page.commonPrefixes.push(common);
        page.lastReturned = common;
        count++;
        continue;
      }
      if (deleteMarker === 1) continue;
      if (count === maxKeys) return { ...page, isTruncated: true };
      page.objects.push({ key, size, etag, lastModified, owner });
      page.lastReturned = key;
      count++;
    }
    if (!seek && rows.length < batch) return page;
    const last = rows[rows.length - 1][0];
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

function scan(
  stmt: (sql: string) => StatementSync,
  bucket: string,
  opts: ScanState & { upper?: string; limit: number },
): Row[] {
  const lower = opts.inclusive ? "key >= ?" : "key > ?";
  const upper = opts.upper === undefined ? "" : " AND key < ?";
  const s = stmt(
    "SELECT key, size, etag, last_modified, owner, delete_marker FROM versions " +
      `WHERE bucket = ? AND is_latest = 1 AND ${lower}${upper} ORDER BY key LIMIT ?`,
  );
  returnArrays(s);
  const args: SQLInputValue[] = [bucket, opts.bound];
  if (opts.upper !== undefined) args.push(opts.upper);
  args.push(opts.limit);
  return s.all(...args) as unknown as Row[];
}
