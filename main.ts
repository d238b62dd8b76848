// Entry point: read configuration, open the stores, serve, and shut down cleanly on a signal.
import { join } from "node:path";
import { createHandler } from "./src/app.ts";
import { AccessControl } from "./src/auth/access.ts";
import { loadAdminCredentials } from "./src/auth/admin_credentials.ts";
import { Credentials } from "./src/auth/credentials.ts";
import { loadMasterKey } from "./src/auth/master_key.ts";
import { SecretSealer } from "./src/auth/secrets.ts";
import { SignInLimiter } from "./src/auth/sign_in_limiter.ts";
import { Kms } from "./src/kms/kms.ts";
import { BucketLogger } from "./src/bucketlog/logger.ts";
import { SseKeys } from "./src/object/sse.ts";
import { type Config, ConfigError, loadConfig } from "./src/config.ts";
import { LdapService } from "./src/auth/ldap/service.ts";
import { InFlight } from "./src/http/in_flight.ts";
import { setBodyTimeout } from "./src/http/progress.ts";
import { type ConnectionServer, serveConnections, type TlsKeyPair } from "./src/net/listener.ts";
import { ignoreOrphanedSocketReadErrors } from "./src/net/node_socket_errors.ts";
import { log, setLogLevel, setLogSink } from "./src/log.ts";
import { AuditRecorder } from "./src/audit/recorder.ts";
import { startAuditRetention } from "./src/audit/retention.ts";
import { errorLogSink } from "./src/errorlog/sink.ts";
import { SqliteMetaStore } from "./src/meta/sqlite.ts";
import type { MetaStore } from "./src/meta/store.ts";
import { ObjectLayer } from "./src/object/layer.ts";
import { ReadBudget } from "./src/object/read_budget.ts";
import { PiecePool } from "./src/object/piece_pool.ts";
import { READ_PIECE, SLICE } from "./src/object/read_stream.ts";
import { WriteBuffers } from "./src/object/write_buffers.ts";
import { startMemoryRelease } from "./src/memory/release.ts";
import { ChunkStore } from "./src/storage/chunk_store.ts";
import { DiskReserve } from "./src/storage/disk_reserve.ts";
import { CpuPool } from "./src/storage/cpu_pool.ts";
import { openDrives } from "./src/storage/drives.ts";
import { DIR_MODE, PRIVATE_UMASK, tightenModes } from "./src/storage/private_modes.ts";
import { sweepDrives } from "./src/storage/sweep.ts";
import { startScrubber } from "./src/workers/scrubber.ts";
import { startLifecycle } from "./src/workers/lifecycle.ts";
import { openTarget, parseTargetSpecs } from "./src/events/env_targets.ts";
import { Notifier } from "./src/events/notifier.ts";
import { rulesHook } from "./src/transform/rules.ts";
import { TransformWorkers } from "./src/transform/workers.ts";
import type { NotificationTarget } from "./src/events/target.ts";
import { backgroundThrottle, openDriveMonitor, startOps } from "./src/ops/ops.ts";
import { AccessLog, withAccessLog } from "./src/ops/access_log.ts";
import { ReplicaKeys } from "./src/cluster/object_keys.ts";
import { ClusterNode } from "./src/cluster/node.ts";
import {
  checkDataDirs,
  explainListenError,
  readTlsFiles,
  StartupError,
} from "./src/ops/startup.ts";

/** How long shutdown waits for running requests (uploads) before closing anyway. */
const SHUTDOWN_DRAIN_MS = 60_000;
/** How long the server then waits for connections to close. */
const SHUTDOWN_CLOSE_MS = 5_000;
/** The least time between two memory releases (src/memory/release.ts). */
const MEMORY_RELEASE_INTERVAL_MS = 2_000;
/** ... and the RSS growth since the last one that makes another worth its collection. */
const MEMORY_RELEASE_GROWTH = 8 * 1024 * 1024;
/** Read buffers kept for the next GET (README, Memory): 16 MiB at most. */
const READ_PIECES_KEPT = 16;
/** Buffers of slow clients' copies kept for the next (README, Memory): 16 MiB at most. */
const READ_SLICES_KEPT = 256;

