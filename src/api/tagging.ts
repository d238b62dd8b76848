// Tagging operations: Get/Put/DeleteObjectTagging (per version) and Get/Put/DeleteBucketTagging.
import { OPERATION_RULES } from "../auth/actions.ts";
import { h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import type { ObjectVersion, TagSet } from "../meta/store.ts";
import {
  bucketOf,
  deleteBucketConfig,
  type Handler,
  originOf,
  putBucketConfig,
  type RequestContext,
  xmlResult,
} from "./context.ts";
import { readableVersion, versionIdParam } from "./object_access.ts";
import { parseTagging, taggingXml, type TagTarget } from "./tags.ts";
import { readVerifiedBody } from "./verified_body.ts";

/** 50 tags of 128 + 256 characters, 4 bytes each in UTF-8, fit well within this. */
const MAX_BODY = 256 * 1024;

/**
 * Reads and parses a Tagging document. Content-MD5 and a `x-*-checksum-*` header are verified
 * when the client sends them (the SDKs do); neither is required.
 */
async function readTagging(ctx: RequestContext, target: TagTarget): Promise<TagSet> {
  const bytes = await readVerifiedBody(ctx, MAX_BODY, { optional: true });
  return parseTagging(new TextDecoder().decode(bytes), { target, dialect: ctx.dialect });
}

/** `x-*-version-id` of the version acted on: always for a real version id, and when asked. */
function versionHeader(ctx: RequestContext, v: ObjectVersion): Record<string, string> {
  return v.versionId !== "null" || versionIdParam(ctx) !== undefined
    ? { [h(ctx.dialect, "version-id")]: v.versionId }
    : {};
}

async function setTags(ctx: RequestContext, v: ObjectVersion, tags: TagSet): Promise<void> {
  if (!(await ctx.layer.setObjectTags(v, tags, originOf(ctx)))) {
    // Removed (or replaced by a delete marker of the same id) since it was read.
    throw new S3Error("NoSuchKey", "The specified key does not exist.", {
      details: { Key: ctx.key },
    });
  }
}

export const getObjectTagging: Handler = async (ctx) => {
  const v = await readableVersion(ctx, { permission: "READ" });
  const result = xmlResult(taggingXml(v.tags, ctx.dialect.xmlns));
  Object.assign(result.headers!, versionHeader(ctx, v));
  return result;
};

export const putObjectTagging: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const tags = await readTagging(ctx, "object");
  // The rule is decided here, with the document's tags for RequestObjectTag conditions.
  const verdict = await ctx.access.decideRule(ctx.principal, OPERATION_RULES.PutObjectTagging, {
    bucket,
    key: ctx.key,
    versionId: versionIdParam(ctx),
    facts: { ...ctx.facts, requestTags: tags },
  });
  const v = await readableVersion({ ...ctx, verdict }, { permission: "READ" });
  await setTags(ctx, v, tags);
  return { status: 200, headers: versionHeader(ctx, v) };
};

export const deleteObjectTagging: Handler = async (ctx) => {
  const v = await readableVersion(ctx, { permission: "READ" });
  await setTags(ctx, v, {});
  return { status: 204, headers: versionHeader(ctx, v) };
};

export const getBucketTagging: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const stored = await ctx.layer.meta.getBucketConfig(bucket.name, "tagging");
  if (stored === undefined) {
    throw new S3Error("NoSuchTagSet", "There is no tag set associated with the bucket.", {
      details: { BucketName: bucket.name },
    });
  }
  return xmlResult(taggingXml(JSON.parse(stored), ctx.dialect.xmlns));
};

/** Replaces the bucket's tags; an empty tag set removes them, as DeleteBucketTagging does. */
export const putBucketTagging: Handler = async (ctx) => {
  await bucketOf(ctx);
  const tags = await readTagging(ctx, "bucket");
  if (Object.keys(tags).length === 0) {
    await deleteBucketConfig(ctx, "tagging");
  } else {
    await putBucketConfig(ctx, "tagging", JSON.stringify(tags));
  }
  return { status: 204 };
};

export const deleteBucketTagging: Handler = async (ctx) => {
  await deleteBucketConfig(ctx, "tagging");
  return { status: 204 };
};
