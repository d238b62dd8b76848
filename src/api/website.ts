// Get/Put/DeleteBucketWebsite: the bucket's website configuration (src/website/config.ts); the
// site itself is served by src/website/serve.ts.
import { S3Error } from "../http/errors.ts";
import { xmlDocument } from "../http/xml.ts";
import {
  parseWebsiteConfiguration,
  type WebsiteConfig,
  websiteConfigurationXml,
} from "../website/config.ts";
import {
  bucketOf,
  deleteBucketConfig,
  type Handler,
  putBucketConfig,
  xmlResult,
} from "./context.ts";
import { readVerifiedBody } from "./verified_body.ts";

/** 50 routing rules of a few hundred bytes each fit well within this. */
const MAX_BODY = 128 * 1024;

export const getBucketWebsite: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const stored = await ctx.layer.meta.getBucketConfig(bucket.name, "website");
  if (stored === undefined) {
    throw new S3Error(
      "NoSuchWebsiteConfiguration",
      "The specified bucket does not have a website configuration",
      { details: { BucketName: bucket.name } },
    );
  }
  const config = JSON.parse(stored) as WebsiteConfig;
  return xmlResult(
    xmlDocument("WebsiteConfiguration", ctx.dialect.xmlns, websiteConfigurationXml(config)),
  );
};

/** Content-MD5 (or a checksum header) is verified when sent. */
export const putBucketWebsite: Handler = async (ctx) => {
  await bucketOf(ctx);
  const bytes = await readVerifiedBody(ctx, MAX_BODY, { optional: true });
  const config = parseWebsiteConfiguration(new TextDecoder().decode(bytes));
  await putBucketConfig(ctx, "website", JSON.stringify(config));
  return { status: 200 };
};

export const deleteBucketWebsite: Handler = async (ctx) => {
  await deleteBucketConfig(ctx, "website");
  return { status: 204 };
};
