// Object Lock operations: bucket configuration, per-version retention and legal hold, and the
// lock a new version starts with.
import { OPERATION_RULES } from "../auth/actions.ts";
import { h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { el, text, xmlDocument } from "../http/xml.ts";
import type { BucketRecord, ObjectVersion, Retention } from "../meta/store.ts";
import type { VersionLock } from "../object/layer.ts";
import { checkRetentionChange, defaultRetention, type LockConfig } from "../object/object_lock.ts";
import {
  bucketOf,
  type Handler,
  isoDate,
  putBucketConfig,
  type RequestContext,
  xmlResult,
} from "./context.ts";
import { readableVersion, versionIdParam } from "./object_access.ts";
import { parseLegalHold, parseLockConfig, parseRetention } from "./object_lock_xml.ts";

const MAX_BODY = 64 * 1024;

function missingLock(): S3Error {
  return new S3Error("InvalidRequest", "Bucket is missing Object Lock Configuration");
}

async function lockConfig(ctx: RequestContext, bucket: BucketRecord): Promise<LockConfig> {
  const stored = await ctx.layer.meta.getBucketConfig(bucket.name, "object-lock");
  return stored ? JSON.parse(stored) as LockConfig : {};
}

export const getObjectLockConfiguration: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  if (!bucket.objectLock) {
    throw new S3Error(
      "ObjectLockConfigurationNotFoundError",
      "Object Lock configuration does not exist for this bucket",
      { details: { BucketName: bucket.name } },
    );
  }
  const d = (await lockConfig(ctx, bucket)).defaultRetention;
  const rule = d
    ? el(
      "Rule",
      el("DefaultRetention", text("Mode", d.mode), text("Days", d.days), text("Years", d.years)),
    )
    : "";
  return xmlResult(
    xmlDocument(
      "ObjectLockConfiguration",
      ctx.dialect.xmlns,
      text("ObjectLockEnabled", "Enabled") + rule,
    ),
  );
};

export const putObjectLockConfiguration: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const config = parseLockConfig(await ctx.body.text(MAX_BODY));
  if (!bucket.objectLock && bucket.versioning !== "Enabled") {
    throw new S3Error(
      "InvalidBucketState",
      "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration",
    );
  }
  await putBucketConfig(ctx, "object-lock", JSON.stringify(config));
  if (!bucket.objectLock) await ctx.layer.meta.setBucketObjectLock(bucket.name);
  return { status: 200 };
};

/**
 * Whether the request may bypass governance retention for `key` (the request's key unless a batch
 * names another): the header and the permission, decided with that key.
 */
export async function bypassGovernance(ctx: RequestContext, key = ctx.key): Promise<boolean> {
  if (ctx.headers.get(h(ctx.dialect, "bypass-governance-retention"))?.toLowerCase() !== "true") {
    return false;
  }
  try {
    const bucket = ctx.bucketRecord;
    const verdict = await ctx.access.decideRule(
      ctx.principal,
      OPERATION_RULES.BypassGovernanceRetention,
      { bucket, key, facts: ctx.facts },
    );
    return verdict === "allow";
  } catch {
    return false;
  }
}

/** The lock of a new version: the request's lock headers, else the bucket's default retention. */
export async function newVersionLock(ctx: RequestContext): Promise<VersionLock | undefined> {
  const bucket = await bucketOf(ctx);
  const mode = ctx.headers.get(h(ctx.dialect, "object-lock-mode"));
  const until = ctx.headers.get(h(ctx.dialect, "object-lock-retain-until-date"));
  const hold = ctx.headers.get(h(ctx.dialect, "object-lock-legal-hold"));
  if ((mode !== null || until !== null || hold !== null) && !bucket.objectLock) throw missingLock();
  if ((mode === null) !== (until === null)) {
    throw new S3Error(
      "InvalidArgument",
      "x-*-object-lock-retain-until-date and x-*-object-lock-mode must both be supplied",
    );
  }
  if (hold !== null && hold !== "ON" && hold !== "OFF") {
    throw new S3Error("InvalidArgument", "Legal Hold must be either of 'ON' or 'OFF'");
  }
  if (!bucket.objectLock) return undefined;
  let retention: Retention | undefined;
  if (mode !== null) {
    if (mode !== "GOVERNANCE" && mode !== "COMPLIANCE") {
      throw new S3Error("InvalidArgument", "Unknown wormMode directive.");
    }
    const date = Date.parse(until!);
    if (Number.isNaN(date) || date <= Date.now()) {
      throw new S3Error("InvalidArgument", "The retain until date must be in the future!");
    }
    retention = { mode, until: date };
  } else {
    retention = defaultRetention(await lockConfig(ctx, bucket), Date.now());
  }
  return { retention, legalHold: hold === "ON" };
}

