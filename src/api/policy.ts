// Bucket policy operations: Get/Put/DeleteBucketPolicy and GetBucketPolicyStatus.
import { isPublicPolicy, parseBucketPolicy } from "../auth/policy.ts";
import { pinPrincipals } from "../auth/policy_principals.ts";
import { effectiveAcl, hasPublicGrant } from "../auth/public_access.ts";
import { S3Error } from "../http/errors.ts";
import { text, xmlDocument } from "../http/xml.ts";
import {
  bucketOf,
  deleteBucketConfig,
  type Handler,
  putBucketConfig,
  xmlResult,
} from "./context.ts";

/** The protocol's limit on the size of a bucket policy document. */
const MAX_POLICY_BYTES = 20 * 1024;

function noPolicy(bucket: string): S3Error {
  return new S3Error("NoSuchBucketPolicy", "The bucket policy does not exist.", {
    details: { BucketName: bucket },
  });
}

export const getBucketPolicy: Handler = async (ctx) => {
  await bucketOf(ctx);
  const policy = await ctx.layer.meta.getBucketConfig(ctx.bucket, "policy");
  if (policy === undefined) throw noPolicy(ctx.bucket);
  return { status: 200, headers: { "content-type": "application/json" }, body: policy };
};

export const putBucketPolicy: Handler = async (ctx) => {
  await bucketOf(ctx);
  const bytes = await ctx.body.bytes(MAX_POLICY_BYTES * 4);
  if (bytes.byteLength > MAX_POLICY_BYTES) {
    throw new S3Error("MalformedPolicy", `Policies must be at most ${MAX_POLICY_BYTES} bytes.`);
  }
  let policyText: string;
  try {
    policyText = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new S3Error("MalformedPolicy", "The policy is not valid UTF-8.");
  }
  const policy = parseBucketPolicy(policyText, ctx.bucket);
  if (isPublicPolicy(policy) && (await ctx.access.guards(ctx.bucket)).block?.blockPublicPolicy) {
    throw new S3Error("AccessDenied", "Access Denied");
  }
  await pinPrincipals(ctx.layer.meta, ctx.bucket, policyText, policy);
  await putBucketConfig(ctx, "policy", policyText);
  ctx.access.forget(ctx.bucket);
  return { status: 204 };
};

export const deleteBucketPolicy: Handler = async (ctx) => {
  await deleteBucketConfig(ctx, "policy");
  await deleteBucketConfig(ctx, "policy-principals");
  return { status: 204 };
};

/**
 * IsPublic: the policy is public and RestrictPublicBuckets is off, or the bucket's ACL grants
 * everyone or every signed-in caller and the ACL counts (not ignored, not disabled). A bucket
 * without a policy answers too (false unless its ACL is public).
 */
export const getBucketPolicyStatus: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const policy = await ctx.access.policy(ctx.bucket);
  const guards = await ctx.access.guards(ctx.bucket);
  const publicPolicy = policy !== undefined && isPublicPolicy(policy) &&
    !guards.block?.restrictPublicBuckets;
  const publicAcl = !publicPolicy &&
    hasPublicGrant(effectiveAcl(await ctx.access.bucketAcl(bucket), guards));
  return xmlResult(
    xmlDocument("PolicyStatus", ctx.dialect.xmlns, text("IsPublic", publicPolicy || publicAcl)),
  );
};
