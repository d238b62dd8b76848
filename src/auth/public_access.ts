// Per-bucket guards on public access: the public access block (four switches) and the object
// ownership setting (BucketOwnerEnforced turns ACLs off). Both are stored as bucket configs; the
// access decision (access.ts), the ACL-carrying writes and PutBucketPolicy consult them.
import type { Acl, Grant } from "./acl.ts";

export interface PublicAccessBlock {
  /** Refuse requests that set a public ACL (PutBucketAcl, PutObjectAcl, writes with an ACL). */
  blockPublicAcls: boolean;
  /** Ignore the public grants of the bucket's and its objects' ACLs. */
  ignorePublicAcls: boolean;
  /** Refuse PutBucketPolicy with a public policy. */
  blockPublicPolicy: boolean;
  /** With a public policy, its statements grant only the bucket owner's account. */
  restrictPublicBuckets: boolean;
}

export const OBJECT_OWNERSHIP = ["BucketOwnerEnforced", "BucketOwnerPreferred", "ObjectWriter"];
export type ObjectOwnership = "BucketOwnerEnforced" | "BucketOwnerPreferred" | "ObjectWriter";

/** What the access decision needs to know about a bucket's guards. */
export interface BucketGuards {
  block?: PublicAccessBlock;
  /** Undefined when no ownership controls are set: objects belong to their writers. */
  ownership?: ObjectOwnership;
}

export function storedBlock(block: PublicAccessBlock): string {
  return JSON.stringify(block);
}

export function readStoredBlock(json: string): PublicAccessBlock {
  const doc = JSON.parse(json) as Partial<PublicAccessBlock>;
  return {
    blockPublicAcls: doc.blockPublicAcls === true,
    ignorePublicAcls: doc.ignorePublicAcls === true,
    blockPublicPolicy: doc.blockPublicPolicy === true,
    restrictPublicBuckets: doc.restrictPublicBuckets === true,
  };
}

/** A grant to everyone or to every signed-in caller, which the protocol counts as public. */
export function isPublicGrant(g: Grant): boolean {
  return g.grantee.type === "Group" &&
    (g.grantee.group === "AllUsers" || g.grantee.group === "AuthenticatedUsers");
}

export function hasPublicGrant(acl: Acl): boolean {
  return acl.grants.some(isPublicGrant);
}

/**
 * The ACL as the access decision reads it: no grants at all when ACLs are disabled
 * (BucketOwnerEnforced), none of the public ones when IgnorePublicAcls is on.
 */
export function effectiveAcl(acl: Acl, guards: BucketGuards): Acl {
  if (guards.ownership === "BucketOwnerEnforced") return { owner: acl.owner, grants: [] };
  if (!guards.block?.ignorePublicAcls) return acl;
  return { owner: acl.owner, grants: acl.grants.filter((g) => !isPublicGrant(g)) };
}

/**
 * Whether a requested ACL is one that a bucket with ACLs disabled still accepts: the
 * bucket-owner-full-control canned ACL, or a document that only gives the bucket owner (and
 * the writer) full control.
 */
export function acceptedWithAclsDisabled(
  acl: Acl,
  opts: { canned?: string; bucketOwner: string },
): boolean {
  if (opts.canned !== undefined) return opts.canned === "bucket-owner-full-control";
  const ownerGrant = acl.grants.some((g) =>
    g.grantee.type === "CanonicalUser" && g.grantee.id === opts.bucketOwner
  );
  return ownerGrant &&
    acl.grants.every((g) =>
      g.permission === "FULL_CONTROL" && g.grantee.type === "CanonicalUser" &&
      (g.grantee.id === opts.bucketOwner || g.grantee.id === acl.owner.id)
    );
}