/** Lock headers of GET and HEAD responses. */
export function lockHeaders(ctx: RequestContext, v: ObjectVersion): Record<string, string> {
  const out: Record<string, string> = {};
  if (v.retention) {
    out[h(ctx.dialect, "object-lock-mode")] = v.retention.mode;
    out[h(ctx.dialect, "object-lock-retain-until-date")] = isoDate(v.retention.until);
  }
  if (v.legalHold) out[h(ctx.dialect, "object-lock-legal-hold")] = "ON";
  return out;
}

async function lockedBucket(ctx: RequestContext): Promise<BucketRecord> {
  const bucket = await bucketOf(ctx);
  if (!bucket.objectLock) throw missingLock();
  return bucket;
}

function target(ctx: RequestContext, v: ObjectVersion) {
  return { bucket: ctx.bucket, key: ctx.key, versionId: v.versionId };
}

export const getObjectRetention: Handler = async (ctx) => {
  await lockedBucket(ctx);
  const v = await readableVersion(ctx, { permission: "READ" });
  if (!v.retention) {
    throw new S3Error(
      "NoSuchObjectLockConfiguration",
      "The specified object does not have a ObjectLock configuration",
    );
  }
  return xmlResult(
    xmlDocument(
      "Retention",
      ctx.dialect.xmlns,
      text("Mode", v.retention.mode) + text("RetainUntilDate", isoDate(v.retention.until)),
    ),
  );
};

export const putObjectRetention: Handler = async (ctx) => {
  await lockedBucket(ctx);
  const v = await readableVersion(ctx, { permission: "READ" });
  const now = Date.now();
  const next = parseRetention(await ctx.body.text(MAX_BODY), now);
  const bypass = await bypassGovernance(ctx);
  const found = await ctx.layer.meta.setObjectLock(
    target(ctx, v),
    { retention: next },
    (current) => checkRetentionChange(current.retention, next, { bypassGovernance: bypass, now }),
  );
  if (!found) throw new S3Error("NoSuchKey", "The specified key does not exist.");
  return { status: 200, headers: versionHeader(ctx, v) };
};

export const getObjectLegalHold: Handler = async (ctx) => {
  await lockedBucket(ctx);
  const v = await readableVersion(ctx, { permission: "READ" });
  return xmlResult(
    xmlDocument("LegalHold", ctx.dialect.xmlns, text("Status", v.legalHold ? "ON" : "OFF")),
  );
};

export const putObjectLegalHold: Handler = async (ctx) => {
  await lockedBucket(ctx);
  const v = await readableVersion(ctx, { permission: "READ" });
  const on = parseLegalHold(await ctx.body.text(MAX_BODY));
  if (!(await ctx.layer.meta.setObjectLock(target(ctx, v), { legalHold: on }))) {
    throw new S3Error("NoSuchKey", "The specified key does not exist.");
  }
  return { status: 200, headers: versionHeader(ctx, v) };
};

function versionHeader(ctx: RequestContext, v: ObjectVersion): Record<string, string> {
  return versionIdParam(ctx) !== undefined ? { [h(ctx.dialect, "version-id")]: v.versionId } : {};
}
