// Bucket operations: ListBuckets, CreateBucket, DeleteBucket, HeadBucket, GetBucketLocation.
import { type Acl, aclToJson } from "../auth/acl.ts";
import { acceptedWithAclsDisabled } from "../auth/public_access.ts";
import { h } from "../http/dialect.ts";
import type { BucketListQuery } from "../meta/store.ts";
import { S3Error } from "../http/errors.ts";
import { children, el, leafText, parseXml, text, xmlDocument } from "../http/xml.ts";
import { validateBucketName } from "./bucket_name.ts";
import { requestedAcl } from "./acl.ts";
import {
  bucketOf,
  type Handler,
  isoDate,
  putBucketConfig,
  type RequestContext,
  xmlResult,
} from "./context.ts";
import { aclWithOwnershipError, checkedOwnership } from "./public_access.ts";

const MAX_CONFIG_BODY = 64 * 1024;
/** Re-creating one's own bucket there answers 200 rather than BucketAlreadyOwnedByYou. */
const LEGACY_REGION = "us-east-1";

/** The protocol's largest (and, once any paging parameter is given, default) page. */
const MAX_BUCKETS = 10000;

function listBucketsPage(query: URLSearchParams): BucketListQuery | undefined {
  const max = query.get("max-buckets");
  const token = query.get("continuation-token");
  const prefix = query.get("prefix");
  if (max === null && token === null && prefix === null) return undefined;
  if (max !== null && (!/^\d{1,5}$/.test(max) || Number(max) < 1 || Number(max) > MAX_BUCKETS)) {
    throw new S3Error("InvalidArgument", `max-buckets must be between 1 and ${MAX_BUCKETS}.`, {
      details: { ArgumentName: "max-buckets", ArgumentValue: max },
    });
  }
  let after = "";
  if (token !== null && token !== "") {
    after = decodeToken(token) ?? "";
    if (!after) {
      throw new S3Error("InvalidArgument", "The continuation token provided is incorrect.", {
        details: { ArgumentName: "continuation-token" },
      });
    }
  }
  return { prefix: prefix ?? "", after, limit: max === null ? MAX_BUCKETS : Number(max) };
}

/** Continuation tokens are opaque to clients: the last name returned, base64url-encoded. */
function encodeToken(name: string): string {
  return btoa(name).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

function decodeToken(token: string): string | undefined {
  try {
    const name = atob(token.replaceAll("-", "+").replaceAll("_", "/"));
    return /^[a-z0-9.-]{1,63}$/.test(name) ? name : undefined;
  } catch {
    return undefined;
  }
}

export const listBuckets: Handler = async (ctx) => {
  const page = listBucketsPage(ctx.query);
  // One more than the page tells whether a continuation token is needed.
  const found = await ctx.layer.meta.listBuckets(
    ctx.principal.id,
    page && { ...page, limit: page.limit + 1 },
  );
  const more = page !== undefined && found.length > page.limit;
  const buckets = more ? found.slice(0, page!.limit) : found;
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
  const next = more ? text("ContinuationToken", encodeToken(buckets.at(-1)!.name)) : "";
  const prefix = ctx.query.has("prefix") ? text("Prefix", ctx.query.get("prefix")!) : "";
  return xmlResult(
    xmlDocument(
      "ListAllMyBucketsResult",
      ctx.dialect.xmlns,
      owner + el("Buckets", ...items) + next + prefix,
    ),
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
  const ownership = requestedOwnership(ctx, acl);
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
      // The protocol's legacy answer in its default region: the bucket is simply there.
      if (existing.region === LEGACY_REGION) {
        return { status: 200, headers: { location: `/${ctx.bucket}` } };
      }
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
  if (acl) await putBucketConfig(ctx, "acl", aclToJson(acl));
  if (ownership) await putBucketConfig(ctx, "ownership", ownership);
  return { status: 200, headers: { location: `/${ctx.bucket}` } };
};

/**
 * CreateBucket's `x-*-object-ownership`. BucketOwnerEnforced disables ACLs, so it cannot come
 * with an ACL other than the owner's full control (InvalidBucketAclWithObjectOwnership).
 */
function requestedOwnership(ctx: RequestContext, acl: Acl | undefined): string | undefined {
  const value = ctx.headers.get(h(ctx.dialect, "object-ownership"));
  if (value === null) return undefined;
  const ownership = checkedOwnership(value, "InvalidArgument");
  if (
    ownership === "BucketOwnerEnforced" && acl &&
    !acceptedWithAclsDisabled(acl, {
      canned: ctx.headers.get(h(ctx.dialect, "acl")) ?? undefined,
      bucketOwner: ctx.principal.id,
    })
  ) {
    throw aclWithOwnershipError();
  }
  return ownership;
}

export const deleteBucket: Handler = async (ctx) => {
  await ctx.layer.deleteBucket(ctx.bucket);
  await ctx.notifier.forget(ctx.bucket);
  // A bucket made again under this name must not be logged with this one's configuration.
  ctx.bucketLog.forget(ctx.bucket);
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
