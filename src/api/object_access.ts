// Loading an object for a caller whose access may hinge on the object's own ACL.
import { accessDenied } from "../auth/access.ts";
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
 * The addressed version, when the caller may act on it with `permission`. A caller allowed only
 * by object ACLs learns nothing about keys it cannot read: a missing key is AccessDenied too.
 */
export async function readableVersion(
  ctx: RequestContext,
  opts: { permission: Permission },
): Promise<ObjectVersion> {
  let version: ObjectVersion;
  try {
    version = await ctx.layer.headObject(ctx.bucket, ctx.key, versionIdParam(ctx));
  } catch (err) {
    if (ctx.verdict === "object-acl" && err instanceof S3Error && err.status === 404) {
      throw accessDenied();
    }
    throw err;
  }
  if (ctx.verdict === "object-acl") {
    ctx.access.checkObjectAcl(ctx.principal, version.acl, version.owner, opts.permission);
  }
  return version;
}
