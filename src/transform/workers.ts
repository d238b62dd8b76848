// The transformation workers: STORE_TRANSFORM_WORKERS loops, off the request path, each claiming
// one queued job at a time. A job reads its source through the object layer (within
// STORE_TRANSFORM_MAX_BYTES), renders it with sharp and writes the output through the object
// layer like any write (versioned, SSE-S3 when the source was, evented), marked so that it starts
// no job itself. Bad input fails a job at once; anything else is retried with backoff, then fails;
// each failure is logged (and so kept in the error log).
import { S3Error } from "../http/errors.ts";
import { log } from "../log.ts";
import type { JobOutcome, JobRecord, MetaStore } from "../meta/store.ts";
import { type ObjectLayer, single } from "../object/layer.ts";
import type { SseKeys, SseRecord } from "../object/sse.ts";
import { DEFAULT_KMS_KEY, type Kms } from "../kms/kms.ts";
import { defaultEncryption, KMS_ALGORITHMS } from "../object/sse_default.ts";
import { Signal } from "../events/signal.ts";
import { BadInput } from "./bad_input.ts";
import type { JobSpec } from "./spec.ts";

/** Runs of a job before it fails for good (bad input fails on the first). */
export const MAX_ATTEMPTS = 4;
/** First retry delay, doubled on each attempt. */
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_MAX_MS = 60_000;
/** How long an idle worker waits before it looks for due jobs again (retries fall due). */
const IDLE_POLL_MS = 1_000;
/** Done and failed jobs are kept this long for GET /api/v1/jobs, then removed. */
export const JOB_RETENTION_MS = 7 * 86_400_000;
const PRUNE_INTERVAL_MS = 3_600_000;

export interface WorkerOptions {
  workers: number;
  maxPixels: number;
  maxBytes: number;
}

