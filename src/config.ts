// Environment variables -> typed, validated configuration.
import { decodeMasterKey } from "./auth/master_key.ts";
import type { DialectName } from "./http/dialect.ts";
import { type LdapConfig, LdapConfigError, loadLdapConfig } from "./auth/ldap/config.ts";
import { parseAllowList, type WebhookAllowList } from "./events/webhook_allow.ts";
import { type ClusterConfig, ClusterConfigError, loadClusterConfig } from "./cluster/settings.ts";
import {
  defaultMaxConnections,
  maxConnectionsFor,
  openFileLimit,
  RESERVED_DESCRIPTORS,
} from "./net/fd_limit.ts";

export interface Config {
  address: string;
  port: number;
  dataDir: string;
  region: string;
  dialect: DialectName;
  adminUser?: string;
  adminPassword?: string;
  /** Objects up to this many bytes live inside their metadata row. */
  inlineMax: number;
  logLevel: "debug" | "info" | "warn" | "error";
  /** 32 bytes from STORE_MASTER_KEY; generated and kept in the data directory when unset. */
  masterKey?: Uint8Array;
  /** Lifetime of bearer tokens of the presigned-URL service, in seconds. */
  tokenTtl: number;
  /** Directories shards are spread over, one per drive (STORE_DATA_DIRS; default: dataDir). */
  dataDirs: string[];
  /** Erasure-coding layout of new chunks (STORE_EC, `k+m`); default from the drive count. */
  erasure: { dataShards: number; parityShards: number };
  /** Plaintext bytes per chunk. */
  chunkSize: number;
  compression: "auto" | "on" | "off";
  dedup: boolean;
  /** Seconds between background scrubs; 0 turns the periodic scrub off. */
  scrubInterval: number;
  /** Seconds between lifecycle runs (STORE_LIFECYCLE_INTERVAL, default 3600). */
  lifecycleInterval: number;
  /** Seconds in one lifecycle day (STORE_LIFECYCLE_DAY, default 86400; tests shorten it). */
  lifecycleDay: number;
  /**
   * Web Workers that hash and compress uploads off the event loop (STORE_CPU_WORKERS, default
   * 2); 0 does that work on the main thread.
   */
  cpuWorkers: number;
  /** Image transformations (src/transform/): workers, and the limits of one source. */
  transform: {
    /** Jobs run at once (STORE_TRANSFORM_WORKERS, default 1); 0 leaves jobs queued. */
    workers: number;
    /** Pixels a source may have (STORE_TRANSFORM_MAX_PIXELS): decompression bombs fail. */
    maxPixels: number;
    /** Bytes a source may have (STORE_TRANSFORM_MAX_BYTES). */
    maxBytes: number;
  };
  /** Events a notification target may trail behind the newest (STORE_NOTIFY_QUEUE_LIMIT). */
  notifyQueueLimit: number;
  /** Longest delay between delivery retries, seconds (STORE_NOTIFY_RETRY_MAX). */
  notifyRetryMax: number;
  /** Hosts bucket webhooks may reach (STORE_NOTIFY_WEBHOOK_ALLOW); public ones when unset. */
  webhookAllow: WebhookAllowList;
  /** Seconds events stay in the outbox for change-feed resumption (STORE_FEED_RETENTION). */
  feedRetention: number;
  /** Seconds of silence after which a feed sends a keep-alive comment (STORE_FEED_KEEPALIVE). */
  feedKeepAlive: number;
  /** Bytes a feed reader may leave unread before it is cut off (STORE_FEED_BUFFER). */
  feedBuffer: number;
  /** Seconds a new connection has to send a request's headers (STORE_HEADER_TIMEOUT). */
  headerTimeout: number;
  /** Seconds a keep-alive connection may wait for its next request (STORE_IDLE_TIMEOUT). */
  idleTimeout: number;
  /** Seconds a request or response body may make no progress (STORE_BODY_TIMEOUT). */
  bodyTimeout: number;
  /** Open connections at most (STORE_MAX_CONNECTIONS); default from the descriptor limit. */
  maxConnections: number;
  /** Bytes of decoded object data all GETs may hold at once (STORE_READ_BUFFER_MAX). */
  readBufferMax: number;
  /** Bytes of chunk buffers all uploads may hold at once (STORE_WRITE_BUFFER_MAX). */
  writeBufferMax: number;
  /** Milliseconds of quiet after which memory is given back (STORE_MEMORY_RELEASE_MS; 0 = never). */
  memoryReleaseMs: number;
  /** Bytes kept back on the metadata disk so deletes work when it is full (STORE_DISK_RESERVE). */
  diskReserve: number;
  /** Failed admin and token sign-ins a client may make per window (STORE_SIGNIN_LIMIT). */
  signInLimit: number;
  /** That window in seconds (STORE_SIGNIN_WINDOW, default 300). */
  signInWindow: number;
  /** The web console (/console): on/off, session idle and absolute lifetimes in seconds. */
  console: { enabled: boolean; idleTimeout: number; maxAge: number };
  /** Signature Version 2 (header, query and form) accepted (STORE_SIGV2, default on). */
  sigV2: boolean;
  /** Requests and changes recorded in the audit chain (STORE_AUDIT, default on). */
  audit: boolean;
  /**
   * Metadata in PostgreSQL instead of the SQLite file (STORE_META_URL): the URL and the pool's
   * size (STORE_META_POOL); undefined keeps SQLite.
   */
  metaDb?: { url: string; pool: number };
  /** Days audit entries are kept; 0 keeps them all (STORE_AUDIT_RETENTION_DAYS). */
  auditRetentionDays: number;
  /** Rows the error log keeps; the oldest go first (STORE_ERROR_LOG_MAX). */
  errorLogMax: number;
  /** Directory sign-in (STORE_LDAP_*). */
  ldap: LdapConfig;
  /** Background heal and scrub pause after each chunk, in percent of its work time. */
  healThrottle: number;
  /** Chunks waiting for a heal at most (STORE_HEAL_QUEUE); more are left to the scrub. */
  healQueue: number;
  /** I/O errors in a row that take a drive offline (STORE_DRIVE_ERROR_LIMIT). */
  driveErrorLimit: number;
  /** Seconds between probes of offline and missing drives (STORE_DRIVE_CHECK_INTERVAL). */
  driveCheckInterval: number;
  /** Bearer token GET /metrics accepts besides the admin credentials (STORE_METRICS_TOKEN). */
  metricsToken?: string;
  /** Where metadata snapshots go (STORE_BACKUP_DIR); POST /admin/backup needs it or ?download. */
  backupDir?: string;
  /** Seconds between scheduled snapshots (STORE_BACKUP_INTERVAL); 0 turns them off. */
  backupInterval: number;
  /** Snapshots kept in the backup directory (STORE_BACKUP_KEEP); older ones are removed. */
  backupKeep: number;
  /** PRAGMA quick_check of the metadata before serving (STORE_CHECK_ON_START). */
  checkOnStart: boolean;
  /** PEM certificate chain and key files: HTTPS on the same port (STORE_TLS_CERT/_KEY). */
  tls?: { certFile: string; keyFile: string };
  /** SSE-C keys accepted over plain HTTP (STORE_ALLOW_INSECURE_SSE_C, default false). */
  allowInsecureSseC: boolean;
  /**
   * A TLS-terminating proxy in front: its X-Forwarded-Proto and X-Forwarded-For are believed
   * (STORE_TRUST_PROXY, default false).
   */
  trustProxy: boolean;
  /** One JSON line per request (STORE_ACCESS_LOG); to this file, else stdout. */
  accessLog?: { file?: string };
  /** Buckets' websites are served at `{bucket}.{domain}` by Host (STORE_WEBSITE_DOMAIN). */
  websiteDomain?: string;
  /** Seconds between deliveries of bucket access logs (STORE_BUCKET_LOG_INTERVAL). */
  bucketLogInterval: number;
  /** Records a bucket gathers before they are delivered at once (STORE_BUCKET_LOG_BATCH). */
  bucketLogBatch: number;
  /** Membership and signed node messages (STORE_CLUSTER_*); undefined when clustering is off. */
  cluster?: ClusterConfig;
}

