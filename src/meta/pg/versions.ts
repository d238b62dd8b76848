// Object versions in PostgreSQL (part of PgMetaStore): making a version current, removing one,
// reading them. A key's writers queue on a transaction-scoped advisory lock of the key, so two
// nodes writing one key never pick the same seq or leave two current versions; the bucket row is
// share-locked so a concurrent DeleteBucket waits for the write (or the write sees it gone).
import type { Row } from "postgres";
import {
  type BatchDelete,
  type CurrentGuard,
  type DataRef,
  MissingBucketError,
  type ObjectVersion,
  type TagSet,
  type VersionChunk,
  VersioningChangedError,
} from "../store.ts";
import type { PgChunks, RefChanges } from "./chunks.ts";
import type { Q } from "./connect.ts";
import { num } from "./sql.ts";
import type { PgObjectQueue } from "./object_queue.ts";
import { keepNewerParts, parseStamps } from "../version_stamps.ts";
import { removalWins } from "../removal_time.ts";

const VERSION_COLUMNS =
  "bucket, key, version_id, delete_marker, size, etag, last_modified, content_type, " +
  "user_meta, headers, owner, vid, chunked, sse, acl, parts, lock_mode, lock_until, legal_hold, " +
  "checksum, tags, replication, stamps";

function toVersion(row: Row): ObjectVersion {
  let data: DataRef = { kind: "none" };
  if (row.chunked) data = { kind: "chunks", vid: row.vid };
  else if (row.inline_data) data = { kind: "inline", bytes: new Uint8Array(row.inline_data) };
  return {
    bucket: row.bucket,
    key: row.key,
    versionId: row.version_id,
    deleteMarker: row.delete_marker,
    size: row.size,
    etag: row.etag,
    lastModified: row.last_modified,
    contentType: row.content_type,
    userMeta: JSON.parse(row.user_meta),
    headers: JSON.parse(row.headers),
    owner: row.owner,
    data,
    acl: row.acl ?? undefined,
    sse: row.sse ?? undefined,
    parts: row.parts ? JSON.parse(row.parts) : undefined,
    checksum: row.checksum ? JSON.parse(row.checksum) : undefined,
    retention: row.lock_mode ? { mode: row.lock_mode, until: row.lock_until } : undefined,
    legalHold: row.legal_hold,
    tags: row.tags ? JSON.parse(row.tags) : undefined,
    replication: row.replication ?? undefined,
    stamps: row.stamps ? parseStamps(JSON.parse(row.stamps)) : undefined,
  };
}

/** Stored tags: NULL for none. */
export function tagsColumn(tags: TagSet | undefined): string | null {
  return tags && Object.keys(tags).length > 0 ? JSON.stringify(tags) : null;
}

/**
 * Serialises the writers of these keys until the end of the transaction (any node). Keys are
 * locked in one order, so transactions that lock several (a DeleteObjects batch) never deadlock.
 */
export async function lockKeys(q: Q, bucket: string, keys: string[]): Promise<void> {
  for (const key of [...new Set(keys)].sort()) {
    await q`SELECT pg_advisory_xact_lock(hashtextextended(${bucket} || '/' || ${key}, 0))`;
  }
}

export class PgVersions {
  /** Set when clustering is on: writes and removals (not REPLICA ones) are queued in it. */
  queue?: PgObjectQueue;

  constructor(readonly chunks: PgChunks) {}

  async get(
    q: Q,
    bucket: string,
    key: string,
    versionId?: string,
  ): Promise<ObjectVersion | undefined> {
    const [row] = versionId === undefined
      ? await q`
        SELECT ${q.unsafe(VERSION_COLUMNS)}, inline_data FROM versions
        WHERE bucket = ${bucket} AND key = ${key} AND is_latest`
      : await q`
        SELECT ${q.unsafe(VERSION_COLUMNS)}, inline_data FROM versions
        WHERE bucket = ${bucket} AND key = ${key} AND version_id = ${versionId}`;
    return row ? toVersion(row) : undefined;
  }

