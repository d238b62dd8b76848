// The shared MetaStore on PostgreSQL (DESIGN.md §6): the same behaviour as SqliteMetaStore for
// every method, for several server nodes on one database. Each change is one transaction; a
// request's audit entry joins the transaction of its change (as SqliteMetaStore#change does).
import { type ChangeDetail, changeFacts } from "../change_facts.ts";
import { PgKms } from "./kms.ts";
import { PgJobs } from "./jobs.ts";
import { PgCluster } from "./cluster.ts";
import { PgClusterUsers } from "./cluster_users.ts";
import { PgClusterRecords } from "./cluster_records.ts";
import { changedItems, type UserChange, type UserState } from "../user_stamps.ts";
import { PgObjectQueue } from "./object_queue.ts";
import { PgHoldings } from "./holdings.ts";
import type { BucketItem } from "../sqlite_cluster.ts";
import { currentAudit } from "../../audit/scope.ts";
import type { AuditAnchor, AuditEntry, AuditFacts } from "../../audit/chain.ts";
import {
  type AuditQuery,
  type BatchDelete,
  type BatchDeleteOutcome,
  type BucketChange,
  type BucketConfigKind,
  type BucketListQuery,
  type BucketRecord,
  type BucketState,
  type ChosenPart,
  type ChunkRecord,
  type CompletedUpload,
  type ErrorQuery,
  type ErrorRecord,
  type JobOutcome,
  type JobRecord,
  type JobState,
  type KmsKeyRecord,
  type LdapMapping,
  type ListPage,
  type ListQuery,
  LockedVersioningError,
  mappingId,
  type MetaStore,
  MissingBucketError,
  type NewJob,
  NO_EXPIRY,
  type ObjectChange,
  type ObjectVersion,
  type OutboxEvent,
  type PartRecord,
  type PutResult,
  type RecordChange,
  type ReplicatedRecord,
  type Retention,
  type SavedMembers,
  type SessionRecord,
  type ShareRecord,
  type StoredEvent,
  type TagSet,
  type TokenRecord,
  type UploadListPage,
  type UploadListQuery,
  type UploadRecord,
  type Usage,
  type UserRecord,
  type VersionChunk,
  type VersionListPage,
  type VersionListQuery,
  type VersionTarget,
  type WriteRecords,
} from "../store.ts";
import type { Row } from "postgres";
import { PgAudit } from "./audit.ts";
import { PgChunks, RefChanges } from "./chunks.ts";
import { PgErrors } from "./errors.ts";
import { PgEvents } from "./events.ts";
import { PgShares } from "./shares.ts";
import { PgClusterMembers } from "./cluster_members.ts";
import { PgSts } from "./sts.ts";
import { PgUsers, toUser } from "./users.ts";
import { openPool, type Q, type Sql } from "./connect.ts";
import { num, type Tx } from "./sql.ts";

/**
 * MissingBucketError unless the bucket exists (its row share-locked), created at `createdAt`
 * when that is given.
 */
async function requireBucketAsDecided(tx: Q, bucket: string, createdAt?: number): Promise<void> {
  const [row] = await tx`SELECT created_at FROM buckets WHERE name = ${bucket} FOR SHARE`;
  if (!row || (createdAt !== undefined && num(row.created_at) !== createdAt)) {
    throw new MissingBucketError(bucket);
  }
}

/** The write a VersionTarget names, both parts or neither (null: any write of that version). */
function written(t: VersionTarget): { lastModified: number | null; etag: string | null } {
  return t.lastModified !== undefined && t.etag !== undefined
    ? { lastModified: t.lastModified, etag: t.etag }
    : { lastModified: null, etag: null };
}
import { listCurrent, listVersions } from "./list.ts";
import { migrate, MIGRATIONS } from "./schema.ts";
import { read, snapshot, transaction } from "./tx.ts";
import type { PgQueueCursors } from "./queue_cursors.ts";
import { PgUploads } from "./uploads.ts";
import { lockKeys, PgVersions, tagsColumn } from "./versions.ts";
import {
  mergeParts,
  nextStamp,
  parseStamps,
  type VersionPart,
  type VersionParts,
} from "../version_stamps.ts";

export interface PgOptions {
  /** postgres://user:pass@host:port/db, with sslmode in the query (STORE_META_URL). */
  url: string;
  /** Connections in the pool (STORE_META_POOL). */
  pool: number;
  /** Whether changes made in a request's audit scope write their entry (STORE_AUDIT). */
  audit?: boolean;
  /** This node's id when clustering is on: bucket changes are then queued for the others. */
  clusterNode?: string;
}

function toBucket(row: Row): BucketRecord {
  return {
    name: row.name,
    owner: row.owner,
    createdAt: row.created_at,
    region: row.region,
    versioning: row.versioning,
    objectLock: row.object_lock,
  };
}