/** The default layout: one drive keeps one copy; several trade capacity for redundancy. */
export function defaultErasure(drives: number): { dataShards: number; parityShards: number } {
  if (drives <= 1) return { dataShards: 1, parityShards: 0 };
  if (drives === 2) return { dataShards: 1, parityShards: 1 };
  if (drives === 3) return { dataShards: 2, parityShards: 1 };
  const parity = Math.min(4, Math.max(2, Math.floor(drives / 3)));
  return { dataShards: Math.min(16, drives - parity), parityShards: parity };
}

function erasureSetting(env: Env, drives: number): { dataShards: number; parityShards: number } {
  const raw = env("STORE_EC");
  if (raw === undefined || raw === "") return defaultErasure(drives);
  const m = /^(\d+)\+(\d+)$/.exec(raw);
  if (!m || +m[1] < 1 || +m[1] > 32 || +m[2] > 16 || +m[1] + +m[2] > 48) {
    throw new ConfigError(
      `STORE_EC must be k+m with 1 <= k <= 32, 0 <= m <= 16 and k+m <= 48, got "${raw}"`,
    );
  }
  return { dataShards: +m[1], parityShards: +m[2] };
}

export class ConfigError extends Error {}

type Env = (name: string) => string | undefined;

function intSetting(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env(name);
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) {
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  }
  return value;
}

