// Delivers access records of buckets with logging enabled into their target buckets, as log
// objects of many records: when a bucket has gathered `batchSize` records, and every `interval`
// for whatever has gathered. A delivered object is committed like any other; records waiting for
// delivery are kept in memory and in the spool (spool.ts), which a restart delivers again. A
// failed delivery (the target bucket gone, a full disk) is retried at the next interval; at most
// 10 batches a bucket are kept meanwhile, older records are dropped with a warning. A target
// bucket with default encryption gets SSE-S3 log objects (the protocol delivers logs only with
// SSE-S3).
import { log } from "../log.ts";
import type { Encryption, ObjectLayer } from "../object/layer.ts";
import { single } from "../object/layer.ts";
import type { SseKeys } from "../object/sse.ts";
import { defaultEncryption } from "../object/sse_default.ts";
import type { LoggingConfig } from "./config.ts";
import { type AccessRecord, formatRecord, logObjectKey } from "./record.ts";
import { AccessSpool, type SpoolFile } from "./spool.ts";

/** How long a bucket's logging configuration is trusted before it is read again. */
const CONFIG_TTL_MS = 5_000;
const KEPT_BATCHES = 10;
/** Bucket names whose configuration is remembered at most (requests name any bucket they like). */
const MAX_SOURCES = 10_000;

interface Source {
  /** Undefined when the bucket does not exist or does not log. */
  config?: LoggingConfig;
  owner: string;
  loadedAt: number;
}

interface Pending {
  config: LoggingConfig;
  owner: string;
  lines: string[];
  /** The spool files holding `lines` besides the bucket's current one. */
  spooled: SpoolFile[];
}

export interface BucketLoggerOptions {
  layer: ObjectLayer;
  sseKeys: SseKeys;
  region: string;
  intervalMs: number;
  batchSize: number;
  /** Directory of the spool of undelivered records. */
  spoolDir: string;
}

export class BucketLogger {
  readonly #opts: BucketLoggerOptions;
  readonly #sources = new Map<string, Source>();
  readonly #pending = new Map<string, Pending>();
  readonly #flushing = new Set<string>();
  #timer?: ReturnType<typeof setInterval>;
  readonly #spool: AccessSpool;

  constructor(opts: BucketLoggerOptions) {
    this.#opts = opts;
    this.#spool = new AccessSpool(opts.spoolDir);
  }

  /** Takes up the records an earlier run left undelivered, then delivers on the interval. */
  async start(): Promise<void> {
    for (const { bucket, file, lines } of await this.#spool.open()) {
      const source = await this.#source(bucket);
      if (!source.config) {
        log("warn", "Spooled access records dropped: their bucket no longer logs", {
          bucket,
          records: lines.length,
        });
        await file.remove();
        continue;
      }
      const pending = this.#pendingOf(bucket, source.config, source.owner);
      pending.lines.push(...lines);
      pending.spooled.push(file);
    }
    this.#timer = setInterval(() => void this.flushAll(), this.#opts.intervalMs);
    await this.flushAll();
  }

  /** Delivers what is gathered and stops the timer. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.flushAll();
    await this.#spool.close();
  }

  #pendingOf(bucket: string, config: LoggingConfig, owner: string): Pending {
    let pending = this.#pending.get(bucket);
    if (!pending) {
      pending = { config, owner, lines: [], spooled: [] };
      this.#pending.set(bucket, pending);
    }
    pending.config = config;
    return pending;
  }

  /** A changed configuration applies from the next request on. */
  forget(bucket: string): void {
    this.#sources.delete(bucket);
  }

  async #source(bucket: string): Promise<Source> {
    const cached = this.#sources.get(bucket);
    if (cached && Date.now() - cached.loadedAt < CONFIG_TTL_MS) return cached;
    const meta = this.#opts.layer.meta;
    const stored = await meta.getBucketConfig(bucket, "logging");
    const record = stored === undefined ? undefined : await meta.getBucket(bucket);
    const source: Source = {
      config: record && stored !== undefined ? JSON.parse(stored) as LoggingConfig : undefined,
      owner: record?.owner ?? "",
      loadedAt: Date.now(),
    };
    if (this.#sources.size >= MAX_SOURCES) this.#sources.clear();
    this.#sources.set(bucket, source);
    return source;
  }

  /**
   * Records a request to `bucket` when it logs; `record` is built only then. Never throws: a
   * failure to record is logged and the request goes on.
   */
  async note(bucket: string, record: (owner: string) => AccessRecord): Promise<void> {
    try {
      const source = await this.#source(bucket);
      if (!source.config) return;
      const pending = this.#pendingOf(bucket, source.config, source.owner);
      const line = formatRecord(record(source.owner));
      // In memory and spooled in the same step: a delivery takes both or neither.
      pending.lines.push(line);
      this.#spool.append(bucket, line);
      const kept = this.#opts.batchSize * KEPT_BATCHES;
      if (pending.lines.length > kept) {
        const dropped = pending.lines.splice(0, pending.lines.length - kept);
        log("warn", "Access records dropped: their target bucket takes no deliveries", {
          bucket,
          target: pending.config.targetBucket,
          dropped: dropped.length,
        });
      }
      if (pending.lines.length >= this.#opts.batchSize) await this.flush(bucket);
    } catch (err) {
      log("warn", "An access record could not be kept", { bucket, error: String(err) });
    }
  }

  async flushAll(): Promise<void> {
    await Promise.all([...this.#pending.keys()].map((bucket) => this.flush(bucket)));
  }

  async #encryptionFor(target: string): Promise<Encryption | undefined> {
    if (!(await defaultEncryption(this.#opts.layer.meta, target))) return undefined;
    const { record, key } = await this.#opts.sseKeys.forNewObject({ kind: "s3" });
    return { key: key!, record: JSON.stringify(record) };
  }

  /** Writes `bucket`'s gathered records as one log object into its target bucket. */
  async flush(bucket: string): Promise<void> {
    const pending = this.#pending.get(bucket);
    if (!pending || pending.lines.length === 0 || this.#flushing.has(bucket)) return;
    this.#flushing.add(bucket);
    const lines = pending.lines.splice(0, pending.lines.length);
    const current = this.#spool.takeAside(bucket);
    const files = pending.spooled.splice(0, pending.spooled.length);
    if (current) files.push(current);
    try {
      const layer = this.#opts.layer;
      const target = await layer.requireBucket(pending.config.targetBucket);
      // The target must be the logged bucket's owner's (checked when logging was configured): one
      // deleted and made again under that name by someone else takes none of these records.
      if (target.owner !== pending.owner) {
        throw new Error("the target bucket now belongs to another owner");
      }
      const at = new Date();
      const id = crypto.randomUUID().replaceAll("-", "").slice(0, 16).toUpperCase();
      const key = logObjectKey(
        pending.config,
        { owner: pending.owner, region: this.#opts.region, bucket },
        at,
        id,
      );
      await layer.putObject({
        bucket: target.name,
        key,
        body: single(new TextEncoder().encode(lines.join("\n") + "\n")),
        contentType: "text/plain",
        userMeta: {},
        headers: {},
        owner: target.owner,
        encryption: await this.#encryptionFor(target.name),
      });
      await Promise.all(files.map((f) => f.remove()));
    } catch (err) {
      pending.lines.unshift(...lines);
      pending.spooled.unshift(...files);
      log("warn", "Access log delivery failed; retried at the next interval", {
        bucket,
        target: pending.config.targetBucket,
        records: lines.length,
        error: String(err),
      });
    } finally {
      this.#flushing.delete(bucket);
    }
  }
}