/** Tightens the modes an older version left (see private_modes.ts); logs what it did. */
function tightenInBackground(roots: string[]): Promise<void> {
  const started = performance.now();
  return tightenModes(roots).then(
    (report) =>
      log("info", "Data directory modes tightened", {
        ...report,
        ms: Math.round(performance.now() - started),
      }),
    (err) => log("warn", "Tightening data directory modes failed", { error: String(err) }),
  );
}

/** Directory sign-in: an unreachable directory is logged, and local users keep working. */
async function startLdap(config: Config, meta: MetaStore): Promise<LdapService> {
  let caPem: string | undefined;
  if (config.ldap.caFile) {
    try {
      caPem = await Deno.readTextFile(config.ldap.caFile);
    } catch (err) {
      console.error(`Configuration error: STORE_LDAP_TLS_CA_FILE cannot be read: ${err}`);
      Deno.exit(2);
    }
  }
  // Loaded only when sign-in through a directory is on, like the PostgreSQL store below: each
  // brings an npm client and the Node modules it needs (several MiB of an idle server).
  const { Directory } = await import("./src/auth/ldap/directory.ts");
  const directory = new Directory(config.ldap, caPem);
  directory.check().then(
    () => log("info", "LDAP directory reachable", { urls: config.ldap.urls }),
    (err) =>
      log("error", "LDAP directory unreachable: directory sign-ins fail until it answers", {
        urls: config.ldap.urls,
        error: err instanceof Error ? err.message : String(err),
      }),
  );
  return new LdapService(config.ldap, directory, meta, {
    maxFailures: config.signInLimit,
    windowMs: config.signInWindow * 1000,
  });
}

/**
 * The metadata store: PostgreSQL when STORE_META_URL is set (connected and migrated here), else
 * the SQLite file; a database that cannot be opened stops the start with one line.
 */
async function openMetadata(config: Config): Promise<MetaStore> {
  const audit = config.audit;
  const clusterNode = config.cluster?.nodeId;
  if (config.metaDb) {
    try {
      const { PgMetaStore } = await import("./src/meta/pg/store.ts");
      const meta = await PgMetaStore.open({ ...config.metaDb, audit, clusterNode });
      const url = new URL(config.metaDb.url);
      log("info", "Metadata in PostgreSQL", {
        host: url.host,
        database: url.pathname.slice(1),
        pool: config.metaDb.pool,
      });
      return meta;
    } catch (err) {
      throw new StartupError(
        `STORE_META_URL: the PostgreSQL metadata database cannot be opened: ${
          err instanceof Error ? err.message : err
        }`,
      );
    }
  }
  const path = join(config.dataDir, "meta.db");
  try {
    return new SqliteMetaStore(path, { audit, clusterNode });
  } catch (err) {
    console.error(
      `The metadata database ${path} cannot be opened (${
        err instanceof Error ? err.message : err
      }); restore a backup (see the README)`,
    );
    Deno.exit(2);
  }
}

/** Every start-up failure is one line naming the cause (and the setting), exit code 2. */
function startupFailed(err: unknown): never {
  if (err instanceof ConfigError) console.error(`Configuration error: ${err.message}`);
  else if (err instanceof StartupError) console.error(`Start-up error: ${err.message}`);
  else {
    const name = err instanceof Error ? err.name : "Error";
    const message = err instanceof Error ? err.message : String(err);
    console.error(`Start-up error: ${name}: ${message.split("\n")[0]}`);
  }
  Deno.exit(2);
}

async function main(): Promise<void> {
  // Listening before start() returns: a signal that arrives while the server is still starting
  // (after it logged "Listening") waits for it and then stops it gracefully.
  let stop: ((signal: string) => Promise<void>) | undefined;
  let early: string | undefined;
  const onSignal = (signal: string) => {
    if (stop) void stop(signal);
    else early ??= signal;
  };
  Deno.addSignalListener("SIGTERM", () => onSignal("SIGTERM"));
  Deno.addSignalListener("SIGINT", () => onSignal("SIGINT"));
  ignoreOrphanedSocketReadErrors();
  let finished: Promise<void>;
  try {
    ({ stop, finished } = await start());
  } catch (err) {
    startupFailed(err);
  }
  if (early) void stop(early);
  await finished;
}

