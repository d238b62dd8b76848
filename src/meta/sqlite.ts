// The embedded MetaStore: SQLite in WAL mode through node:sqlite.
import { type ChangeDetail, changeFacts } from "./change_facts.ts";
import {
  DatabaseSync,
  type SQLInputValue,
  type StatementResultingChanges,
  type StatementSync,
} from "node:sqlite";
import { GroupCommit } from "./group_commit.ts";
import { WalSync } from "./wal_sync.ts";
import { Checkpointer } from "./checkpointer.ts";
import { log } from "../log.ts";
import { listCurrent } from "./sqlite_list.ts";
import { returnArrays } from "./sqlite_arrays.ts";
import { listVersions } from "./sqlite_versions.ts";
import { MIGRATIONS } from "./sqlite_schema.ts";
import { SqliteChunks } from "./sqlite_chunks.ts";
import { SqliteEvents } from "./sqlite_events.ts";
import { SqliteAudit } from "./sqlite_audit.ts";
import { SqliteErrors } from "./sqlite_errors.ts";
import { SqliteKms } from "./sqlite_kms.ts";
import { SqliteShares } from "./sqlite_shares.ts";
import { SqliteJobs } from "./sqlite_jobs.ts";
import type { AuditAnchor, AuditEntry, AuditFacts } from "../audit/chain.ts";
import { type AuditScope, currentAudit } from "../audit/scope.ts";
import { SqliteOps } from "./sqlite_ops.ts";
import { SqliteUploads } from "./sqlite_uploads.ts";
import { SqliteUsers } from "./sqlite_users.ts";
import { SqliteSts } from "./sqlite_sts.ts";
import { type BucketItem, SqliteCluster } from "./sqlite_cluster.ts";
import { SqliteClusterUsers } from "./sqlite_cluster_users.ts";
import { SqliteClusterRecords } from "./sqlite_cluster_records.ts";
import { SqliteClusterMembers } from "./sqlite_cluster_members.ts";
import { changedItems, type UserChange, type UserState } from "./user_stamps.ts";
import { SqliteObjectQueue } from "./sqlite_object_queue.ts";
import { removalWins } from "./removal_time.ts";
import {
  type ChosenPart,
  LockedVersioningError,
  mappingId,
  MissingBucketError,
  NO_EXPIRY,
  VersioningChangedError,
  type VersionTarget,
} from "./store.ts";

/** The version of a VersionTarget, and (when it names them) still the write it names. */
const SAME_WRITE = "bucket = ? AND key = ? AND version_id = ? AND " +
  "(? IS NULL OR (last_modified = ? AND etag = ?))";

function sameWrite(t: VersionTarget): (string | number | null)[] {
  const written = t.lastModified !== undefined && t.etag !== undefined;
  return [
    t.bucket,
    t.key,
    t.versionId,
    written ? 1 : null,
    written ? t.lastModified! : null,
    written ? t.etag! : null,
  ];
}
import type {
  AuditQuery,
  BatchDelete,
  BatchDeleteOutcome,
  BucketChange,
  BucketConfigKind,
  BucketListQuery,
  BucketRecord,
  BucketState,
  ChunkRecord,
  CompletedUpload,
  CurrentGuard,
  DataRef,
  ErrorQuery,
  ErrorRecord,
  JobOutcome,
  JobRecord,
  JobState,
  KmsKeyRecord,
  LdapMapping,
  ListPage,
  ListQuery,
  MetaStore,
  NewJob,
  ObjectVersion,
  OutboxEvent,
  PartRecord,
  PutResult,
  Retention,
  SessionRecord,
  ShareRecord,
  StoredEvent,
  TagSet,
  TokenRecord,
  UploadListPage,
  UploadListQuery,
  UploadRecord,
  Usage,
  UserRecord,
  VersionChunk,
  VersionListPage,
  VersionListQuery,
  WriteRecords,
} from "./store.ts";
import type {
  ObjectChange,
  RecordChange,
  ReplicatedRecord,
  ReplicationStatus,
  SavedMembers,
} from "./store.ts";
import {
  keepNewerParts,
  mergeParts,
  nextStamp,
  parseStamps,
  type VersionPart,
  type VersionParts,
} from "./version_stamps.ts";

type Row = Record<string, SQLInputValue>;

const VERSION_COLUMN_NAMES = [
  "bucket",
  "key",
  "version_id",
  "delete_marker",
  "size",
  "etag",
  "last_modified",
  "content_type",
  "user_meta",
  "headers",
  "owner",
  "vid",
  "chunked",
  "sse",
  "acl",
  "parts",
  "lock_mode",
  "lock_until",
  "legal_hold",
  "checksum",
  "tags",
  "replication",
  "stamps",
] as const;
const VERSION_COLUMNS = VERSION_COLUMN_NAMES.join(", ");

/** The columns of a version row, in the order of VERSION_COLUMNS and then inline_data. */
const VERSION_FIELDS = [...VERSION_COLUMN_NAMES, "inline_data"] as const;
/** Each version column's position in a row read as an array (see versionOf). */
const AT = Object.fromEntries(VERSION_FIELDS.map((c, i) => [c, i])) as Record<
  typeof VERSION_FIELDS[number],
  number
>;

/**
 * The statements of a GET or HEAD, made once: the statement cache is keyed by their text. Their
 * rows are read as arrays (sqlite_arrays.ts): ~7 µs less per lookup.
 */
const LATEST_VERSION = `SELECT ${VERSION_COLUMNS}, inline_data FROM versions ` +
  "WHERE bucket = ? AND key = ? AND is_latest = 1";
const ONE_VERSION = `SELECT ${VERSION_COLUMNS}, inline_data FROM versions ` +
  "WHERE bucket = ? AND key = ? AND version_id = ?";

/** VERSION_COLUMNS of the table aliased `v`, for joins. */
const JOINED_VERSION_COLUMNS = VERSION_COLUMN_NAMES.map((c) => `v.${c}`).join(", ");

/** A removal of one version in a batch (a BatchDelete that is not a delete marker). */
type VersionRemoval = Exclude<BatchDelete, { marker: ObjectVersion }>;
type MarkerItem = Extract<BatchDelete, { marker: ObjectVersion }>;

/**
 * The batch when it is only new delete markers (versioning enabled: fresh version ids, nothing
 * displaced) of distinct keys of one bucket, written here (not replicas); else undefined.
 */
function newMarkers(items: BatchDelete[]): MarkerItem[] | undefined {
  if (items.length < 2) return undefined;
  const keys = new Set<string>();
  const bucket = "marker" in items[0] ? items[0].marker.bucket : undefined;
  for (const item of items) {
    if (!("marker" in item)) return undefined;
    const m = item.marker;
    if (
      m.bucket !== bucket || m.versionId === "null" || m.replication || keys.has(m.key) ||
      item.guard
    ) {
      return undefined;
    }
    keys.add(m.key);
  }
  return items as MarkerItem[];
}

function toBucket(row: Row): BucketRecord {
  return {
    name: row.name as string,
    owner: row.owner as string,
    createdAt: row.created_at as number,
    region: row.region as string,
    versioning: row.versioning as BucketRecord["versioning"],
    objectLock: row.object_lock === 1,
  };
}

function toVersion(row: Row): ObjectVersion {
  return versionOf(VERSION_FIELDS.map((c) => row[c]));
}

/** A JSON column that may be NULL (or empty). */
function parsedOrNone(value: SQLInputValue) {
  return value ? JSON.parse(value as string) : undefined;
}

