// Get/Put/DeleteBucketReplication: the bucket's replication rules (src/cluster/rules.ts), which
// limit what the cluster's object replication sends (src/cluster/objects.ts).
import { S3Error } from "../http/errors.ts";
import { xmlDocument } from "../http/xml.ts";
import {
  parseReplicationConfiguration,
  type ReplicationConfig,
  replicationConfigurationXml,
} from "../cluster/rules.ts";
import {
  bucketOf,
  deleteBucketConfig,
  type Handler,
  putBucketConfig,
  xmlResult,
} from "./context.ts";
import { readVerifiedBody } from "./verified_body.ts";

const MAX_BODY = 256 * 1024;

export const getBucketReplication: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const stored = await ctx.layer.meta.getBucketConfig(bucket.name, "replication");
  if (stored === undefined) {
    throw new S3Error(
      "ReplicationConfigurationNotFoundError",
      "The replication configuration was not found",
      { details: { BucketName: bucket.name } },
    );
  }
  const config = JSON.parse(stored) as ReplicationConfig;
  return xmlResult(
    xmlDocument("ReplicationConfiguration", ctx.dialect.xmlns, replicationConfigurationXml(config)),
  );
};

/**
 * The bucket must be versioned, and every destination bucket must exist (buckets reach every
 * node, so it exists on the others too). Content-MD5 (or a checksum header) is required.
 */
export const putBucketReplication: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const bytes = await readVerifiedBody(ctx, MAX_BODY);
  const config = parseReplicationConfiguration(new TextDecoder().decode(bytes));
  if (bucket.versioning !== "Enabled") {
    throw new S3Error(
      "InvalidRequest",
      "Versioning must be 'Enabled' on the bucket to apply a replication configuration",
    );
  }
  for (const name of new Set(config.rules.map((r) => r.destination))) {
    if (!(await ctx.layer.meta.getBucket(name))) {
      throw new S3Error("InvalidRequest", `Destination bucket must exist: ${name}`);
    }
  }
  await putBucketConfig(ctx, "replication", JSON.stringify(config));
  return { status: 200 };
};

export const deleteBucketReplication: Handler = async (ctx) => {
  await deleteBucketConfig(ctx, "replication");
  return { status: 204 };
};
