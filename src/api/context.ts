// What every operation handler receives and returns.
import type { AccessControl, RequestFacts, Verdict } from "../auth/access.ts";
import type { Credentials } from "../auth/credentials.ts";
import type { Principal } from "../auth/principal.ts";
import type { SseKeys } from "../object/sse.ts";
import type { Kms } from "../kms/kms.ts";
import type { BucketLogger } from "../bucketlog/logger.ts";
import type { BucketConfigKind, BucketRecord } from "../meta/store.ts";
import type { Config } from "../config.ts";
import type { RequestBody } from "../http/body.ts";
import type { Dialect } from "../http/dialect.ts";
import type { ObjectLayer } from "../object/layer.ts";
import type { EventOrigin } from "../events/outbox.ts";
import type { Notifier } from "../events/notifier.ts";

export interface RequestContext {
  requestId: string;
  operation: string;
  method: string;
  dialect: Dialect;
  bucket: string;
  key: string;
  query: URLSearchParams;
  headers: Headers;
  body: RequestBody;
  principal: Principal;
  config: Config;
  layer: ObjectLayer;
  access: AccessControl;
  /** The request-level access decision (see AccessControl.decide). */
  verdict: Verdict;
  facts: RequestFacts;
  credentials: Credentials;
  sseKeys: SseKeys;
  /** Named keys of SSE-KMS (src/kms/). */
  kms: Kms;
  /** Access records of buckets with logging enabled (src/bucketlog/). */
  bucketLog: BucketLogger;
  notifier: Notifier;
  /** The request's bucket as read once before the access decision; undefined when missing. */
  bucketRecord?: BucketRecord;
  /**
   * The dialect the response (or error) is spelled in; starts as `dialect`. A handler that
   * learns the dialect from the body (PostObject's form fields) changes it.
   */
  answer: { dialect: Dialect };
}

export interface HandlerResult {
  status: number;
  headers?: Record<string, string>;
  body?: string | Uint8Array | ReadableStream<Uint8Array> | null;
}

export type Handler = (ctx: RequestContext) => Promise<HandlerResult>;

/** The request's bucket, read once per request; NoSuchBucket when it does not exist. */
export async function bucketOf(ctx: RequestContext): Promise<BucketRecord> {
  return ctx.bucketRecord ?? await ctx.layer.requireBucket(ctx.bucket);
}

/**
 * Stores a document of the request's bucket: the one the request was decided on, not a bucket of
 * that name made since (NoSuchBucket then).
 */
export async function putBucketConfig(
  ctx: RequestContext,
  kind: BucketConfigKind,
  value: string,
): Promise<void> {
  await ctx.layer.setBucketConfig(await bucketOf(ctx), kind, value);
}

/** Removes a document of the request's bucket (see putBucketConfig). */
export async function deleteBucketConfig(
  ctx: RequestContext,
  kind: BucketConfigKind,
): Promise<void> {
  await ctx.layer.removeBucketConfig(await bucketOf(ctx), kind);
}

export function xmlResult(body: string, status = 200): HandlerResult {
  return { status, headers: { "content-type": "application/xml" }, body };
}

/** Who made a change, for the event it records. */
export function originOf(ctx: RequestContext): EventOrigin {
  return { principal: ctx.principal.id, sourceIp: ctx.facts.sourceIp, requestId: ctx.requestId };
}

/** ISO 8601 with milliseconds, as listings use. */
export function isoDate(ms: number): string {
  return new Date(ms).toISOString();
}

/** RFC 7231 date, as Last-Modified uses. */
export function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}