export class PgMetaStore implements MetaStore {
  readonly #sql: Sql;
  readonly #auditing: boolean;
  /** This server's name in chunk_claims. */
  readonly #node = crypto.randomUUID();
  readonly #chunks = new PgChunks();
  readonly #versions = new PgVersions(this.#chunks);
  readonly #uploads = new PgUploads(this.#chunks);
  readonly #users = new PgUsers();
  readonly #sts = new PgSts();
  readonly #shares = new PgShares();
  readonly #events = new PgEvents();
  readonly #audit = new PgAudit();
  readonly #errors = new PgErrors();
  readonly #kms = new PgKms();
  readonly #jobs = new PgJobs();
  readonly #cluster: PgCluster;
  readonly #clusterUsers: PgClusterUsers;
  readonly #clusterRecords: PgClusterRecords;
  readonly #objectQueue = new PgObjectQueue();
  readonly #clusterMembers = new PgClusterMembers();
  /** Chunk holdings of the cluster nodes sharing this database (src/cluster/shared_meta.ts). */
  readonly sharedHoldings = new PgHoldings((fn) => this.#read(fn));
  /** Bucket changes are queued for the other nodes (clustering is on). */
  readonly #replicating: boolean;

  private constructor(sql: Sql, auditing: boolean, clusterNode?: string) {
    this.#sql = sql;
    this.#auditing = auditing;
    this.#replicating = clusterNode !== undefined;
    this.#cluster = new PgCluster(clusterNode ?? "");
    this.#clusterUsers = new PgClusterUsers(clusterNode ?? "");
    this.#clusterRecords = new PgClusterRecords(clusterNode ?? "");
    if (this.#replicating) this.#versions.queue = this.#objectQueue;
  }

  async #bucketChanged(tx: Q, bucket: string, ...items: BucketItem[]): Promise<void> {
    if (this.#replicating) await this.#cluster.changed(tx as Tx, bucket, items);
  }

  /** Connects, checks the connection and brings the schema up to date. */
  static async open(opts: PgOptions): Promise<PgMetaStore> {
    const sql = openPool(opts.url, opts.pool);
    try {
      await read(sql, (q) => q`SELECT 1`);
      await read(sql, () => migrate(sql));
    } catch (err) {
      await sql.end({ timeout: 1 });
      throw err;
    }
    return new PgMetaStore(sql, opts.audit ?? true, opts.clusterNode);
  }

  #read<T>(fn: (q: Q) => Promise<T>): Promise<T> {
    return read(this.#sql, fn);
  }

  /**
   * A read whose statements all see one moment (tx.ts snapshot). The cluster's queues read a
   * change's row, then its value and stamps: read apart, a value from before a concurrent change
   * could be sent with that change's stamp, and the change itself, sent next under the same
   * stamp, would then be refused by every peer as not newer.
   */
  #snapshot<T>(fn: (q: Q) => Promise<T>): Promise<T> {
    return snapshot(this.#sql, fn);
  }

  /**
   * A page of a cluster queue, read in one snapshot. The senders poll each queue every 100 ms:
   * an empty page (an idle cluster) is answered by one statement instead of a transaction's
   * three round trips (BEGIN, the read, COMMIT).
   */
  async #queuePage<T>(
    queue: PgQueueCursors,
    after: number,
    page: (q: Q) => Promise<T[]>,
  ): Promise<T[]> {
    if (!(await this.#read((q) => queue.hasChanges(q, after)))) return [];
    return this.#snapshot(page);
  }

  #tx<T>(fn: (tx: Q) => Promise<T>): Promise<T> {
    return transaction(this.#sql, fn);
  }

  /**
   * Runs a change in one transaction. Inside a request's audit scope the entry of the change
   * joins the transaction, so both commit or neither; `detail` says what changed (undefined:
   * nothing did, no entry).
   */
  async #change<T>(
    fn: (tx: Q) => Promise<T>,
    detail: (result: T) => ChangeDetail | undefined = () => ({}),
  ): Promise<T> {
    const scope = this.#auditing ? currentAudit() : undefined;
    let written = 0;
    const result = await this.#tx(async (tx) => {
      written = 0;
      const result = await fn(tx);
      const change = scope ? detail(result) : undefined;
      if (scope && change) {
        await this.#appendAudit(tx, changeFacts(scope, change));
        written++;
      }
      return result;
    });
    if (scope) scope.recorded += written;
    return result;
  }

