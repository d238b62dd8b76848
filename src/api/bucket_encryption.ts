// Get/Put/DeleteBucketEncryption: the bucket's default encryption (src/object/sse_default.ts).
import { S3Error } from "../http/errors.ts";
import { xmlDocument } from "../http/xml.ts";
import { keyIdOf } from "../kms/kms.ts";
import { defaultEncryption } from "../object/sse_default.ts";
import { encryptionConfigurationXml, parseEncryptionConfiguration } from "./encryption_xml.ts";
import {
  bucketOf,
  deleteBucketConfig,
  type Handler,
  putBucketConfig,
  xmlResult,
} from "./context.ts";
import { readVerifiedBody } from "./verified_body.ts";

const MAX_BODY = 64 * 1024;

export const getBucketEncryption: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const config = await defaultEncryption(ctx.layer.meta, bucket.name);
  if (config === undefined) {
    throw new S3Error(
      "ServerSideEncryptionConfigurationNotFoundError",
      "The server side encryption configuration was not found",
      { details: { BucketName: bucket.name } },
    );
  }
  return xmlResult(
    xmlDocument(
      "ServerSideEncryptionConfiguration",
      ctx.dialect.xmlns,
      encryptionConfigurationXml(config),
    ),
  );
};

/** Content-MD5 (or a checksum header) is required, as the protocol asks. */
export const putBucketEncryption: Handler = async (ctx) => {
  await bucketOf(ctx);
  const bytes = await readVerifiedBody(ctx, MAX_BODY);
  const config = parseEncryptionConfiguration(new TextDecoder().decode(bytes));
  if (config.kmsKeyId !== undefined && !(await ctx.kms.exists(keyIdOf(config.kmsKeyId)))) {
    throw new S3Error("KMS.NotFoundException", `Invalid keyId ${config.kmsKeyId}`);
  }
  await putBucketConfig(ctx, "encryption", JSON.stringify(config));
  return { status: 200 };
};

export const deleteBucketEncryption: Handler = async (ctx) => {
  await deleteBucketConfig(ctx, "encryption");
  return { status: 204 };
};