/** A version from its row read as an array of VERSION_FIELDS. */
function versionOf(a: SQLInputValue[]): ObjectVersion {
  let data: DataRef = { kind: "none" };
  if (a[AT.chunked] === 1) data = { kind: "chunks", vid: a[AT.vid] as number };
  else if (a[AT.inline_data]) data = { kind: "inline", bytes: a[AT.inline_data] as Uint8Array };
  return {
    bucket: a[AT.bucket] as string,
    key: a[AT.key] as string,
    versionId: a[AT.version_id] as string,
    deleteMarker: a[AT.delete_marker] === 1,
    size: a[AT.size] as number,
    etag: a[AT.etag] as string,
    lastModified: a[AT.last_modified] as number,
    contentType: a[AT.content_type] as string,
    userMeta: JSON.parse(a[AT.user_meta] as string),
    headers: JSON.parse(a[AT.headers] as string),
    owner: a[AT.owner] as string,
    data,
    acl: (a[AT.acl] as string | null) ?? undefined,
    sse: (a[AT.sse] as string | null) ?? undefined,
    parts: parsedOrNone(a[AT.parts]),
    checksum: parsedOrNone(a[AT.checksum]),
    retention: a[AT.lock_mode]
      ? {
        mode: a[AT.lock_mode] as "GOVERNANCE" | "COMPLIANCE",
        until: a[AT.lock_until] as number,
      }
      : undefined,
    legalHold: a[AT.legal_hold] === 1,
    tags: parsedOrNone(a[AT.tags]),
    replication: (a[AT.replication] as ReplicationStatus | null) ?? undefined,
    stamps: a[AT.stamps] ? parseStamps(JSON.parse(a[AT.stamps] as string)) : undefined,
  };
}

/** Stored tags: NULL for none. */
function tagsColumn(tags: TagSet | undefined): string | null {
  return tags && Object.keys(tags).length > 0 ? JSON.stringify(tags) : null;
}

/**
 * A write statement refuses to run outside a transaction: with synchronous=NORMAL an autocommit
 * write is never flushed by WalSync, so it could be lost after it was acknowledged.
 */
function guardWrite(db: DatabaseSync, stmt: StatementSync): void {
  const run = stmt.run.bind(stmt) as (...params: SQLInputValue[]) => StatementResultingChanges;
  stmt.run = ((...params: SQLInputValue[]) => {
    if (!db.isTransaction) throw new Error("A metadata write ran outside a transaction");
    return run(...params);
  }) as StatementSync["run"];
}

export class SqliteMetaStore implements MetaStore {
  readonly #db: DatabaseSync;
  readonly #stmts = new Map<string, StatementSync>();
  readonly #users: SqliteUsers;
  readonly #chunks: SqliteChunks;
  readonly #uploads: SqliteUploads;
  readonly #batch: GroupCommit;
  /** Flushes the WAL after commits (none for an in-memory database). */
  readonly #wal?: WalSync;
  /** Checkpoints off the event loop (none for an in-memory database). */
  readonly #checkpointer?: Checkpointer;
  readonly #events: SqliteEvents;
  readonly #audit: SqliteAudit;
  readonly #errors: SqliteErrors;
  readonly #kms: SqliteKms;
  readonly #shares: SqliteShares;
  readonly #jobs: SqliteJobs;
  /** Whether changes made in a request's audit scope write their entry (STORE_AUDIT). */
  readonly #auditing: boolean;
  readonly #sts: SqliteSts;
  readonly #ops: SqliteOps;
  readonly #cluster: SqliteCluster;
  readonly #clusterUsers: SqliteClusterUsers;
  readonly #clusterRecords: SqliteClusterRecords;
  readonly #clusterMembers: SqliteClusterMembers;
  readonly #objectQueue: SqliteObjectQueue;
  /** Bucket changes are queued for the other nodes (clustering is on). */
  readonly #replicating: boolean;