  #appendEvent(tx: Q, event: OutboxEvent): Promise<number> {
    return this.#events.append(tx, [event]);
  }

  #appendAudit(tx: Q, facts: AuditFacts): Promise<AuditEntry> {
    return this.#audit.append(tx as Tx, facts);
  }

  async createBucket(b: BucketRecord): Promise<"created" | "exists"> {
    return await this.#change(async (tx) => {
      // A merged state of the same name waits for this creation (PgCluster.lockName).
      if (this.#replicating) await this.#cluster.lockName(tx as Tx, b.name);
      const rows = await tx`
        INSERT INTO buckets (name, owner, created_at, region, versioning, object_lock)
        VALUES (${b.name}, ${b.owner}, ${b.createdAt}, ${b.region}, ${b.versioning},
          ${b.objectLock})
        ON CONFLICT (name) DO NOTHING RETURNING 1`;
      if (rows.length !== 1) return "exists" as const;
      await this.#bucketChanged(tx, b.name, "record", "versioning", "objectLock");
      return "created" as const;
    }, (r) => r === "created" ? {} : undefined);
  }

  getBucket(name: string): Promise<BucketRecord | undefined> {
    return this.#read(async (q) => {
      const [row] = await q`SELECT * FROM buckets WHERE name = ${name}`;
      return row ? toBucket(row) : undefined;
    });
  }

  listBuckets(owner: string, page?: BucketListQuery): Promise<BucketRecord[]> {
    return this.#read(async (q) => {
      const rows = page
        ? await q`
          SELECT * FROM buckets WHERE owner = ${owner} AND name > ${page.after}
            AND name >= ${page.prefix} AND name < ${page.prefix + "\uffff"}
          ORDER BY name LIMIT ${page.limit}`
        : await q`SELECT * FROM buckets WHERE owner = ${owner} ORDER BY name`;
      return rows.map(toBucket);
    });
  }

  listAllBuckets(limit: number): Promise<BucketRecord[]> {
    return this.#read(async (q) =>
      (await q`SELECT * FROM buckets ORDER BY name LIMIT ${limit}`).map(toBucket)
    );
  }

  deleteBucket(
    name: string,
  ): Promise<{ outcome: "deleted" | "not_empty" | "missing"; freed: ChunkRecord[] }> {
    return this.#change(async (tx) => {
      // The row lock makes concurrent writes into the bucket (FOR SHARE) wait or fail.
      const found = await tx`SELECT 1 FROM buckets WHERE name = ${name} FOR UPDATE`;
      if (found.length === 0) return { outcome: "missing" as const, freed: [] };
      const any = await tx`SELECT 1 FROM versions WHERE bucket = ${name} LIMIT 1`;
      if (any.length > 0) return { outcome: "not_empty" as const, freed: [] };
      const refs = new RefChanges();
      await this.#uploads.removeAll(tx, name, refs);
      const freed = await this.#chunks.apply(tx, refs);
      await tx`DELETE FROM bucket_configs WHERE bucket = ${name}`;
      await tx`DELETE FROM buckets WHERE name = ${name}`;
      await this.#bucketChanged(tx, name, "record");
      return { outcome: "deleted" as const, freed };
    }, (r) => r.outcome === "deleted" ? {} : undefined);
  }

  putObjectVersion(
    v: ObjectVersion,
    chunks: VersionChunk[] = [],
    opts: WriteRecords = {},
  ): Promise<PutResult> {
    return this.#change(async (tx) => {
      const refs = new RefChanges();
      const displaced = await this.#versions.put(
        tx,
        v,
        chunks,
        refs,
        opts.guard,
        opts.bucketCreatedAt,
      );
      const freed = await this.#chunks.apply(tx, refs);
      if (opts.outbox) await this.#appendEvent(tx, opts.outbox);
      for (const job of opts.jobs ?? []) await this.#jobs.insert(tx, job);
      return { displaced, freed };
    }, () => ({ key: v.key, versionId: v.versionId ?? "", bytes: v.size }));
  }

  getObjectVersion(
    bucket: string,
    key: string,
    versionId?: string,
  ): Promise<ObjectVersion | undefined> {
    // No key holds NUL (validateKey refuses control characters); PostgreSQL text cannot carry it.
    if (key.includes("\0")) return Promise.resolve(undefined);
    return this.#read((q) => this.#versions.get(q, bucket, key, versionId));
  }

  /**
   * The batch in one transaction: each change in its own savepoint (a refused one rolls back
   * alone). Keys are locked up front in order, chunk counts change once at the end in chunk
   * order, then the outbox events and audit entries of the changes that happened, in item
   * order: the lock order every transaction follows, so concurrent batches never deadlock.
   */
  async deleteObjects(items: BatchDelete[]): Promise<BatchDeleteOutcome[]> {
    const scope = this.#auditing ? currentAudit() : undefined;
    let written = 0;
    const outcomes = await this.#tx(async (tx) => {
      written = 0;
      const byBucket = new Map<string, string[]>();
      for (const item of items) {
        const { bucket, key } = "marker" in item ? item.marker : item;
        byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), key]);
      }
      for (const [bucket, keys] of [...byBucket].sort(([a], [b]) => a < b ? -1 : 1)) {
        await lockKeys(tx, bucket, keys);
      }
      const refs = new RefChanges();
      const done: BatchDone[] = [];
      for (const item of items) done.push(await this.#batchItem(tx, item, refs));
      const freed = await this.#chunks.apply(tx, refs);
      // Each freed chunk goes to the first change that dropped a reference to it.
      const freedBy = new Map(freed.map((c) => [c.id, c]));
      const out: BatchDeleteOutcome[] = [];
      for (const d of done) {
        if (!d.ok) {
          out.push({ ok: false, error: d.error });
          continue;
        }
        const mine = d.dropped.flatMap((id) => {
          const c = freedBy.get(id);
          freedBy.delete(id);
          return c ? [c] : [];
        });
        out.push({ ok: true, removed: d.removed, freed: mine });
        if (d.event) await this.#appendEvent(tx, d.event);
        if (scope && d.change) {
          await this.#appendAudit(tx, changeFacts(scope, d.change));
          written++;
        }
      }
      return out;
    });
    if (scope) scope.recorded += written;
    return outcomes;
  }

  /** One change of a batch in its own savepoint; its references join `refs` when it holds. */
  async #batchItem(tx: Q, item: BatchDelete, refs: RefChanges): Promise<BatchDone> {
    const mine = new RefChanges();
    try {
      const done = await (tx as unknown as {
        savepoint<T>(fn: (sp: Q) => Promise<T>): Promise<T>;
      }).savepoint(async (sp): Promise<BatchDone> => {
        if ("marker" in item) {
          const v = item.marker;
          await this.#versions.put(sp, v, [], mine, item.guard);
          const change = { key: v.key, versionId: v.versionId ?? "", bytes: v.size };
          return { ok: true, dropped: mine.droppedIds(), event: item.outbox, change };
        }
        const removed = await this.#versions.remove(sp, item, mine);
        if (!removed) return { ok: true, dropped: [] };
        return {
          ok: true,
          removed,
          dropped: mine.droppedIds(),
          event: item.outbox?.(removed),
          change: { key: item.key, versionId: item.versionId },
        };
      });
      refs.merge(mine);
      return done;
    } catch (error) {
      // A lost connection or a conflict ends the whole batch (retried or answered 503).
      if (isTransactionFatal(error)) throw error;
      return { ok: false, error };
    }
  }

  versionChunks(vid: number, range?: { from: number; to: number }): Promise<VersionChunk[]> {
    return this.#read((q) => this.#chunks.versionChunks(q, vid, range));
  }

  hasChunk(id: string): Promise<boolean> {
    return this.#read(async (q) => (await q`SELECT 1 FROM chunks WHERE id = ${id}`).length > 0);
  }

  getChunk(id: string): Promise<ChunkRecord | undefined> {
    return this.#read((q) => this.#chunks.getChunk(q, id));
  }

  listChunks(after: string, limit: number): Promise<ChunkRecord[]> {
    return this.#read((q) => this.#chunks.listChunks(q, after, limit));
  }

  claimChunk(id: string): Promise<void> {
    return this.#tx(async (tx) => {
      await lockChunk(tx, id);
      await tx`
        INSERT INTO chunk_claims (id, node, at) VALUES (${id}, ${this.#node}, ${Date.now()})
        ON CONFLICT (id, node) DO UPDATE SET at = excluded.at`;
    });
  }

  releaseChunk(id: string, remove: () => Promise<void>): Promise<void> {
    return this.#tx(async (tx) => {
      await lockChunk(tx, id);
      await tx`DELETE FROM chunk_claims WHERE id = ${id} AND node = ${this.#node}`;
      if (await unclaimedAndFree(tx, id)) await remove();
    });
  }

  collectChunk(id: string, remove: () => Promise<void>): Promise<void> {
    return this.#tx(async (tx) => {
      await lockChunk(tx, id);
      if (await unclaimedAndFree(tx, id)) await remove();
    });
  }

  driveAt(path: string): Promise<string | undefined> {
    return this.#read(async (q) => {
      const [row] = await q`SELECT uuid FROM drives WHERE path = ${path} ORDER BY id DESC LIMIT 1`;
      return row ? row.uuid as string : undefined;
    });
  }

  driveId(uuid: string, path: string): Promise<number> {
    return this.#tx((tx) => this.#chunks.driveId(tx, uuid, path));
  }

  listVersions(bucket: string, query: VersionListQuery): Promise<VersionListPage> {
    return this.#read((q) => listVersions(q, bucket, query));
  }

  setObjectLock(
    target: { bucket: string; key: string; versionId: string },
    change: { retention?: Retention | null; legalHold?: boolean },
    guard?: (version: ObjectVersion) => void,
  ): Promise<boolean> {
    return this.#change(async (tx) => {
      const version = await this.#versions.lockRow(tx, target);
      if (!version) return false;
      guard?.(version);
      const { bucket, key, versionId } = target;
      if (change.retention !== undefined) {
        await tx`
          UPDATE versions SET lock_mode = ${change.retention?.mode ?? null},
            lock_until = ${change.retention?.until ?? null}
          WHERE bucket = ${bucket} AND key = ${key} AND version_id = ${versionId}`;
      }
      if (change.legalHold !== undefined) {
        await tx`
          UPDATE versions SET legal_hold = ${change.legalHold}
          WHERE bucket = ${bucket} AND key = ${key} AND version_id = ${versionId}`;
      }
      const parts: VersionPart[] = [];
      if (change.retention !== undefined) parts.push("retention");
      if (change.legalHold !== undefined) parts.push("legalHold");
      if (parts.length > 0) await this.#stampChange(tx, target, parts, "lock");
      return true;
    }, (r) => r ? { key: target.key, versionId: target.versionId } : undefined);
  }

  setBucketObjectLock(bucket: string): Promise<void> {
    return this.#change(async (tx) => {
      const rows = await tx`
        UPDATE buckets SET object_lock = true, versioning = 'Enabled' WHERE name = ${bucket}
        RETURNING 1`;
      if (rows.length === 1) await this.#bucketChanged(tx, bucket, "objectLock", "versioning");
    });
  }

  setBucketVersioning(bucket: string, status: "Enabled" | "Suspended"): Promise<void> {
    return this.#change(async (tx) => {
      const [row] = await tx`SELECT object_lock FROM buckets WHERE name = ${bucket} FOR UPDATE`;
      if (!row) throw new MissingBucketError(bucket);
      if (status === "Suspended" && row.object_lock) throw new LockedVersioningError(bucket);
      await tx`UPDATE buckets SET versioning = ${status} WHERE name = ${bucket}`;
      await this.#bucketChanged(tx, bucket, "versioning");
    });
  }

  listObjects(bucket: string, query: ListQuery): Promise<ListPage> {
    return this.#read((q) => listCurrent(q, bucket, query));
  }

  getBucketConfig(bucket: string, kind: BucketConfigKind): Promise<string | undefined> {
    return this.#read(async (q) => {
      const [row] = await q`
        SELECT value FROM bucket_configs WHERE bucket = ${bucket} AND kind = ${kind}`;
      return row ? row.value as string : undefined;
    });
  }

  putBucketConfig(
    bucket: string,
    kind: BucketConfigKind,
    value: string,
    opts: { createdAt?: number } = {},
  ): Promise<void> {
    return this.#change(async (tx) => {
      await requireBucketAsDecided(tx, bucket, opts.createdAt);
      await tx`
        INSERT INTO bucket_configs (bucket, kind, value) VALUES (${bucket}, ${kind}, ${value})
        ON CONFLICT (bucket, kind) DO UPDATE SET value = excluded.value`;
      await this.#bucketChanged(tx, bucket, `config:${kind}`);
    });
  }

  deleteBucketConfig(
    bucket: string,
    kind: BucketConfigKind,
    opts: { createdAt?: number } = {},
  ): Promise<void> {
    return this.#change(async (tx) => {
      // The bucket's row locked as by every bucket change (a replicated state waits for it).
      if (opts.createdAt !== undefined) await requireBucketAsDecided(tx, bucket, opts.createdAt);
      else await tx`SELECT 1 FROM buckets WHERE name = ${bucket} FOR SHARE`;
      const result = await tx`
        DELETE FROM bucket_configs WHERE bucket = ${bucket} AND kind = ${kind}`;
      if (result.count > 0) await this.#bucketChanged(tx, bucket, `config:${kind}`);
    });
  }

  bucketChanges(after: number, limit: number): Promise<BucketChange[]> {
    return this.#queuePage(this.#cluster, after, (q) => this.#cluster.changes(q, after, limit));
  }

  applyBucketState(state: BucketState): Promise<"applied" | "stale" | "kept"> {
    return this.#change(
      (tx) => this.#cluster.apply(tx as Tx, state),
      (r) => r === "applied" ? { bucket: state.bucket } : undefined,
    );
  }

  queueUnreplicatedBuckets(): Promise<number> {
    return this.#tx((tx) => this.#cluster.queueUnstamped(tx as Tx));
  }

  replicationCursor(node: string): Promise<number> {
    return this.#read((q) => this.#cluster.cursor(q, node));
  }

  setReplicationCursor(node: string, seq: number): Promise<void> {
    return this.#tx((tx) => this.#cluster.setCursor(tx, node, seq));
  }

  replicationBacklog(after: number): Promise<{ depth: number; oldest?: number }> {
    return this.#read((q) => this.#cluster.backlog(q, after));
  }

  pruneBucketChanges(nodes: string[]): Promise<number> {
    return this.#tx((tx) => this.#cluster.prune(tx, nodes));
  }

  forgetReplicationNode(node: string): Promise<boolean> {
    return this.#tx(async (tx) => {
      const buckets = await this.#cluster.forget(tx, node);
      const users = await this.#clusterUsers.forget(tx, node);
      const records = await this.#clusterRecords.forget(tx, node);
      return (await this.#objectQueue.forget(tx, node)) || buckets || users || records;
    });
  }

  objectChanges(after: number, limit: number): Promise<ObjectChange[]> {
    return this.#read((q) => this.#objectQueue.changes(q, after, limit));
  }

  objectReplicationCursor(node: string): Promise<number> {
    return this.#read((q) => this.#objectQueue.cursor(q, node));
  }

  setObjectReplicationCursor(node: string, seq: number): Promise<void> {
    return this.#tx((tx) => this.#objectQueue.setCursor(tx, node, seq));
  }

  pruneObjectChanges(nodes: string[]): Promise<number> {
    return this.#tx((tx) => this.#objectQueue.prune(tx, nodes));
  }

  objectReplicationBacklog(after: number): Promise<{ depth: number; oldest?: number }> {
    return this.#read((q) => this.#objectQueue.backlog(q, after));
  }

  setReplicationStatus(
    t: { bucket: string; key: string; versionId: string },
    status: "COMPLETED" | "FAILED" | null,
  ): Promise<boolean> {
    return this.#tx((tx) => this.#objectQueue.setStatus(tx, t, status));
  }

  versionTombstone(
    t: { bucket: string; key: string; versionId: string },
  ): Promise<number | undefined> {
    return this.#read((q) => this.#objectQueue.tombstoneOf(q, t));
  }

  pruneTombstones(before: number): Promise<number> {
    return this.#tx((tx) => this.#objectQueue.pruneTombstones(tx, before));
  }

  listKmsKeys(): Promise<KmsKeyRecord[]> {
    return this.#read((q) => this.#kms.list(q));
  }

  getKmsKey(id: string): Promise<KmsKeyRecord | undefined> {
    return this.#read((q) => this.#kms.get(q, id));
  }

  createKmsKey(key: KmsKeyRecord): Promise<void> {
    return this.#change((tx) => this.#kms.create(tx, key), () => ({ key: key.id }));
  }

  updateKmsKey(key: KmsKeyRecord): Promise<boolean> {
    return this.#change((tx) => this.#kms.update(tx, key), () => ({ key: key.id }));
  }

  createJob(job: NewJob): Promise<void> {
    return this.#change((tx) => this.#jobs.insert(tx, job));
  }

  getJob(id: string): Promise<JobRecord | undefined> {
    return this.#read((q) => this.#jobs.get(q, id));
  }

  listJobs(
    query: { bucket?: string; state?: JobState; after?: number; limit: number },
  ): Promise<JobRecord[]> {
    return this.#read((q) => this.#jobs.list(q, query));
  }

  // Job bookkeeping runs off the request path and is never audited.
  claimJob(now: number): Promise<JobRecord | undefined> {
    return this.#tx((tx) => this.#jobs.claim(tx, now));
  }

  finishJob(id: string, outcome: JobOutcome): Promise<void> {
    return this.#tx((tx) => this.#jobs.finish(tx, id, outcome, Date.now()));
  }

  pruneJobs(before: number): Promise<number> {
    return this.#tx((tx) => this.#jobs.prune(tx, before));
  }

  requeueRunningJobs(): Promise<number> {
    return this.#tx((tx) => this.#jobs.requeueRunning(tx, Date.now()));
  }

  listBucketConfigs(
    kind: BucketConfigKind,
    after: string,
    limit: number,
  ): Promise<{ bucket: string; value: string }[]> {
    return this.#read(async (q) => {
      const rows = await q`
        SELECT bucket, value FROM bucket_configs WHERE kind = ${kind} AND bucket > ${after}
        ORDER BY bucket LIMIT ${limit}`;
      return rows.map((r) => ({ bucket: r.bucket as string, value: r.value as string }));
    });
  }

  setObjectAcl(
    target: VersionTarget,
    acl: string,
    outbox?: OutboxEvent,
  ): Promise<boolean> {
    return this.#change(async (tx) => {
      const rows = await tx`
        UPDATE versions SET acl = ${acl}
        WHERE bucket = ${target.bucket} AND key = ${target.key}
          AND version_id = ${target.versionId}
          AND (${written(target).lastModified}::bigint IS NULL
            OR (last_modified = ${written(target).lastModified} AND etag = ${written(target).etag}))
        RETURNING 1`;
      if (rows.length === 1 && outbox) await this.#appendEvent(tx, outbox);
      if (rows.length === 1) await this.#stampChange(tx, target, ["acl"], "acl");
      return rows.length === 1;
    }, (r) => r ? { key: target.key, versionId: target.versionId } : undefined);
  }

  setObjectTags(
    target: VersionTarget,
    tags: TagSet,
    outbox?: OutboxEvent,
  ): Promise<boolean> {
    return this.#change(async (tx) => {
      const rows = await tx`
        UPDATE versions SET tags = ${tagsColumn(tags)}
        WHERE bucket = ${target.bucket} AND key = ${target.key}
          AND version_id = ${target.versionId} AND NOT delete_marker
          AND (${written(target).lastModified}::bigint IS NULL
            OR (last_modified = ${written(target).lastModified} AND etag = ${written(target).etag}))
        RETURNING 1`;
      if (rows.length === 1 && outbox) await this.#appendEvent(tx, outbox);
      if (rows.length === 1) await this.#stampChange(tx, target, ["tags"], "tags");
      return rows.length === 1;
    }, (r) => r ? { key: target.key, versionId: target.versionId } : undefined);
  }

  mergeVersionParts(
    target: { bucket: string; key: string; versionId: string },
    parts: VersionParts,
  ): Promise<boolean> {
    return this.#change(async (tx) => {
      const version = await this.#versions.lockRow(tx, target);
      if (!version) return false;
      const v = mergeParts(version, parts);
      if (!v) return true;
      await tx`
        UPDATE versions SET tags = ${v.deleteMarker ? null : tagsColumn(v.tags)},
          acl = ${v.acl ?? null}, lock_mode = ${v.retention?.mode ?? null},
          lock_until = ${v.retention?.until ?? null}, legal_hold = ${v.legalHold ?? false},
          stamps = ${JSON.stringify(v.stamps)}
        WHERE bucket = ${target.bucket} AND key = ${target.key}
          AND version_id = ${target.versionId}`;
      return true;
    }, (r) => r ? { key: target.key, versionId: target.versionId } : undefined);
  }

  /**
   * A change made here of some parts of a version (clustering on): stamps them after every
   * earlier change of the version and queues the change; inside its transaction.
   */
  async #stampChange(
    tx: Q,
    target: { bucket: string; key: string; versionId: string },
    parts: VersionPart[],
    op: ObjectChange["op"],
  ): Promise<void> {
    if (!this.#replicating) return;
    const [row] = await tx`
      SELECT stamps FROM versions WHERE bucket = ${target.bucket} AND key = ${target.key}
        AND version_id = ${target.versionId} FOR UPDATE`;
    if (!row) return;
    const stamps = row.stamps ? parseStamps(JSON.parse(row.stamps)) ?? {} : {};
    const stamp = nextStamp(stamps, this.#cluster.node);
    for (const part of parts) stamps[part] = stamp;
    await tx`
      UPDATE versions SET stamps = ${JSON.stringify(stamps)}
      WHERE bucket = ${target.bucket} AND key = ${target.key} AND version_id = ${target.versionId}`;
    await this.#objectQueue.append(tx, op, target);
  }

  createUpload(upload: UploadRecord): Promise<void> {
    return this.#change((tx) => this.#uploads.create(tx, upload), () => ({ key: upload.key }));
  }

  getUpload(bucket: string, key: string, uploadId: string): Promise<UploadRecord | undefined> {
    return this.#read((q) => this.#uploads.get(q, bucket, key, uploadId));
  }

  putPart(
    uploadId: string,
    part: PartRecord,
    chunks: VersionChunk[],
  ): Promise<{ freed: ChunkRecord[] } | undefined> {
    return this.#change(
      (tx) => this.#uploads.putPart(tx, uploadId, part, chunks),
      (r) => r ? { bytes: part.size } : undefined,
    );
  }

  listParts(uploadId: string, after: number, max: number): Promise<PartRecord[]> {
    return this.#read((q) => this.#uploads.listParts(q, uploadId, after, max));
  }

  listUploads(bucket: string, query: UploadListQuery): Promise<UploadListPage> {
    return this.#read((q) => this.#uploads.list(q, bucket, query));
  }

  listStaleUploads(before: number, limit: number): Promise<UploadRecord[]> {
    return this.#read((q) => this.#uploads.listStale(q, before, limit));
  }

  countStaleUploads(before: number): Promise<number> {
    return this.#read((q) => this.#uploads.countStale(q, before));
  }

  getUploadById(uploadId: string): Promise<UploadRecord | undefined> {
    return this.#read((q) => this.#uploads.getById(q, uploadId));
  }

  completeUpload(
    upload: UploadRecord,
    parts: ChosenPart[],
    version: ObjectVersion,
    opts: WriteRecords = {},
  ): Promise<PutResult | undefined> {
    return this.#change(
      async (tx) => {
        const chunks = await this.#uploads.partChunks(tx, upload.uploadId, parts);
        if (!chunks) return undefined;
        const refs = new RefChanges();
        const displaced = await this.#versions.put(
          tx,
          version,
          chunks,
          refs,
          opts.guard,
          opts.bucketCreatedAt,
        );
        await this.#uploads.remove(tx, upload.uploadId, refs);
        await this.#uploads.recordCompleted(tx, {
          uploadId: upload.uploadId,
          bucket: version.bucket,
          key: version.key,
          etag: version.etag,
          versionId: version.versionId,
          checksum: version.checksum,
          completedAt: Date.now(),
        });
        // The parts' chunks move to the version: only what no part made it in is freed.
        const freed = await this.#chunks.apply(tx, refs);
        if (opts.outbox) await this.#appendEvent(tx, opts.outbox);
        for (const job of opts.jobs ?? []) await this.#jobs.insert(tx, job);
        return { displaced, freed };
      },
      (r) =>
        r
          ? { key: version.key, versionId: version.versionId ?? "", bytes: version.size }
          : undefined,
    );
  }

  getCompletedUpload(uploadId: string): Promise<CompletedUpload | undefined> {
    return this.#read((q) => this.#uploads.getCompleted(q, uploadId, Date.now()));
  }

  abortUpload(uploadId: string): Promise<{ freed: ChunkRecord[] } | undefined> {
    return this.#change(async (tx) => {
      if (!(await this.#uploads.lock(tx, uploadId))) return undefined;
      const refs = new RefChanges();
      await this.#uploads.remove(tx, uploadId, refs);
      return { freed: await this.#chunks.apply(tx, refs) };
    }, (r) => r ? {} : undefined);
  }

  appendEvents(events: OutboxEvent[]): Promise<number> {
    return this.#tx((tx) => this.#events.append(tx, events));
  }

  readEvents(after: number, limit: number, bucket?: string): Promise<StoredEvent[]> {
    return this.#read((q) => this.#events.read(q, after, limit, bucket));
  }

  eventBounds(): Promise<{ head: number; oldest?: number }> {
    return this.#read((q) => this.#events.bounds(q));
  }

  countEvents(after: number, bucket?: string): Promise<number> {
    return this.#read((q) => this.#events.count(q, after, bucket));
  }

  getCursor(consumer: string): Promise<number | undefined> {
    return this.#read((q) => this.#events.getCursor(q, consumer));
  }

  setCursor(consumer: string, seq: number): Promise<void> {
    return this.#read((q) => this.#events.setCursor(q, consumer, seq));
  }

  deleteCursor(consumer: string): Promise<void> {
    return this.#read((q) => this.#events.deleteCursor(q, consumer));
  }

  listCursors(): Promise<{ consumer: string; seq: number }[]> {
    return this.#read((q) => this.#events.listCursors(q));
  }

  pruneEvents(upTo: number, before: number): Promise<number> {
    return this.#tx((tx) => this.#events.prune(tx, upTo, before));
  }

  createUser(user: UserRecord): Promise<void> {
    return this.#change(async (tx) => {
      await this.#users.create(tx, user);
      if (this.#replicating) {
        await this.#clusterUsers.changed(tx as Tx, user.id, changedItems(undefined, user));
      }
    });
  }

  getUser(
    by: { accessKey: string } | { id: string } | { name: string },
  ): Promise<UserRecord | undefined> {
    return this.#read((q) => this.#users.get(q, by));
  }

  listUsers(): Promise<UserRecord[]> {
    return this.#read((q) => this.#users.list(q));
  }

  updateUser(user: UserRecord): Promise<boolean> {
    return this.#change(async (tx) => {
      if (this.#replicating) await this.#clusterUsers.lock(tx as Tx, user.id);
      const before = this.#replicating ? await this.#clusterUsers.user(tx, user.id) : undefined;
      const updated = await this.#users.update(tx, user);
      if (updated && before) {
        await this.#clusterUsers.changed(tx as Tx, user.id, changedItems(before, user));
      }
      return updated;
    }, (r) => r ? {} : undefined);
  }

  changeUser(
    id: string,
    change: Partial<Omit<UserRecord, "id" | "createdAt">>,
  ): Promise<UserRecord | undefined> {
    return this.#change(async (tx) => {
      if (this.#replicating) await this.#clusterUsers.lock(tx as Tx, id);
      const [row] = await tx`SELECT * FROM users WHERE id = ${id} FOR UPDATE`;
      if (!row) return undefined;
      const before = toUser(row);
      const next = { ...before, ...change };
      await this.#users.update(tx, next);
      if (this.#replicating) {
        await this.#clusterUsers.changed(tx as Tx, id, changedItems(before, next));
      }
      return next;
    }, (r) => r ? {} : undefined);
  }

  deleteUser(id: string): Promise<boolean> {
    return this.#change(async (tx) => {
      if (this.#replicating) await this.#clusterUsers.lock(tx as Tx, id);
      const deleted = await this.#users.delete(tx, id);
      if (deleted && this.#replicating) await this.#clusterUsers.changed(tx as Tx, id, ["record"]);
      return deleted;
    }, (r) => r ? {} : undefined);
  }

  userChanges(after: number, limit: number): Promise<UserChange[]> {
    return this.#queuePage(
      this.#clusterUsers,
      after,
      (q) => this.#clusterUsers.changes(q, after, limit),
    );
  }

  applyUserState(state: UserState): Promise<"applied" | "stale" | "conflict"> {
    return this.#change(
      (tx) => this.#clusterUsers.apply(tx as Tx, state),
      (r) => r === "applied" ? { key: state.id } : undefined,
    );
  }

  queueUnreplicatedUsers(): Promise<number> {
    return this.#tx((tx) => this.#clusterUsers.queueUnstamped(tx as Tx));
  }

  userReplicationCursor(node: string): Promise<number> {
    return this.#read((q) => this.#clusterUsers.cursor(q, node));
  }

  setUserReplicationCursor(node: string, seq: number): Promise<void> {
    return this.#tx((tx) => this.#clusterUsers.setCursor(tx, node, seq));
  }

  userReplicationBacklog(after: number): Promise<{ depth: number; oldest?: number }> {
    return this.#read((q) => this.#clusterUsers.backlog(q, after));
  }

  pruneUserChanges(nodes: string[]): Promise<number> {
    return this.#tx((tx) => this.#clusterUsers.prune(tx, nodes));
  }

  createToken(token: TokenRecord): Promise<void> {
    return this.#change(async (tx) => {
      await this.#users.createToken(tx, token);
      if (this.#replicating) {
        await this.#clusterRecords.changed(tx as Tx, "token", token.hash, token.expiresAt);
      }
    });
  }

  getToken(hash: string): Promise<TokenRecord | undefined> {
    return this.#read((q) => this.#users.getToken(q, hash));
  }

  deleteToken(hash: string): Promise<boolean> {
    return this.#change(async (tx) => {
      if (this.#replicating) await this.#clusterRecords.lock(tx as Tx, "token", hash);
      const token = this.#replicating
        ? await this.#clusterRecords.current(tx, "token", hash) as TokenRecord | null
        : null;
      const deleted = await this.#users.deleteToken(tx, hash);
      if (deleted && token) {
        await this.#clusterRecords.changed(tx as Tx, "token", hash, token.expiresAt);
      }
      return deleted;
    }, (r) => r ? {} : undefined);
  }

  deleteUserTokens(userId: string): Promise<void> {
    return this.#change((tx) => this.#users.deleteUserTokens(tx, userId));
  }

  createSession(session: SessionRecord): Promise<void> {
    return this.#change(async (tx) => {
      await this.#sts.createSession(tx, session);
      if (this.#replicating) {
        await this.#clusterRecords.changed(
          tx as Tx,
          "session",
          session.accessKey,
          session.expiresAt,
        );
      }
    });
  }

  getSession(accessKey: string): Promise<SessionRecord | undefined> {
    return this.#read((q) => this.#sts.getSession(q, accessKey));
  }

  putLdapMapping(mapping: LdapMapping): Promise<void> {
    return this.#change(async (tx) => {
      const id = mappingId(mapping.kind, mapping.name);
      if (this.#replicating) await this.#clusterRecords.lock(tx as Tx, "mapping", id);
      await this.#sts.putMapping(tx, mapping);
      if (this.#replicating) await this.#clusterRecords.changed(tx as Tx, "mapping", id, NO_EXPIRY);
    });
  }

  deleteLdapMapping(kind: LdapMapping["kind"], name: string): Promise<boolean> {
    return this.#change(async (tx) => {
      const id = mappingId(kind, name);
      if (this.#replicating) await this.#clusterRecords.lock(tx as Tx, "mapping", id);
      const deleted = await this.#sts.deleteMapping(tx, kind, name);
      if (deleted && this.#replicating) {
        await this.#clusterRecords.changed(tx as Tx, "mapping", id, NO_EXPIRY);
      }
      return deleted;
    }, (deleted) => deleted ? {} : undefined);
  }

  listLdapMappings(): Promise<LdapMapping[]> {
    return this.#read((q) => this.#sts.listMappings(q));
  }

  appendAudit(facts: AuditFacts): Promise<AuditEntry> {
    return this.#tx((tx) => this.#appendAudit(tx, facts));
  }

  queryAudit(query: AuditQuery): Promise<AuditEntry[]> {
    return this.#read((q) => this.#audit.query(q, query));
  }

  auditPage(afterSeq: number, limit: number): Promise<AuditEntry[]> {
    return this.#read((q) => this.#audit.page(q, afterSeq, limit));
  }

  auditAnchor(): Promise<AuditAnchor> {
    return this.#read((q) => this.#audit.anchor(q));
  }

  auditHead(): Promise<AuditAnchor> {
    return this.#read((q) => this.#audit.head(q));
  }

  pruneAudit(
    before: number,
    checkpoint: (anchor: AuditAnchor, pruned: number) => AuditFacts,
  ): Promise<{ anchor: AuditAnchor; pruned: number } | undefined> {
    return this.#tx((tx) => this.#audit.prune(tx as Tx, before, checkpoint));
  }

  appendError(record: Omit<ErrorRecord, "id">, max: number): Promise<void> {
    return this.#tx((tx) => this.#errors.append(tx, record, max));
  }

  queryErrors(query: ErrorQuery): Promise<ErrorRecord[]> {
    return this.#read((q) => this.#errors.query(q, query));
  }

  clearErrors(before?: number): Promise<number> {
    return this.#change((tx) => this.#errors.clear(tx, before));
  }

  createShare(share: ShareRecord): Promise<void> {
    return this.#change(async (tx) => {
      await this.#shares.create(tx, share);
      if (this.#replicating) {
        await this.#clusterRecords.changed(tx as Tx, "share", share.id, share.expiresAt);
      }
    });
  }

  getShare(by: { id: string } | { tokenHash: string }): Promise<ShareRecord | undefined> {
    return this.#read((q) => this.#shares.get(q, by));
  }

  listShares(creator?: string): Promise<ShareRecord[]> {
    return this.#read((q) => this.#shares.list(q, creator));
  }

  revokeShare(id: string): Promise<boolean> {
    return this.#change(async (tx) => {
      if (this.#replicating) await this.#clusterRecords.lock(tx as Tx, "share", id);
      const revoked = await this.#shares.revoke(tx, id, Date.now());
      const share = revoked && this.#replicating ? await this.#shares.get(tx, { id }) : undefined;
      if (share) await this.#clusterRecords.changed(tx as Tx, "share", id, share.expiresAt);
      return revoked;
    }, (r) => r ? {} : undefined);
  }

  recordChanges(after: number, limit: number): Promise<RecordChange[]> {
    return this.#queuePage(
      this.#clusterRecords,
      after,
      (q) => this.#clusterRecords.changes(q, after, limit),
    );
  }

  applyRecordState(state: ReplicatedRecord): Promise<"applied" | "stale"> {
    return this.#change(
      (tx) => this.#clusterRecords.apply(tx as Tx, state),
      (r) => r === "applied" ? {} : undefined,
    );
  }

  recordReplicationCursor(node: string): Promise<number> {
    return this.#read((q) => this.#clusterRecords.cursor(q, node));
  }

  setRecordReplicationCursor(node: string, seq: number): Promise<void> {
    return this.#tx((tx) => this.#clusterRecords.setCursor(tx, node, seq));
  }

  recordReplicationBacklog(after: number): Promise<{ depth: number; oldest?: number }> {
    return this.#read((q) => this.#clusterRecords.backlog(q, after));
  }

  pruneRecordChanges(nodes: string[], now: number): Promise<number> {
    return this.#tx((tx) => this.#clusterRecords.prune(tx, nodes, now));
  }

  loadClusterMembers(owner: string): Promise<SavedMembers> {
    return this.#read((q) => this.#clusterMembers.load(q, owner));
  }

  saveClusterMembers(owner: string, list: SavedMembers): Promise<void> {
    return this.#tx((tx) => this.#clusterMembers.save(tx, owner, list));
  }

  countShareDownload(id: string): Promise<boolean> {
    return this.#change((tx) => this.#shares.countDownload(tx, id), (r) => r ? {} : undefined);
  }

  countShareUpload(id: string): Promise<void> {
    return this.#tx((tx) => this.#shares.countUpload(tx, id));
  }

  /** Folds the committed usage deltas into the usage row, then reads it. */
  usage(): Promise<Usage> {
    return this.#tx(async (tx) => {
      const [row] = await tx`
        WITH d AS (DELETE FROM usage_deltas RETURNING *)
        UPDATE usage SET objects = usage.objects + s.objects, bytes = usage.bytes + s.bytes,
          chunks = usage.chunks + s.chunks, shard_bytes = usage.shard_bytes + s.shard_bytes
        FROM (SELECT coalesce(sum(objects), 0) AS objects, coalesce(sum(bytes), 0) AS bytes,
          coalesce(sum(chunks), 0) AS chunks, coalesce(sum(shard_bytes), 0) AS shard_bytes
          FROM d) s
        WHERE usage.id = 1
        RETURNING usage.objects, usage.bytes, usage.chunks, usage.shard_bytes`;
      return {
        objects: row.objects,
        bytes: row.bytes,
        chunks: row.chunks,
        shardBytes: row.shard_bytes,
      };
    });
  }

  /** A committed write: proves the database is reachable and writable (readiness). */
  probeWrite(): Promise<void> {
    return this.#tx(async (tx) => {
      await tx`
        INSERT INTO health_probe (id, at) VALUES (1, ${Date.now()})
        ON CONFLICT (id) DO UPDATE SET at = excluded.at`;
    });
  }

  setDriveNeedsHeal(driveId: number, needed: boolean): Promise<void> {
    return this.#tx(async (tx) => {
      await tx`UPDATE drives SET needs_heal = ${needed} WHERE id = ${driveId}`;
    });
  }

  drivesNeedingHeal(): Promise<number[]> {
    return this.#read(async (q) =>
      (await q`SELECT id FROM drives WHERE needs_heal ORDER BY id`).map((r) => r.id as number)
    );
  }

  /**
   * PostgreSQL is backed up with its own tools (pg_dump, base backups with WAL archiving): one
   * node's copy of a shared database would not be a consistent backup of the cluster's data.
   */
  snapshot(_path: string): Promise<void> {
    return Promise.reject(
      new Error(
        "The metadata is in PostgreSQL (STORE_META_URL): back it up with PostgreSQL's own " +
          "tools (pg_dump or pg_basebackup), not with a server snapshot",
      ),
    );
  }

  /**
   * The integrity check on PostgreSQL: the schema is at this server's version and the counted
   * invariants hold (one current version per key with versions, chunk references).
   */
  quickCheck(): Promise<string[]> {
    return this.#read(async (q) => {
      const problems: string[] = [];
      const [v] = await q`SELECT version FROM schema_version`;
      const expected = MIGRATIONS.length;
      if (!v || v.version !== expected) {
        problems.push(`schema version ${v?.version} is not ${expected}`);
      }
      const [keys] = await q`
        SELECT count(*)::bigint AS n FROM (
          SELECT bucket, key FROM versions GROUP BY bucket, key
          HAVING count(*) FILTER (WHERE is_latest) <> 1) t`;
      if (keys.n > 0) problems.push(`${keys.n} keys without exactly one current version`);
      const [refs] = await q`
        SELECT count(*)::bigint AS n FROM chunks c
        WHERE c.refcount <> (SELECT count(*) FROM version_chunks vc WHERE vc.chunk_id = c.id)`;
      if (refs.n > 0) problems.push(`${refs.n} chunks whose reference count is wrong`);
      return problems.length ? problems : ["ok"];
    });
  }

  async close(): Promise<void> {
    await this.#sql.end({ timeout: 5 });
  }
}

