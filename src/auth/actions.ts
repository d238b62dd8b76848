// What each protocol operation needs: its policy action, the ACL permission that grants it, and
// the bucket_access class (read or write) that covers it.
import type { Permission } from "./acl.ts";

export interface OperationRule {
  /** Policy action without prefix, e.g. "GetObject". */
  action: string;
  /** The action instead when the request names a version (`versionId`), e.g. "GetObjectVersion". */
  versionAction?: string;
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
  GetBucketNotificationConfiguration: { action: "GetBucketNotification" },
  // Listening shows what a listing would (the change feed uses the same decision).
  ListenBucketNotification: {
    action: "ListBucket",
    acl: { on: "bucket", permission: "READ" },
    access: read,
  },
  PutBucketNotificationConfiguration: { action: "PutBucketNotification" },
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
  GetObjectTagging: {
    action: "GetObjectTagging",
    versionAction: "GetObjectVersionTagging",
    access: read,
    object: true,
  },
  // Decided by the handler once the Tagging document is read (RequestObjectTag conditions).
  PutObjectTagging: {
    action: "PutObjectTagging",
    versionAction: "PutObjectVersionTagging",
    access: write,
    object: true,
    byHandler: true,
  },
  DeleteObjectTagging: {
    action: "DeleteObjectTagging",
    versionAction: "DeleteObjectVersionTagging",
    access: write,
    object: true,
  },
  GetBucketEncryption: { action: "GetEncryptionConfiguration" },
  PutBucketEncryption: { action: "PutEncryptionConfiguration" },
  DeleteBucketEncryption: { action: "PutEncryptionConfiguration" },
  GetBucketLogging: { action: "GetBucketLogging" },
  GetBucketReplication: { action: "GetReplicationConfiguration" },
  PutBucketReplication: { action: "PutReplicationConfiguration" },
  DeleteBucketReplication: { action: "PutReplicationConfiguration" },
  PutBucketLogging: { action: "PutBucketLogging" },
  GetBucketWebsite: { action: "GetBucketWebsite" },
  PutBucketWebsite: { action: "PutBucketWebsite" },
  DeleteBucketWebsite: { action: "DeleteBucketWebsite" },
  GetBucketCors: { action: "GetBucketCORS" },
  PutBucketCors: { action: "PutBucketCORS" },
  DeleteBucketCors: { action: "PutBucketCORS" },
  GetBucketPolicy: { action: "GetBucketPolicy" },
  PutBucketPolicy: { action: "PutBucketPolicy" },
  DeleteBucketPolicy: { action: "DeleteBucketPolicy" },
  GetBucketPolicyStatus: { action: "GetBucketPolicyStatus" },
  GetPublicAccessBlock: { action: "GetBucketPublicAccessBlock" },
  PutPublicAccessBlock: { action: "PutBucketPublicAccessBlock" },
  DeletePublicAccessBlock: { action: "PutBucketPublicAccessBlock" },
  GetBucketOwnershipControls: { action: "GetBucketOwnershipControls" },
  PutBucketOwnershipControls: { action: "PutBucketOwnershipControls" },
  DeleteBucketOwnershipControls: { action: "PutBucketOwnershipControls" },
  GetBucketAcl: { action: "GetBucketAcl", acl: { on: "bucket", permission: "READ_ACP" } },
  PutBucketAcl: { action: "PutBucketAcl", acl: { on: "bucket", permission: "WRITE_ACP" } },
  GetObject: {
    action: "GetObject",
    versionAction: "GetObjectVersion",
    acl: { on: "object", permission: "READ" },
    access: read,
    object: true,
  },
  HeadObject: {
    action: "GetObject",
    versionAction: "GetObjectVersion",
    acl: { on: "object", permission: "READ" },
    access: read,
    object: true,
  },
  // A query reads the object: the same action and permission as GetObject.
  SelectObjectContent: {
    action: "GetObject",
    versionAction: "GetObjectVersion",
    acl: { on: "object", permission: "READ" },
    access: read,
    object: true,
  },
  GetObjectAttributes: {
    action: "GetObjectAttributes",
    versionAction: "GetObjectVersionAttributes",
    acl: { on: "object", permission: "READ" },
    access: read,
    object: true,
  },
  GetObjectAcl: {
    action: "GetObjectAcl",
    versionAction: "GetObjectVersionAcl",
    acl: { on: "object", permission: "READ_ACP" },
    object: true,
  },
  PutObjectAcl: {
    action: "PutObjectAcl",
    versionAction: "PutObjectVersionAcl",
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
    versionAction: "DeleteObjectVersion",
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
    versionAction: "DeleteObjectVersion",
    acl: { on: "bucket", permission: "WRITE" },
    access: write,
    object: true,
    perKey: true,
  },
};

/** The policy actions of a rule: its action and, when it has one, its version action. */
export function ruleActions(rule: OperationRule): string[] {
  return rule.versionAction ? [rule.action, rule.versionAction] : [rule.action];
}

/**
 * Every action some request is checked against: the only names a bucket policy may use, so that
 * no statement is accepted and then silently never applies.
 */
export const POLICY_ACTIONS: readonly string[] = [
  ...new Set(Object.values(OPERATION_RULES).flatMap(ruleActions)),
].sort();

/** Operations any enabled, authenticated principal may call: they act on its own account. */
export const ACCOUNT_OPERATIONS = new Set(["ListBuckets", "CreateBucket"]);