  /** `clusterNode`: this node's id when clustering is on (bucket changes are then queued). */
  constructor(path: string, opts: { audit?: boolean; clusterNode?: string } = {}) {
    this.#auditing = opts.audit ?? true;
    this.#replicating = opts.clusterNode !== undefined;
    this.#db = new DatabaseSync(path);
    this.#db.exec("PRAGMA journal_mode = WAL");
    // NORMAL: COMMIT does not wait for the disk; every commit is flushed by #wal before anything
    // that depends on it is acknowledged, so an acknowledged write survives a power loss while the
    // event loop goes on during the flush (checkpoints still flush in SQLite itself).
    this.#db.exec("PRAGMA synchronous = NORMAL");
    this.#db.exec("PRAGMA busy_timeout = 5000");
    this.#db.exec("PRAGMA foreign_keys = ON");
    if (path !== ":memory:") {
      this.#wal = WalSync.forDatabase(path);
      this.#checkpointer = new Checkpointer(path);
      // SQLite's own checkpoint (inside a COMMIT) only if the background one falls behind.
      this.#db.exec("PRAGMA wal_autocheckpoint = 8000");
    }
    this.#migrate();
    this.#batch = new GroupCommit(this.#db, () => this.#afterCommit());
    // User writes run inside #change's savepoint: no transaction of their own.
    this.#users = new SqliteUsers((sql) => this.#stmt(sql), (fn) => fn());
    this.#chunks = new SqliteChunks((sql) => this.#stmt(sql));
    this.#uploads = new SqliteUploads((sql) => this.#stmt(sql), this.#chunks);
    this.#events = new SqliteEvents((sql) => this.#stmt(sql));
    this.#audit = new SqliteAudit((sql) => this.#stmt(sql));
    this.#errors = new SqliteErrors((sql) => this.#stmt(sql));
    this.#kms = new SqliteKms((sql) => this.#stmt(sql));
    this.#shares = new SqliteShares((sql) => this.#stmt(sql));
    this.#jobs = new SqliteJobs((sql) => this.#stmt(sql));
    this.#sts = new SqliteSts((sql) => this.#stmt(sql));
    this.#ops = new SqliteOps(this.#db, (sql) => this.#stmt(sql), this.#batch);
    this.#cluster = new SqliteCluster((sql) => this.#stmt(sql), opts.clusterNode ?? "");
    this.#clusterUsers = new SqliteClusterUsers((sql) => this.#stmt(sql), opts.clusterNode ?? "");
    this.#clusterRecords = new SqliteClusterRecords(
      (sql) => this.#stmt(sql),
      opts.clusterNode ?? "",
    );
    this.#objectQueue = new SqliteObjectQueue((sql) => this.#stmt(sql));
    this.#clusterMembers = new SqliteClusterMembers((sql) => this.#stmt(sql));
  }

  /**
   * Queues an object change for the other nodes (clustering on, not a REPLICA write); inside the
   * write's transaction.
   */
  #objectChanged(op: ObjectChange["op"], v: { bucket: string; key: string; versionId: string }) {
    if (this.#replicating) this.#objectQueue.append(op, v.bucket, v.key, v.versionId);
  }

  /**
   * A version removed (queued unless a replica's removal, with the removal's time and whether
   * it could bypass governance retention; its tombstone kept either way, at its source's time
   * for a replica's removal that carries one).
   */
  #versionRemoved(v: VersionRemoval) {
    if (!this.#replicating) return;
    const at = v.replica ? v.deletedAt ?? Date.now() : Date.now();
    if (!v.replica) {
      this.#objectQueue.append("delete", v.bucket, v.key, v.versionId, {
        at,
        bypassGovernance: v.bypassGovernance,
      });
    }
    this.#objectQueue.tombstone(v, at);
  }

  /**
   * A replicated removal that found nothing to remove here: its tombstone is kept all the same
   * (when it carries its source's time), so a copy written before it that arrives later is not
   * taken.
   */
  #nothingRemoved(v: VersionRemoval) {
    if (this.#replicating && v.replica && v.deletedAt !== undefined) {
      this.#objectQueue.tombstone(v, v.deletedAt);
    }
  }

  /** Queues a bucket change for the other nodes; inside the change's transaction. */
  #bucketChanged(bucket: string, ...items: BucketItem[]): void {
    if (this.#replicating) this.#cluster.changed(bucket, items);
  }

  /**
   * Runs a write in the next group commit. Inside a request's audit scope the entry of the
   * change joins the same savepoint, so both commit or neither; `detail` says what changed
   * (undefined: nothing did, no entry).
   */
  #change<T>(
    fn: () => T,
    detail: (result: T) => ChangeDetail | undefined = () => ({}),
  ): Promise<T> {
    const scope = this.#auditing ? currentAudit() : undefined;
    if (!scope) return this.#batch.run(fn);
    let written = 0;
    return this.#batch.run(() => {
      const result = fn();
      const change = detail(result);
      if (change) {
        this.#audit.append(changeFacts(scope, change));
        written++;
      }
      return result;
    }).then((result) => {
      scope.recorded += written;
      return result;
    });
  }

  /** After each batch's COMMIT: counts it for the checkpointer and flushes the WAL. */
  #afterCommit(): Promise<void> {
    this.#checkpointer?.committed();
    if (!this.#wal) return Promise.resolve();
    return this.#wal.durable().catch((err) => {
      log("error", "The metadata log could not be flushed to disk", {
        source: "meta",
        error: String(err),
      });
      throw err;
    });
  }

  #migrate(): void {
    const current = (this.#db.prepare("PRAGMA user_version").get() as Row).user_version as number;
    for (let i = current; i < MIGRATIONS.length; i++) {
      this.#tx(() => {
        this.#db.exec(MIGRATIONS[i]);
        this.#db.exec(`PRAGMA user_version = ${i + 1}`);
      });
    }
  }

  #stmt(sql: string): StatementSync {
    let s = this.#stmts.get(sql);
    if (!s) {
      s = this.#db.prepare(sql);
      if (/^\s*(INSERT|UPDATE|DELETE|REPLACE)/i.test(sql)) guardWrite(this.#db, s);
      this.#stmts.set(sql, s);
    }
    return s;
  }

  #tx<T>(fn: () => T): T {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const result = fn();
      this.#db.exec("COMMIT");
      this.#wal?.durableNow();
      return result;
    } catch (err) {
      this.#db.exec("ROLLBACK");
      throw err;
    }
  }

  createBucket(b: BucketRecord): Promise<"created" | "exists"> {
    return this.#change(() => {
      const result = this.#stmt(
        "INSERT INTO buckets (name, owner, created_at, region, versioning, object_lock) " +
          "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO NOTHING",
      ).run(b.name, b.owner, b.createdAt, b.region, b.versioning, b.objectLock ? 1 : 0);
      if (result.changes !== 1) return "exists" as const;
      this.#bucketChanged(b.name, "record", "versioning", "objectLock");
      return "created" as const;
    }, (r) => r === "created" ? {} : undefined);
  }

  getBucket(name: string): Promise<BucketRecord | undefined> {
    const row = this.#stmt("SELECT * FROM buckets WHERE name = ?").get(name) as Row | undefined;
    return Promise.resolve(row ? toBucket(row) : undefined);
  }

  listBuckets(owner: string, page?: BucketListQuery): Promise<BucketRecord[]> {
    if (!page) {
      const rows = this.#stmt("SELECT * FROM buckets WHERE owner = ? ORDER BY name").all(owner);
      return Promise.resolve((rows as Row[]).map(toBucket));
    }
    // Bucket names are lower-case ASCII: the prefix range ends below prefix + U+FFFF.
    const rows = this.#stmt(
      "SELECT * FROM buckets WHERE owner = ? AND name > ? AND name >= ? AND name < ? " +
        "ORDER BY name LIMIT ?",
    ).all(owner, page.after, page.prefix, page.prefix + "\uffff", page.limit);
    return Promise.resolve((rows as Row[]).map(toBucket));
  }

  listAllBuckets(limit: number): Promise<BucketRecord[]> {
    const rows = this.#stmt("SELECT * FROM buckets ORDER BY name LIMIT ?").all(limit);
    return Promise.resolve((rows as Row[]).map(toBucket));
  }

  deleteBucket(
    name: string,
  ): Promise<{ outcome: "deleted" | "not_empty" | "missing"; freed: ChunkRecord[] }> {
    return this.#change(() => {
      if (!this.#stmt("SELECT 1 FROM buckets WHERE name = ?").get(name)) {
        return { outcome: "missing" as const, freed: [] };
      }
      if (this.#stmt("SELECT 1 FROM versions WHERE bucket = ? LIMIT 1").get(name)) {
        return { outcome: "not_empty" as const, freed: [] };
      }
      const freed = this.#uploads.removeAll(name);
      this.#stmt("DELETE FROM bucket_configs WHERE bucket = ?").run(name);
      this.#stmt("DELETE FROM buckets WHERE name = ?").run(name);
      this.#bucketChanged(name, "record");
      return { outcome: "deleted" as const, freed };
    }, (r) => r.outcome === "deleted" ? {} : undefined);
  }

  putObjectVersion(
    v: ObjectVersion,
    chunks: VersionChunk[] = [],
    opts: WriteRecords = {},
  ): Promise<PutResult> {
    return this.#change(() => {
      const result = this.#putVersion(v, chunks, opts.guard, opts.bucketCreatedAt);
      if (opts.outbox) this.#events.append(opts.outbox);
      for (const job of opts.jobs ?? []) this.#jobs.insert(job);
      return result;
    }, () => ({ key: v.key, versionId: v.versionId ?? "", bytes: v.size }));
  }

  /** The body of putObjectVersion, for use inside a transaction. */
  #putVersion(
    v: ObjectVersion,
    chunks: VersionChunk[],
    guard?: CurrentGuard,
    bucketCreatedAt?: number,
  ): PutResult {
    {
      const bucket = this.#requireBucketAsDecided(v.bucket, bucketCreatedAt);
      if (
        v.versionId === "null" && bucket.versioning === "Enabled" && v.replication !== "REPLICA"
      ) throw new VersioningChangedError(v.bucket);
      if (guard) {
        const current = this.#stmt(
          `SELECT ${VERSION_COLUMNS} FROM versions WHERE bucket = ? AND key = ? AND is_latest = 1`,
        ).get(v.bucket, v.key) as Row | undefined;
        guard(current ? toVersion(current) : undefined);
      }
      const displaced: ObjectVersion[] = [];
      const freed: ChunkRecord[] = [];
      const old = this.#versionRow(v);
      const replica = v.replication === "REPLICA";
      // A replica older than the same version here (written again since) changes nothing, nor
      // one written at or before this version id's removal here (the later of the two wins).
      if (old && replica && (old.last_modified as number) > v.lastModified) {
        return { displaced: [], freed: [] };
      }
      if (
        replica && this.#replicating &&
        removalWins(this.#objectQueue.tombstoneOf(v), v.lastModified)
      ) {
        return { displaced: [], freed: [] };
      }
      if (old && replica) v = keepNewerParts(v, toVersion(old));
      if (old) {
        const oldVersion = toVersion(old);
        displaced.push(oldVersion);
        if (oldVersion.data.kind === "chunks") {
          freed.push(...this.#chunks.dropRefs(oldVersion.data.vid));
        }
        this.#stmt("DELETE FROM versions WHERE bucket = ? AND key = ? AND version_id = ?")
          .run(v.bucket, v.key, v.versionId);
      }
      // A replica goes below the versions here that are newer than it (written on another node
      // meanwhile), so every node ends with the same current version.
      const below = replica
        ? (this.#stmt(
          "SELECT min(seq) AS seq FROM versions WHERE bucket = ? AND key = ? AND last_modified > ?",
        ).get(v.bucket, v.key, v.lastModified) as Row).seq as number | null
        : null;
      let seq: number;
      if (below === null) {
        this.#stmt(
          "UPDATE versions SET is_latest = 0 WHERE bucket = ? AND key = ? AND is_latest = 1",
        ).run(v.bucket, v.key);
        seq = (this.#stmt(
          "SELECT coalesce(max(seq), 0) + 1 AS seq FROM versions WHERE bucket = ? AND key = ?",
        ).get(v.bucket, v.key) as Row).seq as number;
      } else {
        // Two steps: the primary key (bucket, key, seq) is checked row by row.
        this.#stmt(
          "UPDATE versions SET seq = -(seq + 1) WHERE bucket = ? AND key = ? AND seq >= ?",
        ).run(v.bucket, v.key, below);
        this.#stmt("UPDATE versions SET seq = -seq WHERE bucket = ? AND key = ? AND seq < 0")
          .run(v.bucket, v.key);
        seq = below;
      }
      const vid = this.#chunks.nextVid();
      this.#insertVersion(v, { seq, vid, chunked: chunks.length > 0 || v.data.kind === "chunks" });
      if (below !== null) this.#stmt("UPDATE versions SET is_latest = 0 WHERE vid = ?").run(vid);
      if (chunks.length > 0) this.#chunks.addRefs(vid, chunks);
      // Chunks that were freed and re-referenced in this same write stay.
      return { displaced, freed: freed.filter((c) => !this.#chunks.hasChunk(c.id)) };
    }
  }

  #insertVersion(v: ObjectVersion, opts: { seq: number; vid: number; chunked: boolean }): void {
    this.#stmt(
      "INSERT INTO versions (bucket, key, seq, version_id, is_latest, delete_marker, size, etag, " +
        "last_modified, content_type, user_meta, headers, owner, inline_data, acl, vid, chunked, " +
        "sse, parts, lock_mode, lock_until, legal_hold) " +
        "VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ).run(
      v.bucket,
      v.key,
      opts.seq,
      v.versionId,
      v.deleteMarker ? 1 : 0,
      v.size,
      v.etag,
      v.lastModified,
      v.contentType,
      JSON.stringify(v.userMeta),
      JSON.stringify(v.headers),
      v.owner,
      v.data.kind === "inline" ? v.data.bytes : null,
      v.acl ?? null,
      opts.vid,
      opts.chunked ? 1 : 0,
      v.sse ?? null,
      v.parts ? JSON.stringify(v.parts) : null,
      v.retention?.mode ?? null,
      v.retention?.until ?? null,
      v.legalHold ? 1 : 0,
    );
    if (v.checksum) {
      this.#stmt("UPDATE versions SET checksum = ? WHERE vid = ?")
        .run(JSON.stringify(v.checksum), opts.vid);
    }
    const replication = v.replication === "REPLICA"
      ? "REPLICA"
      : this.#replicating
      ? "PENDING"
      : null;
    if (replication) {
      this.#stmt("UPDATE versions SET replication = ? WHERE vid = ?").run(replication, opts.vid);
      if (replication === "PENDING") this.#objectChanged("put", v);
    }
    const tags = v.deleteMarker ? null : tagsColumn(v.tags);
    if (tags !== null) this.#stmt("UPDATE versions SET tags = ? WHERE vid = ?").run(tags, opts.vid);
    // A version written here starts unstamped; a replica keeps the stamps it had at its source.
    if (replication === "REPLICA" && v.stamps && Object.keys(v.stamps).length > 0) {
      this.#stmt("UPDATE versions SET stamps = ? WHERE vid = ?")
        .run(JSON.stringify(v.stamps), opts.vid);
    }
  }

  getObjectVersion(
    bucket: string,
    key: string,
    versionId?: string,
  ): Promise<ObjectVersion | undefined> {
    const row = versionId === undefined
      ? returnArrays(this.#stmt(LATEST_VERSION)).get(bucket, key)
      : returnArrays(this.#stmt(ONE_VERSION)).get(bucket, key, versionId);
    return Promise.resolve(row ? versionOf(row as unknown as SQLInputValue[]) : undefined);
  }

  /**
   * Removes one version inside the caller's transaction (see BatchDelete). A refusal of its guard,
   * which runs before anything is written, is returned.
   */
  #deleteVersion(
    item: VersionRemoval,
  ): { removed?: ObjectVersion; freed: ChunkRecord[] } | { refused: unknown } {
    const { bucket, key, versionId } = item;
    const row = this.#stmt(
      `SELECT ${VERSION_COLUMNS}, is_latest FROM versions ` +
        "WHERE bucket = ? AND key = ? AND version_id = ?",
    ).get(bucket, key, versionId) as Row | undefined;
    if (!row) {
      this.#nothingRemoved(item);
      return { freed: [] };
    }
    const removed = toVersion(row);
    try {
      item.guard?.(removed, row.is_latest === 1);
    } catch (refused) {
      return { refused };
    }
    this.#stmt("DELETE FROM versions WHERE bucket = ? AND key = ? AND version_id = ?")
      .run(bucket, key, versionId);
    if (row.is_latest === 1) {
      this.#stmt(
        "UPDATE versions SET is_latest = 1 WHERE bucket = ? AND key = ? AND seq = " +
          "(SELECT max(seq) FROM versions WHERE bucket = ? AND key = ?)",
      ).run(bucket, key, bucket, key);
    }
    const freed = removed.data.kind === "chunks" ? this.#chunks.dropRefs(removed.data.vid) : [];
    this.#versionRemoved(item);
    const event = item.outbox?.(removed);
    if (event) this.#events.append(event);
    return { removed, freed };
  }

  deleteObjects(items: BatchDelete[]): Promise<BatchDeleteOutcome[]> {
    const scope = this.#auditing ? currentAudit() : undefined;
    let written = 0;
    const removals = items.filter((item): item is VersionRemoval => !("marker" in item));
    const markers = newMarkers(items);
    const run = removals.length === 1 && items.length === 1
      ? () => [this.#removeOne(removals[0], scope, () => written++)]
      : removals.length === items.length
      ? () => this.#removeVersions(removals, scope, (n) => written += n)
      : markers
      ? () => this.#insertMarkers(markers, scope, (n) => written += n)
      : () => items.map((item) => this.#batchItem(item, scope, () => written++));
    return this.#batch.run(run)
      .then((outcomes) => {
        if (scope) scope.recorded += written;
        return outcomes;
      });
  }

  /**
   * A batch of one removal (a DELETE request): for one key the plain statements of #deleteVersion
   * cost less than the set-based ones' JSON (~60 µs less CPU per DELETE). A refusal of its guard
   * fails it alone; any other error fails it through the batch's savepoint.
   */
  #removeOne(
    item: VersionRemoval,
    scope: AuditScope | undefined,
    audited: () => void,
  ): BatchDeleteOutcome {
    const r = this.#deleteVersion(item);
    if ("refused" in r) return { ok: false, error: r.refused };
    if (scope && r.removed) {
      this.#audit.append(changeFacts(scope, { key: item.key, versionId: item.versionId }));
      audited();
    }
    return { ok: true, ...r };
  }

  /**
   * A batch of version removals as set-based statements: one read of every version, the guards
   * in order, one delete, one fix-up of the latest flags; then the events and audit entries, a
   * prepared insert each (cheaper than extracting their fields from JSON). A few statements per
   * key would cost several times more, each step crossing into SQLite. The guards refuse keys
   * alone (they run before anything is written); any other error fails the whole batch.
   */
  #removeVersions(
    items: VersionRemoval[],
    scope: AuditScope | undefined,
    audited: (entries: number) => void,
  ): BatchDeleteOutcome[] {
    // Rows as arrays: [item, rowid, is_latest, ...the version's columns] (see versionOf).
    const rows = returnArrays(this.#stmt(
      `SELECT j.item, v.rowid, v.is_latest, ${JOINED_VERSION_COLUMNS} FROM ` +
        "(SELECT key AS item, value ->> 0 AS b, value ->> 1 AS k, value ->> 2 AS id " +
        "FROM json_each(?)) j JOIN versions v ON v.bucket = j.b AND v.key = j.k AND v.version_id = j.id",
    )).all(
      JSON.stringify(items.map((i) => [i.bucket, i.key, i.versionId])),
    ) as unknown as SQLInputValue[][];
    const found = new Map(rows.map((row) => [row[0] as number, row]));
    const doomed = new Set<number>();
    const latest: [string, string][] = [];
    const events: OutboxEvent[] = [];
    const facts: AuditFacts[] = [];
    const outcomes = items.map((item, i): BatchDeleteOutcome => {
      const row = found.get(i);
      // A key named twice: the second finds its version gone, as if deleted one after the other.
      if (!row || doomed.has(row[1] as number)) {
        this.#nothingRemoved(item);
        return { ok: true, freed: [] };
      }
      const removed = versionOf(row.slice(3));
      const current = row[2] === 1;
      try {
        item.guard?.(removed, current);
      } catch (error) {
        return { ok: false, error };
      }
      doomed.add(row[1] as number);
      if (current) latest.push([item.bucket, item.key]);
      this.#versionRemoved(item);
      const event = item.outbox?.(removed);
      if (event) events.push(event);
      if (scope) facts.push(changeFacts(scope, { key: item.key, versionId: item.versionId }));
      return { ok: true, removed, freed: [] };
    });
    if (doomed.size === 0) return outcomes;
    this.#stmt("DELETE FROM versions WHERE rowid IN (SELECT value FROM json_each(?))")
      .run(JSON.stringify([...doomed]));
    this.#stmt(
      "UPDATE versions SET is_latest = 1 WHERE rowid IN (SELECT (SELECT v.rowid FROM versions v " +
        "WHERE v.bucket = value ->> 0 AND v.key = value ->> 1 ORDER BY v.seq DESC LIMIT 1) " +
        "FROM json_each(?))",
    ).run(JSON.stringify(latest));
    // The chunk references of every removed version at once (three statements per key before).
    const chunked: { outcome: { freed: ChunkRecord[] }; vid: number }[] = [];
    for (const outcome of outcomes) {
      if (outcome.ok && outcome.removed?.data.kind === "chunks") {
        chunked.push({ outcome, vid: outcome.removed.data.vid });
      }
    }
    const freed = this.#chunks.dropRefsOfMany(chunked.map((c) => c.vid));
    chunked.forEach((c, i) => c.outcome.freed = freed[i]);
    this.#events.appendMany(events);
    this.#audit.appendMany(facts);
    audited(facts.length);
    return outcomes;
  }

  /**
   * New delete markers of distinct keys of one bucket (see newMarkers) as set-based statements:
   * one update of the latest flags, one insert of every marker, then the events and audit
   * entries; a marker per key costs about ten statements and two savepoint commands.
   */
  #insertMarkers(
    items: MarkerItem[],
    scope: AuditScope | undefined,
    audited: (entries: number) => void,
  ): BatchDeleteOutcome[] {
    const bucket = items[0].marker.bucket;
    if (!this.#stmt("SELECT 1 FROM buckets WHERE name = ?").get(bucket)) {
      return items.map(() => ({ ok: false, error: new MissingBucketError(bucket) }));
    }
    const markers = items.map((i) => i.marker);
    this.#stmt(
      "UPDATE versions SET is_latest = 0 WHERE bucket = ? AND is_latest = 1 " +
        "AND key IN (SELECT value FROM json_each(?))",
    ).run(bucket, JSON.stringify(markers.map((m) => m.key)));
    const firstVid = this.#chunks.nextVid(markers.length);
    // Each key's next seq is read before any row is inserted (SQLite materializes a SELECT of
    // the table it inserts into); the keys are distinct, so none is counted twice.
    this.#stmt(
      "INSERT INTO versions (bucket, key, seq, version_id, is_latest, delete_marker, size, " +
        "etag, last_modified, content_type, user_meta, headers, owner, vid, chunked, legal_hold, " +
        "replication) SELECT ?1, j.value ->> 0, (SELECT coalesce(max(v.seq), 0) + 1 FROM " +
        "versions v WHERE v.bucket = ?1 AND v.key = j.value ->> 0), j.value ->> 1, 1, 1, 0, '', " +
        "j.value ->> 2, '', '{}', '{}', j.value ->> 3, j.value ->> 4, 0, 0, ?2 FROM json_each(?3) j",
    ).run(
      bucket,
      this.#replicating ? "PENDING" : null,
      JSON.stringify(
        markers.map((m, i) => [m.key, m.versionId, m.lastModified, m.owner, firstVid + i]),
      ),
    );
    for (const m of markers) this.#objectChanged("put", m);
    this.#events.appendMany(items.flatMap((i) => i.outbox ? [i.outbox] : []));
    const facts = scope
      ? markers.map((m) => changeFacts(scope, { key: m.key, versionId: m.versionId, bytes: 0 }))
      : [];
    this.#audit.appendMany(facts);
    audited(facts.length);
    return items.map(() => ({ ok: true, freed: [] }));
  }

  /** One change of a batch in its own savepoint, with its audit entry (see #change). */
  #batchItem(
    item: BatchDelete,
    scope: AuditScope | undefined,
    audited: () => void,
  ): BatchDeleteOutcome {
    this.#db.exec("SAVEPOINT batch_item");
    try {
      if (!("marker" in item)) {
        // A refused removal wrote nothing: the savepoint is released as it is.
        const outcome = this.#removeOne(item, scope, audited);
        this.#db.exec("RELEASE batch_item");
        return outcome;
      }
      const v = item.marker;
      const outcome = { ok: true as const, freed: this.#putVersion(v, [], item.guard).freed };
      if (item.outbox) this.#events.append(item.outbox);
      const change = { key: v.key, versionId: v.versionId ?? "", bytes: v.size };
      if (scope) this.#audit.append(changeFacts(scope, change));
      this.#db.exec("RELEASE batch_item");
      if (scope) audited();
      return outcome;
    } catch (error) {
      this.#db.exec("ROLLBACK TO batch_item");
      this.#db.exec("RELEASE batch_item");
      return { ok: false, error };
    }
  }

  versionChunks(vid: number, range?: { from: number; to: number }): Promise<VersionChunk[]> {
    return Promise.resolve(this.#chunks.versionChunks(vid, range));
  }

  hasChunk(id: string): Promise<boolean> {
    return Promise.resolve(this.#chunks.hasChunk(id));
  }

  getChunk(id: string): Promise<ChunkRecord | undefined> {
    return Promise.resolve(this.#chunks.getChunk(id));
  }

  listChunks(after: string, limit: number): Promise<ChunkRecord[]> {
    return Promise.resolve(this.#chunks.listChunks(after, limit));
  }

  /** One process uses the file: the claims of chunk_claims.ts are all there is. */
  claimChunk(_id: string): Promise<void> {
    return Promise.resolve();
  }

  async releaseChunk(id: string, remove: () => Promise<void>): Promise<void> {
    if (!this.#chunks.hasChunk(id)) await remove();
  }

  async collectChunk(id: string, remove: () => Promise<void>): Promise<void> {
    if (!this.#chunks.hasChunk(id)) await remove();
  }

  driveAt(path: string): Promise<string | undefined> {
    const row = this.#stmt("SELECT uuid FROM drives WHERE path = ? ORDER BY id DESC LIMIT 1")
      .get(path) as Row | undefined;
    return Promise.resolve(row ? (row.uuid as string) : undefined);
  }

  driveId(uuid: string, path: string): Promise<number> {
    return this.#batch.run(() => this.#chunks.driveId(uuid, path));
  }

  listVersions(bucket: string, query: VersionListQuery): Promise<VersionListPage> {
    return Promise.resolve(listVersions((sql) => this.#stmt(sql), bucket, query));
  }

  /** One version's row, inside a change. */
  #versionRow(target: { bucket: string; key: string; versionId: string }): Row | undefined {
    return this.#stmt(
      `SELECT ${VERSION_COLUMNS} FROM versions WHERE bucket = ? AND key = ? AND version_id = ?`,
    ).get(target.bucket, target.key, target.versionId) as Row | undefined;
  }

  setObjectLock(
    target: { bucket: string; key: string; versionId: string },
    change: { retention?: Retention | null; legalHold?: boolean },
    guard?: (version: ObjectVersion) => void,
  ): Promise<boolean> {
    return this.#change(() => {
      const row = this.#versionRow(target);
      if (!row) return false;
      guard?.(toVersion(row));
      const where = "WHERE bucket = ? AND key = ? AND version_id = ?";
      const ids = [target.bucket, target.key, target.versionId];
      if (change.retention !== undefined) {
        this.#stmt(`UPDATE versions SET lock_mode = ?, lock_until = ? ${where}`)
          .run(change.retention?.mode ?? null, change.retention?.until ?? null, ...ids);
      }
      if (change.legalHold !== undefined) {
        this.#stmt(`UPDATE versions SET legal_hold = ? ${where}`).run(
          change.legalHold ? 1 : 0,
          ...ids,
        );
      }
      const parts: VersionPart[] = [];
      if (change.retention !== undefined) parts.push("retention");
      if (change.legalHold !== undefined) parts.push("legalHold");
      if (parts.length > 0) this.#stampChange(target, parts, "lock");
      return true;
    }, (r) => r ? { key: target.key, versionId: target.versionId } : undefined);
  }

  setBucketObjectLock(bucket: string): Promise<void> {
    return this.#change(() => {
      const result = this.#stmt(
        "UPDATE buckets SET object_lock = 1, versioning = 'Enabled' WHERE name = ?",
      ).run(bucket);
      if (result.changes === 1) this.#bucketChanged(bucket, "objectLock", "versioning");
    });
  }

  setBucketVersioning(bucket: string, status: "Enabled" | "Suspended"): Promise<void> {
    return this.#change(() => {
      const row = this.#requireBucketAsDecided(bucket);
      if (status === "Suspended" && row.object_lock === 1) throw new LockedVersioningError(bucket);
      this.#stmt("UPDATE buckets SET versioning = ? WHERE name = ?").run(status, bucket);
      this.#bucketChanged(bucket, "versioning");
    });
  }

  listObjects(bucket: string, query: ListQuery): Promise<ListPage> {
    return Promise.resolve(listCurrent((sql) => this.#stmt(sql), bucket, query));
  }

  getBucketConfig(bucket: string, kind: BucketConfigKind): Promise<string | undefined> {
    const row = this.#stmt("SELECT value FROM bucket_configs WHERE bucket = ? AND kind = ?")
      .get(bucket, kind) as Row | undefined;
    return Promise.resolve(row ? (row.value as string) : undefined);
  }

  putBucketConfig(
    bucket: string,
    kind: BucketConfigKind,
    value: string,
    opts: { createdAt?: number } = {},
  ): Promise<void> {
    return this.#change(() => {
      this.#requireBucketAsDecided(bucket, opts.createdAt);
      this.#stmt(
        "INSERT INTO bucket_configs (bucket, kind, value) VALUES (?, ?, ?) " +
          "ON CONFLICT(bucket, kind) DO UPDATE SET value = excluded.value",
      ).run(bucket, kind, value);
      this.#bucketChanged(bucket, `config:${kind}`);
    });
  }

  deleteBucketConfig(
    bucket: string,
    kind: BucketConfigKind,
    opts: { createdAt?: number } = {},
  ): Promise<void> {
    return this.#change(() => {
      if (opts.createdAt !== undefined) this.#requireBucketAsDecided(bucket, opts.createdAt);
      const result = this.#stmt("DELETE FROM bucket_configs WHERE bucket = ? AND kind = ?")
        .run(bucket, kind);
      if (result.changes > 0) this.#bucketChanged(bucket, `config:${kind}`);
    });
  }

  /**
   * The bucket's versioning and Object Lock state; MissingBucketError unless it exists, created
   * at `createdAt` when that is given.
   */
  #requireBucketAsDecided(bucket: string, createdAt?: number): Row {
    const row = this.#stmt(
      "SELECT versioning, object_lock, created_at FROM buckets WHERE name = ?",
    ).get(bucket) as Row | undefined;
    if (!row || (createdAt !== undefined && row.created_at !== createdAt)) {
      throw new MissingBucketError(bucket);
    }
    return row;
  }

  bucketChanges(after: number, limit: number): Promise<BucketChange[]> {
    return Promise.resolve(this.#cluster.changes(after, limit));
  }

  applyBucketState(state: BucketState): Promise<"applied" | "stale" | "kept"> {
    return this.#change(
      () => this.#cluster.apply(state),
      (r) => r === "applied" ? { bucket: state.bucket } : undefined,
    );
  }

  queueUnreplicatedBuckets(): Promise<number> {
    return this.#batch.run(() => this.#cluster.queueUnstamped());
  }

  replicationCursor(node: string): Promise<number> {
    return Promise.resolve(this.#cluster.cursor(node));
  }

  setReplicationCursor(node: string, seq: number): Promise<void> {
    return this.#batch.run(() => this.#cluster.setCursor(node, seq));
  }

  replicationBacklog(after: number): Promise<{ depth: number; oldest?: number }> {
    return Promise.resolve(this.#cluster.backlog(after));
  }

  pruneBucketChanges(nodes: string[]): Promise<number> {
    return this.#batch.run(() => this.#cluster.prune(nodes));
  }

  forgetReplicationNode(node: string): Promise<boolean> {
    return this.#batch.run(() => {
      const buckets = this.#cluster.forget(node);
      const users = this.#clusterUsers.forget(node);
      const records = this.#clusterRecords.forget(node);
      return this.#objectQueue.forget(node) || buckets || users || records;
    });
  }

  objectChanges(after: number, limit: number): Promise<ObjectChange[]> {
    return Promise.resolve(this.#objectQueue.changes(after, limit));
  }

  objectReplicationCursor(node: string): Promise<number> {
    return Promise.resolve(this.#objectQueue.cursor(node));
  }

  setObjectReplicationCursor(node: string, seq: number): Promise<void> {
    return this.#batch.run(() => this.#objectQueue.setCursor(node, seq));
  }

  objectReplicationBacklog(after: number): Promise<{ depth: number; oldest?: number }> {
    return Promise.resolve(this.#objectQueue.backlog(after));
  }

  pruneObjectChanges(nodes: string[]): Promise<number> {
    return this.#batch.run(() => this.#objectQueue.prune(nodes));
  }

  setReplicationStatus(
    t: { bucket: string; key: string; versionId: string },
    status: "COMPLETED" | "FAILED" | null,
  ): Promise<boolean> {
    return this.#batch.run(() => this.#objectQueue.setStatus(t.bucket, t.key, t.versionId, status));
  }

  versionTombstone(
    t: { bucket: string; key: string; versionId: string },
  ): Promise<number | undefined> {
    return Promise.resolve(this.#objectQueue.tombstoneOf(t));
  }

  pruneTombstones(before: number): Promise<number> {
    return this.#batch.run(() => this.#objectQueue.pruneTombstones(before));
  }

  listBucketConfigs(
    kind: BucketConfigKind,
    after: string,
    limit: number,
  ): Promise<{ bucket: string; value: string }[]> {
    const rows = this.#stmt(
      "SELECT bucket, value FROM bucket_configs WHERE kind = ? AND bucket > ? " +
        "ORDER BY bucket LIMIT ?",
    ).all(kind, after, limit) as Row[];
    return Promise.resolve(
      rows.map((r) => ({ bucket: r.bucket as string, value: r.value as string })),
    );
  }

  setObjectAcl(
    target: VersionTarget,
    acl: string,
    outbox?: OutboxEvent,
  ): Promise<boolean> {
    return this.#change(() => {
      const result = this.#stmt(
        `UPDATE versions SET acl = ? WHERE ${SAME_WRITE}`,
      ).run(acl, ...sameWrite(target));
      if (result.changes === 1 && outbox) this.#events.append(outbox);
      if (result.changes === 1) this.#stampChange(target, ["acl"], "acl");
      return result.changes === 1;
    }, (r) => r ? { key: target.key, versionId: target.versionId } : undefined);
  }

  setObjectTags(
    target: VersionTarget,
    tags: TagSet,
    outbox?: OutboxEvent,
  ): Promise<boolean> {
    return this.#change(() => {
      const result = this.#stmt(
        `UPDATE versions SET tags = ? WHERE ${SAME_WRITE} AND delete_marker = 0`,
      ).run(tagsColumn(tags), ...sameWrite(target));
      if (result.changes === 1 && outbox) this.#events.append(outbox);
      if (result.changes === 1) this.#stampChange(target, ["tags"], "tags");
      return result.changes === 1;
    }, (r) => r ? { key: target.key, versionId: target.versionId } : undefined);
  }

  mergeVersionParts(
    target: { bucket: string; key: string; versionId: string },
    parts: VersionParts,
  ): Promise<boolean> {
    return this.#change(() => {
      const row = this.#versionRow(target);
      if (!row) return false;
      const v = mergeParts(toVersion(row), parts);
      if (!v) return true;
      this.#stmt(
        "UPDATE versions SET tags = ?, acl = ?, lock_mode = ?, lock_until = ?, legal_hold = ?, " +
          "stamps = ? WHERE bucket = ? AND key = ? AND version_id = ?",
      ).run(
        v.deleteMarker ? null : tagsColumn(v.tags),
        v.acl ?? null,
        v.retention?.mode ?? null,
        v.retention?.until ?? null,
        v.legalHold ? 1 : 0,
        JSON.stringify(v.stamps),
        target.bucket,
        target.key,
        target.versionId,
      );
      return true;
    }, (r) => r ? { key: target.key, versionId: target.versionId } : undefined);
  }

  /**
   * A change made here of some parts of a version (clustering on): stamps them after every
   * earlier change of the version and queues the change; inside its transaction.
   */
  #stampChange(
    target: { bucket: string; key: string; versionId: string },
    parts: VersionPart[],
    op: ObjectChange["op"],
  ): void {
    if (!this.#replicating) return;
    const row = this.#stmt(
      "SELECT stamps FROM versions WHERE bucket = ? AND key = ? AND version_id = ?",
    ).get(target.bucket, target.key, target.versionId) as Row | undefined;
    if (!row) return;
    const stamps = row.stamps ? parseStamps(JSON.parse(row.stamps as string)) ?? {} : {};
    const stamp = nextStamp(stamps, this.#cluster.node);
    for (const part of parts) stamps[part] = stamp;
    this.#stmt("UPDATE versions SET stamps = ? WHERE bucket = ? AND key = ? AND version_id = ?")
      .run(JSON.stringify(stamps), target.bucket, target.key, target.versionId);
    this.#objectChanged(op, target);
  }

  appendEvents(events: OutboxEvent[]): Promise<number> {
    return this.#batch.run(() => {
      for (const e of events) this.#events.append(e);
      return this.#events.bounds().head;
    });
  }

  readEvents(after: number, limit: number, bucket?: string): Promise<StoredEvent[]> {
    return Promise.resolve(this.#events.read(after, limit, bucket));
  }

  eventBounds(): Promise<{ head: number; oldest?: number }> {
    return Promise.resolve(this.#events.bounds());
  }

  countEvents(after: number, bucket?: string): Promise<number> {
    return Promise.resolve(this.#events.count(after, bucket));
  }

  getCursor(consumer: string): Promise<number | undefined> {
    return Promise.resolve(this.#events.getCursor(consumer));
  }

  setCursor(consumer: string, seq: number): Promise<void> {
    return this.#batch.run(() => this.#events.setCursor(consumer, seq));
  }

  deleteCursor(consumer: string): Promise<void> {
    return this.#batch.run(() => this.#events.deleteCursor(consumer));
  }

  listCursors(): Promise<{ consumer: string; seq: number }[]> {
    return Promise.resolve(this.#events.listCursors());
  }

  pruneEvents(upTo: number, before: number): Promise<number> {
    return this.#batch.run(() => this.#events.prune(upTo, before));
  }

  createUser(user: UserRecord): Promise<void> {
    return this.#change(() => {
      this.#users.create(user);
      if (this.#replicating) this.#clusterUsers.changed(user.id, changedItems(undefined, user));
    });
  }

  getUser(
    by: { accessKey: string } | { id: string } | { name: string },
  ): Promise<UserRecord | undefined> {
    return this.#users.get(by);
  }

  listUsers(): Promise<UserRecord[]> {
    return this.#users.list();
  }

  updateUser(user: UserRecord): Promise<boolean> {
    return this.#change(() => {
      const before = this.#replicating ? this.#clusterUsers.user(user.id) : undefined;
      const updated = this.#users.update(user);
      if (updated && before) this.#clusterUsers.changed(user.id, changedItems(before, user));
      return updated;
    }, (r) => r ? {} : undefined);
  }

  changeUser(
    id: string,
    change: Partial<Omit<UserRecord, "id" | "createdAt">>,
  ): Promise<UserRecord | undefined> {
    return this.#change(() => {
      const before = this.#clusterUsers.user(id);
      if (!before) return undefined;
      const next = { ...before, ...change };
      this.#users.update(next);
      if (this.#replicating) this.#clusterUsers.changed(id, changedItems(before, next));
      return next;
    }, (r) => r ? {} : undefined);
  }

  deleteUser(id: string): Promise<boolean> {
    return this.#change(() => {
      const deleted = this.#users.delete(id);
      if (deleted && this.#replicating) this.#clusterUsers.changed(id, ["record"]);
      return deleted;
    }, (r) => r ? {} : undefined);
  }

  userChanges(after: number, limit: number): Promise<UserChange[]> {
    return Promise.resolve(this.#clusterUsers.changes(after, limit));
  }

  applyUserState(state: UserState): Promise<"applied" | "stale" | "conflict"> {
    return this.#change(
      () => this.#clusterUsers.apply(state),
      (r) => r === "applied" ? { key: state.id } : undefined,
    );
  }

  queueUnreplicatedUsers(): Promise<number> {
    return this.#batch.run(() => this.#clusterUsers.queueUnstamped());
  }

  userReplicationCursor(node: string): Promise<number> {
    return Promise.resolve(this.#clusterUsers.cursor(node));
  }

  setUserReplicationCursor(node: string, seq: number): Promise<void> {
    return this.#batch.run(() => this.#clusterUsers.setCursor(node, seq));
  }

  userReplicationBacklog(after: number): Promise<{ depth: number; oldest?: number }> {
    return Promise.resolve(this.#clusterUsers.backlog(after));
  }

  pruneUserChanges(nodes: string[]): Promise<number> {
    return this.#batch.run(() => this.#clusterUsers.prune(nodes));
  }

  createToken(token: TokenRecord): Promise<void> {
    return this.#change(() => {
      this.#users.createToken(token);
      if (this.#replicating) {
        this.#clusterRecords.changed("token", token.hash, token.expiresAt);
      }
    });
  }

  getToken(hash: string): Promise<TokenRecord | undefined> {
    return this.#users.getToken(hash);
  }

  deleteToken(hash: string): Promise<boolean> {
    return this.#change(() => {
      const token = this.#replicating ? this.#clusterRecords.current("token", hash) : null;
      const deleted = this.#users.deleteToken(hash);
      if (deleted && token) {
        this.#clusterRecords.changed("token", hash, (token as TokenRecord).expiresAt);
      }
      return deleted;
    }, (r) => r ? {} : undefined);
  }

  deleteUserTokens(userId: string): Promise<void> {
    return this.#change(() => this.#users.deleteUserTokens(userId));
  }

  createSession(session: SessionRecord): Promise<void> {
    return this.#change(() => {
      this.#sts.createSession(session);
      if (this.#replicating) {
        this.#clusterRecords.changed("session", session.accessKey, session.expiresAt);
      }
    });
  }

  getSession(accessKey: string): Promise<SessionRecord | undefined> {
    return Promise.resolve(this.#sts.getSession(accessKey));
  }

  putLdapMapping(mapping: LdapMapping): Promise<void> {
    return this.#change(() => {
      this.#sts.putMapping(mapping);
      if (this.#replicating) {
        this.#clusterRecords.changed("mapping", mappingId(mapping.kind, mapping.name), NO_EXPIRY);
      }
    });
  }

  deleteLdapMapping(kind: LdapMapping["kind"], name: string): Promise<boolean> {
    return this.#change(() => {
      const deleted = this.#sts.deleteMapping(kind, name);
      if (deleted && this.#replicating) {
        this.#clusterRecords.changed("mapping", mappingId(kind, name), NO_EXPIRY);
      }
      return deleted;
    }, (deleted) => deleted ? {} : undefined);
  }

  listLdapMappings(): Promise<LdapMapping[]> {
    return Promise.resolve(this.#sts.listMappings());
  }

  createUpload(upload: UploadRecord): Promise<void> {
    return this.#change(() => this.#uploads.create(upload), () => ({ key: upload.key }));
  }

  getUpload(bucket: string, key: string, uploadId: string): Promise<UploadRecord | undefined> {
    return Promise.resolve(this.#uploads.get(bucket, key, uploadId));
  }

  putPart(
    uploadId: string,
    part: PartRecord,
    chunks: VersionChunk[],
  ): Promise<{ freed: ChunkRecord[] } | undefined> {
    return this.#change(
      () => this.#uploads.putPart(uploadId, part, chunks),
      (r) => r ? { bytes: part.size } : undefined,
    );
  }

  listParts(uploadId: string, after: number, max: number): Promise<PartRecord[]> {
    return Promise.resolve(this.#uploads.listParts(uploadId, after, max));
  }

  listUploads(bucket: string, query: UploadListQuery): Promise<UploadListPage> {
    return Promise.resolve(this.#uploads.list(bucket, query));
  }

  listStaleUploads(before: number, limit: number): Promise<UploadRecord[]> {
    return Promise.resolve(this.#uploads.listStale(before, limit));
  }

  countStaleUploads(before: number): Promise<number> {
    return Promise.resolve(this.#uploads.countStale(before));
  }

  getUploadById(uploadId: string): Promise<UploadRecord | undefined> {
    return Promise.resolve(this.#uploads.getById(uploadId));
  }

  completeUpload(
    upload: UploadRecord,
    parts: ChosenPart[],
    version: ObjectVersion,
    opts: WriteRecords = {},
  ): Promise<PutResult | undefined> {
    return this.#change(
      () => {
        const chunks = this.#uploads.partChunks(upload.uploadId, parts);
        if (!chunks) return undefined;
        const result = this.#putVersion(version, chunks, opts.guard, opts.bucketCreatedAt);
        if (opts.outbox) this.#events.append(opts.outbox);
        for (const job of opts.jobs ?? []) this.#jobs.insert(job);
        const dropped = this.#uploads.remove(upload.uploadId);
        this.#uploads.recordCompleted({
          uploadId: upload.uploadId,
          bucket: version.bucket,
          key: version.key,
          etag: version.etag,
          versionId: version.versionId,
          checksum: version.checksum,
          completedAt: Date.now(),
        });
        const freed = [...result.freed, ...dropped].filter((c) => !this.#chunks.hasChunk(c.id));
        return { displaced: result.displaced, freed };
      },
      (r) =>
        r
          ? { key: version.key, versionId: version.versionId ?? "", bytes: version.size }
          : undefined,
    );
  }

  getCompletedUpload(uploadId: string): Promise<CompletedUpload | undefined> {
    return Promise.resolve(this.#uploads.getCompleted(uploadId, Date.now()));
  }

  abortUpload(uploadId: string): Promise<{ freed: ChunkRecord[] } | undefined> {
    return this.#change(() => {
      if (!this.#uploads.exists(uploadId)) return undefined;
      return { freed: this.#uploads.remove(uploadId) };
    }, (r) => r ? {} : undefined);
  }

  appendAudit(facts: AuditFacts): Promise<AuditEntry> {
    return this.#batch.run(() => this.#audit.append(facts));
  }

  queryAudit(query: AuditQuery): Promise<AuditEntry[]> {
    return Promise.resolve(this.#audit.query(query));
  }

  auditPage(afterSeq: number, limit: number): Promise<AuditEntry[]> {
    return Promise.resolve(this.#audit.page(afterSeq, limit));
  }

  auditAnchor(): Promise<AuditAnchor> {
    return Promise.resolve(this.#audit.anchor());
  }

  auditHead(): Promise<AuditAnchor> {
    return Promise.resolve(this.#audit.head());
  }

  pruneAudit(
    before: number,
    checkpoint: (anchor: AuditAnchor, pruned: number) => AuditFacts,
  ): Promise<{ anchor: AuditAnchor; pruned: number } | undefined> {
    return this.#batch.run(() => {
      const done = this.#audit.prune(before);
      if (done) this.#audit.append(checkpoint(done.anchor, done.pruned));
      return done;
    });
  }

  appendError(record: Omit<ErrorRecord, "id">, max: number): Promise<void> {
    return this.#batch.run(() => this.#errors.append(record, max));
  }

  queryErrors(query: ErrorQuery): Promise<ErrorRecord[]> {
    return Promise.resolve(this.#errors.query(query));
  }

  clearErrors(before?: number): Promise<number> {
    return this.#change(() => this.#errors.clear(before));
  }

  listKmsKeys(): Promise<KmsKeyRecord[]> {
    return Promise.resolve(this.#kms.list());
  }

  getKmsKey(id: string): Promise<KmsKeyRecord | undefined> {
    return Promise.resolve(this.#kms.get(id));
  }

  createKmsKey(key: KmsKeyRecord): Promise<void> {
    return this.#change(() => this.#kms.create(key), () => ({ key: key.id }));
  }

  updateKmsKey(key: KmsKeyRecord): Promise<boolean> {
    return this.#change(() => this.#kms.update(key), () => ({ key: key.id }));
  }

  createJob(job: NewJob): Promise<void> {
    return this.#change(() => this.#jobs.insert(job));
  }

  getJob(id: string): Promise<JobRecord | undefined> {
    return Promise.resolve(this.#jobs.get(id));
  }

  listJobs(
    query: { bucket?: string; state?: JobState; after?: number; limit: number },
  ): Promise<JobRecord[]> {
    return Promise.resolve(this.#jobs.list(query));
  }

  // Job bookkeeping runs off the request path: group-committed, never audited.
  claimJob(now: number): Promise<JobRecord | undefined> {
    if (!this.#jobs.due(now)) return Promise.resolve(undefined);
    return this.#batch.run(() => this.#jobs.claim(now));
  }

  finishJob(id: string, outcome: JobOutcome): Promise<void> {
    return this.#batch.run(() => this.#jobs.finish(id, outcome, Date.now()));
  }

  pruneJobs(before: number): Promise<number> {
    return this.#batch.run(() => this.#jobs.prune(before));
  }

  requeueRunningJobs(): Promise<number> {
    return this.#batch.run(() => this.#jobs.requeueRunning(Date.now()));
  }

  createShare(share: ShareRecord): Promise<void> {
    return this.#change(() => {
      this.#shares.create(share);
      if (this.#replicating) this.#clusterRecords.changed("share", share.id, share.expiresAt);
    });
  }

  getShare(by: { id: string } | { tokenHash: string }): Promise<ShareRecord | undefined> {
    return Promise.resolve(this.#shares.get(by));
  }

  listShares(creator?: string): Promise<ShareRecord[]> {
    return Promise.resolve(this.#shares.list(creator));
  }

  revokeShare(id: string): Promise<boolean> {
    return this.#change(() => {
      const revoked = this.#shares.revoke(id, Date.now());
      const share = revoked && this.#replicating ? this.#shares.get({ id }) : undefined;
      if (share) this.#clusterRecords.changed("share", id, share.expiresAt);
      return revoked;
    }, (r) => r ? {} : undefined);
  }

  recordChanges(after: number, limit: number): Promise<RecordChange[]> {
    return Promise.resolve(this.#clusterRecords.changes(after, limit));
  }

  applyRecordState(state: ReplicatedRecord): Promise<"applied" | "stale"> {
    return this.#change(
      () => this.#clusterRecords.apply(state),
      (r) => r === "applied" ? {} : undefined,
    );
  }

  recordReplicationCursor(node: string): Promise<number> {
    return Promise.resolve(this.#clusterRecords.cursor(node));
  }

  setRecordReplicationCursor(node: string, seq: number): Promise<void> {
    return this.#batch.run(() => this.#clusterRecords.setCursor(node, seq));
  }

  recordReplicationBacklog(after: number): Promise<{ depth: number; oldest?: number }> {
    return Promise.resolve(this.#clusterRecords.backlog(after));
  }

  pruneRecordChanges(nodes: string[], now: number): Promise<number> {
    return this.#batch.run(() => this.#clusterRecords.prune(nodes, now));
  }

  loadClusterMembers(owner: string): Promise<SavedMembers> {
    return Promise.resolve(this.#clusterMembers.load(owner));
  }

  saveClusterMembers(owner: string, list: SavedMembers): Promise<void> {
    return this.#batch.run(() => this.#clusterMembers.save(owner, list));
  }

  countShareDownload(id: string): Promise<boolean> {
    return this.#change(() => this.#shares.countDownload(id), (r) => r ? {} : undefined);
  }

  countShareUpload(id: string): Promise<void> {
    return this.#batch.run(() => this.#shares.countUpload(id));
  }

  usage(): Promise<Usage> {
    return Promise.resolve(this.#ops.usage());
  }

  probeWrite(): Promise<void> {
    return this.#ops.probe();
  }

  setDriveNeedsHeal(driveId: number, needed: boolean): Promise<void> {
    return this.#ops.setNeedsHeal(driveId, needed);
  }

  drivesNeedingHeal(): Promise<number[]> {
    return Promise.resolve(this.#ops.drivesNeedingHeal());
  }

  snapshot(path: string): Promise<void> {
    return Promise.resolve().then(() => this.#ops.snapshot(path));
  }

  quickCheck(): Promise<string[]> {
    return Promise.resolve().then(() => this.#ops.quickCheck());
  }

  async close(): Promise<void> {
    this.#batch.flush();
    await this.#wal?.close();
    await this.#checkpointer?.close();
    this.#stmts.clear();
    this.#db.close();
  }
}
