// Bucket lifecycle: Get/Put/DeleteBucketLifecycleConfiguration. The rules are applied by the
// lifecycle worker (src/workers/lifecycle.ts).
import { createHash } from "node:crypto";
import { checksumChecks } from "../http/checksum.ts";
import { h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { el, text, xmlDocument } from "../http/xml.ts";
import {
  type LifecycleFilter,
  type LifecycleRule,
  type LifecycleTag,
  parseLifecycleConfiguration,
  readStoredLifecycle,
  storedLifecycle,
} from "../object/lifecycle_rules.ts";
import { type Handler, xmlResult } from "./context.ts";
import { contentMd5 } from "./objects.ts";

/** 1000 rules of a few hundred bytes each fit well within this. */
const MAX_BODY = 2 * 1024 * 1024;

export const getBucketLifecycleConfiguration: Handler = async (ctx) => {
  await ctx.layer.requireBucket(ctx.bucket);
  const stored = await ctx.layer.meta.getBucketConfig(ctx.bucket, "lifecycle");
  if (stored === undefined) {
    throw new S3Error(
      "NoSuchLifecycleConfiguration",
      "The lifecycle configuration does not exist.",
      {
        details: { BucketName: ctx.bucket },
      },
    );
  }
  const inner = lifecycleRulesXml(readStoredLifecycle(stored));
  return xmlResult(xmlDocument("LifecycleConfiguration", ctx.dialect.xmlns, inner));
};

export const putBucketLifecycleConfiguration: Handler = async (ctx) => {
  await ctx.layer.requireBucket(ctx.bucket);
  // The protocol requires an integrity check on this body: Content-MD5 or a checksum header.
  const md5 = contentMd5(ctx.headers);
  const checks = checksumChecks(ctx.headers, ctx.dialect, ctx.body);
  if (md5 === undefined && checks.length === 0) {
    throw new S3Error(
      "InvalidRequest",
      `Missing required header for this request: Content-MD5 or ${h(ctx.dialect, "checksum-*")}.`,
    );
  }
  const bytes = await ctx.body.bytes(MAX_BODY);
  if (md5 !== undefined && createHash("md5").update(bytes).digest("base64") !== md5) {
    throw new S3Error("BadDigest", "The Content-MD5 you specified did not match what we received.");
  }
  for (const c of checks) {
    c.update(bytes);
    c.finish();
  }
  const rules = parseLifecycleConfiguration(new TextDecoder().decode(bytes));
  await ctx.layer.meta.putBucketConfig(ctx.bucket, "lifecycle", storedLifecycle(rules));
  return { status: 200 };
};

export const deleteBucketLifecycle: Handler = async (ctx) => {
  await ctx.layer.requireBucket(ctx.bucket);
  await ctx.layer.meta.deleteBucketConfig(ctx.bucket, "lifecycle");
  return { status: 204 };
};

function tagXml(name: string, t: LifecycleTag): string {
  return el(name, text("Key", t.key), text("Value", t.value));
}

function filterXml(f: LifecycleFilter): string {
  const and = f.and
    ? el(
      "And",
      text("Prefix", f.and.prefix),
      ...f.and.tags.map((t) => tagXml("Tag", t)),
      text("ObjectSizeGreaterThan", f.and.objectSizeGreaterThan),
      text("ObjectSizeLessThan", f.and.objectSizeLessThan),
    )
    : "";
  return el(
    "Filter",
    text("Prefix", f.prefix),
    f.tag ? tagXml("Tag", f.tag) : "",
    and,
    text("ObjectSizeGreaterThan", f.objectSizeGreaterThan),
    text("ObjectSizeLessThan", f.objectSizeLessThan),
  );
}

/** The rules as the inner XML of a LifecycleConfiguration document. */
export function lifecycleRulesXml(rules: LifecycleRule[]): string {
  return rules.map((r) => {
    const e = r.expiration;
    const n = r.noncurrentVersionExpiration;
    const a = r.abortIncompleteMultipartUpload;
    return el(
      "Rule",
      text("ID", r.id),
      r.filter ? filterXml(r.filter) : text("Prefix", r.prefix),
      text("Status", r.status),
      e
        ? el(
          "Expiration",
          text("Date", e.date),
          text("Days", e.days),
          text("ExpiredObjectDeleteMarker", e.expiredObjectDeleteMarker),
        )
        : "",
      n
        ? el(
          "NoncurrentVersionExpiration",
          text("NoncurrentDays", n.noncurrentDays),
          text("NewerNoncurrentVersions", n.newerNoncurrentVersions),
        )
        : "",
      a
        ? el("AbortIncompleteMultipartUpload", text("DaysAfterInitiation", a.daysAfterInitiation))
        : "",
    );
  }).join("");
}
