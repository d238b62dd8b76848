// Get/PutBucketLogging: where a bucket's access records go (src/bucketlog/). An empty
// BucketLoggingStatus turns logging off; GetBucketLogging answers an empty one then.
import { S3Error } from "../http/errors.ts";
import { xmlDocument } from "../http/xml.ts";
import { type LoggingConfig, loggingStatusXml, parseLoggingStatus } from "../bucketlog/config.ts";
import {
  bucketOf,
  deleteBucketConfig,
  type Handler,
  putBucketConfig,
  xmlResult,
} from "./context.ts";
import { readVerifiedBody } from "./verified_body.ts";

const MAX_BODY = 64 * 1024;

export const getBucketLogging: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const stored = await ctx.layer.meta.getBucketConfig(bucket.name, "logging");
  const config = stored === undefined ? undefined : JSON.parse(stored) as LoggingConfig;
  return xmlResult(xmlDocument("BucketLoggingStatus", ctx.dialect.xmlns, loggingStatusXml(config)));
};

/** The target must exist and belong to the source bucket's owner, as the protocol requires. */
export const putBucketLogging: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const bytes = await readVerifiedBody(ctx, MAX_BODY, { optional: true });
  const config = parseLoggingStatus(new TextDecoder().decode(bytes));
  if (config === undefined) {
    await deleteBucketConfig(ctx, "logging");
  } else {
    const target = await ctx.layer.meta.getBucket(config.targetBucket);
    if (!target) {
      throw new S3Error(
        "InvalidTargetBucketForLogging",
        "The target bucket for logging does not exist",
        { details: { TargetBucket: config.targetBucket } },
      );
    }
    if (target.owner !== bucket.owner) {
      throw new S3Error(
        "InvalidTargetBucketForLogging",
        "The owner for the bucket to be logged and the target bucket must be the same.",
        { details: { TargetBucket: config.targetBucket } },
      );
    }
    await putBucketConfig(ctx, "logging", JSON.stringify(config));
  }
  ctx.bucketLog.forget(bucket.name);
  return { status: 200 };
};