async function readAll(body: ReadableStream<Uint8Array> | Uint8Array, size: number) {
  if (body instanceof Uint8Array) return body;
  const out = new Uint8Array(size);
  let at = 0;
  for await (const chunk of body) {
    if (at + chunk.byteLength > size) throw new BadInput("the source is longer than its size");
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

export class TransformWorkers {
  readonly #wake = new Signal();
  readonly #stopping = new AbortController();
  #loops: Promise<void>[] = [];
  #meta: MetaStore;
  #pruneTimer?: ReturnType<typeof setInterval>;

  constructor(
    readonly layer: ObjectLayer,
    readonly keys: { sse: SseKeys; kms: Kms },
    readonly opts: WorkerOptions,
  ) {
    this.#meta = layer.meta;
  }

  async start(): Promise<void> {
    const requeued = await this.#meta.requeueRunningJobs();
    if (requeued > 0) log("info", "Transformation jobs queued again after a stop", { requeued });
    for (let i = 0; i < this.opts.workers; i++) this.#loops.push(this.#loop());
    await this.#prune();
    this.#pruneTimer = setInterval(() => this.#prune(), PRUNE_INTERVAL_MS);
  }

  async #prune(): Promise<void> {
    try {
      await this.#meta.pruneJobs(Date.now() - JOB_RETENTION_MS);
    } catch (err) {
      log("error", "Pruning old transformation jobs failed", {
        source: "transform",
        error: String(err),
      });
    }
  }

  /** A job was queued outside a write (the API): look now. */
  notify(): void {
    this.#wake.fire();
  }

  /** Waits for the running jobs to end; queued ones stay queued. */
  async stop(): Promise<void> {
    clearInterval(this.#pruneTimer);
    this.#stopping.abort();
    await Promise.all(this.#loops);
  }

  async #loop(): Promise<void> {
    const abort = this.#stopping.signal;
    while (!abort.aborted) {
      const mine = this.#wake.generation;
      const writes = this.layer.committed.generation;
      let job: JobRecord | undefined;
      try {
        job = await this.#meta.claimJob(Date.now());
      } catch (err) {
        log("error", "Claiming a transformation job failed", {
          source: "transform",
          error: String(err),
        });
      }
      if (job) {
        await this.#run(job);
        continue;
      }
      // Writes that matched a rule fire the layer's signal; API jobs fire ours.
      await Promise.race([
        this.#wake.wait(mine, IDLE_POLL_MS, abort),
        this.layer.committed.wait(writes, IDLE_POLL_MS, abort),
      ]);
    }
  }

  async #run(job: JobRecord): Promise<void> {
    let outcome: JobOutcome;
    try {
      outcome = { state: "done", ...(await this.#execute(job)) };
    } catch (err) {
      const final = err instanceof BadInput || job.attempts >= MAX_ATTEMPTS;
      const error = err instanceof Error ? err.message : String(err);
      const fields = {
        source: "transform",
        code: final ? "TransformFailed" : "TransformRetry",
        bucket: job.bucket,
        job: job.id,
        key: job.key,
        attempts: job.attempts,
        error,
      };
      if (final) {
        log("error", "Transformation job failed", fields);
        outcome = { state: "failed", error };
      } else {
        log("warn", "Transformation job will be retried", fields);
        const delay = Math.min(BACKOFF_BASE_MS * 2 ** (job.attempts - 1), BACKOFF_MAX_MS);
        outcome = { state: "queued", runAt: Date.now() + delay, error };
      }
    }
    try {
      await this.#meta.finishJob(job.id, outcome);
    } catch (err) {
      // Left running: the next start queues it again.
      log("error", "Recording a transformation job's end failed", {
        source: "transform",
        job: job.id,
        error: String(err),
      });
    }
  }

  /** The key to read an SSE-S3 or SSE-KMS source with (a disabled KMS key fails the job). */
  #readKey(sse: SseRecord | undefined): Promise<CryptoKey | undefined> {
    if (sse?.kind !== "kms") return this.keys.sse.forExistingObject(sse, undefined);
    return this.keys.kms.dataKeyOf({
      keyId: sse.keyId ?? "",
      keyVersion: sse.keyVersion ?? 0,
      sealedKey: sse.sealedKey ?? "",
      ...(sse.context !== undefined ? { context: sse.context } : {}),
    });
  }

  /**
   * The output is encrypted as its source was, with a new data key of its own; an unencrypted
   * source's output gets the output bucket's default encryption, if it has one.
   */
  async #outputKey(
    sse: SseRecord | undefined,
    bucket: string,
  ): Promise<{ record?: SseRecord; key?: CryptoKey }> {
    let kms = sse?.kind === "kms"
      ? { algorithm: sse.algorithm, keyId: sse.keyId ?? "", context: sse.context }
      : undefined;
    if (!sse) {
      const fallback = await defaultEncryption(this.#meta, bucket);
      if (!fallback) return {};
      if (KMS_ALGORITHMS.includes(fallback.algorithm)) {
        const keyId = fallback.kmsKeyId ?? DEFAULT_KMS_KEY;
        kms = { algorithm: fallback.algorithm, keyId, context: undefined };
      }
    }
    if (!kms) return this.keys.sse.forNewObject({ kind: "s3" });
    const { sealed, key } = await this.keys.kms.newDataKey(kms.keyId, kms.context);
    return { record: { kind: "kms", algorithm: kms.algorithm, ...sealed }, key };
  }

  async #execute(job: JobRecord) {
    const spec = JSON.parse(job.spec) as JobSpec;
    const version = await this.#meta.getObjectVersion(job.bucket, job.key, job.versionId);
    if (!version || version.deleteMarker) {
      throw new BadInput("the source object no longer exists");
    }
    const sse = version.sse === undefined ? undefined : JSON.parse(version.sse) as SseRecord;
    if (sse?.kind === "c") {
      throw new BadInput("skipped: the source is encrypted with a customer key (SSE-C)");
    }
    if (version.size > this.opts.maxBytes) {
      throw new BadInput(
        `the source has ${version.size} bytes, more than STORE_TRANSFORM_MAX_BYTES (${this.opts.maxBytes})`,
      );
    }
    const key = await this.#readKey(sse);
    const { body } = await this.layer.openObject(version, undefined, key);
    // sharp (a native addon and libvips) loads with the first job, not with the server.
    const { render } = await import("./engine.ts");
    const rendered = await render(
      await readAll(body, version.size),
      spec.actions,
      this.opts.maxPixels,
    );
    const bucket = await this.#meta.getBucket(spec.output.bucket);
    if (!bucket) throw new Error(`the output bucket ${spec.output.bucket} does not exist`);
    const made = await this.#outputKey(sse, spec.output.bucket);
    try {
      const out = await this.layer.putObject({
        bucket: spec.output.bucket,
        key: spec.output.key,
        body: single(rendered.bytes),
        contentType: rendered.contentType,
        userMeta: {},
        headers: {},
        owner: bucket.owner,
        encryption: made.key && made.record
          ? { key: made.key, record: JSON.stringify(made.record) }
          : undefined,
        origin: {
          principal: job.requester,
          sourceIp: "",
          requestId: `transform-${job.id}`,
          transform: true,
        },
      });
      return { outputBucket: out.bucket, outputKey: out.key, outputVersionId: out.versionId };
    } catch (err) {
      // An Object Lock or a refused write will not change by retrying.
      if (err instanceof S3Error && err.code !== "InsufficientStorage") {
        throw new BadInput(`the output cannot be written: ${err.message}`);
      }
      throw err;
    }
  }
}
