// The MetaStore interface: a narrow, async view of ordered metadata records.
import type { AuditAnchor, AuditEntry, AuditFacts } from "../audit/chain.ts";
import type { VersionParts, VersionStamps } from "./version_stamps.ts";
import type { UserChange, UserState } from "./user_stamps.ts";

export interface BucketRecord {
  name: string;
  /** Principal id of the owner. */
  owner: string;
  createdAt: number;
  region: string;
  /** "" (never configured), "Enabled" or "Suspended". */
  versioning: "" | "Enabled" | "Suspended";
  objectLock: boolean;
}

/** Where an object version's bytes live: inline in the row, or in chunks (see version_chunks). */
export type DataRef =
  | { kind: "inline"; bytes: Uint8Array }
  | { kind: "chunks"; vid: number }
  | { kind: "none" };

/** A stored chunk: how it was encoded and where its shards are. */
export interface ChunkRecord {
  id: string;
  plainSize: number;
  storedSize: number;
  compression: "none" | "zstd";
  encrypted: boolean;
  /** Plaintext bytes per independently decodable segment (codec.ts); absent: one piece. */
  segmentSize?: number;
  dataShards: number;
  parityShards: number;
  /** Drive id of each shard, data shards first. */
  drives: number[];
}

/** One chunk of a version: the chunk and the plaintext range of the object it holds. */
export interface VersionChunk {
  chunk: ChunkRecord;
  offset: number;
  size: number;
}

export interface ObjectVersion {
  bucket: string;
  key: string;
  /** "null" for the version written while versioning is off or suspended. */
  versionId: string;
  deleteMarker: boolean;
  size: number;
  /** Quoted ETag, e.g. `"d41d8cd98f00b204e9800998ecf8427e"`. */
  etag: string;
  lastModified: number;
  contentType: string;
  /** User metadata, keys lower-case without the vendor prefix (`meta-` removed). */
  userMeta: Record<string, string>;
  /** Stored system headers: cache-control, content-disposition, content-encoding, ... */
  headers: Record<string, string>;
  owner: string;
  data: DataRef;
  /** ACL as stored JSON; undefined means the default private ACL of the owner. */
  acl?: string;
  /** Server-side encryption record as stored JSON; undefined when not encrypted. */
  sse?: string;
  /** Part sizes of an object completed from a multipart upload. */
  parts?: number[];
  /** The additional checksum the object was uploaded with (see src/http/checksum.ts). */
  checksum?: ChecksumRecord;
  /** Object Lock retention of this version. */
  retention?: Retention;
  legalHold?: boolean;
  /** The version's tag set (key to value); undefined or empty when it has none. */
  tags?: TagSet;
  /**
   * Cluster replication (src/cluster/objects.ts): PENDING until every other node has the
   * version, then COMPLETED (or FAILED); REPLICA on a node that received it from another. A
   * version written as REPLICA is never queued again. Undefined without clustering.
   */
  replication?: ReplicationStatus;
  /**
   * Clustering: the stamp of each part (tags, ACL, retention, legal hold) changed since the
   * version was written (src/meta/version_stamps.ts). Written only with a REPLICA (as its source
   * had them) or by the changes themselves.
   */
  stamps?: VersionStamps;
}

export type ReplicationStatus = "PENDING" | "COMPLETED" | "FAILED" | "REPLICA";

/** Object or bucket tags: key to value, at most one value per key. */
export type TagSet = Record<string, string>;

export interface Retention {
  mode: "GOVERNANCE" | "COMPLIANCE";
  /** Epoch milliseconds. */
  until: number;
}

/** An additional checksum kept with an object version. */
export interface ChecksumRecord {
  /** CRC32, CRC32C, CRC64NVME, SHA1 or SHA256. */
  algorithm: string;
  /** FULL_OBJECT, or COMPOSITE: a checksum of the parts' checksums, written `<base64>-<parts>`. */
  type: "FULL_OBJECT" | "COMPOSITE";
  /** Base64 value, as returned in the `x-*-checksum-<algorithm>` header. */
  value: string;
  /** The parts' own checksums of an object completed from a multipart upload, in order. */
  parts?: string[];
}

export interface UploadRecord {
  bucket: string;
  key: string;
  uploadId: string;
  initiated: number;
  owner: string;
  contentType: string;
  userMeta: Record<string, string>;
  headers: Record<string, string>;
  acl?: string;
  sse?: string;
  /** Checksum algorithm of the upload's parts (CreateMultipartUpload), if any. */
  checksumAlgorithm?: string;
  /** How the parts' checksums combine into the object's: FULL_OBJECT or COMPOSITE. */
  checksumType?: "FULL_OBJECT" | "COMPOSITE";
  /** Object Lock state for the completed object (JSON of retention and legal hold). */
  lock?: string;
  /** Tags for the completed object (`x-*-tagging` of CreateMultipartUpload). */
  tags?: TagSet;
}

/** What a completed multipart upload answered, kept for repeated completions. */
export interface CompletedUpload {
  bucket: string;
  key: string;
  uploadId: string;
  etag: string;
  versionId: string;
  checksum?: ChecksumRecord;
  completedAt: number;
}

/**
 * How long a completed upload's answer is kept: a client that lost the response of a
 * CompleteMultipartUpload and retries within this time gets the same answer.
 */