/** Opens everything and starts serving; throws what keeps the server from starting. */
async function start() {
  const config = loadConfig();
  const targets: NotificationTarget[] = parseTargetSpecs(Deno.env.toObject()).map(openTarget);
  setLogLevel(config.logLevel);
  const startedAt = Date.now();
  // Everything the server creates is for its own account only (meta.db and its WAL too).
  Deno.umask(PRIVATE_UMASK);
  await checkDataDirs(config, (path) => Deno.mkdir(path, { recursive: true, mode: DIR_MODE }));
  const tlsPair = config.tls ? await readTlsFiles(config.tls) : undefined;
  const accessLog = config.accessLog ? await openAccessLog(config.accessLog.file) : undefined;
  const admin = await loadAdminCredentials(config.dataDir, {
    user: config.adminUser,
    password: config.adminPassword,
  });
  if (admin.generated) {
    console.log("Generated administrator credentials (shown once, kept in the data directory):");
    console.log(`  access key / user:     ${admin.user}`);
    console.log(`  secret key / password: ${admin.password}`);
  }
  const meta = await openMetadata(config);
  if (config.checkOnStart) {
    const problems = await meta.quickCheck().catch((err) => [String(err)]);
    if (problems.join() !== "ok") {
      console.error(
        `The metadata database failed its integrity check (STORE_CHECK_ON_START): ` +
          `${problems.slice(0, 5).join("; ")}; restore a backup (see the README)`,
      );
      Deno.exit(2);
    }
    log("info", "Metadata integrity check passed");
  }
  // Warnings and errors from here on are also kept in the queryable error log.
  setLogSink(errorLogSink(meta, config.errorLogMax));
  const auditRetention = startAuditRetention(meta, config.audit ? config.auditRetentionDays : 0);
  const drives = await openDrives(
    config.dataDirs,
    { register: (uuid, path) => meta.driveId(uuid, path), knownAt: (path) => meta.driveAt(path) },
    (message) => log("warn", message),
  );
  // The healer exists only after the chunk store; drives that return meanwhile wait for it.
  let healDrive = (_id: number) => {};
  const monitor = await openDriveMonitor(meta, drives, config, (id) => healDrive(id));
  // Workers start with the first large upload and stop after 30 s without work (README, Memory).
  const cpu = new CpuPool(config.cpuWorkers, {
    onError: (message) => log("warn", message),
    idleMs: 30_000,
    onIdleStop: () => memoryRelease?.soon(),
  });
  const chunks = new ChunkStore(meta, {
    drives,
    layout: config.erasure,
    compression: config.compression,
    dedup: config.dedup,
    cpu,
    monitor,
  });
  const readBudget = new ReadBudget(config.readBufferMax);
  const readPieces = new PiecePool(READ_PIECE, READ_PIECES_KEPT);
  const readSlices = new PiecePool(SLICE, READ_SLICES_KEPT);
  const writeBuffers = new WriteBuffers(config.writeBufferMax);
  const layer = new ObjectLayer(meta, chunks, {
    inlineMax: config.inlineMax,
    chunkSize: config.chunkSize,
    read: {
      budget: readBudget,
      stallMs: config.bodyTimeout * 1000,
      pieces: readPieces,
      slices: readSlices,
    },
    write: writeBuffers,
  });
  log("info", "Storage", {
    drives: drives.list.map((d) => d.path),
    erasure: `${config.erasure.dataShards}+${config.erasure.parityShards}`,
    chunkSize: config.chunkSize,
    compression: config.compression,
    dedup: config.dedup,
    cpuWorkers: config.cpuWorkers,
  });
  const inFlight = new InFlight();
  const memoryRelease = config.memoryReleaseMs > 0
    ? startMemoryRelease({
      activity: () => inFlight.started,
      busy: () =>
        inFlight.running > 0 || readBudget.used > 0 || writeBuffers.held > writeBuffers.kept,
      dropKept: () => {
        writeBuffers.dropKept();
        readPieces.dropKept();
        readSlices.dropKept();
        cpu.dropKept();
      },
      quietMs: config.memoryReleaseMs,
      minIntervalMs: MEMORY_RELEASE_INTERVAL_MS,
      minGrowthBytes: MEMORY_RELEASE_GROWTH,
      onRelease: (r) =>
        log("debug", "Memory released", {
          ms: Math.round(r.ms),
          rssBefore: r.rssBefore,
          rssAfter: r.rssAfter,
        }),
    })
    : undefined;
  const reserve = new DiskReserve(join(config.dataDir, "reserve"), config.diskReserve);
  if (!(await reserve.ensure())) {
    log("warn", "The disk is full: only reads and deletes are served until there is room", {
      dataDir: config.dataDir,
    });
  }
  const masterKey = await loadMasterKey(config.dataDir, config.masterKey);
  const sealer = new SecretSealer(masterKey);
  const throttle = backgroundThrottle(config);
  const scrubber = startScrubber(chunks, config.scrubInterval, throttle);
  const lifecycle = startLifecycle(layer, {
    intervalSeconds: config.lifecycleInterval,
    daySeconds: config.lifecycleDay,
  });
  const notifier = new Notifier({
    meta,
    region: config.region,
    targets,
    allow: config.webhookAllow,
    queueLimit: config.notifyQueueLimit,
    retentionMs: config.feedRetention * 1000,
    retryMaxMs: config.notifyRetryMax * 1000,
    wake: layer.committed,
  });
  await notifier.start();
  const sseKeys = new SseKeys(masterKey);
  layer.jobsFor = rulesHook(meta);
  const kms = new Kms(meta, masterKey);
  const transforms = new TransformWorkers(layer, { sse: sseKeys, kms }, config.transform);
  await transforms.start();
  const cluster = config.cluster
    ? new ClusterNode(config.cluster, meta, layer, new ReplicaKeys(meta, sseKeys, kms), sealer)
    : undefined;
  if (cluster) {
    const queued = await meta.queueUnreplicatedBuckets();
    if (queued > 0) log("info", "Buckets made before clustering queued for the others", { queued });
    const users = await meta.queueUnreplicatedUsers();
    if (users > 0) log("info", "Users made before clustering queued for the others", { users });
  }
  const ops = startOps({
    config,
    meta,
    chunks,
    monitor,
    throttle,
    scrubber,
    notifier,
    cluster,
    memory: () => ({
      writeBufferBytes: writeBuffers.held,
      writeBufferWaits: writeBuffers.waits,
      readBufferBytes: readBudget.used,
      readPiecesReused: readPieces.reused,
      releases: memoryRelease?.count ?? 0,
    }),
  });
  healDrive = (id) => ops.healer.healDrive(id);
  log("info", "Notification targets", { targets: targets.map((t) => `${t.kind}:${t.id}`) });
  const signIns = new SignInLimiter({
    maxFailures: config.signInLimit,
    windowMs: config.signInWindow * 1000,
  });
  const ldap = config.ldap.enabled ? await startLdap(config, meta) : undefined;
  if (cluster && ldap) cluster.mappingsChanged = () => ldap.mappingsChanged();
  const bucketLog = new BucketLogger({
    layer,
    sseKeys,
    region: config.region,
    intervalMs: config.bucketLogInterval * 1000,
    batchSize: config.bucketLogBatch,
    spoolDir: join(config.dataDir, "access-log-spool"),
  });
  await bucketLog.start();
  const appHandler = createHandler({
    config,
    layer,
    credentials: new Credentials(admin, meta, sealer, ldap),
    access: new AccessControl(meta),
    sealer,
    inFlight,
    scrubber,
    lifecycle,
    sseKeys,
    kms,
    bucketLog,
    notifier,
    reserve,
    ops,
    transforms,
    audit: new AuditRecorder(meta, config.audit),
    signIns,
    sharePasswords: new SignInLimiter({
      maxFailures: config.signInLimit,
      windowMs: config.signInWindow * 1000,
    }),
    cluster,
  });

  const handler = accessLog ? withAccessLog(accessLog, config.trustProxy, appHandler) : appHandler;

  setBodyTimeout(config.bodyTimeout * 1000);
  const server = listen(config, tlsPair, handler);
  ops.metrics.countConnections(() => server.open);
  await cluster?.start();

  const tightening = tightenInBackground([config.dataDir, ...drives.list.map((d) => d.path)]);
  const sweep = sweepDrives(chunks, startedAt).then(
    (found) => log("info", "Start-up sweep finished", { ...found }),
    (err) => log("error", "Start-up sweep failed", { error: String(err) }),
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log("info", "Shutting down", { signal });
    // Heartbeats stop and the other nodes hear this one is going, while it still answers.
    await cluster?.stop();
    await inFlight.drain(SHUTDOWN_DRAIN_MS);
    // A client that stalls mid-body would keep shutdown() waiting forever: bound it.
    await Promise.race([server.shutdown(), new Promise((r) => setTimeout(r, SHUTDOWN_CLOSE_MS))]);
    await scrubber.stop();
    await ops.stop();
    await lifecycle.stop();
    await bucketLog.stop();
    await transforms.stop();
    auditRetention.stop();
    await notifier.stop();
    await sweep;
    await tightening;
    // Shard files of chunks freed just before; what is left past this the next start sweeps.
    await chunks.reclaimer.stop(SHUTDOWN_CLOSE_MS);
    setLogSink(undefined);
    await meta.close();
    cpu.close();
    memoryRelease?.stop();
    await accessLog?.close();
    log("info", "Stopped");
    Deno.exit(0);
  };
  // SIGHUP: new connections get the certificate and key as the files are now; the access log
  // file is opened again (after rotation). Without a listener SIGHUP would end the process.
  Deno.addSignalListener("SIGHUP", () => {
    if (config.tls && tlsPair) void reloadTls(config.tls, server);
    if (accessLog?.file) {
      accessLog.reopen().catch((err) =>
        log("error", "Reopening the access log failed", { error: String(err) })
      );
    }
  });
  return { stop, finished: server.finished };
}

