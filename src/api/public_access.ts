// Get/Put/DeletePublicAccessBlock and Get/Put/DeleteBucketOwnershipControls: the documents and
// their storage as bucket configs. Their effect lives in the access decision (src/auth/access.ts),
// the ACL-carrying writes (acl.ts) and PutBucketPolicy (policy.ts).
import {
  OBJECT_OWNERSHIP,
  type ObjectOwnership,
  type PublicAccessBlock,
  readStoredBlock,
  storedBlock,
} from "../auth/public_access.ts";
import { S3Error } from "../http/errors.ts";
import { children, el, leafText, parseXml, text, xmlDocument, type XmlNode } from "../http/xml.ts";
import {
  bucketOf,
  deleteBucketConfig,
  type Handler,
  putBucketConfig,
  type RequestContext,
  xmlResult,
} from "./context.ts";
import { readVerifiedBody } from "./verified_body.ts";

const MAX_BODY = 16 * 1024;

const BLOCK_FIELDS: [string, keyof PublicAccessBlock][] = [
  ["BlockPublicAcls", "blockPublicAcls"],
  ["IgnorePublicAcls", "ignorePublicAcls"],
  ["BlockPublicPolicy", "blockPublicPolicy"],
  ["RestrictPublicBuckets", "restrictPublicBuckets"],
];

async function readDocument(ctx: RequestContext): Promise<string> {
  return new TextDecoder().decode(await readVerifiedBody(ctx, MAX_BODY, { optional: true }));
}

/** A PublicAccessBlockConfiguration document; an element left out is false. */
export function parsePublicAccessBlock(body: string): PublicAccessBlock {
  const root = parseXml(body, "PublicAccessBlockConfiguration");
  const names = BLOCK_FIELDS.map(([name]) => name);
  for (const name of Object.keys(root)) {
    if (!names.includes(name)) {
      throw new S3Error("MalformedXML", `Unexpected element ${name} in the configuration.`);
    }
  }
  const block = {} as PublicAccessBlock;
  for (const [name, field] of BLOCK_FIELDS) {
    const value = leafText(root[name], name)?.toLowerCase();
    if (value !== undefined && value !== "true" && value !== "false") {
      throw new S3Error("MalformedXML", `${name} must be true or false.`);
    }
    block[field] = value === "true";
  }
  return block;
}

export const getPublicAccessBlock: Handler = async (ctx) => {
  await bucketOf(ctx);
  const stored = await ctx.layer.meta.getBucketConfig(ctx.bucket, "public-access-block");
  if (stored === undefined) {
    throw new S3Error(
      "NoSuchPublicAccessBlockConfiguration",
      "The public access block configuration was not found",
      { details: { BucketName: ctx.bucket } },
    );
  }
  const block = readStoredBlock(stored);
  const inner = BLOCK_FIELDS.map(([name, field]) => text(name, block[field])).join("");
  return xmlResult(xmlDocument("PublicAccessBlockConfiguration", ctx.dialect.xmlns, inner));
};

export const putPublicAccessBlock: Handler = async (ctx) => {
  await bucketOf(ctx);
  const block = parsePublicAccessBlock(await readDocument(ctx));
  await putBucketConfig(ctx, "public-access-block", storedBlock(block));
  return { status: 200 };
};

export const deletePublicAccessBlock: Handler = async (ctx) => {
  await deleteBucketConfig(ctx, "public-access-block");
  return { status: 204 };
};

/** An OwnershipControls document: exactly one Rule with a known ObjectOwnership. */
export function parseOwnershipControls(body: string): ObjectOwnership {
  const root = parseXml(body, "OwnershipControls");
  for (const name of Object.keys(root)) {
    if (name !== "Rule") {
      throw new S3Error("MalformedXML", `Unexpected element ${name} in OwnershipControls.`);
    }
  }
  const rules = children(root.Rule);
  if (rules.length !== 1 || typeof rules[0] !== "object" || Array.isArray(rules[0])) {
    throw new S3Error("MalformedXML", "OwnershipControls must have exactly one Rule.");
  }
  const rule = rules[0] as Record<string, XmlNode>;
  const value = leafText(rule.ObjectOwnership, "ObjectOwnership");
  if (Object.keys(rule).some((k) => k !== "ObjectOwnership") || value === undefined) {
    throw new S3Error("MalformedXML", "A Rule holds one ObjectOwnership.");
  }
  return checkedOwnership(value, "MalformedXML");
}

/** A known ObjectOwnership value, else `code` (MalformedXML in a document, InvalidArgument). */
export function checkedOwnership(value: string, code: string): ObjectOwnership {
  if (!OBJECT_OWNERSHIP.includes(value)) {
    throw new S3Error(code, `ObjectOwnership must be one of ${OBJECT_OWNERSHIP.join(", ")}.`);
  }
  return value as ObjectOwnership;
}

export function aclWithOwnershipError(): S3Error {
  return new S3Error(
    "InvalidBucketAclWithObjectOwnership",
    "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting",
  );
}

export const getBucketOwnershipControls: Handler = async (ctx) => {
  await bucketOf(ctx);
  const ownership = await ctx.layer.meta.getBucketConfig(ctx.bucket, "ownership");
  if (ownership === undefined) {
    throw new S3Error(
      "OwnershipControlsNotFoundError",
      "The bucket ownership controls were not found",
      { details: { BucketName: ctx.bucket } },
    );
  }
  const rule = el("Rule", text("ObjectOwnership", ownership));
  return xmlResult(xmlDocument("OwnershipControls", ctx.dialect.xmlns, rule));
};

export const putBucketOwnershipControls: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const ownership = parseOwnershipControls(await readDocument(ctx));
  if (ownership === "BucketOwnerEnforced") {
    // ACLs can only be turned off once the bucket's own ACL grants nobody but the owner.
    const acl = await ctx.access.bucketAcl(bucket);
    const others = acl.grants.some((g) =>
      g.grantee.type !== "CanonicalUser" || g.grantee.id !== bucket.owner
    );
    if (others) throw aclWithOwnershipError();
  }
  await putBucketConfig(ctx, "ownership", ownership);
  return { status: 200 };
};

export const deleteBucketOwnershipControls: Handler = async (ctx) => {
  await deleteBucketConfig(ctx, "ownership");
  return { status: 204 };
};
