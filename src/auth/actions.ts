// What each protocol operation needs: its policy action, the ACL permission that grants it, and
// the bucket_access class (read or write) that covers it.
import type { Permission } from "./acl.ts";

export interface OperationRule {
  /** Policy action without prefix, e.g. "GetObject". */
  action: string;
  /** ACL permission that grants the operation, and whether it is checked on the bucket's or
   * the object's ACL. Undefined: no ACL grants it (owner, bucket_access or policy only). */
  acl?: { on: "bucket" | "object"; permission: Permission };
  /** The bucket_access class covering the operation (see the spec's permission table). */
  access?: "read" | "write";
  /** True when the operation acts on an object key (policy resource `bucket/key`). */
  object?: boolean;
  /** Decided per key by the handler (DeleteObjects names many keys). */
  perKey?: boolean;
  /** Authenticated and decided by the handler (PostObject: the form carries the signature). */
  byHandler?: boolean;
}

const read = "read" as const;
const write = "write" as const;

export const OPERATION_RULES: Record<string, OperationRule> = {
  HeadBucket: { action: "ListBucket", acl: { on: "bucket", permission: "READ" }, access: read },
  GetBucketLocation: { action: "GetBucketLocation", access: read },
  ListObjects: { action: "ListBucket", acl: { on: "bucket", permission: "READ" }, access: read },
  ListObjectsV2: { action: "ListBucket", acl: { on: "bucket", permission: "READ" }, access: read },
  DeleteBucket: { action: "DeleteBucket" },
  GetBucketVersioning: { action: "GetBucketVersioning" },
  GetObjectLockConfiguration: { action: "GetBucketObjectLockConfiguration" },
  PutObjectLockConfiguration: { action: "PutBucketObjectLockConfiguration" },
  GetObjectRetention: { action: "GetObjectRetention", object: true },
  PutObjectRetention: { action: "PutObjectRetention", object: true },
  GetObjectLegalHold: { action: "GetObjectLegalHold", object: true },
  PutObjectLegalHold: { action: "PutObjectLegalHold", object: true },
  BypassGovernanceRetention: { action: "BypassGovernanceRetention", object: true },
  PutBucketVersioning: { action: "PutBucketVersioning" },
  GetBucketLifecycleConfiguration: { action: "GetLifecycleConfiguration" },
  PutBucketLifecycleConfiguration: { action: "PutLifecycleConfiguration" },
  DeleteBucketLifecycle: { action: "PutLifecycleConfiguration" },
  ListObjectVersions: {
    action: "ListBucketVersions",
    acl: { on: "bucket", permission: "READ" },
    access: read,
  },
  GetBucketTagging: { action: "GetBucketTagging" },
  PutBucketTagging: { action: "PutBucketTagging" },
  DeleteBucketTagging: { action: "PutBucketTagging" },
  GetObjectTagging: { action: "GetObjectTagging", access: read, object: true },
  PutObjectTagging: { action: "PutObjectTagging", access: write, object: true },
  DeleteObjectTagging: { action: "DeleteObjectTagging", access: write, object: true },
  GetBucketCors: { action: "GetBucketCORS" },
  PutBucketCors: { action: "PutBucketCORS" },
  DeleteBucketCors: { action: "PutBucketCORS" },
  GetBucketPolicy: { action: "GetBucketPolicy" },
  PutBucketPolicy: { action: "PutBucketPolicy" },
  DeleteBucketPolicy: { action: "DeleteBucketPolicy" },
  GetBucketPolicyStatus: { action: "GetBucketPolicyStatus" },
  GetBucketAcl: { action: "GetBucketAcl", acl: { on: "bucket", permission: "READ_ACP" } },
  PutBucketAcl: { action: "PutBucketAcl", acl: { on: "bucket", permission: "WRITE_ACP" } },
  GetObject: {
    action: "GetObject",
    acl: { on: "object", permission: "READ" },
    access: read,
    object: true,
  },
  HeadObject: {
    action: "GetObject",
    acl: { on: "object", permission: "READ" },
    access: read,
    object: true,
  },
  GetObjectAcl: {
    action: "GetObjectAcl",
    acl: { on: "object", permission: "READ_ACP" },
    object: true,
  },
  PutObjectAcl: {
    action: "PutObjectAcl",
    acl: { on: "object", permission: "WRITE_ACP" },
    object: true,
  },
  PutObject: {
    action: "PutObject",
    acl: { on: "bucket", permission: "WRITE" },
    access: write,
    object: true,
  },
  PostObject: {
    action: "PutObject",
    acl: { on: "bucket", permission: "WRITE" },
    access: write,
    object: true,
    byHandler: true,
  },
  CopyObject: {
    action: "PutObject",
    acl: { on: "bucket", permission: "WRITE" },
    access: write,
    object: true,
  },
  DeleteObject: {
    action: "DeleteObject",
    acl: { on: "bucket", permission: "WRITE" },
    access: write,
    object: true,
  },
  CreateMultipartUpload: {
    action: "PutObject",
    acl: { on: "bucket", permission: "WRITE" },
    access: write,
    object: true,
  },
  UploadPart: {
    action: "PutObject",
    acl: { on: "bucket", permission: "WRITE" },
    access: write,
    object: true,
  },
  UploadPartCopy: {
    action: "PutObject",
    acl: { on: "bucket", permission: "WRITE" },
    access: write,
    object: true,
  },
  CompleteMultipartUpload: {
    action: "PutObject",
    acl: { on: "bucket", permission: "WRITE" },
    access: write,
    object: true,
  },
  AbortMultipartUpload: {
    action: "AbortMultipartUpload",
    acl: { on: "bucket", permission: "WRITE" },
    access: write,
    object: true,
  },
  ListParts: { action: "ListMultipartUploadParts", access: write, object: true },
  ListMultipartUploads: {
    action: "ListBucketMultipartUploads",
    acl: { on: "bucket", permission: "READ" },
    access: read,
  },
  DeleteObjects: {
    action: "DeleteObject",
    acl: { on: "bucket", permission: "WRITE" },
    access: write,
    object: true,
    perKey: true,
  },
};

/** Operations any enabled, authenticated principal may call: they act on its own account. */
export const ACCOUNT_OPERATIONS = new Set(["ListBuckets", "CreateBucket"]);