function listen(
  config: Config,
  tls: TlsKeyPair | undefined,
  handler: Deno.ServeHandler<Deno.NetAddr>,
): ConnectionServer {
  try {
    return serveConnections({
      hostname: config.address,
      port: config.port,
      tls,
      limits: {
        headerTimeoutMs: config.headerTimeout * 1000,
        idleTimeoutMs: config.idleTimeout * 1000,
        maxConnections: config.maxConnections,
        stallMs: config.bodyTimeout * 1000,
      },
      onListen: ({ hostname, port }) => {
        log("info", "Listening", {
          url: `${tls ? "https" : "http"}://${hostname}:${port}`,
          dataDir: config.dataDir,
          maxConnections: config.maxConnections,
        });
      },
      onError: (error) => {
        log("error", "Request failed", {
          error: error instanceof Error ? error.stack : `${error}`,
        });
        return new Response(null, { status: 500 });
      },
      warn: (message, fields) => log("warn", message, fields),
    }, handler);
  } catch (err) {
    throw explainListenError(err, config) ?? err;
  }
}

async function reloadTls(files: NonNullable<Config["tls"]>, server: ConnectionServer) {
  try {
    await server.reloadTls(await readTlsFiles(files));
    log("info", "TLS certificate reloaded", { cert: files.certFile });
  } catch (err) {
    log("error", "TLS certificate not reloaded; the previous one stays in use", {
      cert: files.certFile,
      error: err instanceof Error ? err.message : String(err),
    });
  }
}

async function openAccessLog(file: string | undefined): Promise<AccessLog> {
  try {
    return await AccessLog.open(file);
  } catch (err) {
    throw new StartupError(
      `STORE_ACCESS_LOG_FILE: cannot open ${file}: ${err instanceof Error ? err.message : err}`,
    );
  }
}

if (import.meta.main) await main();
