// Bucket lifecycle: Get/Put/DeleteBucketLifecycleConfiguration. The rules are applied by the
// lifecycle worker (src/workers/lifecycle.ts).
import { S3Error } from "../http/errors.ts";
import { el, text, xmlDocument } from "../http/xml.ts";
import {
  type LifecycleFilter,
  type LifecycleRule,
  type LifecycleTag,
  readStoredLifecycle,
  storedLifecycle,
} from "../object/lifecycle_rules.ts";
import { parseLifecycleConfiguration } from "./lifecycle_xml.ts";
import { readVerifiedBody } from "./verified_body.ts";
import {
  bucketOf,
  deleteBucketConfig,
  type Handler,
  putBucketConfig,
  xmlResult,
} from "./context.ts";

/** 1000 rules of a few hundred bytes each fit well within this. */
const MAX_BODY = 2 * 1024 * 1024;

export const getBucketLifecycleConfiguration: Handler = async (ctx) => {
  await bucketOf(ctx);
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
  await bucketOf(ctx);
  // The protocol requires an integrity check on this body: Content-MD5 or a checksum header.
  const bytes = await readVerifiedBody(ctx, MAX_BODY);
  const rules = parseLifecycleConfiguration(new TextDecoder().decode(bytes));
  await putBucketConfig(ctx, "lifecycle", storedLifecycle(rules));
  return { status: 200 };
};

export const deleteBucketLifecycle: Handler = async (ctx) => {
  await deleteBucketConfig(ctx, "lifecycle");
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