/** A claim older than this is a server's that died holding it: it no longer blocks collection. */
const CLAIM_EXPIRY_MS = 24 * 3600 * 1000;

/** Serialises claims and collection of one chunk id across servers (to the transaction's end). */
async function lockChunk(tx: Q, id: string): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(hashtextextended('chunk/' || ${id}, 0))`;
}

/** No version or part refers to the chunk and no server claims it. */
async function unclaimedAndFree(tx: Q, id: string): Promise<boolean> {
  const [row] = await tx`
    SELECT NOT EXISTS (SELECT 1 FROM chunks WHERE id = ${id})
      AND NOT EXISTS (SELECT 1 FROM chunk_claims WHERE id = ${id}
        AND at > ${Date.now() - CLAIM_EXPIRY_MS}) AS free`;
  return row.free;
}

/** What one change of a batch did, before the batch's counts, events and entries. */
type BatchDone =
  | {
    ok: true;
    removed?: ObjectVersion;
    /** Chunk ids whose references it dropped. */
    dropped: string[];
    event?: OutboxEvent;
    change?: ChangeDetail;
  }
  | { ok: false; error: unknown };

/** Errors after which the transaction cannot go on (the savepoint cannot contain them). */
function isTransactionFatal(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" &&
    (code === "40001" || code === "40P01" || code.startsWith("08") || code.startsWith("57P") ||
      code.startsWith("CONNECT"));
}