  /**
   * Makes `v` the current version of its key (see MetaStore.putObjectVersion); the chunk
   * references it adds and drops join `refs`. Returns the versions it displaced.
   */
  async put(
    q: Q,
    v: ObjectVersion,
    chunks: VersionChunk[],
    refs: RefChanges,
    guard?: CurrentGuard,
    bucketCreatedAt?: number,
  ): Promise<ObjectVersion[]> {
    // One round trip: the bucket row share-locked, then the key's lock (as lockKeys takes it).
    const bucket = await q`
      SELECT pg_advisory_xact_lock(hashtextextended(${v.bucket} || '/' || ${v.key}, 0)),
        versioning, created_at
      FROM buckets WHERE name = ${v.bucket} FOR SHARE`;
    // Gone, or deleted and made again since the write was decided on.
    if (
      bucket.length === 0 ||
      (bucketCreatedAt !== undefined && num(bucket[0].created_at) !== bucketCreatedAt)
    ) throw new MissingBucketError(v.bucket);
    // A "null" version chosen before versioning was enabled would replace the kept version.
    if (
      v.versionId === "null" && bucket[0].versioning === "Enabled" && v.replication !== "REPLICA"
    ) throw new VersioningChangedError(v.bucket);
    if (guard) guard(await this.get(q, v.bucket, v.key));
    const displaced: ObjectVersion[] = [];
    const replica = v.replication === "REPLICA";
    if (replica) {
      // A replica older than the same version here (written again since) changes nothing.
      const [same] = await q`
        SELECT last_modified FROM versions WHERE bucket = ${v.bucket} AND key = ${v.key}
          AND version_id = ${v.versionId}`;
      if (same && Number(same.last_modified) > v.lastModified) return [];
      // Nor one written at or before this version id's removal here (the later of the two wins).
      if (this.queue && removalWins(await this.queue.tombstoneOf(q, v), v.lastModified)) return [];
    }
    const [old] = await q`
      DELETE FROM versions WHERE bucket = ${v.bucket} AND key = ${v.key}
        AND version_id = ${v.versionId}
      RETURNING ${q.unsafe(VERSION_COLUMNS)}`;
    if (old && replica) v = keepNewerParts(v, toVersion(old));
    if (old) {
      const oldVersion = toVersion(old);
      displaced.push(oldVersion);
      if (oldVersion.data.kind === "chunks") {
        refs.drop(await this.chunks.unlink(q, oldVersion.data.vid));
      }
    }
    // A replica goes below the versions here that are newer than it (written on another node
    // meanwhile), so every node ends with the same current version.
    const [{ below }] = replica
      ? await q`
        SELECT min(seq) AS below FROM versions WHERE bucket = ${v.bucket} AND key = ${v.key}
          AND last_modified > ${v.lastModified}`
      : [{ below: null }];
    let seq: number;
    let vid: number;
    if (below === null) {
      await q`UPDATE versions SET is_latest = false
        WHERE bucket = ${v.bucket} AND key = ${v.key} AND is_latest`;
      [{ seq, vid }] = await q`
        SELECT coalesce(max(seq), 0) + 1 AS seq, nextval('data_ids') AS vid FROM versions
        WHERE bucket = ${v.bucket} AND key = ${v.key}`;
    } else {
      // Two steps: the primary key (bucket, key, seq) would collide midway otherwise.
      await q`UPDATE versions SET seq = -(seq + 1)
        WHERE bucket = ${v.bucket} AND key = ${v.key} AND seq >= ${below}`;
      await q`UPDATE versions SET seq = -seq
        WHERE bucket = ${v.bucket} AND key = ${v.key} AND seq < 0`;
      seq = Number(below);
      [{ vid }] = await q`SELECT nextval('data_ids') AS vid`;
    }
    await this.#insert(q, v, {
      seq,
      vid,
      chunked: chunks.length > 0 || v.data.kind === "chunks",
      latest: below === null,
    });
    await this.chunks.link(q, vid, chunks);
    refs.add(chunks);
    return displaced;
  }

  async #insert(
    q: Q,
    v: ObjectVersion,
    opts: { seq: number; vid: number; chunked: boolean; latest: boolean },
  ): Promise<void> {
    const replication = v.replication === "REPLICA" ? "REPLICA" : this.queue ? "PENDING" : null;
    // A version written here starts unstamped; a replica keeps the stamps it had at its source.
    const stamps = replication === "REPLICA" && v.stamps && Object.keys(v.stamps).length > 0
      ? JSON.stringify(v.stamps)
      : null;
    await q`
      INSERT INTO versions (bucket, key, seq, version_id, is_latest, delete_marker, size, etag,
        last_modified, content_type, user_meta, headers, owner, inline_data, acl, vid, chunked,
        sse, parts, lock_mode, lock_until, legal_hold, checksum, tags, replication, stamps)
      VALUES (${v.bucket}, ${v.key}, ${opts.seq}, ${v.versionId}, ${opts.latest}, ${v.deleteMarker},
        ${v.size}, ${v.etag}, ${v.lastModified}, ${v.contentType}, ${JSON.stringify(v.userMeta)},
        ${JSON.stringify(v.headers)}, ${v.owner},
        ${v.data.kind === "inline" ? v.data.bytes : null}, ${v.acl ?? null}, ${opts.vid},
        ${opts.chunked}, ${v.sse ?? null}, ${v.parts ? JSON.stringify(v.parts) : null},
        ${v.retention?.mode ?? null}, ${v.retention?.until ?? null}, ${v.legalHold ?? false},
        ${v.checksum ? JSON.stringify(v.checksum) : null},
        ${v.deleteMarker ? null : tagsColumn(v.tags)}, ${replication}, ${stamps})`;
    if (replication === "PENDING") await this.queue!.append(q, "put", v);
  }

  /**
   * Removes one version (see BatchDelete); the next newest becomes current. The references it
   * drops join `refs`.
   */
  async remove(
    q: Q,
    item: Exclude<BatchDelete, { marker: ObjectVersion }>,
    refs: RefChanges,
  ): Promise<ObjectVersion | undefined> {
    const { bucket, key, versionId } = item;
    await lockKeys(q, bucket, [key]);
    const [row] = await q`
      SELECT ${q.unsafe(VERSION_COLUMNS)}, is_latest FROM versions
      WHERE bucket = ${bucket} AND key = ${key} AND version_id = ${versionId}`;
    if (!row) {
      // A replicated removal keeps its tombstone all the same (at its source's time), so a copy
      // written before it that arrives later is not taken.
      if (this.queue && item.replica && item.deletedAt !== undefined) {
        await this.queue.tombstone(q, item, item.deletedAt);
      }
      return undefined;
    }
    const removed = toVersion(row);
    item.guard?.(removed, row.is_latest === true);
    await q`DELETE FROM versions
      WHERE bucket = ${bucket} AND key = ${key} AND version_id = ${versionId}`;
    if (row.is_latest) {
      await q`
        UPDATE versions SET is_latest = true WHERE bucket = ${bucket} AND key = ${key} AND seq =
          (SELECT max(seq) FROM versions WHERE bucket = ${bucket} AND key = ${key})`;
    }
    if (removed.data.kind === "chunks") refs.drop(await this.chunks.unlink(q, removed.data.vid));
    // Queued with its time and whether it could bypass governance retention (they travel).
    const at = item.replica ? item.deletedAt ?? Date.now() : Date.now();
    if (this.queue && !item.replica) {
      await this.queue.append(q, "delete", item, { at, bypassGovernance: item.bypassGovernance });
    }
    // Replicas' removals too (at their source's time): anti-entropy asks about any version this
    // node once held.
    if (this.queue) await this.queue.tombstone(q, item, at);
    return removed;
  }

  /** The version's row locked for a change of its lock, ACL or tags; undefined when missing. */
  async lockRow(
    q: Q,
    t: { bucket: string; key: string; versionId: string },
  ): Promise<ObjectVersion | undefined> {
    const [row] = await q`
      SELECT ${q.unsafe(VERSION_COLUMNS)} FROM versions
      WHERE bucket = ${t.bucket} AND key = ${t.key} AND version_id = ${t.versionId} FOR UPDATE`;
    return row ? toVersion(row) : undefined;
  }
}
