import { assertEquals } from "../tests/integration/assert.ts";
import { ConfigError, loadConfig } from "./config.ts";

function load(env: Record<string, string>) {
  return loadConfig((name) => env[name]);
}

function rejects(env: Record<string, string>, pattern: RegExp): void {
  try {
    load(env);
  } catch (err) {
    if (err instanceof ConfigError && pattern.test(err.message)) return;
    throw err;
  }
  throw new Error(`Expected a configuration error for ${JSON.stringify(env)}`);
}

Deno.test("defaults", () => {
  const c = load({});
  assertEquals(
    [c.address, c.port, c.dataDir, c.region, c.dialect, c.adminUser, c.inlineMax],
    ["0.0.0.0", 9000, "./data", "us-east-1", "store", undefined, 65536],
  );
});

Deno.test("bad values are refused with a message naming the variable", () => {
  rejects({ STORE_PORT: "http" }, /STORE_PORT must be a whole number/);
  rejects({ STORE_PORT: "70000" }, /STORE_PORT must be between/);
  rejects({ STORE_DIALECT: "s3" }, /STORE_DIALECT must be one of store, amz/);
  rejects({ STORE_REGION: "US East" }, /STORE_REGION/);
  rejects({ STORE_ADMIN_USER: "admin" }, /must be set together/);
  rejects({ STORE_ADMIN_USER: "admin", STORE_ADMIN_PASSWORD: "short" }, /8-128 characters/);
  rejects({ STORE_INLINE_MAX: "-1" }, /STORE_INLINE_MAX/);
});

Deno.test("lifecycle settings: defaults and bounds", () => {
  const c = load({});
  assertEquals([c.lifecycleInterval, c.lifecycleDay], [3600, 86400]);
  const short = load({ STORE_LIFECYCLE_INTERVAL: "1", STORE_LIFECYCLE_DAY: "1" });
  assertEquals([short.lifecycleInterval, short.lifecycleDay], [1, 1]);
  rejects({ STORE_LIFECYCLE_INTERVAL: "0" }, /STORE_LIFECYCLE_INTERVAL must be between 1/);
  rejects({ STORE_LIFECYCLE_DAY: "0" }, /STORE_LIFECYCLE_DAY must be between 1 and 86400/);
  rejects({ STORE_LIFECYCLE_DAY: "1d" }, /STORE_LIFECYCLE_DAY must be a whole number/);
});

Deno.test("STORE_SIGV2: on by default, off, nothing else", () => {
  assertEquals(load({}).sigV2, true);
  assertEquals(load({ STORE_SIGV2: "off" }).sigV2, false);
  assertEquals(load({ STORE_SIGV2: "on" }).sigV2, true);
  rejects({ STORE_SIGV2: "yes" }, /STORE_SIGV2 must be one of on, off/);
});

Deno.test("audit and error log settings: defaults, values, bounds", () => {
  const d = load({});
  assertEquals([d.audit, d.auditRetentionDays, d.errorLogMax], [true, 0, 10_000]);
  const set = load({
    STORE_AUDIT: "off",
    STORE_AUDIT_RETENTION_DAYS: "90",
    STORE_ERROR_LOG_MAX: "500",
  });
  assertEquals([set.audit, set.auditRetentionDays, set.errorLogMax], [false, 90, 500]);
  rejects({ STORE_AUDIT: "no" }, /STORE_AUDIT must be one of on, off/);
  rejects({ STORE_AUDIT_RETENTION_DAYS: "-1" }, /STORE_AUDIT_RETENTION_DAYS/);
  rejects({ STORE_AUDIT_RETENTION_DAYS: "1.5" }, /STORE_AUDIT_RETENTION_DAYS/);
  rejects({ STORE_ERROR_LOG_MAX: "0" }, /STORE_ERROR_LOG_MAX/);
});

