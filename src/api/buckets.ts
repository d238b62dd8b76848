// Bucket operations: ListBuckets, CreateBucket, DeleteBucket, HeadBucket, GetBucketLocation.
import { aclToJson } from "../auth/acl.ts";
import { h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { children, el, leafText, parseXml, text, xmlDocument } from "../http/xml.ts";
import { validateBucketName } from "./bucket_name.ts";
import { requestedAcl } from "./acl.ts";
import { bucketOf, type Handler, isoDate, xmlResult } from "./context.ts";

const MAX_CONFIG_BODY = 64 * 1024;

export const listBuckets: Handler = async (ctx) => {
  const buckets = await ctx.layer.meta.listBuckets(ctx.principal.id);
  const items = buckets.map((b) =>
    el(
      "Bucket",
      text("Name", b.name),
      text("CreationDate", isoDate(b.createdAt)),
      text("BucketRegion", b.region),
    )
  );
  const owner = el(
    "Owner",
    text("ID", ctx.principal.id),
    text("DisplayName", ctx.principal.displayName),
  );
  return xmlResult(
    xmlDocument("ListAllMyBucketsResult", ctx.dialect.xmlns, owner + el("Buckets", ...items)),
  );
};

async function requestedRegion(ctx: Parameters<Handler>[0]): Promise<string> {
  const body = await ctx.body.text(MAX_CONFIG_BODY);
  if (body.trim() === "") return ctx.config.region;
  const root = parseXml(body, "CreateBucketConfiguration");
  const location = leafText(root.LocationConstraint, "LocationConstraint");
  for (const name of Object.keys(root)) {
    if (!["LocationConstraint", "Location", "Bucket"].includes(name)) {
      throw new S3Error("MalformedXML", `Unexpected element ${name} in CreateBucketConfiguration.`);
    }
  }
  if (children(root.Location).length > 0 || children(root.Bucket).length > 0) {
    throw new S3Error("NotImplemented", "Directory buckets are not supported.");
  }
  if (location === undefined || location === "") return ctx.config.region;
  if (location !== ctx.config.region) {
    throw new S3Error(
      "IllegalLocationConstraintException",
      `The ${location} location constraint is incompatible with the region of this server (${ctx.config.region}).`,
    );
  }
  return location;
}

export const createBucket: Handler = async (ctx) => {
  validateBucketName(ctx.bucket);
  const region = await requestedRegion(ctx);
  const lockHeader = ctx.headers.get(h(ctx.dialect, "bucket-object-lock-enabled"));
  if (lockHeader !== null && !["true", "false"].includes(lockHeader.toLowerCase())) {
    throw new S3Error("InvalidArgument", "The object lock header must be true or false.");
  }
  // Object Lock needs versioning: a bucket created with it starts versioned.
  const objectLock = lockHeader?.toLowerCase() === "true";
  const acl = await requestedAcl(ctx, {
    owner: { id: ctx.principal.id, displayName: ctx.principal.displayName },
  });
  const outcome = await ctx.layer.meta.createBucket({
    name: ctx.bucket,
    owner: ctx.principal.id,
    createdAt: Date.now(),
    region,
    versioning: objectLock ? "Enabled" : "",
    objectLock,
  });
  if (outcome === "exists") {
    const existing = await ctx.layer.meta.getBucket(ctx.bucket);
    if (existing?.owner === ctx.principal.id) {
      throw new S3Error(
        "BucketAlreadyOwnedByYou",
        "Your previous request to create the named bucket succeeded and you already own it.",
        { details: { BucketName: ctx.bucket } },
      );
    }
    throw new S3Error(
      "BucketAlreadyExists",
      "The requested bucket name is not available. Please select a different name and try again.",
      { details: { BucketName: ctx.bucket } },
    );
  }
  if (acl) await ctx.layer.meta.putBucketConfig(ctx.bucket, "acl", aclToJson(acl));
  return { status: 200, headers: { location: `/${ctx.bucket}` } };
};

export const deleteBucket: Handler = async (ctx) => {
  await ctx.layer.deleteBucket(ctx.bucket);
  return { status: 204 };
};

export const headBucket: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  return {
    status: 200,
    headers: { [h(ctx.dialect, "bucket-region")]: bucket.region },
  };
};

export const getBucketLocation: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  return xmlResult(
    `<?xml version="1.0" encoding="UTF-8"?>\n<LocationConstraint xmlns="${ctx.dialect.xmlns}">${bucket.region}</LocationConstraint>`,
  );
};
