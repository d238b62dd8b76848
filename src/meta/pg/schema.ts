// PostgreSQL schema of the metadata store: an append-only list of migrations, applied in order
// at start-up under an advisory lock (several nodes starting at once apply each one once). The
// applied count is kept in schema_version. Keys and bucket names compare in byte order
// (COLLATE "C"), as in SQLite, so listings and markers mean the same on both stores.
import { KMS_DDL } from "./kms.ts";
import { JOBS_DDL } from "./jobs.ts";
import { CLUSTER_DDL } from "./cluster.ts";
import { CLUSTER_USERS_DDL } from "./cluster_users.ts";
import { CLUSTER_RECORDS_DDL } from "./cluster_records.ts";
import { CLUSTER_MEMBERS_DDL } from "./cluster_members.ts";
import { AUDIT_DDL } from "./audit.ts";
import type { Sql } from "./connect.ts";
import { ERRORS_DDL } from "./errors.ts";
import { EVENTS_DDL } from "./events.ts";
import { SHARES_DDL } from "./shares.ts";
import { STS_DDL } from "./sts.ts";
import { USERS_DDL } from "./users.ts";
import { OBJECT_QUEUE_DDL, TOMBSTONES_DDL } from "./object_queue.ts";
import { HOLDINGS_DDL } from "./holdings.ts";

/** The advisory lock id of migrations (any constant unlikely to be used by others). */
const MIGRATION_LOCK = 0x5354_4f52_4531;