Deno.test("connection limits and timeouts: defaults follow the descriptor limit", () => {
  const c = loadConfig(() => undefined, 1024);
  assertEquals(
    [c.headerTimeout, c.idleTimeout, c.bodyTimeout, c.maxConnections, c.readBufferMax],
    [10, 30, 30, 512, 64 * 1024 * 1024],
  );
  assertEquals(loadConfig(() => undefined, 1_000_000).maxConnections, 10_000);
  const set = loadConfig(
    (n) => ({ STORE_MAX_CONNECTIONS: "900" } as Record<string, string>)[n],
    1024,
  );
  assertEquals(set.maxConnections, 900);
  try {
    loadConfig((n) => ({ STORE_MAX_CONNECTIONS: "1000" } as Record<string, string>)[n], 1024);
    throw new Error("a cap within 64 of the descriptor limit was accepted");
  } catch (err) {
    if (!(err instanceof ConfigError && /STORE_MAX_CONNECTIONS/.test(err.message))) throw err;
  }
  rejects({ STORE_HEADER_TIMEOUT: "0" }, /STORE_HEADER_TIMEOUT must be between/);
  rejects({ STORE_READ_BUFFER_MAX: "1000" }, /STORE_READ_BUFFER_MAX must be between/);
});

Deno.test("STORE_WRITE_BUFFER_MAX: 64 MiB by default, at least 1 MiB", () => {
  assertEquals(load({}).writeBufferMax, 64 * 1024 * 1024);
  assertEquals(load({ STORE_WRITE_BUFFER_MAX: "16777216" }).writeBufferMax, 16 * 1024 * 1024);
  rejects({ STORE_WRITE_BUFFER_MAX: "1000" }, /STORE_WRITE_BUFFER_MAX must be between/);
});

Deno.test("STORE_MEMORY_RELEASE_MS: 500 by default, 0 turns it off", () => {
  assertEquals(load({}).memoryReleaseMs, 500);
  assertEquals(load({ STORE_MEMORY_RELEASE_MS: "0" }).memoryReleaseMs, 0);
  rejects({ STORE_MEMORY_RELEASE_MS: "9999999" }, /STORE_MEMORY_RELEASE_MS must be between/);
});