function choiceSetting<T extends string>(env: Env, name: string, choices: T[], fallback: T): T {
  const raw = env(name);
  if (raw === undefined || raw === "") return fallback;
  if (!(choices as string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${choices.join(", ")}, got "${raw}"`);
  }
  return raw as T;
}

/** true/false (on/off, yes/no, 1/0 also accepted). */
function boolSetting(env: Env, name: string, fallback: boolean): boolean {
  const raw = env(name);
  if (raw === undefined || raw === "") return fallback;
  const value = raw.toLowerCase();
  if (["true", "on", "yes", "1"].includes(value)) return true;
  if (["false", "off", "no", "0"].includes(value)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function tlsSetting(env: Env): Config["tls"] {
  const certFile = env("STORE_TLS_CERT") || undefined;
  const keyFile = env("STORE_TLS_KEY") || undefined;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new ConfigError("STORE_TLS_CERT and STORE_TLS_KEY must be set together");
  }
  return certFile && keyFile ? { certFile, keyFile } : undefined;
}

function maxConnectionsSetting(env: Env, fdLimit: number | undefined): number {
  const ceiling = maxConnectionsFor(fdLimit);
  const value = intSetting(env, "STORE_MAX_CONNECTIONS", 0, 0, Number.MAX_SAFE_INTEGER);
  if (value === 0) return Math.min(defaultMaxConnections(fdLimit), ceiling);
  if (value > ceiling) {
    throw new ConfigError(
      `STORE_MAX_CONNECTIONS must stay ${RESERVED_DESCRIPTORS} below the open-file limit ` +
        `(${fdLimit}): at most ${ceiling}, got ${value}`,
    );
  }
  return value;
}

export function loadConfig(
  env: Env = (n) => Deno.env.get(n),
  fdLimit: number | undefined = openFileLimit(),
): Config {
  const region = env("STORE_REGION") ?? "us-east-1";
  if (region === "") {
    throw new ConfigError(
      "STORE_REGION is set but empty: name a region (e.g. us-east-1) or unset it",
    );
  }
  if (!/^[a-z0-9-]{1,32}$/.test(region)) {
    throw new ConfigError(
      `STORE_REGION must be lowercase letters, digits and dashes, got "${region}"`,
    );
  }
  const adminUser = env("STORE_ADMIN_USER") || undefined;
  const adminPassword = env("STORE_ADMIN_PASSWORD") || undefined;
  if ((adminUser === undefined) !== (adminPassword === undefined)) {
    throw new ConfigError("STORE_ADMIN_USER and STORE_ADMIN_PASSWORD must be set together");
  }
  if (adminUser !== undefined && !/^[A-Za-z0-9._@-]{3,128}$/.test(adminUser)) {
    throw new ConfigError(
      "STORE_ADMIN_USER must be 3-128 characters of letters, digits, '.', '_', '@' or '-'",
    );
  }
  if (adminPassword !== undefined && (adminPassword.length < 8 || adminPassword.length > 128)) {
    throw new ConfigError("STORE_ADMIN_PASSWORD must be 8-128 characters long");
  }
  const rawMasterKey = env("STORE_MASTER_KEY") || undefined;
  const masterKey = rawMasterKey === undefined ? undefined : decodeMasterKey(rawMasterKey);
  if (rawMasterKey !== undefined && !masterKey) {
    throw new ConfigError("STORE_MASTER_KEY must be 64 hex characters or the base64 of 32 bytes");
  }
  const dataDir = env("STORE_DATA_DIR") || undefined;
  const dataDirs = (env("STORE_DATA_DIRS") ?? "").split(",").map((d) => d.trim()).filter((d) => d);
  if (new Set(dataDirs).size !== dataDirs.length) {
    throw new ConfigError("STORE_DATA_DIRS lists a directory twice");
  }
  const metaDir = dataDir ?? dataDirs[0] ?? "./data";
  const drives = dataDirs.length > 0 ? dataDirs : [metaDir];
  const dedup = choiceSetting(env, "STORE_DEDUP", ["on", "off"], "on");
  const erasure = erasureSetting(env, drives.length);
  // On one drive k+m shards share it (against bitrot); over several, a drive holding more than
  // one shard of a chunk would take more than its share of the redundancy with it.
  if (drives.length > 1 && erasure.dataShards + erasure.parityShards > drives.length) {
    throw new ConfigError(
      `STORE_EC ${erasure.dataShards}+${erasure.parityShards} is wider than the ${drives.length} ` +
        `drives in STORE_DATA_DIRS: k+m must be at most the number of drives`,
    );
  }
  const accessLog = choiceSetting(env, "STORE_ACCESS_LOG", ["on", "off"], "off");
  return {
    address: env("STORE_ADDRESS") || "0.0.0.0",
    port: intSetting(env, "STORE_PORT", 9000, 0, 65535),
    dataDir: metaDir,
    region,
    dialect: choiceSetting(env, "STORE_DIALECT", ["store", "amz"], "store"),
    adminUser,
    adminPassword,
    inlineMax: intSetting(env, "STORE_INLINE_MAX", 64 * 1024, 0, 1024 * 1024),
    logLevel: choiceSetting(env, "STORE_LOG_LEVEL", ["debug", "info", "warn", "error"], "info"),
    masterKey,
    tokenTtl: intSetting(env, "STORE_TOKEN_TTL", 3600, 60, 7 * 24 * 3600),
    dataDirs: drives,
    erasure,
    chunkSize: intSetting(env, "STORE_CHUNK_SIZE", 4 * 1024 * 1024, 64 * 1024, 64 * 1024 * 1024),
    compression: choiceSetting(env, "STORE_COMPRESSION", ["auto", "on", "off"], "auto"),
    dedup: dedup === "on",
    scrubInterval: intSetting(env, "STORE_SCRUB_INTERVAL", 7 * 24 * 3600, 0, 365 * 24 * 3600),
    lifecycleInterval: intSetting(env, "STORE_LIFECYCLE_INTERVAL", 3600, 1, 7 * 24 * 3600),
    lifecycleDay: intSetting(env, "STORE_LIFECYCLE_DAY", 86400, 1, 86400),
    cpuWorkers: intSetting(env, "STORE_CPU_WORKERS", 2, 0, 16),
    transform: {
      workers: intSetting(env, "STORE_TRANSFORM_WORKERS", 1, 0, 64),
      maxPixels: intSetting(env, "STORE_TRANSFORM_MAX_PIXELS", 100_000_000, 1, 2 ** 32),
      maxBytes: intSetting(env, "STORE_TRANSFORM_MAX_BYTES", 64 * 1024 * 1024, 1, 2 ** 31),
    },
    notifyQueueLimit: intSetting(env, "STORE_NOTIFY_QUEUE_LIMIT", 1_000_000, 1, 1_000_000_000),
    notifyRetryMax: intSetting(env, "STORE_NOTIFY_RETRY_MAX", 60, 1, 3600),
    webhookAllow: webhookAllowSetting(env("STORE_NOTIFY_WEBHOOK_ALLOW")),
    feedRetention: intSetting(env, "STORE_FEED_RETENTION", 3600, 0, 30 * 86400),
    feedKeepAlive: intSetting(env, "STORE_FEED_KEEPALIVE", 15, 1, 3600),
    feedBuffer: intSetting(env, "STORE_FEED_BUFFER", 1024 * 1024, 16 * 1024, 64 * 1024 * 1024),
    headerTimeout: intSetting(env, "STORE_HEADER_TIMEOUT", 10, 1, 3600),
    idleTimeout: intSetting(env, "STORE_IDLE_TIMEOUT", 30, 1, 3600),
    bodyTimeout: intSetting(env, "STORE_BODY_TIMEOUT", 30, 1, 3600),
    maxConnections: maxConnectionsSetting(env, fdLimit),
    diskReserve: intSetting(env, "STORE_DISK_RESERVE", 64 * 1024 * 1024, 0, 2 ** 40),
    readBufferMax: intSetting(
      env,
      "STORE_READ_BUFFER_MAX",
      64 * 1024 * 1024,
      1024 * 1024,
      2 ** 40,
    ),
    writeBufferMax: intSetting(
      env,
      "STORE_WRITE_BUFFER_MAX",
      64 * 1024 * 1024,
      1024 * 1024,
      2 ** 40,
    ),
    memoryReleaseMs: intSetting(env, "STORE_MEMORY_RELEASE_MS", 500, 0, 3_600_000),
    signInLimit: intSetting(env, "STORE_SIGNIN_LIMIT", 10, 1, 10_000),
    signInWindow: intSetting(env, "STORE_SIGNIN_WINDOW", 300, 1, 24 * 3600),
    console: {
      enabled: boolSetting(env, "STORE_CONSOLE_ENABLED", true),
      idleTimeout: intSetting(env, "STORE_CONSOLE_IDLE_TIMEOUT", 1800, 1, 7 * 86400),
      maxAge: intSetting(env, "STORE_CONSOLE_SESSION_MAX", 12 * 3600, 1, 30 * 86400),
    },
    sigV2: choiceSetting(env, "STORE_SIGV2", ["on", "off"], "on") === "on",
    audit: choiceSetting(env, "STORE_AUDIT", ["on", "off"], "on") === "on",
    metaDb: metaDbSetting(env),
    auditRetentionDays: intSetting(env, "STORE_AUDIT_RETENTION_DAYS", 0, 0, 36500),
    errorLogMax: intSetting(env, "STORE_ERROR_LOG_MAX", 10_000, 1, 10_000_000),
    ldap: ldapSetting(env),
    ...operationsSettings(env),
    tls: tlsSetting(env),
    allowInsecureSseC: boolSetting(env, "STORE_ALLOW_INSECURE_SSE_C", false),
    trustProxy: boolSetting(env, "STORE_TRUST_PROXY", false),
    accessLog: accessLog === "on" ? { file: env("STORE_ACCESS_LOG_FILE") || undefined } : undefined,
    cluster: clusterSetting(env),
    ...bucketFeatureSettings(env),
  };
}

const DOMAIN =
  /^(?=.{1,200}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** Website hosting by Host, delivery of bucket access logs. */
function bucketFeatureSettings(env: Env) {
  const domain = env("STORE_WEBSITE_DOMAIN")?.toLowerCase() || undefined;
  if (domain !== undefined && !DOMAIN.test(domain)) {
    throw new ConfigError(`STORE_WEBSITE_DOMAIN must be a DNS name, got "${domain}"`);
  }
  return {
    websiteDomain: domain,
    bucketLogInterval: intSetting(env, "STORE_BUCKET_LOG_INTERVAL", 300, 1, 86400),
    bucketLogBatch: intSetting(env, "STORE_BUCKET_LOG_BATCH", 1000, 1, 1_000_000),
  };
}

/** Healing, drive checks, metrics access and metadata backups. */
function operationsSettings(env: Env) {
  const metricsToken = env("STORE_METRICS_TOKEN") || undefined;
  if (metricsToken !== undefined && !/^[\x21-\x7e]{16,256}$/.test(metricsToken)) {
    throw new ConfigError(
      "STORE_METRICS_TOKEN must be 16-256 printable characters without spaces",
    );
  }
  const backupDir = env("STORE_BACKUP_DIR") || undefined;
  const backupInterval = intSetting(env, "STORE_BACKUP_INTERVAL", 0, 0, 365 * 24 * 3600);
  if (backupInterval > 0 && backupDir === undefined) {
    throw new ConfigError("STORE_BACKUP_INTERVAL needs STORE_BACKUP_DIR");
  }
  return {
    healThrottle: intSetting(env, "STORE_HEAL_THROTTLE", 100, 0, 10_000),
    healQueue: intSetting(env, "STORE_HEAL_QUEUE", 10_000, 1, 10_000_000),
    driveErrorLimit: intSetting(env, "STORE_DRIVE_ERROR_LIMIT", 5, 1, 1_000_000),
    driveCheckInterval: intSetting(env, "STORE_DRIVE_CHECK_INTERVAL", 10, 1, 3600),
    metricsToken,
    backupDir,
    backupInterval,
    backupKeep: intSetting(env, "STORE_BACKUP_KEEP", 7, 1, 10_000),
    checkOnStart: choiceSetting(env, "STORE_CHECK_ON_START", ["true", "false"], "false") ===
      "true",
  };
}

const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];

function metaDbSetting(env: Env): Config["metaDb"] {
  const pool = intSetting(env, "STORE_META_POOL", 10, 1, 1000);
  const raw = env("STORE_META_URL") || undefined;
  if (raw === undefined) return undefined;
  if (env("STORE_BACKUP_DIR")) {
    throw new ConfigError(
      "STORE_BACKUP_DIR snapshots the SQLite metadata; with STORE_META_URL back up PostgreSQL " +
        "with its own tools (pg_dump, pg_basebackup) and unset STORE_BACKUP_DIR",
    );
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError("STORE_META_URL must be a URL: postgres://user:pass@host:port/db");
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new ConfigError("STORE_META_URL must start with postgres:// or postgresql://");
  }
  if (url.hostname === "" || url.pathname.length <= 1) {
    throw new ConfigError("STORE_META_URL must name a host and a database: postgres://host/db");
  }
  const sslmode = url.searchParams.get("sslmode");
  if (sslmode !== null && !SSL_MODES.includes(sslmode)) {
    throw new ConfigError(`STORE_META_URL: sslmode must be one of ${SSL_MODES.join(", ")}`);
  }
  return { url: raw, pool };
}

function ldapSetting(env: Env): LdapConfig {
  try {
    return loadLdapConfig(env);
  } catch (err) {
    if (err instanceof LdapConfigError) throw new ConfigError(err.message);
    throw err;
  }
}

function clusterSetting(env: Env): ClusterConfig | undefined {
  try {
    return loadClusterConfig(env);
  } catch (err) {
    if (err instanceof ClusterConfigError) throw new ConfigError(err.message);
    throw err;
  }
}

function webhookAllowSetting(raw: string | undefined): WebhookAllowList {
  try {
    return parseAllowList(raw);
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
}