export const MIGRATIONS: string[] = [
  `
  CREATE TABLE buckets (
    name text COLLATE "C" PRIMARY KEY,
    owner text NOT NULL,
    created_at bigint NOT NULL,
    region text NOT NULL,
    versioning text NOT NULL DEFAULT '',
    object_lock boolean NOT NULL DEFAULT false
  );
  CREATE INDEX buckets_by_owner ON buckets(owner, name);

  CREATE TABLE bucket_configs (
    bucket text COLLATE "C" NOT NULL,
    kind text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (bucket, kind)
  );
  CREATE INDEX bucket_configs_by_kind ON bucket_configs(kind, bucket);

  -- Data ids: versions and multipart parts share this id space (version_chunks.version_id).
  CREATE SEQUENCE data_ids;

  -- Every version of every object; seq grows with each write of a key (newest = highest).
  CREATE TABLE versions (
    bucket text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    version_id text NOT NULL,
    is_latest boolean NOT NULL,
    delete_marker boolean NOT NULL,
    size bigint NOT NULL,
    etag text NOT NULL,
    last_modified bigint NOT NULL,
    content_type text NOT NULL,
    user_meta text NOT NULL,
    headers text NOT NULL,
    owner text NOT NULL,
    inline_data bytea,
    acl text,
    vid bigint NOT NULL UNIQUE,
    chunked boolean NOT NULL,
    sse text,
    parts text,
    checksum text,
    lock_mode text,
    lock_until bigint,
    legal_hold boolean NOT NULL DEFAULT false,
    tags text,
    PRIMARY KEY (bucket, key, seq)
  );
  CREATE UNIQUE INDEX versions_by_id ON versions(bucket, key, version_id);
  -- One current version per key; listings scan this index in key order.
  CREATE UNIQUE INDEX versions_current ON versions(bucket, key) WHERE is_latest;
  CREATE INDEX versions_listing ON versions(bucket, key, seq DESC);

  CREATE TABLE chunks (
    id text COLLATE "C" PRIMARY KEY,
    refcount integer NOT NULL,
    plain_size bigint NOT NULL,
    stored_size bigint NOT NULL,
    compression text NOT NULL,
    encrypted boolean NOT NULL,
    segment_size integer NOT NULL,
    data_shards integer NOT NULL,
    parity_shards integer NOT NULL,
    drives integer[] NOT NULL,
    created_at bigint NOT NULL
  );

  -- Servers holding a claim on a chunk id (src/storage/chunk_claims.ts): one row per server while
  -- any of its writers may commit a reference to the chunk; collection waits for none.
  CREATE TABLE chunk_claims (
    id text COLLATE "C" NOT NULL,
    node text NOT NULL,
    at bigint NOT NULL,
    PRIMARY KEY (id, node)
  );

  CREATE TABLE version_chunks (
    version_id bigint NOT NULL,
    idx integer NOT NULL,
    chunk_id text COLLATE "C" NOT NULL,
    "offset" bigint NOT NULL,
    size bigint NOT NULL,
    PRIMARY KEY (version_id, idx)
  );
  CREATE INDEX version_chunks_by_offset ON version_chunks(version_id, "offset");

  CREATE TABLE drives (
    id serial PRIMARY KEY,
    uuid text NOT NULL UNIQUE,
    path text NOT NULL,
    needs_heal boolean NOT NULL DEFAULT false
  );

  CREATE TABLE uploads (
    bucket text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    upload_id text COLLATE "C" NOT NULL UNIQUE,
    initiated bigint NOT NULL,
    owner text NOT NULL,
    content_type text NOT NULL,
    user_meta text NOT NULL,
    headers text NOT NULL,
    acl text,
    sse text,
    checksum_algorithm text,
    checksum_type text,
    lock text,
    tags text,
    PRIMARY KEY (bucket, key, upload_id)
  );
  CREATE INDEX uploads_by_time ON uploads(initiated);

  CREATE TABLE parts (
    upload_id text NOT NULL,
    part_number integer NOT NULL,
    etag text NOT NULL,
    size bigint NOT NULL,
    last_modified bigint NOT NULL,
    data_id bigint NOT NULL UNIQUE,
    checksum text,
    PRIMARY KEY (upload_id, part_number)
  );

  CREATE TABLE completed_uploads (
    upload_id text PRIMARY KEY,
    bucket text NOT NULL,
    key text NOT NULL,
    etag text NOT NULL,
    version_id text NOT NULL,
    checksum text,
    completed_at bigint NOT NULL
  );
  CREATE INDEX completed_uploads_by_time ON completed_uploads(completed_at);

  -- Usage totals, kept by triggers in the writing transaction. A write appends its change as a
  -- row of usage_deltas (no row is shared, so concurrent writers never wait on each other);
  -- reading the usage folds the committed deltas into the one usage row first.
  CREATE TABLE usage (
    id integer PRIMARY KEY CHECK (id = 1),
    objects bigint NOT NULL DEFAULT 0,
    bytes bigint NOT NULL DEFAULT 0,
    chunks bigint NOT NULL DEFAULT 0,
    shard_bytes bigint NOT NULL DEFAULT 0
  );
  INSERT INTO usage (id) VALUES (1);
  CREATE TABLE usage_deltas (
    objects bigint NOT NULL,
    bytes bigint NOT NULL,
    chunks bigint NOT NULL,
    shard_bytes bigint NOT NULL
  );
  CREATE FUNCTION usage_versions() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE d_objects bigint := 0; d_bytes bigint := 0;
  BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND NOT OLD.delete_marker THEN
      d_objects := d_objects - 1; d_bytes := d_bytes - OLD.size;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NOT NEW.delete_marker THEN
      d_objects := d_objects + 1; d_bytes := d_bytes + NEW.size;
    END IF;
    IF d_objects <> 0 OR d_bytes <> 0 THEN
      INSERT INTO usage_deltas VALUES (d_objects, d_bytes, 0, 0);
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER usage_versions AFTER INSERT OR DELETE OR UPDATE OF size, delete_marker
    ON versions FOR EACH ROW EXECUTE FUNCTION usage_versions();
  CREATE FUNCTION usage_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE r chunks; sign integer;
  BEGIN
    IF TG_OP = 'INSERT' THEN r := NEW; sign := 1; ELSE r := OLD; sign := -1; END IF;
    INSERT INTO usage_deltas VALUES (0, 0, sign, sign
      * ((r.stored_size + r.data_shards - 1) / r.data_shards * (r.data_shards + r.parity_shards)));
    RETURN NULL;
  END $$;
  CREATE TRIGGER usage_chunks AFTER INSERT OR DELETE ON chunks
    FOR EACH ROW EXECUTE FUNCTION usage_chunks();

  -- Readiness: /health/ready proves the metadata is writable by updating this one row.
  CREATE TABLE health_probe (
    id integer PRIMARY KEY CHECK (id = 1),
    at bigint NOT NULL
  );
  `,
  // Users and tokens, STS sessions and LDAP mappings, shares, the event outbox, the audit chain
  // and the error log (each module keeps its own DDL).
  [USERS_DDL, STS_DDL, SHARES_DDL, EVENTS_DDL, AUDIT_DDL, ERRORS_DDL].join("\n"),
  // Local key management, transformation jobs and the cluster's bucket-change queue.
  [KMS_DDL, JOBS_DDL, CLUSTER_DDL].join("\n"),
  // The cluster's object-change queue and the versions' replication status.
  OBJECT_QUEUE_DDL,
  // Stamps of a version's later changes (src/meta/version_stamps.ts).
  `ALTER TABLE versions ADD COLUMN stamps TEXT;`,
  // Nodes sharing this database and the chunks each holds on its own drives.
  HOLDINGS_DDL,
  // The cluster's user-change queue (src/meta/user_stamps.ts).
  CLUSTER_USERS_DDL,
  // The cluster's queue of bearer tokens and shares.
  CLUSTER_RECORDS_DDL,
  // Versions removed while clustering is on (anti-entropy's tombstones).
  TOMBSTONES_DDL,
  // Each node's member list and forgotten nodes, kept across restarts.
  CLUSTER_MEMBERS_DDL,
  // A removal whose requester could bypass governance retention (travels with the deletion).
  `ALTER TABLE cluster_object_changes ADD COLUMN bypass_governance BOOLEAN NOT NULL DEFAULT false;`,
  // The access key a user's session was asked for with (src/auth/credentials.ts); databases made
  // since have it from STS_DDL.
  `ALTER TABLE sts_sessions ADD COLUMN IF NOT EXISTS parent_key TEXT;`,
  // The access key a user's bearer token was issued for and a shared bucket's creation time
  // (src/api/service.ts, src/share/public.ts); databases made since have them from their DDL.
  `ALTER TABLE tokens ADD COLUMN IF NOT EXISTS access_key TEXT;
   ALTER TABLE shares ADD COLUMN IF NOT EXISTS bucket_created_at BIGINT;`,
];

/** Applies the migrations not applied yet; returns how many there are in all. */
export async function migrate(sql: Sql): Promise<number> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)`;
    const rows = await tx`SELECT version FROM schema_version`;
    let current = rows.length ? rows[0].version as number : 0;
    if (rows.length === 0) await tx`INSERT INTO schema_version (version) VALUES (0)`;
    if (current > MIGRATIONS.length) {
      throw new Error(
        `the metadata schema is at version ${current}, newer than this server ` +
          `(${MIGRATIONS.length}): upgrade the server`,
      );
    }
    for (; current < MIGRATIONS.length; current++) {
      await tx.unsafe(MIGRATIONS[current]);
      await tx`UPDATE schema_version SET version = ${current + 1}`;
    }
  });
  return MIGRATIONS.length;
}
