// SQLite schema, applied in order; the applied count is kept in PRAGMA user_version.

export const MIGRATIONS: string[] = [
  `
  CREATE TABLE buckets (
    name TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    region TEXT NOT NULL,
    versioning TEXT NOT NULL DEFAULT '',
    object_lock INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX buckets_by_owner ON buckets(owner, name);

  -- Per-bucket documents (policy, lifecycle, cors, ...), one row per kind.
  CREATE TABLE bucket_configs (
    bucket TEXT NOT NULL,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (bucket, kind)
  );

  -- Every version of every object; seq grows with each write of a key (newest = highest).
  CREATE TABLE versions (
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    version_id TEXT NOT NULL,
    is_latest INTEGER NOT NULL,
    delete_marker INTEGER NOT NULL,
    size INTEGER NOT NULL,
    etag TEXT NOT NULL,
    last_modified INTEGER NOT NULL,
    content_type TEXT NOT NULL,
    user_meta TEXT NOT NULL,
    headers TEXT NOT NULL,
    owner TEXT NOT NULL,
    inline_data BLOB,
    blob_id TEXT,
    PRIMARY KEY (bucket, key, seq)
  );
  CREATE UNIQUE INDEX versions_by_id ON versions(bucket, key, version_id);
  CREATE INDEX versions_current ON versions(bucket, key) WHERE is_latest = 1;
  CREATE INDEX versions_by_blob ON versions(blob_id) WHERE blob_id IS NOT NULL;

  -- Multipart uploads in progress (filled by the multipart feature).
  CREATE TABLE uploads (
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    upload_id TEXT NOT NULL,
    initiated INTEGER NOT NULL,
    owner TEXT NOT NULL,
    PRIMARY KEY (bucket, key, upload_id)
  );
  `,
  `
  -- Users created through the admin API. The secret is sealed with a key derived from the
  -- master key (see src/auth/secrets.ts); bucket_access is a JSON array of entries.
  CREATE TABLE users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    email TEXT NOT NULL,
    access_key TEXT NOT NULL UNIQUE,
    sealed_secret TEXT NOT NULL,
    enabled INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    key_created_at INTEGER NOT NULL,
    bucket_access TEXT NOT NULL
  );

  -- Bearer tokens of the presigned-URL service, stored as SHA-256 of the token.
  CREATE TABLE tokens (
    hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  );
  CREATE INDEX tokens_by_user ON tokens(user_id);

  -- Per-version ACL (JSON); NULL means the default private ACL of the object's owner.
  ALTER TABLE versions ADD COLUMN acl TEXT;
  `,
  `
  -- Content-addressed chunks: one row per stored chunk, counted by the object versions (and,
  -- later, multipart parts) that refer to it. Each chunk is k data + m parity shards; shard i
  -- lives on drive drives[i] (ids from the drives table).
  CREATE TABLE chunks (
    id TEXT PRIMARY KEY,
    refcount INTEGER NOT NULL,
    plain_size INTEGER NOT NULL,
    stored_size INTEGER NOT NULL,
    compression TEXT NOT NULL,
    encrypted INTEGER NOT NULL,
    data_shards INTEGER NOT NULL,
    parity_shards INTEGER NOT NULL,
    drives TEXT NOT NULL,
    created_at INTEGER NOT NULL
  );

  -- The chunks of a version, in order, with their plaintext offsets (parts may differ in size).
  CREATE TABLE version_chunks (
    version_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    chunk_id TEXT NOT NULL,
    offset INTEGER NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (version_id, idx)
  );
  CREATE INDEX version_chunks_by_offset ON version_chunks(version_id, offset);

  -- Drives known to this server: a stable small id for each drive directory's identity.
  CREATE TABLE drives (
    id INTEGER PRIMARY KEY,
    uuid TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL
  );

  -- Versions gain a stable id for version_chunks (rowids may change on VACUUM), a flag for
  -- chunked data, and the SSE record (JSON).
  ALTER TABLE versions ADD COLUMN vid INTEGER;
  CREATE UNIQUE INDEX versions_by_vid ON versions(vid);
  ALTER TABLE versions ADD COLUMN chunked INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE versions ADD COLUMN sse TEXT;
  `,
  `
  -- Multipart uploads keep what CreateMultipartUpload was given for the final object, and their
  -- parts. A part's data is chunks listed in version_chunks under the part's data_id (the same
  -- id space as versions.vid), so completing an upload moves chunk references, never bytes.
  ALTER TABLE uploads ADD COLUMN content_type TEXT NOT NULL DEFAULT '';
  ALTER TABLE uploads ADD COLUMN user_meta TEXT NOT NULL DEFAULT '{}';
  ALTER TABLE uploads ADD COLUMN headers TEXT NOT NULL DEFAULT '{}';
  ALTER TABLE uploads ADD COLUMN acl TEXT;
  ALTER TABLE uploads ADD COLUMN sse TEXT;
  CREATE UNIQUE INDEX uploads_by_id ON uploads(upload_id);
  CREATE TABLE parts (
    upload_id TEXT NOT NULL,
    part_number INTEGER NOT NULL,
    etag TEXT NOT NULL,
    size INTEGER NOT NULL,
    last_modified INTEGER NOT NULL,
    data_id INTEGER NOT NULL,
    PRIMARY KEY (upload_id, part_number)
  );
  CREATE UNIQUE INDEX parts_by_data_id ON parts(data_id);
  -- Sizes of the parts of a completed multipart object (JSON array), for partNumber reads.
  ALTER TABLE versions ADD COLUMN parts TEXT;
  `,
  `
  -- ListObjectVersions walks keys in order and each key's versions newest first.
  CREATE INDEX versions_listing ON versions(bucket, key, seq DESC);
  `,
  `
  -- Additional checksums: the object's (JSON: algorithm, type, value, the parts' values), each
  -- part's (JSON: algorithm, value), and the algorithm and type an upload was created with.
  ALTER TABLE versions ADD COLUMN checksum TEXT;
  ALTER TABLE parts ADD COLUMN checksum TEXT;
  ALTER TABLE uploads ADD COLUMN checksum_algorithm TEXT;
  ALTER TABLE uploads ADD COLUMN checksum_type TEXT;
  `,
  `
  -- Object Lock, per version: retention mode and date (ms), and the legal hold flag.
  ALTER TABLE versions ADD COLUMN lock_mode TEXT;
  ALTER TABLE versions ADD COLUMN lock_until INTEGER;
  ALTER TABLE versions ADD COLUMN legal_hold INTEGER NOT NULL DEFAULT 0;
  -- The lock a multipart upload's object gets when it completes (JSON).
  ALTER TABLE uploads ADD COLUMN lock TEXT;
  `,
  `
  -- Object tags, per version (JSON object, key to value; NULL when none), and the tags a
  -- multipart upload's object gets when it completes.
  ALTER TABLE versions ADD COLUMN tags TEXT;
  ALTER TABLE uploads ADD COLUMN tags TEXT;
  `,
  `
  -- Uploads completed recently (COMPLETED_UPLOAD_RETENTION_MS), so a repeated
  -- CompleteMultipartUpload answers with the same result.
  CREATE TABLE completed_uploads (
    upload_id TEXT PRIMARY KEY,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    etag TEXT NOT NULL,
    version_id TEXT NOT NULL,
    checksum TEXT,
    completed_at INTEGER NOT NULL
  );
  CREATE INDEX completed_uploads_by_time ON completed_uploads(completed_at);
  `,
  `
  -- The event outbox (DESIGN.md §6): one row per event, written in the transaction of the change
  -- it describes. AUTOINCREMENT keeps sequence numbers growing even after old rows are pruned
  -- (the change feed's ids, the sequencer of event records).
  CREATE TABLE event_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    detail TEXT NOT NULL
  );
  CREATE INDEX event_log_by_bucket ON event_log(bucket, seq);
  -- Each consumer (a notification target, a bucket's webhook) reads the log from its own cursor:
  -- the last sequence number it has finished with.
  CREATE TABLE event_cursors (
    consumer TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
  );
  `,
  `
  -- Audit log (issue 16): a hash chain, one row per recorded request or change, written in the
  -- transaction of the change it records (src/audit/chain.ts). The anchor is the last entry
  -- retention removed: what remains verifies from it.
  CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    request_id TEXT NOT NULL,
    principal TEXT NOT NULL,
    source TEXT NOT NULL,
    operation TEXT NOT NULL,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    version_id TEXT NOT NULL,
    status INTEGER NOT NULL,
    error_code TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    detail TEXT NOT NULL,
    hash TEXT NOT NULL
  );
  CREATE TABLE audit_anchor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
  );
  `,
  `
  -- Error log (issue 16): warnings and errors of requests and background work, capped in rows.
  CREATE TABLE error_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    level TEXT NOT NULL,
    source TEXT NOT NULL,
    code TEXT NOT NULL,
    bucket TEXT NOT NULL,
    request_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    message TEXT NOT NULL,
    detail TEXT NOT NULL
  );
  CREATE INDEX error_log_by_time ON error_log(at);
  `,
  `
  -- Bucket shares (issue 16): token-based temporary access to a bucket or prefix; only the
  -- token's SHA-256 is kept.
  CREATE TABLE shares (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    creator TEXT NOT NULL,
    bucket TEXT NOT NULL,
    prefix TEXT NOT NULL,
    permissions TEXT NOT NULL,
    password_hash TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    max_downloads INTEGER,
    downloads INTEGER NOT NULL,
    uploads INTEGER NOT NULL,
    revoked_at INTEGER
  );
  CREATE INDEX shares_by_creator ON shares(creator, created_at);
  `,
  `
  -- LDAP sign-in and temporary credentials: sessions issued by the token service (secret and
  -- token sealed with the master key) and the access mapped to directory groups and users.
  CREATE TABLE sts_sessions (
    access_key TEXT PRIMARY KEY,
    sealed_secret TEXT NOT NULL,
    sealed_token TEXT NOT NULL,
    parent_kind TEXT NOT NULL,
    parent_id TEXT NOT NULL,
    ldap_dn TEXT,
    ldap_groups TEXT,
    policy TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  );
  CREATE INDEX sts_sessions_by_expiry ON sts_sessions(expires_at);
  CREATE TABLE ldap_mappings (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    bucket_access TEXT NOT NULL,
    is_admin INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
  );
  `,
  `
  -- Metrics: objects and bytes stored, maintained by triggers in the writing transaction (never
  -- counted by a scan). Objects are versions other than delete markers; shard_bytes is what the
  -- chunks take on the drives, parity included.
  CREATE TABLE usage (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    objects INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    shard_bytes INTEGER NOT NULL
  );
  INSERT INTO usage SELECT 1,
    (SELECT count(*) FROM versions WHERE delete_marker = 0),
    (SELECT coalesce(sum(size), 0) FROM versions WHERE delete_marker = 0),
    (SELECT count(*) FROM chunks),
    (SELECT coalesce(sum((stored_size + data_shards - 1) / data_shards
      * (data_shards + parity_shards)), 0) FROM chunks);
  CREATE TRIGGER usage_version_insert AFTER INSERT ON versions WHEN NEW.delete_marker = 0
  BEGIN
    UPDATE usage SET objects = objects + 1, bytes = bytes + NEW.size WHERE id = 1;
  END;
  CREATE TRIGGER usage_version_delete AFTER DELETE ON versions WHEN OLD.delete_marker = 0
  BEGIN
    UPDATE usage SET objects = objects - 1, bytes = bytes - OLD.size WHERE id = 1;
  END;
  CREATE TRIGGER usage_version_update AFTER UPDATE OF size, delete_marker ON versions
  BEGIN
    UPDATE usage SET
      objects = objects - (OLD.delete_marker = 0) + (NEW.delete_marker = 0),
      bytes = bytes - CASE WHEN OLD.delete_marker = 0 THEN OLD.size ELSE 0 END
        + CASE WHEN NEW.delete_marker = 0 THEN NEW.size ELSE 0 END
    WHERE id = 1;
  END;
  CREATE TRIGGER usage_chunk_insert AFTER INSERT ON chunks
  BEGIN
    UPDATE usage SET chunks = chunks + 1, shard_bytes = shard_bytes
      + (NEW.stored_size + NEW.data_shards - 1) / NEW.data_shards
      * (NEW.data_shards + NEW.parity_shards) WHERE id = 1;
  END;
  CREATE TRIGGER usage_chunk_delete AFTER DELETE ON chunks
  BEGIN
    UPDATE usage SET chunks = chunks - 1, shard_bytes = shard_bytes
      - (OLD.stored_size + OLD.data_shards - 1) / OLD.data_shards
      * (OLD.data_shards + OLD.parity_shards) WHERE id = 1;
  END;
  -- Readiness: /health/ready proves the metadata is writable by updating this one row.
  CREATE TABLE health_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at INTEGER NOT NULL
  );
  `,
  `
  -- Healing: a drive that missed shard writes (offline, missing, replaced) is flagged until a
  -- heal of everything it should hold has finished, across restarts.
  ALTER TABLE drives ADD COLUMN needs_heal INTEGER NOT NULL DEFAULT 0;
  `,
  `
  -- Range reads of compressed and encrypted chunks: such chunks are written as independently
  -- decodable segments of this many plaintext bytes (src/storage/codec.ts); 0 for chunks stored
  -- as they are and for those written before, which are one piece.
  ALTER TABLE chunks ADD COLUMN segment_size INTEGER NOT NULL DEFAULT 0;
  `,
  `
  -- Local key management (src/kms/): named keys; versions is a JSON array of
  -- {version, sealed, createdAt}, each key version sealed under the master key, the newest last.
  CREATE TABLE kms_keys (
    id TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    enabled INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    versions TEXT NOT NULL
  );
  `,
  `
  -- Transformation jobs (src/transform/): inserted in the transaction of the write that matched a
  -- bucket's rule, or by POST /api/v1/jobs; seq orders them for paging.
  CREATE TABLE transform_jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    version_id TEXT,
    spec TEXT NOT NULL,
    rule TEXT,
    requester TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    run_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    error TEXT,
    output_bucket TEXT,
    output_key TEXT,
    output_version_id TEXT
  );
  CREATE INDEX transform_jobs_due ON transform_jobs(state, run_at, seq);
  CREATE INDEX transform_jobs_by_bucket ON transform_jobs(bucket, seq);
  `,
  `
  -- Cluster (src/cluster/): one row per bucket changed while clustering is on; each change moves
  -- it to the end of the queue (seq). Every other node has a cursor: the seq up to which it has
  -- received the changes. cluster_stamps holds the last-writer-wins stamp of each part of a bucket
  -- (record, versioning, objectLock, config:<kind>); they outlive a deleted bucket, so a node that
  -- was down learns of the deletion and an older change never undoes a newer one.
  CREATE TABLE cluster_changes (
    bucket TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    queued_at INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX cluster_changes_by_seq ON cluster_changes(seq);
  CREATE TABLE cluster_stamps (
    bucket TEXT NOT NULL,
    item TEXT NOT NULL,
    stamp_ms INTEGER NOT NULL,
    stamp_node TEXT NOT NULL,
    PRIMARY KEY (bucket, item)
  );
  CREATE TABLE cluster_cursors (
    node TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
  );
  `,
  `
  -- Object replication (src/cluster/objects.ts): one row per object change made here while
  -- clustering is on (a version or marker written: put; a version removed: delete), appended in
  -- the write's transaction; every other node has a cursor into it. versions.replication is
  -- PENDING, COMPLETED or FAILED on the node that wrote the version, REPLICA on the others.
  CREATE TABLE cluster_object_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    op TEXT NOT NULL,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    version_id TEXT NOT NULL,
    queued_at INTEGER NOT NULL
  );
  CREATE TABLE cluster_object_cursors (
    node TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
  );
  ALTER TABLE versions ADD COLUMN replication TEXT;
  `,
  `
  -- Stamps of a version's later changes (src/meta/version_stamps.ts): JSON of part to
  -- {ms, node} for its tags, ACL, retention and legal hold; NULL until one changes.
  ALTER TABLE versions ADD COLUMN stamps TEXT;
  `,
  `
  -- User replication (src/meta/user_stamps.ts): one row per user changed while clustering is on,
  -- moved to the end by each change; the stamps (JSON of part to {ms, node}) of each user's
  -- record, enabled flag, bucket access and key, kept after a deletion; a cursor per node.
  CREATE TABLE cluster_user_changes (
    user_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    queued_at INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX cluster_user_changes_by_seq ON cluster_user_changes(seq);
  CREATE TABLE cluster_user_stamps (
    user_id TEXT PRIMARY KEY,
    stamps TEXT NOT NULL
  );
  CREATE TABLE cluster_user_cursors (
    node TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
  );
  `,
  `
  -- Bearer tokens and shares replicated between nodes: one row per token or share changed while
  -- clustering is on, with the stamp of its last change, moved to the end by each change; a
  -- cursor per node.
  CREATE TABLE cluster_records (
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    queued_at INTEGER NOT NULL,
    stamp_ms INTEGER NOT NULL,
    stamp_node TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
  );
  CREATE UNIQUE INDEX cluster_records_by_seq ON cluster_records(seq);
  CREATE TABLE cluster_record_cursors (
    node TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
  );
  `,
  `
  -- Versions removed while clustering is on (src/cluster/anti_entropy_answer.ts): the id and when,
  -- so anti-entropy has a node that still holds one delete it instead of sending it back; pruned
  -- after STORE_CLUSTER_TOMBSTONE_TTL.
  CREATE TABLE cluster_tombstones (
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    version_id TEXT NOT NULL,
    deleted_at INTEGER NOT NULL,
    PRIMARY KEY (bucket, key, version_id)
  );
  CREATE INDEX cluster_tombstones_by_time ON cluster_tombstones(deleted_at);
  `,
  `
  -- Each node's member list and the nodes an administrator forgot (src/cluster/membership.ts),
  -- kept across restarts (owner: the node's id): a member has its URL, a forgotten node the time
  -- it was forgotten.
  CREATE TABLE cluster_members (
    owner TEXT NOT NULL,
    id TEXT NOT NULL,
    url TEXT,
    forgotten_at INTEGER,
    PRIMARY KEY (owner, id)
  );
  `,
  `
  -- A removal whose requester could bypass governance retention: the flag travels with the
  -- replicated deletion (src/cluster/objects.ts), so receivers delete under GOVERNANCE too.
  ALTER TABLE cluster_object_changes ADD COLUMN bypass_governance INTEGER NOT NULL DEFAULT 0;
  `,
  `
  -- The last data id handed out (versions.vid, parts.data_id), so that none is handed out twice:
  -- max(vid) + 1 gave a write that replaced the newest version that version's id, and a GET that
  -- had looked the old version up then read the new one's chunks under the old one's headers.
  CREATE TABLE data_ids (last INTEGER NOT NULL);
  INSERT INTO data_ids SELECT max(
    coalesce((SELECT max(vid) FROM versions), 0),
    coalesce((SELECT max(data_id) FROM parts), 0)
  );
  `,
  `
  -- The access key a user's session was asked for with: the session ends when that key is
  -- rotated, however close the two requests were (src/auth/credentials.ts).
  ALTER TABLE sts_sessions ADD COLUMN parent_key TEXT;
  `,
  `
  -- The access key a user's bearer token was issued for (it ends when that key is rotated) and
  -- the creation time of a shared bucket (a bucket re-created under its name is not shared).
  ALTER TABLE tokens ADD COLUMN access_key TEXT;
  ALTER TABLE shares ADD COLUMN bucket_created_at INTEGER;
  `,
];