Deno.test("STORE_LDAP_*: off by default, presets, validation", () => {
  const off = load({}).ldap;
  assertEquals([off.enabled, off.cacheTtl, off.timeout, off.preset], [false, 300, 5, "openldap"]);
  const base = {
    STORE_LDAP_ENABLED: "true",
    STORE_LDAP_URL: "ldap://dir1:389, ldaps://dir2:636",
    STORE_LDAP_BASE_DN: "dc=example,dc=org",
  };
  const c = load(base).ldap;
  assertEquals(c.urls, ["ldap://dir1:389", "ldaps://dir2:636"]);
  assertEquals([c.userFilter, c.groupFilter, c.groupBaseDn, c.groupNameAttr], [
    "(uid={username})",
    "(|(member={dn})(uniqueMember={dn}))",
    "dc=example,dc=org",
    "cn",
  ]);
  const ad = load({ ...base, STORE_LDAP_PRESET: "ad" }).ldap;
  assertEquals([ad.userFilter, ad.memberOfAttr, ad.disabledBy, ad.displayNameAttr], [
    "(sAMAccountName={username})",
    "memberOf",
    "userAccountControl",
    "displayName",
  ]);
  assertEquals(load({ ...base, STORE_LDAP_PRESET: "389ds" }).ldap.disabledBy, "nsAccountLock");
  const custom = load({
    ...base,
    STORE_LDAP_USER_FILTER: "(&(objectClass=person)(mail={username}))",
    STORE_LDAP_CACHE_TTL: "60",
    STORE_LDAP_TIMEOUT: "2",
    STORE_LDAP_TLS_SKIP_VERIFY: "true",
  }).ldap;
  assertEquals([custom.userFilter, custom.cacheTtl, custom.timeout, custom.skipVerify], [
    "(&(objectClass=person)(mail={username}))",
    60,
    2,
    true,
  ]);
  rejects({ STORE_LDAP_ENABLED: "true" }, /STORE_LDAP_URL is required/);
  rejects({ ...base, STORE_LDAP_BASE_DN: "" }, /STORE_LDAP_BASE_DN is required/);
  rejects({ ...base, STORE_LDAP_URL: "http://dir" }, /STORE_LDAP_URL/);
  rejects({ ...base, STORE_LDAP_PRESET: "novell" }, /STORE_LDAP_PRESET/);
  rejects({ ...base, STORE_LDAP_ENABLED: "yes" }, /STORE_LDAP_ENABLED must be true or false/);
  rejects({ ...base, STORE_LDAP_USER_FILTER: "(uid=alice)" }, /must contain \{username\}/);
  rejects({ ...base, STORE_LDAP_GROUP_FILTER: "member={dn}" }, /must be an LDAP filter/);
  rejects({ ...base, STORE_LDAP_BIND_DN: "cn=reader" }, /go together/);
  rejects({ ...base, STORE_LDAP_STARTTLS: "true" }, /STORE_LDAP_STARTTLS is for ldap:\/\//);
  rejects({ ...base, STORE_LDAP_CACHE_TTL: "0" }, /STORE_LDAP_CACHE_TTL/);
  rejects({ ...base, STORE_LDAP_TIMEOUT: "1s" }, /STORE_LDAP_TIMEOUT/);
});

Deno.test("operations settings: healing, drive checks, metrics token, backups", () => {
  const c = load({});
  assertEquals(
    [c.healThrottle, c.healQueue, c.driveErrorLimit, c.driveCheckInterval, c.metricsToken],
    [100, 10_000, 5, 10, undefined],
  );
  assertEquals([c.backupDir, c.backupInterval, c.backupKeep, c.checkOnStart], [
    undefined,
    0,
    7,
    false,
  ]);
  const set = load({
    STORE_HEAL_THROTTLE: "0",
    STORE_HEAL_QUEUE: "50",
    STORE_DRIVE_ERROR_LIMIT: "2",
    STORE_DRIVE_CHECK_INTERVAL: "1",
    STORE_METRICS_TOKEN: "scrape-token-0123456789",
    STORE_BACKUP_DIR: "/backups",
    STORE_BACKUP_INTERVAL: "3600",
    STORE_BACKUP_KEEP: "3",
    STORE_CHECK_ON_START: "true",
  });
  assertEquals(
    [set.healThrottle, set.healQueue, set.driveErrorLimit, set.driveCheckInterval],
    [0, 50, 2, 1],
  );
  assertEquals(
    [set.metricsToken, set.backupDir, set.backupInterval, set.backupKeep, set.checkOnStart],
    ["scrape-token-0123456789", "/backups", 3600, 3, true],
  );
  rejects({ STORE_HEAL_THROTTLE: "-1" }, /STORE_HEAL_THROTTLE must be a whole number/);
  rejects({ STORE_HEAL_QUEUE: "0" }, /STORE_HEAL_QUEUE must be between/);
  rejects({ STORE_DRIVE_ERROR_LIMIT: "0" }, /STORE_DRIVE_ERROR_LIMIT must be between/);
  rejects({ STORE_DRIVE_CHECK_INTERVAL: "0" }, /STORE_DRIVE_CHECK_INTERVAL must be between/);
  rejects({ STORE_METRICS_TOKEN: "short" }, /STORE_METRICS_TOKEN must be 16-256/);
  rejects({ STORE_METRICS_TOKEN: "has a space in it ok" }, /STORE_METRICS_TOKEN/);
  rejects({ STORE_BACKUP_INTERVAL: "60" }, /STORE_BACKUP_INTERVAL needs STORE_BACKUP_DIR/);
  rejects({ STORE_BACKUP_KEEP: "0" }, /STORE_BACKUP_KEEP must be between/);
  rejects({ STORE_CHECK_ON_START: "yes" }, /STORE_CHECK_ON_START must be one of true, false/);
});

Deno.test("TLS, secrets over plain HTTP, proxy and access log settings", () => {
  const c = load({});
  assertEquals([c.tls, c.allowInsecureSseC, c.trustProxy, c.accessLog], [
    undefined,
    false,
    false,
    undefined,
  ]);
  const on = load({
    STORE_TLS_CERT: "/etc/store/cert.pem",
    STORE_TLS_KEY: "/etc/store/key.pem",
    STORE_ALLOW_INSECURE_SSE_C: "true",
    STORE_TRUST_PROXY: "on",
    STORE_ACCESS_LOG: "on",
    STORE_ACCESS_LOG_FILE: "/var/log/store/access.log",
  });
  assertEquals(on.tls, { certFile: "/etc/store/cert.pem", keyFile: "/etc/store/key.pem" });
  assertEquals([on.allowInsecureSseC, on.trustProxy], [true, true]);
  assertEquals(on.accessLog, { file: "/var/log/store/access.log" });
  assertEquals(load({ STORE_ACCESS_LOG: "on" }).accessLog, { file: undefined });
  rejects({ STORE_TLS_CERT: "/c.pem" }, /STORE_TLS_CERT and STORE_TLS_KEY must be set together/);
  rejects({ STORE_TLS_KEY: "/k.pem" }, /must be set together/);
  rejects({ STORE_ALLOW_INSECURE_SSE_C: "maybe" }, /STORE_ALLOW_INSECURE_SSE_C must be true or/);
  rejects({ STORE_TRUST_PROXY: "2" }, /STORE_TRUST_PROXY must be true or false/);
  rejects({ STORE_ACCESS_LOG: "json" }, /STORE_ACCESS_LOG must be one of on, off/);
});

Deno.test("website domain: off by default, lower-cased, DNS names only", () => {
  assertEquals(load({}).websiteDomain, undefined);
  assertEquals(load({ STORE_WEBSITE_DOMAIN: "Web.Example.COM" }).websiteDomain, "web.example.com");
  rejects({ STORE_WEBSITE_DOMAIN: "web example" }, /STORE_WEBSITE_DOMAIN must be a DNS name/);
  rejects({ STORE_WEBSITE_DOMAIN: "-x.example" }, /STORE_WEBSITE_DOMAIN must be a DNS name/);
  rejects({ STORE_WEBSITE_DOMAIN: "x..example" }, /STORE_WEBSITE_DOMAIN must be a DNS name/);
});

Deno.test("bucket access log delivery: defaults and bounds", () => {
  assertEquals([load({}).bucketLogInterval, load({}).bucketLogBatch], [300, 1000]);
  const set = load({ STORE_BUCKET_LOG_INTERVAL: "5", STORE_BUCKET_LOG_BATCH: "10" });
  assertEquals([set.bucketLogInterval, set.bucketLogBatch], [5, 10]);
  rejects({ STORE_BUCKET_LOG_INTERVAL: "0" }, /STORE_BUCKET_LOG_INTERVAL must be between 1/);
  rejects({ STORE_BUCKET_LOG_BATCH: "x" }, /STORE_BUCKET_LOG_BATCH must be a whole number/);
});

Deno.test("an empty region and an erasure layout wider than the drives are refused", () => {
  rejects({ STORE_REGION: "" }, /STORE_REGION is set but empty/);
  rejects({ STORE_DATA_DIRS: "/a,/b,/c", STORE_EC: "2+2" }, /STORE_EC 2\+2 is wider than the 3/);
  assertEquals(load({ STORE_DATA_DIRS: "/a,/b,/c,/d", STORE_EC: "2+2" }).erasure, {
    dataShards: 2,
    parityShards: 2,
  });
  // One drive may hold every shard (bitrot repair at the cost of space).
  assertEquals(load({ STORE_EC: "4+2" }).erasure, { dataShards: 4, parityShards: 2 });
});

Deno.test("transformation settings: defaults and bounds", () => {
  assertEquals(load({}).transform, {
    workers: 1,
    maxPixels: 100_000_000,
    maxBytes: 64 * 1024 * 1024,
  });
  const set = load({
    STORE_TRANSFORM_WORKERS: "0",
    STORE_TRANSFORM_MAX_PIXELS: "1000000",
    STORE_TRANSFORM_MAX_BYTES: "1048576",
  });
  assertEquals(set.transform, { workers: 0, maxPixels: 1_000_000, maxBytes: 1_048_576 });
  rejects({ STORE_TRANSFORM_WORKERS: "65" }, /STORE_TRANSFORM_WORKERS must be between/);
  rejects({ STORE_TRANSFORM_MAX_PIXELS: "0" }, /STORE_TRANSFORM_MAX_PIXELS/);
  rejects({ STORE_TRANSFORM_MAX_BYTES: "lots" }, /STORE_TRANSFORM_MAX_BYTES must be a whole/);
});

const SECRET = "0123456789abcdef0123456789abcdef";

Deno.test("cluster: off unless its identity settings are given", () => {
  assertEquals(load({}).cluster, undefined);
  // Timing settings alone do not turn clustering on.
  assertEquals(load({ STORE_CLUSTER_HEARTBEAT: "1" }).cluster, undefined);
});

Deno.test("cluster: settings parsed, seeds normalised, own URL left out of the seeds", () => {
  const c = load({
    STORE_CLUSTER_NODE_ID: "node-a",
    STORE_CLUSTER_ADVERTISE_URL: "http://10.0.0.1:9000/",
    STORE_CLUSTER_SEEDS: " http://10.0.0.1:9000, https://b.example:9443 ,http://10.0.0.3:9000,",
    STORE_CLUSTER_SECRET: SECRET,
  }).cluster;
  assertEquals(c, {
    nodeId: "node-a",
    advertiseUrl: "http://10.0.0.1:9000",
    seeds: ["https://b.example:9443", "http://10.0.0.3:9000"],
    secret: SECRET,
    heartbeatMs: 2000,
    suspectMs: 10_000,
    deadMs: 60_000,
    antiEntropyMs: 600_000,
    antiEntropyRate: 5000,
    tombstoneTtlMs: 7 * 86_400_000,
  });
  const timed = load({
    STORE_CLUSTER_NODE_ID: "a",
    STORE_CLUSTER_ADVERTISE_URL: "http://127.0.0.1:1",
    STORE_CLUSTER_SECRET: SECRET,
    STORE_CLUSTER_HEARTBEAT: "1",
    STORE_CLUSTER_SUSPECT_AFTER: "3",
    STORE_CLUSTER_DEAD_AFTER: "6",
  }).cluster!;
  assertEquals([timed.seeds, timed.heartbeatMs, timed.suspectMs, timed.deadMs], [
    [],
    1000,
    3000,
    6000,
  ]);
});

Deno.test("cluster: incomplete, short-secret and malformed settings are refused", () => {
  const base = {
    STORE_CLUSTER_NODE_ID: "a",
    STORE_CLUSTER_ADVERTISE_URL: "http://127.0.0.1:9000",
    STORE_CLUSTER_SECRET: SECRET,
  };
  rejects({ STORE_CLUSTER_SEEDS: "http://127.0.0.1:9001" }, /Clustering needs STORE_CLUSTER_/);
  rejects({ ...base, STORE_CLUSTER_SECRET: "" }, /Clustering needs/);
  rejects({ ...base, STORE_CLUSTER_NODE_ID: "" }, /Clustering needs/);
  rejects({ ...base, STORE_CLUSTER_ADVERTISE_URL: "" }, /Clustering needs/);
  rejects({ ...base, STORE_CLUSTER_SECRET: SECRET.slice(1) }, /STORE_CLUSTER_SECRET must be 32/);
  rejects({ ...base, STORE_CLUSTER_NODE_ID: "a b" }, /STORE_CLUSTER_NODE_ID must be/);
  rejects({ ...base, STORE_CLUSTER_ADVERTISE_URL: "ftp://x:1" }, /ADVERTISE_URL must be an http/);
  rejects({ ...base, STORE_CLUSTER_ADVERTISE_URL: "http://x:1/p" }, /scheme, host and port/);
  rejects({ ...base, STORE_CLUSTER_SEEDS: "http://ok:1,not a url" }, /STORE_CLUSTER_SEEDS must/);
  rejects({ ...base, STORE_CLUSTER_HEARTBEAT: "0" }, /STORE_CLUSTER_HEARTBEAT must be/);
  rejects({ ...base, STORE_CLUSTER_SUSPECT_AFTER: "2" }, /SUSPECT_AFTER must be longer/);
  rejects({ ...base, STORE_CLUSTER_DEAD_AFTER: "10" }, /DEAD_AFTER must be longer/);
});

Deno.test("cluster: STORE_CLUSTER_ANTI_ENTROPY interval and rate", () => {
  const base = {
    STORE_CLUSTER_NODE_ID: "a",
    STORE_CLUSTER_ADVERTISE_URL: "http://127.0.0.1:9000",
    STORE_CLUSTER_SECRET: SECRET,
  };
  const pass = (env: Record<string, string>) => {
    const c = load({ ...base, ...env }).cluster!;
    return [c.antiEntropyMs, c.antiEntropyRate];
  };
  assertEquals(pass({}), [600_000, 5000]);
  assertEquals(pass({ STORE_CLUSTER_ANTI_ENTROPY: "off" }), [undefined, 5000]);
  assertEquals(pass({ STORE_CLUSTER_ANTI_ENTROPY: "OFF" }), [undefined, 5000]);
  assertEquals(pass({ STORE_CLUSTER_ANTI_ENTROPY: "90" }), [90_000, 5000]);
  assertEquals(pass({ STORE_CLUSTER_ANTI_ENTROPY: "30s" }), [30_000, 5000]);
  assertEquals(pass({ STORE_CLUSTER_ANTI_ENTROPY: "10m" }), [600_000, 5000]);
  assertEquals(pass({ STORE_CLUSTER_ANTI_ENTROPY: "2h" }), [7_200_000, 5000]);
  assertEquals(pass({ STORE_CLUSTER_ANTI_ENTROPY_RATE: "0" }), [600_000, 0]);
  assertEquals(pass({ STORE_CLUSTER_ANTI_ENTROPY_RATE: "250" }), [600_000, 250]);
  for (const bad of ["0", "0s", "10 m", "1d", "-5", "soon", "169h"]) {
    rejects({ ...base, STORE_CLUSTER_ANTI_ENTROPY: bad }, /STORE_CLUSTER_ANTI_ENTROPY must be/);
  }
  for (const bad of ["-1", "fast", "1000001", "1.5"]) {
    rejects({ ...base, STORE_CLUSTER_ANTI_ENTROPY_RATE: bad }, /ANTI_ENTROPY_RATE must be/);
  }
});

Deno.test("cluster: STORE_CLUSTER_TOMBSTONE_TTL", () => {
  const base = {
    STORE_CLUSTER_NODE_ID: "a",
    STORE_CLUSTER_ADVERTISE_URL: "http://127.0.0.1:9000",
    STORE_CLUSTER_SECRET: SECRET,
  };
  const ttl = (value?: string) =>
    load({ ...base, ...(value === undefined ? {} : { STORE_CLUSTER_TOMBSTONE_TTL: value }) })
      .cluster!.tombstoneTtlMs;
  assertEquals(ttl(), 7 * 86_400_000);
  assertEquals(ttl("30d"), 30 * 86_400_000);
  assertEquals(ttl("48h"), 48 * 3_600_000);
  assertEquals(ttl("90m"), 90 * 60_000);
  assertEquals(ttl("3600"), 3_600_000);
  for (const bad of ["0", "59m", "366d", "1w", "soon", "-1d", "1.5d"]) {
    rejects({ ...base, STORE_CLUSTER_TOMBSTONE_TTL: bad }, /STORE_CLUSTER_TOMBSTONE_TTL must be/);
  }
});

Deno.test("STORE_META_URL and STORE_META_POOL: PostgreSQL metadata", () => {
  assertEquals(load({}).metaDb, undefined);
  const url = "postgres://store:secret@db.example:5433/meta?sslmode=require";
  assertEquals(load({ STORE_META_URL: url }).metaDb, { url, pool: 10 });
  assertEquals(load({ STORE_META_URL: url, STORE_META_POOL: "32" }).metaDb?.pool, 32);
  assertEquals(load({ STORE_META_URL: "postgresql://h/db" }).metaDb?.url, "postgresql://h/db");
  rejects({ STORE_META_URL: "mysql://h/db" }, /STORE_META_URL must start with postgres:\/\//);
  rejects({ STORE_META_URL: "not a url" }, /STORE_META_URL must be a URL/);
  rejects({ STORE_META_URL: "postgres://h" }, /must name a host and a database/);
  rejects({ STORE_META_URL: "postgres://h/db?sslmode=maybe" }, /sslmode must be one of/);
  rejects({ STORE_META_URL: url, STORE_META_POOL: "0" }, /STORE_META_POOL/);
  rejects({ STORE_META_URL: url, STORE_BACKUP_DIR: "/b" }, /back up PostgreSQL with its own/);
});

Deno.test("console settings: on with 30 min idle and 12 h sessions by default, bounds", () => {
  assertEquals(load({}).console, { enabled: true, idleTimeout: 1800, maxAge: 43200 });
  const c = load({
    STORE_CONSOLE_ENABLED: "off",
    STORE_CONSOLE_IDLE_TIMEOUT: "5",
    STORE_CONSOLE_SESSION_MAX: "60",
  });
  assertEquals(c.console, { enabled: false, idleTimeout: 5, maxAge: 60 });
  rejects({ STORE_CONSOLE_IDLE_TIMEOUT: "0" }, /STORE_CONSOLE_IDLE_TIMEOUT must be between/);
  rejects({ STORE_CONSOLE_SESSION_MAX: "1h" }, /STORE_CONSOLE_SESSION_MAX must be a whole/);
  rejects({ STORE_CONSOLE_ENABLED: "maybe" }, /STORE_CONSOLE_ENABLED must be true or false/);
});
