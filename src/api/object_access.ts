// Loading an object for a caller whose access may hinge on the object's own ACL.
import { accessDenied } from "../auth/access.ts";
import { OPERATION_RULES } from "../auth/actions.ts";
import type { Permission } from "../auth/acl.ts";
import { S3Error } from "../http/errors.ts";
import type { ObjectVersion } from "../meta/store.ts";
import type { RequestContext } from "./context.ts";

export function versionIdParam(ctx: RequestContext): string | undefined {
  const id = ctx.query.get("versionId");
  if (id === null) return undefined;
  if (id === "") throw new S3Error("InvalidArgument", "Version id cannot be the empty string.");
  return id;
}

/**
 * Whether the caller may list the key's place in the bucket: only then does a missing key answer
 * NoSuchKey, so that reads cannot be used to probe which keys exist. The listing asked about is
 * one with the key itself as prefix (it would show whether the key exists), so a policy that
 * lets the caller list a prefix (`s3:prefix` conditions) covers the keys under it.
 */
async function mayList(ctx: RequestContext): Promise<boolean> {
  if (ctx.verdict === "object-acl") return false;
  try {
    const bucket = ctx.bucketRecord;
    const facts = {
      ...ctx.facts,
      prefix: ctx.key,
      maxKeys: undefined,
      delimiter: undefined,
      versionId: undefined,
    };
    return await ctx.access.decideRule(ctx.principal, OPERATION_RULES.ListObjects, {
      bucket,
      facts,
    }) === "allow";
  } catch {
    return false;
  }
}

/**
 * The addressed version, when the caller may act on it with `permission`. A caller allowed only
 * without the right to list the bucket learns nothing about keys: a missing key is AccessDenied.
 */
export async function readableVersion(
  ctx: RequestContext,
  opts: { permission: Permission },
): Promise<ObjectVersion> {
  let version: ObjectVersion;
  try {
    version = await ctx.layer.headObject(ctx.bucket, ctx.key, versionIdParam(ctx));
  } catch (err) {
    if (err instanceof S3Error && (err.code === "NoSuchKey" || err.code === "NoSuchVersion")) {
      if (!(await mayList(ctx))) throw accessDenied();
    }
    throw err;
  }
  if (ctx.verdict === "object-acl") {
    await ctx.access.checkObjectAcl(ctx.principal, version, opts.permission);
  }
  return version;
}