export const COMPLETED_UPLOAD_RETENTION_MS = 24 * 3600 * 1000;

export interface PartRecord {
  partNumber: number;
  etag: string;
  size: number;
  lastModified: number;
  /** The part's additional checksum, sent with it or computed for the upload's algorithm. */
  checksum?: { algorithm: string; value: string };
}

export interface UploadListQuery {
  prefix: string;
  delimiter: string;
  keyMarker: string;
  uploadIdMarker: string;
  maxUploads: number;
}

export interface UploadListPage {
  uploads: UploadRecord[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextKeyMarker?: string;
  nextUploadIdMarker?: string;
}

export type BucketPermission = "read" | "write" | "readwrite" | "none";

export interface BucketAccess {
  bucket: string;
  permission: BucketPermission;
}

export interface UserRecord {
  id: string;
  name: string;
  description: string;
  email: string;
  accessKey: string;
  /** The secret key sealed with the master key; never the plain secret. */
  sealedSecret: string;
  enabled: boolean;
  createdAt: number;
  keyCreatedAt: number;
  bucketAccess: BucketAccess[];
}

/** Temporary credentials issued by the token service (STS). */
export interface SessionRecord {
  accessKey: string;
  /** The secret key sealed with the master key (context: the access key). */
  sealedSecret: string;
  /** The session token, sealed the same way: checked on each request, and signed into
   * presigned URLs made for the session. */
  sealedToken: string;
  /** Whose access the session carries: a local user (or the administrator) by id, or a
   * directory user by user name. */
  parentKind: "user" | "ldap";
  parentId: string;
  /**
   * A local user's session: the access key it was asked for with. Rotating that key ends the
   * session, also one asked for in the moment before the rotation committed.
   */
  parentKey?: string;
  /** Directory user: the DN and groups found at sign-in (used while the directory is down). */
  ldapDn?: string;
  ldapGroups?: string[];
  /** The session policy text, when one narrows the session. */
  policy?: string;
  createdAt: number;
  expiresAt: number;
}

/** Access granted to a directory group or user (`/admin/ldap`). */
export interface LdapMapping {
  kind: "group" | "user";
  /** Group or user name, lower case. */
  name: string;
  bucketAccess: BucketAccess[];
  isAdmin: boolean;
}

export interface TokenRecord {
  /** SHA-256 (hex) of the bearer token. */
  hash: string;
  userId: string;
  createdAt: number;
  expiresAt: number;
  /**
   * The access key the token was issued for (absent on tokens issued before it was recorded). A
   * user's token ends when that key is rotated, also one issued in the moment before the
   * rotation committed.
   */
  accessKey?: string;
}

/** One version of a named encryption key: its 32 bytes sealed under the master key. */
export interface KmsKeyVersion {
  version: number;
  /** `v1:` + base64 of the sealed key bytes (src/kms/keys.ts). */
  sealed: string;
  createdAt: number;
}

/** A named key of the local key management (src/kms/). */
export interface KmsKeyRecord {
  id: string;
  description: string;
  /** A disabled key neither encrypts nor decrypts until enabled again. */
  enabled: boolean;
  createdAt: number;
  /** Oldest first; the last one encrypts new data keys, all of them decrypt. */
  versions: KmsKeyVersion[];
}

/** Kinds of per-bucket documents kept by `getBucketConfig` and friends. */
export type BucketConfigKind =
  | "policy"
  | "policy-principals"
  | "acl"
  | "object-lock"
  | "lifecycle"
  | "tagging"
  | "public-access-block"
  | "ownership"
  | "cors"
  | "notification"
  | "encryption"
  | "website"
  | "logging"
  | "transform"
  | "replication";

/**
 * An event a write records in the outbox (DESIGN.md §6): committed in the same transaction as
 * the change it describes, so a crash keeps both or neither.
 */
export interface OutboxEvent {
  bucket: string;
  key: string;
  /** Event name without prefix, e.g. `ObjectCreated:Put` (see src/events/names.ts). */
  name: string;
  /** The event's facts as JSON (see src/events/outbox.ts). */
  detail: string;
}

/** An outbox row: the event and its position in the log (`seq` only grows). */
export interface StoredEvent extends OutboxEvent {
  seq: number;
  /** Epoch milliseconds of the commit. */
  at: number;
}

/** The outbox log: append inside write transactions, read by consumers with their own cursors. */
export interface EventLog {
  /** Appends events in their own transaction (events that go with no data change). */
  appendEvents(events: OutboxEvent[]): Promise<number>;
  /** Events after `after` in order, at most `limit`; only one bucket's when given. */
  readEvents(after: number, limit: number, bucket?: string): Promise<StoredEvent[]>;
  /** The newest sequence number ever assigned (0 when none) and the oldest still kept. */
  eventBounds(): Promise<{ head: number; oldest?: number }>;
  /** How many events after `after` are kept (of one bucket when given). */
  countEvents(after: number, bucket?: string): Promise<number>;
  getCursor(consumer: string): Promise<number | undefined>;
  setCursor(consumer: string, seq: number): Promise<void>;
  deleteCursor(consumer: string): Promise<void>;
  listCursors(): Promise<{ consumer: string; seq: number }[]>;
  /** Removes events up to `upTo` committed before `before` (epoch ms); returns how many. */
  pruneEvents(upTo: number, before: number): Promise<number>;
}

export interface BucketListQuery {
  prefix: string;
  /** Only names strictly after this one. */
  after: string;
  limit: number;
}

export interface ListQuery {
  prefix: string;
  delimiter: string;
  /** Only keys strictly after this one. */
  after: string;
  maxKeys: number;
}

/** What a listing shows of an object: no metadata documents, no bytes. */
export interface ListEntry {
  key: string;
  size: number;
  etag: string;
  lastModified: number;
  owner: string;
}

export interface ListPage {
  objects: ListEntry[];
  commonPrefixes: string[];
  isTruncated: boolean;
  /** The last key or common prefix returned; resume after it. */
  lastReturned?: string;
}

export interface VersionListQuery {
  prefix: string;
  delimiter: string;
  keyMarker: string;
  versionIdMarker: string;
  maxKeys: number;
}

/** One entry of ListObjectVersions: a version or a delete marker. */
export interface VersionEntry {
  key: string;
  versionId: string;
  isLatest: boolean;
  deleteMarker: boolean;
  size: number;
  etag: string;
  lastModified: number;
  owner: string;
  /** Clustering: the stamps of the version's later changes (anti-entropy compares them). */
  stamps?: VersionStamps;
}

export interface VersionListPage {
  versions: VersionEntry[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextKeyMarker?: string;
  nextVersionIdMarker?: string;
}

export interface PutResult {
  /** Versions displaced by the write. */
  displaced: ObjectVersion[];
  /** Chunks no version refers to any more: their shards may be deleted. */
  freed: ChunkRecord[];
}

/**
 * Sees the key's current version (undefined when there is none) inside the transaction that
 * commits a new one, and may refuse the write by throwing (conditional writes).
 */
export type CurrentGuard = (current: ObjectVersion | undefined) => void;

/**
 * One version to change. With `lastModified` and `etag` (the version as the request saw it),
 * only while it is still that write: an overwrite of an unversioned key keeps the version id
 * ("null"), and a change decided on the old object must not land on the new one.
 */
export interface VersionTarget {
  bucket: string;
  key: string;
  versionId: string;
  lastModified?: number;
  etag?: string;
}

/** A part a completion takes, as the client named it and the server found it then. */
export interface ChosenPart {
  partNumber: number;
  etag: string;
}

/**
 * One change of a DeleteObjects batch: a delete marker to add (versioned bucket, no version id)
 * or a version to remove (the next newest becomes current). `guard` sees the version inside
 * the transaction and may refuse by throwing (Object Lock); `outbox` builds the event recorded
 * with the removal (none when nothing was removed).
 */
export type BatchDelete =
  /** `guard` sees the key's current version before the marker goes on it (and may refuse). */
  | { marker: ObjectVersion; outbox?: OutboxEvent; guard?: CurrentGuard }
  | {
    bucket: string;
    key: string;
    versionId: string;
    /** A removal received from another node: not queued for replication again. */
    replica?: boolean;
    /**
     * A replica's removal: when it was removed at its source, the time of its tombstone here
     * (kept even when there was nothing to remove, so a copy written before it is not taken later).
     */
    deletedAt?: number;
    /** The requester may bypass governance retention: queued with the removal, so it travels. */
    bypassGovernance?: boolean;
    /** `current`: the version is the key's current one. */
    guard?: (version: ObjectVersion, current: boolean) => void;
    outbox?: (removed: ObjectVersion) => OutboxEvent | undefined;
  };

/** What one change of a batch did: the version removed (none: there was none), or its error. */
export type BatchDeleteOutcome =
  | { ok: true; removed?: ObjectVersion; freed: ChunkRecord[] }
  | { ok: false; error: unknown };

/** Audit entries matching every given filter, after `afterSeq` in order. */
export interface AuditQuery {
  afterSeq: number;
  limit: number;
  since?: number;
  until?: number;
  bucket?: string;
  principal?: string;
  operation?: string;
  status?: number;
  keyPrefix?: string;
}

export interface ErrorRecord {
  id: number;
  at: number;
  level: "warn" | "error";
  /** Where it happened: request, lifecycle, scrub, notify, server... */
  source: string;
  code: string;
  bucket: string;
  requestId: string;
  operation: string;
  message: string;
  /** The log line's other fields as JSON. */
  detail: string;
}

export interface ErrorQuery {
  afterId: number;
  limit: number;
  since?: number;
  until?: number;
  level?: string;
  bucket?: string;
  code?: string;
  source?: string;
}

export type SharePermission = "read" | "write" | "list";

export interface ShareRecord {
  id: string;
  tokenHash: string;
  /** The creating principal's id: the share acts with that principal's access, checked at use. */
  creator: string;
  bucket: string;
  /** When the shared bucket was created: a bucket re-created under the name is not shared. */
  bucketCreatedAt?: number;
  prefix: string;
  permissions: SharePermission[];
  /** scrypt hash of the optional password (src/share/password.ts). */
  passwordHash?: string;
  createdAt: number;
  expiresAt: number;
  maxDownloads?: number;
  downloads: number;
  uploads: number;
  revokedAt?: number;
}

export type JobState = "queued" | "running" | "done" | "failed";

/** A transformation job to record (src/transform/): what to do is the JSON `spec`. */
export interface NewJob {
  id: string;
  bucket: string;
  key: string;
  /** The source version; undefined: the current one when the job runs. */
  versionId?: string;
  /** The transformation as JSON (src/transform/spec.ts): actions and output. */
  spec: string;
  /** The rule that enqueued it; undefined for jobs asked for through the API. */
  rule?: string;
  /** Principal id the job was enqueued for (the writer, or the API caller). */
  requester: string;
  createdAt: number;
}

export interface JobRecord extends NewJob {
  /** Position in the job log: paging goes by it. */
  seq: number;
  state: JobState;
  attempts: number;
  /** When a queued job may run (epoch ms): later than now while it backs off. */
  runAt: number;
  updatedAt: number;
  error?: string;
  outputBucket?: string;
  outputKey?: string;
  outputVersionId?: string;
}

/** How a run ended: done with its output, queued again after a delay, or failed for good. */
export type JobOutcome =
  | { state: "done"; outputBucket: string; outputKey: string; outputVersionId: string }
  | { state: "queued"; runAt: number; error: string }
  | { state: "failed"; error: string };

/** The transformation jobs (issue 19); writes enqueue theirs through putObjectVersion's `jobs`. */
export interface JobStore {
  /** Records a queued job in its own transaction (jobs asked for through the API). */
  createJob(job: NewJob): Promise<void>;
  getJob(id: string): Promise<JobRecord | undefined>;
  /** Jobs in seq order after `after`, of one bucket and state when given, at most `limit`. */
  listJobs(
    query: { bucket?: string; state?: JobState; after?: number; limit: number },
  ): Promise<JobRecord[]>;
  /** Takes the oldest queued job due at `now`: running, one attempt more; undefined if none. */
  claimJob(now: number): Promise<JobRecord | undefined>;
  finishJob(id: string, outcome: JobOutcome): Promise<void>;
  /** Queues again the jobs left running by a stop or crash; returns how many. */
  requeueRunningJobs(): Promise<number>;
  /** Removes done and failed jobs last changed before `before` (epoch ms); returns how many. */
  pruneJobs(before: number): Promise<number>;
}

/** The audit chain, the error log and shares (issue 16). */
export interface RecordStore {
  /** Appends an entry in its own transaction (requests that changed nothing). */
  appendAudit(facts: AuditFacts): Promise<AuditEntry>;
  queryAudit(query: AuditQuery): Promise<AuditEntry[]>;
  /** Entries after `afterSeq` in order, at most `limit` (verification, export). */
  auditPage(afterSeq: number, limit: number): Promise<AuditEntry[]>;
  auditAnchor(): Promise<AuditAnchor>;
  auditHead(): Promise<AuditAnchor>;
  /**
   * Removes entries older than `before` and appends the checkpoint entry `checkpoint` builds in
   * the same transaction; undefined when nothing was old enough.
   */
  pruneAudit(
    before: number,
    checkpoint: (anchor: AuditAnchor, pruned: number) => AuditFacts,
  ): Promise<{ anchor: AuditAnchor; pruned: number } | undefined>;
  appendError(record: Omit<ErrorRecord, "id">, max: number): Promise<void>;
  queryErrors(query: ErrorQuery): Promise<ErrorRecord[]>;
  clearErrors(before?: number): Promise<number>;
  /** Named encryption keys (src/kms/), by id. */
  listKmsKeys(): Promise<KmsKeyRecord[]>;
  getKmsKey(id: string): Promise<KmsKeyRecord | undefined>;
  /** DuplicateError("id") when a key of that id exists. */
  createKmsKey(key: KmsKeyRecord): Promise<void>;
  /** Replaces description, state and versions; false when the key does not exist. */
  updateKmsKey(key: KmsKeyRecord): Promise<boolean>;
  createShare(share: ShareRecord): Promise<void>;
  getShare(by: { id: string } | { tokenHash: string }): Promise<ShareRecord | undefined>;
  listShares(creator?: string): Promise<ShareRecord[]>;
  revokeShare(id: string): Promise<boolean>;
  /** Counts a download against the share's limit; false when the limit is reached. */
  countShareDownload(id: string): Promise<boolean>;
  countShareUpload(id: string): Promise<void>;
}

/** What a new version commits with: its guard, its event and the transformation jobs it starts. */
export interface WriteRecords {
  guard?: CurrentGuard;
  outbox?: OutboxEvent;
  jobs?: NewJob[];
  /**
   * When the bucket the write was decided on was created: a bucket of that name deleted and
   * made again since (perhaps by another owner) is not that bucket, and the write fails with
   * MissingBucketError.
   */
  bucketCreatedAt?: number;
}

/** Last-writer-wins order of replicated changes: milliseconds, then node id. */
export interface ChangeStamp {
  ms: number;
  node: string;
}

/** A replicated value with the stamp of the change that set it. */
export interface Stamped<T> {
  stamp: ChangeStamp;
  value: T;
}

/**
 * A bucket as it is replicated between nodes: each part with its own stamp, so changes of
 * different parts on different nodes never undo each other. A record of null is a deletion; a
 * document of null was removed.
 */
export interface BucketState {
  bucket: string;
  record?: Stamped<{ owner: string; createdAt: number; region: string } | null>;
  versioning?: Stamped<"" | "Enabled" | "Suspended">;
  objectLock?: Stamped<boolean>;
  configs: Partial<Record<BucketConfigKind, Stamped<string | null>>>;
}

/** A queued bucket change with the bucket's state now (src/cluster/replication.ts). */
export interface BucketChange extends BucketState {
  seq: number;
  /** When it was queued here (ms), for the lag shown in GET /admin/cluster. */
  queuedAt: number;
}

/**
 * The durable queue of bucket changes sent to the other nodes (clustering only). One row per
 * bucket, moved to the end of the queue by each change committed in the change's own
 * transaction; every node keeps its own cursor into it.
 */
export interface ReplicationQueue {
  /** Changes queued after `after`, oldest first, at most `limit`. */
  bucketChanges(after: number, limit: number): Promise<BucketChange[]>;
  /**
   * Applies another node's bucket state when its stamp is newer than the last change here (then
   * it is queued to the other nodes too); "kept" when a deletion finds objects or uploads here.
   */
  applyBucketState(state: BucketState): Promise<"applied" | "stale" | "kept">;
  /**
   * Queues the buckets that were never queued (made before clustering was on), stamped with
   * their creation time; how many. Run at start-up in cluster mode.
   */
  queueUnreplicatedBuckets(): Promise<number>;
  replicationCursor(node: string): Promise<number>;
  setReplicationCursor(node: string, seq: number): Promise<void>;
  /** How many changes are queued after `after`, and when the oldest of them was queued. */
  replicationBacklog(after: number): Promise<{ depth: number; oldest?: number }>;
  /**
   * Deletes the rows of deleted buckets every node has received: at or before the lowest cursor
   * of `nodes` and of every node with a stored cursor (as pruneObjectChanges). A live bucket's
   * row stays (it is how a node that joins later learns the bucket), and so does the newest row.
   * The stamps stay too, so a stale state never brings a deleted bucket back. Returns how many.
   */
  pruneBucketChanges(nodes: string[]): Promise<number>;
  /** Drops a node's cursors in every queue (a node forgotten); whether it had any. */
  forgetReplicationNode(node: string): Promise<boolean>;
}

/**
 * The durable queue of user changes (clustering only), kept like the bucket-change queue: one row
 * per user, moved to the end by each change (createUser, updateUser, deleteUser stamp the parts
 * they change and queue the user in their own transaction); every node has its own cursor.
 */
export interface UserReplicationQueue {
  /** Changes queued after `after`, oldest first, at most `limit`, with each user's state now. */
  userChanges(after: number, limit: number): Promise<UserChange[]>;
  /**
   * Merges another node's user state part by part (newer stamps win), queued again for the
   * others when anything was taken; a user disabled, re-keyed or deleted loses its bearer tokens.
   * "conflict" when its name or access key belongs to another user here that keeps it (created
   * earlier); a user here that loses them to it is deleted (and that deletion queued).
   */
  applyUserState(state: UserState): Promise<"applied" | "stale" | "conflict">;
  /** Stamps and queues the users never queued (made before clustering); how many. */
  queueUnreplicatedUsers(): Promise<number>;
  userReplicationCursor(node: string): Promise<number>;
  setUserReplicationCursor(node: string, seq: number): Promise<void>;
  userReplicationBacklog(after: number): Promise<{ depth: number; oldest?: number }>;
  /** Deletes the rows of deleted users every node has received (as pruneBucketChanges). */
  pruneUserChanges(nodes: string[]): Promise<number>;
}

/**
 * A bearer token, a share, a token-service session or a directory (LDAP) access mapping as
 * replicated between nodes: the whole record with the stamp of its last change (creation,
 * revocation, deletion), null once a token was revoked (or a session or mapping is gone). A
 * share's download and upload counts are not part of it: each node counts its own. A mapping's id
 * is `<kind>:<name>` and it never expires (NO_EXPIRY), so its deletion is never forgotten.
 */
export type ReplicatedRecord =
  | { kind: "token"; id: string; stamp: ChangeStamp; expiresAt: number; value: TokenRecord | null }
  | { kind: "share"; id: string; stamp: ChangeStamp; expiresAt: number; value: ShareRecord | null }
  | {
    kind: "session";
    id: string;
    stamp: ChangeStamp;
    expiresAt: number;
    value: SessionRecord | null;
  }
  | {
    kind: "mapping";
    id: string;
    stamp: ChangeStamp;
    expiresAt: number;
    value: LdapMapping | null;
  };

/** The expiry of queued records that never expire (directory access mappings). */
export const NO_EXPIRY = Number.MAX_SAFE_INTEGER;

/** The queue id of a directory access mapping. */
export const mappingId = (kind: LdapMapping["kind"], name: string) => `${kind}:${name}`;

/** A mapping's queue id split again into its kind and name. */
export function mappingKey(id: string): [LdapMapping["kind"], string] {
  const colon = id.indexOf(":");
  return [id.slice(0, colon) as LdapMapping["kind"], id.slice(colon + 1)];
}

export type RecordChange = ReplicatedRecord & { seq: number; queuedAt: number };

/**
 * The durable queue of token, share, session and mapping changes (clustering only): one row per
 * record, moved to the end by each change (createToken, deleteToken, createShare, revokeShare,
 * createSession, putLdapMapping, deleteLdapMapping) in the change's transaction; every node has
 * its own cursor.
 */
export interface RecordReplicationQueue {
  recordChanges(after: number, limit: number): Promise<RecordChange[]>;
  /** Takes another node's record when its stamp is newer (then queued on for the others). */
  applyRecordState(state: ReplicatedRecord): Promise<"applied" | "stale">;
  recordReplicationCursor(node: string): Promise<number>;
  setRecordReplicationCursor(node: string, seq: number): Promise<void>;
  recordReplicationBacklog(after: number): Promise<{ depth: number; oldest?: number }>;
  /**
   * Deletes the rows of expired tokens, shares and sessions every node has received (never the
   * newest): a stale copy of an expired one grants nothing. Returns how many.
   */
  pruneRecordChanges(nodes: string[], now: number): Promise<number>;
}

/**
 * An object change queued for the other nodes: a version (or delete marker) written here, or a
 * version removed here. The sender reads the version's state when it sends the change.
 */
export interface ObjectChange {
  seq: number;
  /**
   * A version or marker written, a version removed, or a later change of a version's tags, ACL
   * or Object Lock (retention, legal hold).
   */
  op: "put" | "delete" | "tags" | "acl" | "lock";
  bucket: string;
  key: string;
  versionId: string;
  /** When it was queued (ms): for a removal, when the version was removed. */
  queuedAt: number;
  /** A removal whose requester could bypass governance retention. */
  bypassGovernance?: boolean;
}

/**
 * The durable queue of object changes (clustering only): one row per change, appended in the
 * transaction of the write (putObjectVersion, completeUpload, deleteObjects) unless the write is a
 * REPLICA; every other node has its own cursor into it.
 */
export interface ObjectReplicationQueue {
  /** Changes queued after `after`, oldest first, at most `limit`. */
  objectChanges(after: number, limit: number): Promise<ObjectChange[]>;
  objectReplicationCursor(node: string): Promise<number>;
  /** Moves a node's cursor forward (never back). */
  setObjectReplicationCursor(node: string, seq: number): Promise<void>;
  /** How many object changes are queued after `after`, and when the oldest was queued. */
  objectReplicationBacklog(after: number): Promise<{ depth: number; oldest?: number }>;
  /**
   * Deletes the queued changes every node has received: those at or before the lowest cursor of
   * `nodes` and of every node with a stored cursor (one of `nodes` without a cursor keeps them
   * all). The newest change is always kept, so queue positions keep growing. Returns how many.
   */
  pruneObjectChanges(nodes: string[]): Promise<number>;
  /**
   * When a version was removed here while clustering was on (removals of replicas too), while its
   * tombstone is kept: anti-entropy tells a node that still holds it to delete it.
   */
  versionTombstone(
    target: { bucket: string; key: string; versionId: string },
  ): Promise<number | undefined>;
  /** Deletes the tombstones of removals made before `before` (epoch ms); returns how many. */
  pruneTombstones(before: number): Promise<number>;
  /**
   * Ends a PENDING version's replication as COMPLETED or FAILED, or as none (null: the bucket's
   * replication rules leave it out); false when it is not PENDING.
   */
  setReplicationStatus(
    target: { bucket: string; key: string; versionId: string },
    status: "COMPLETED" | "FAILED" | null,
  ): Promise<boolean>;
}

/**
 * Claims on chunk ids that every server sharing the metadata sees (src/storage/chunk_claims.ts
 * keeps the claims of this process and calls these on its first and last one): a writer claims
 * an id before it checks whether the chunk exists and drops the claim after its commit; shards
 * are removed only when no version refers to the chunk and no server claims it, under the
 * chunk's lock, so a server that deduplicates against a chunk never loses it to another's
 * collection.
 */
export interface ChunkGuard {
  claimChunk(id: string): Promise<void>;
  /** Drops this server's claim; runs `remove` when no row and no other claim is left. */
  releaseChunk(id: string, remove: () => Promise<void>): Promise<void>;
  /** Runs `remove` when no row and no claim exists. */
  collectChunk(id: string, remove: () => Promise<void>): Promise<void>;
}

/** A node's member list and the nodes forgotten by an administrator, kept across its restarts. */
export interface SavedMembers {
  members: { id: string; url: string }[];
  forgotten: { id: string; at: number }[];
}

/** Where a cluster node keeps its member list (clustering only). */
export interface MemberListStore {
  /** The list node `owner` saved last; empty lists when none. */
  loadClusterMembers(owner: string): Promise<SavedMembers>;
  /** Replaces the list node `owner` saved. */
  saveClusterMembers(owner: string, list: SavedMembers): Promise<void>;
}

export interface MetaStore
  extends
    EventLog,
    RecordStore,
    JobStore,
    ReplicationQueue,
    ObjectReplicationQueue,
    UserReplicationQueue,
    RecordReplicationQueue,
    MemberListStore,
    ChunkGuard {
  createBucket(bucket: BucketRecord): Promise<"created" | "exists">;
  getBucket(name: string): Promise<BucketRecord | undefined>;
  /** The owner's buckets in name order: names starting with `prefix`, after `after`. */
  listBuckets(owner: string, page?: BucketListQuery): Promise<BucketRecord[]>;
  /** Every bucket whoever owns it, in name order, at most `limit` (the administrator's view). */
  listAllBuckets(limit: number): Promise<BucketRecord[]>;
  /**
   * Deletes a bucket without objects, aborting its multipart uploads in the same transaction
   * (their chunks are returned to be collected); "not_empty" when any version remains.
   */
  deleteBucket(
    name: string,
  ): Promise<{ outcome: "deleted" | "not_empty" | "missing"; freed: ChunkRecord[] }>;

  /**
   * Makes `version` the current version of its key in one transaction, with its chunks (whose
   * reference counts rise, new chunks being recorded). When it is the "null" version, the
   * previous "null" version of the key is replaced and its chunk references dropped. `guard`
   * runs first, in the same transaction; `outbox` and `jobs` are recorded with the change.
   */
  putObjectVersion(
    version: ObjectVersion,
    chunks?: VersionChunk[],
    opts?: WriteRecords,
  ): Promise<PutResult>;
  /** The current version (no id given) or a specific one. */
  getObjectVersion(
    bucket: string,
    key: string,
    versionId?: string,
  ): Promise<ObjectVersion | undefined>;
  /**
   * A DeleteObjects batch in one transaction (one commit): each change runs in its own savepoint
   * with its outbox event and audit entry, so one that fails (a locked version) rolls back alone
   * and the others commit. Outcomes are in the order of `items`.
   */
  deleteObjects(items: BatchDelete[]): Promise<BatchDeleteOutcome[]>;
  /**
   * Changes the Object Lock state of one version; `guard` sees the version first inside the
   * transaction and may refuse by throwing. False when the version does not exist.
   */
  setObjectLock(
    target: { bucket: string; key: string; versionId: string },
    change: { retention?: Retention | null; legalHold?: boolean },
    guard?: (version: ObjectVersion) => void,
  ): Promise<boolean>;
  setBucketObjectLock(bucket: string): Promise<void>;
  /** The chunks of a chunked version that overlap the plaintext range [from, to). */
  versionChunks(vid: number, range?: { from: number; to: number }): Promise<VersionChunk[]>;
  /** True while a chunk row exists (some version refers to it). */
  hasChunk(id: string): Promise<boolean>;
  getChunk(id: string): Promise<ChunkRecord | undefined>;
  /** Every chunk record, in id order from `after` (scrub and sweep walk them in pages). */
  listChunks(after: string, limit: number): Promise<ChunkRecord[]>;
  /** A stable small id for a drive identity, assigned on first sight. */
  driveId(uuid: string, path: string): Promise<number>;
  /** The identity of the drive last seen at `path`. */
  driveAt(path: string): Promise<string | undefined>;
  /** Every version and delete marker in key order, newest first within a key. */
  listVersions(bucket: string, query: VersionListQuery): Promise<VersionListPage>;
  setBucketVersioning(bucket: string, status: "Enabled" | "Suspended"): Promise<void>;
  /** Current, non-deleted objects in key order, rolling keys up into common prefixes. */
  listObjects(bucket: string, query: ListQuery): Promise<ListPage>;

  getBucketConfig(bucket: string, kind: BucketConfigKind): Promise<string | undefined>;
  /**
   * Stores (or removes) a bucket document. `createdAt`: when the bucket the change was decided on
   * was created; a bucket of that name deleted and made again since (perhaps by another owner) is
   * not that bucket: MissingBucketError, nothing changed.
   */
  putBucketConfig(
    bucket: string,
    kind: BucketConfigKind,
    value: string,
    opts?: { createdAt?: number },
  ): Promise<void>;
  deleteBucketConfig(
    bucket: string,
    kind: BucketConfigKind,
    opts?: { createdAt?: number },
  ): Promise<void>;
  /** Buckets with a document of this kind, in name order after `after` (background workers). */
  listBucketConfigs(
    kind: BucketConfigKind,
    after: string,
    limit: number,
  ): Promise<{ bucket: string; value: string }[]>;
  /** Sets the ACL of one version; false when the version does not exist (see VersionTarget). */
  setObjectAcl(
    target: VersionTarget,
    acl: string,
    outbox?: OutboxEvent,
  ): Promise<boolean>;
  /**
   * Replaces the tag set of one version (an empty set removes its tags); false when the version
   * does not exist or is a delete marker, which has no tags. With clustering on, this change,
   * setObjectAcl and setObjectLock stamp the part they change (version_stamps.ts) and queue the
   * change for the other nodes in the same transaction.
   */
  setObjectTags(
    target: VersionTarget,
    tags: TagSet,
    outbox?: OutboxEvent,
  ): Promise<boolean>;
  /**
   * Takes the parts another node changed (each only when its stamp is newer than the one here),
   * not queued again; false when the version is not here.
   */
  mergeVersionParts(
    target: { bucket: string; key: string; versionId: string },
    parts: VersionParts,
  ): Promise<boolean>;

  /** Fails with DuplicateError when the name or access key is taken. */
  createUser(user: UserRecord): Promise<void>;
  getUser(
    by: { accessKey: string } | { id: string } | { name: string },
  ): Promise<UserRecord | undefined>;
  listUsers(): Promise<UserRecord[]>;
  /** Replaces the stored record (same id); false when the user does not exist. */
  updateUser(user: UserRecord): Promise<boolean>;
  /**
   * Applies `change` to the user as it is stored now, in one transaction (so a change replicated
   * from another node meanwhile is kept); the new record, undefined when there is no such user.
   * DuplicateError when a new access key is taken.
   */
  changeUser(
    id: string,
    change: Partial<Omit<UserRecord, "id" | "createdAt">>,
  ): Promise<UserRecord | undefined>;
  /** Removes the user and its tokens. */
  deleteUser(id: string): Promise<boolean>;

  createToken(token: TokenRecord): Promise<void>;
  getToken(hash: string): Promise<TokenRecord | undefined>;
  deleteToken(hash: string): Promise<boolean>;
  deleteUserTokens(userId: string): Promise<void>;

  /** Stores a session and drops the expired ones. */
  createSession(session: SessionRecord): Promise<void>;
  getSession(accessKey: string): Promise<SessionRecord | undefined>;
  putLdapMapping(mapping: LdapMapping): Promise<void>;
  deleteLdapMapping(kind: LdapMapping["kind"], name: string): Promise<boolean>;
  listLdapMappings(): Promise<LdapMapping[]>;

  createUpload(upload: UploadRecord): Promise<void>;
  getUpload(bucket: string, key: string, uploadId: string): Promise<UploadRecord | undefined>;
  /**
   * Stores a part (replacing an earlier one with the same number) with its chunks; returns the
   * chunks nothing refers to any more. Undefined when the upload does not exist (any more).
   */
  putPart(
    uploadId: string,
    part: PartRecord,
    chunks: VersionChunk[],
  ): Promise<{ freed: ChunkRecord[] } | undefined>;
  listParts(uploadId: string, after: number, max: number): Promise<PartRecord[]>;
  listUploads(bucket: string, query: UploadListQuery): Promise<UploadListPage>;
  /** Uploads of any bucket initiated before `before`, oldest first (abandoned uploads). */
  listStaleUploads(before: number, limit: number): Promise<UploadRecord[]>;
  /** How many uploads of any bucket were initiated before `before`. */
  countStaleUploads(before: number): Promise<number>;
  /** An upload by its id alone (upload ids are unique across buckets). */
  getUploadById(uploadId: string): Promise<UploadRecord | undefined>;
  /**
   * Makes `version` from the chosen parts (their chunks in order) and ends the upload: every
   * part's references are dropped and the completion recorded (getCompletedUpload) in the same
   * transaction. Undefined when the upload or a part is gone; PartChangedError (nothing
   * written) when a part no longer has the ETag it was chosen with (uploaded again meanwhile).
   */
  completeUpload(
    upload: UploadRecord,
    parts: ChosenPart[],
    version: ObjectVersion,
    opts?: WriteRecords,
  ): Promise<PutResult | undefined>;
  /** The answer of an upload completed within COMPLETED_UPLOAD_RETENTION_MS. */
  getCompletedUpload(uploadId: string): Promise<CompletedUpload | undefined>;
  /** Ends an upload and drops its parts; undefined when it does not exist. */
  abortUpload(uploadId: string): Promise<{ freed: ChunkRecord[] } | undefined>;

  /** Objects and bytes stored, kept current by the writes themselves. */
  usage(): Promise<Usage>;
  /** A committed write that proves the metadata is writable (readiness). */
  probeWrite(): Promise<void>;
  /** Flags a drive that missed shard writes (or clears it once healed). */
  setDriveNeedsHeal(driveId: number, needed: boolean): Promise<void>;
  drivesNeedingHeal(): Promise<number[]>;
  /** Writes a consistent snapshot of the whole metadata to `path` (which must not exist). */
  snapshot(path: string): Promise<void>;
  /** The integrity check: ["ok"] or the problems found. */
  quickCheck(): Promise<string[]>;
  close(): Promise<void>;
}

/** Totals maintained by the metadata (see the usage table). */
export interface Usage {
  /** Versions other than delete markers, and their bytes. */
  objects: number;
  bytes: number;
  chunks: number;
  /** Bytes of shard payloads on the drives, parity included. */
  shardBytes: number;
}

/** A unique field (user name, access key) is already taken. */
export class DuplicateError extends Error {
  constructor(readonly field: string) {
    super(`${field} is already taken`);
  }
}

/** A write named a bucket that does not exist (any more). */
/**
 * A write whose version id was chosen by the bucket's versioning state before it changed: a
 * "null" version while versioning is now Enabled would replace the version versioning keeps.
 * Nothing was written; the write is to be made again.
 */
export class VersioningChangedError extends Error {
  constructor(bucket: string) {
    super(`The versioning state of bucket ${bucket} changed during the write`);
  }
}

/** Versioning cannot be suspended on a bucket with Object Lock: nothing was changed. */
export class LockedVersioningError extends Error {
  constructor(bucket: string) {
    super(`Bucket ${bucket} has Object Lock: its versioning cannot be suspended`);
  }
}

/** A part a completion chose was uploaded again since (another ETag): nothing was written. */
export class PartChangedError extends Error {
  constructor(readonly partNumber: number) {
    super(`Part ${partNumber} was uploaded again while the upload was being completed`);
  }
}

export class MissingBucketError extends Error {
  constructor(bucket: string) {
    super(`Bucket ${bucket} does not exist`);
  }
}

/**
 * The metadata database cannot be reached (PostgreSQL down, restarting or unreachable): the
 * request fails with 503 ServiceUnavailable and nothing of it is committed.
 */
export class MetaUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "MetaUnavailableError";
  }
}

/** The MetaUnavailableError behind `err` (itself or a cause), if any. */
export function metaUnavailable(err: unknown): MetaUnavailableError | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof MetaUnavailableError) return e;
  }
  return undefined;
}
