// ACL operations (Get/PutBucketAcl, Get/PutObjectAcl) and the ACL a write request asks for.
import {
  type Acl,
  aclFromGrantHeaders,
  aclFromJson,
  type AclResolver,
  aclToJson,
  type AclUser,
  assertSingleAclMethod,
  cannedAcl,
  hasGrantHeaders,
  parseAclXml,
  privateAcl,
  renderAclXml,
} from "../auth/acl.ts";
import { acceptedWithAclsDisabled, hasPublicGrant } from "../auth/public_access.ts";
import { h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import type { ObjectVersion } from "../meta/store.ts";
import {
  bucketOf,
  type Handler,
  originOf,
  putBucketConfig,
  type RequestContext,
  xmlResult,
} from "./context.ts";
import { readableVersion, versionIdParam } from "./object_access.ts";

const MAX_ACL_BODY = 64 * 1024;

/** Resolves grantees (user ids, e-mail addresses) against the known users. */
async function resolver(ctx: RequestContext): Promise<AclResolver> {
  const users = await ctx.layer.meta.listUsers();
  const admin = ctx.credentials.adminPrincipal();
  const all: (AclUser & { email: string })[] = [
    { id: admin.id, displayName: admin.displayName, email: "" },
    ...users.map((u) => ({ id: u.id, displayName: u.name, email: u.email })),
  ];
  return {
    email: (address) =>
      all.find((u) => u.email !== "" && u.email.toLowerCase() === address.toLowerCase()),
    userId: (id) => all.find((u) => u.id === id),
  };
}

async function ownerOf(ctx: RequestContext, id: string): Promise<AclUser> {
  return { id, displayName: await ctx.credentials.ownerName(id) };
}

/**
 * The ACL a request sets through the canned header or grant headers (and, for Put*Acl, the
 * body). Undefined when it names none.
 */
export async function requestedAcl(
  ctx: RequestContext,
  opts: { owner: AclUser; bucketOwnerId?: string; body?: string },
): Promise<Acl | undefined> {
  const canned = ctx.headers.get(h(ctx.dialect, "acl"));
  const grants = hasGrantHeaders(ctx.headers, ctx.dialect);
  const body = opts.body !== undefined && opts.body.trim() !== "" ? opts.body : undefined;
  assertSingleAclMethod(canned !== null, grants, body !== undefined);
  let acl: Acl | undefined;
  if (canned !== null) {
    // Only the bucket-owner-* canned ACLs name the bucket owner: look its name up then.
    const bucketOwner = opts.bucketOwnerId === undefined
      ? undefined
      : await ownerOf(ctx, opts.bucketOwnerId);
    acl = cannedAcl(canned, opts.owner, bucketOwner);
  } else if (grants) {
    acl = aclFromGrantHeaders(ctx.headers, ctx.dialect, opts.owner, await resolver(ctx));
  } else if (body !== undefined) {
    acl = parseAclXml(body, { expectedOwnerId: opts.owner.id, resolve: await resolver(ctx) });
  }
  // A new bucket has no guards yet; CreateBucket checks its own ownership header.
  if (acl && ctx.operation !== "CreateBucket") await guardAcl(ctx, acl, canned ?? undefined);
  return acl;
}

/**
 * The bucket's guards on a requested ACL: with ACLs disabled (BucketOwnerEnforced) only the
 * bucket owner's full control is accepted (AccessControlListNotSupported); BlockPublicAcls
 * refuses public grants (AccessDenied).
 */
async function guardAcl(ctx: RequestContext, acl: Acl, canned: string | undefined) {
  const bucket = await bucketOf(ctx);
  const guards = await ctx.access.guards(bucket.name);
  if (
    guards.ownership === "BucketOwnerEnforced" &&
    !acceptedWithAclsDisabled(acl, { canned, bucketOwner: bucket.owner })
  ) {
    throw new S3Error("AccessControlListNotSupported", "The bucket does not allow ACLs");
  }
  if (guards.block?.blockPublicAcls && hasPublicGrant(acl)) {
    throw new S3Error("AccessDenied", "Access Denied");
  }
}

/** With ACLs disabled an ACL read shows the bucket owner's full control, whatever was stored. */
async function aclsDisabled(ctx: RequestContext): Promise<boolean> {
  return (await ctx.access.guards(ctx.bucket)).ownership === "BucketOwnerEnforced";
}

export const getBucketAcl: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const acl = await aclsDisabled(ctx)
    ? privateAcl(await ownerOf(ctx, bucket.owner))
    : await ctx.access.bucketAcl(bucket);
  if (acl.owner.displayName === acl.owner.id) acl.owner = await ownerOf(ctx, acl.owner.id);
  return xmlResult(renderAclXml(acl, ctx.dialect));
};

export const putBucketAcl: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const body = await ctx.body.text(MAX_ACL_BODY);
  const acl = await requestedAcl(ctx, { owner: await ownerOf(ctx, bucket.owner), body });
  if (!acl) throw new S3Error("MissingSecurityHeader", "An ACL header or body is required.");
  await putBucketConfig(ctx, "acl", aclToJson(acl));
  return { status: 200 };
};

function objectAcl(ctx: RequestContext, v: ObjectVersion): Promise<Acl> | Acl {
  if (v.acl !== undefined) return aclFromJson(v.acl);
  return ownerOf(ctx, v.owner).then(privateAcl);
}

export const getObjectAcl: Handler = async (ctx) => {
  const v = await readableVersion(ctx, { permission: "READ_ACP" });
  const acl = await aclsDisabled(ctx)
    ? privateAcl(await ownerOf(ctx, (await bucketOf(ctx)).owner))
    : await objectAcl(ctx, v);
  const result = xmlResult(renderAclXml(acl, ctx.dialect));
  if (v.versionId !== "null") result.headers![h(ctx.dialect, "version-id")] = v.versionId;
  return result;
};

export const putObjectAcl: Handler = async (ctx) => {
  const v = await readableVersion(ctx, { permission: "WRITE_ACP" });
  const bucket = await bucketOf(ctx);
  const body = await ctx.body.text(MAX_ACL_BODY);
  const acl = await requestedAcl(ctx, {
    owner: await ownerOf(ctx, v.owner),
    bucketOwnerId: bucket.owner,
    body,
  });
  if (!acl) throw new S3Error("MissingSecurityHeader", "An ACL header or body is required.");
  if (!(await ctx.layer.setObjectAcl(v, aclToJson(acl), originOf(ctx)))) {
    throw new S3Error("NoSuchKey", "The specified key does not exist.", {
      details: { Key: ctx.key },
    });
  }
  const headers: Record<string, string> = {};
  if (versionIdParam(ctx) !== undefined) headers[h(ctx.dialect, "version-id")] = v.versionId;
  return { status: 200, headers };
};
