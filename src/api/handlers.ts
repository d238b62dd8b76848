// Operation name -> handler, for the operations that are built.
import { getObjectAttributes } from "./object_attributes.ts";
import {
  createBucket,
  deleteBucket,
  getBucketLocation,
  headBucket,
  listBuckets,
} from "./buckets.ts";
import { getBucketAcl, getObjectAcl, putBucketAcl, putObjectAcl } from "./acl.ts";
import type { Handler } from "./context.ts";
import {
  deleteBucketEncryption,
  getBucketEncryption,
  putBucketEncryption,
} from "./bucket_encryption.ts";
import { getBucketLogging, putBucketLogging } from "./bucket_logging.ts";
import {
  deleteBucketReplication,
  getBucketReplication,
  putBucketReplication,
} from "./bucket_replication.ts";
import { deleteBucketWebsite, getBucketWebsite, putBucketWebsite } from "./website.ts";
import { deleteBucketCors, getBucketCors, putBucketCors } from "./cors.ts";
import { copyObject } from "./copy.ts";
import { deleteObjects } from "./delete_objects.ts";
import {
  abortMultipartUpload,
  completeMultipartUpload,
  createMultipartUpload,
  uploadPartCopy,
  uploadPartHandler,
} from "./multipart.ts";
import { listMultipartUploads, listParts } from "./multipart_list.ts";
import { getBucketVersioning, listObjectVersions, putBucketVersioning } from "./versioning.ts";
import {
  getObjectLegalHold,
  getObjectLockConfiguration,
  getObjectRetention,
  putObjectLegalHold,
  putObjectLockConfiguration,
  putObjectRetention,
} from "./object_lock.ts";
import { listObjectsV1, listObjectsV2 } from "./list.ts";
import {
  deleteBucketLifecycle,
  getBucketLifecycleConfiguration,
  putBucketLifecycleConfiguration,
} from "./lifecycle.ts";
import { deleteObject, getObject, headObject, putObject } from "./objects.ts";
import { postObject } from "./post_object.ts";
import { selectObjectContent } from "./select.ts";
import {
  deleteBucketOwnershipControls,
  deletePublicAccessBlock,
  getBucketOwnershipControls,
  getPublicAccessBlock,
  putBucketOwnershipControls,
  putPublicAccessBlock,
} from "./public_access.ts";
import {
  deleteBucketTagging,
  deleteObjectTagging,
  getBucketTagging,
  getObjectTagging,
  putBucketTagging,
  putObjectTagging,
} from "./tagging.ts";
import {
  deleteBucketPolicy,
  getBucketPolicy,
  getBucketPolicyStatus,
  putBucketPolicy,
} from "./policy.ts";

import { listenBucketNotification } from "./listen.ts";
import {
  getBucketNotificationConfiguration,
  putBucketNotificationConfiguration,
} from "./notification.ts";
export const HANDLERS: Record<string, Handler> = {
  ListBuckets: listBuckets,
  CreateBucket: createBucket,
  DeleteBucket: deleteBucket,
  HeadBucket: headBucket,
  GetBucketLocation: getBucketLocation,
  ListObjects: listObjectsV1,
  ListObjectsV2: listObjectsV2,
  DeleteObjects: deleteObjects,
  PutObject: putObject,
  PostObject: postObject,
  CopyObject: copyObject,
  GetObject: getObject,
  HeadObject: headObject,
  SelectObjectContent: selectObjectContent,
  DeleteObject: deleteObject,
  GetBucketPolicy: getBucketPolicy,
  PutBucketPolicy: putBucketPolicy,
  DeleteBucketPolicy: deleteBucketPolicy,
  GetBucketPolicyStatus: getBucketPolicyStatus,
  GetBucketCors: getBucketCors,
  PutBucketCors: putBucketCors,
  DeleteBucketCors: deleteBucketCors,
  GetBucketAcl: getBucketAcl,
  PutBucketAcl: putBucketAcl,
  GetObjectAcl: getObjectAcl,
  PutObjectAcl: putObjectAcl,
  CreateMultipartUpload: createMultipartUpload,
  UploadPart: uploadPartHandler,
  UploadPartCopy: uploadPartCopy,
  CompleteMultipartUpload: completeMultipartUpload,
  AbortMultipartUpload: abortMultipartUpload,
  ListParts: listParts,
  ListMultipartUploads: listMultipartUploads,
  GetBucketVersioning: getBucketVersioning,
  PutBucketVersioning: putBucketVersioning,
  ListObjectVersions: listObjectVersions,
  GetBucketNotificationConfiguration: getBucketNotificationConfiguration,
  ListenBucketNotification: listenBucketNotification,
  PutBucketNotificationConfiguration: putBucketNotificationConfiguration,
  GetBucketLifecycleConfiguration: getBucketLifecycleConfiguration,
  PutBucketLifecycleConfiguration: putBucketLifecycleConfiguration,
  DeleteBucketLifecycle: deleteBucketLifecycle,
  GetObjectLockConfiguration: getObjectLockConfiguration,
  PutObjectLockConfiguration: putObjectLockConfiguration,
  GetObjectRetention: getObjectRetention,
  PutObjectRetention: putObjectRetention,
  GetObjectLegalHold: getObjectLegalHold,
  PutObjectLegalHold: putObjectLegalHold,
  GetObjectTagging: getObjectTagging,
  GetObjectAttributes: getObjectAttributes,
  PutObjectTagging: putObjectTagging,
  DeleteObjectTagging: deleteObjectTagging,
  GetBucketTagging: getBucketTagging,
  PutBucketTagging: putBucketTagging,
  DeleteBucketTagging: deleteBucketTagging,
  GetPublicAccessBlock: getPublicAccessBlock,
  PutPublicAccessBlock: putPublicAccessBlock,
  DeletePublicAccessBlock: deletePublicAccessBlock,
  GetBucketOwnershipControls: getBucketOwnershipControls,
  PutBucketOwnershipControls: putBucketOwnershipControls,
  DeleteBucketOwnershipControls: deleteBucketOwnershipControls,
  GetBucketEncryption: getBucketEncryption,
  PutBucketEncryption: putBucketEncryption,
  DeleteBucketEncryption: deleteBucketEncryption,
  GetBucketWebsite: getBucketWebsite,
  PutBucketWebsite: putBucketWebsite,
  DeleteBucketWebsite: deleteBucketWebsite,
  GetBucketLogging: getBucketLogging,
  PutBucketLogging: putBucketLogging,
  GetBucketReplication: getBucketReplication,
  PutBucketReplication: putBucketReplication,
  DeleteBucketReplication: deleteBucketReplication,
};

/**
 * Operations whose handlers read the request body themselves. For every other operation the
 * body is drained (and its signed hash checked) before the handler acts.
 */
export const READS_BODY = new Set([
  "PutBucketNotificationConfiguration",
  "PutObject",
  "PostObject",
  "CreateBucket",
  "DeleteObjects",
  "CopyObject",
  "PutBucketPolicy",
  "PutBucketAcl",
  "PutObjectAcl",
  "UploadPart",
  "CompleteMultipartUpload",
  "PutBucketVersioning",
  "PutBucketLifecycleConfiguration",
  "PutObjectLockConfiguration",
  "PutObjectRetention",
  "PutObjectLegalHold",
  "PutObjectTagging",
  "PutBucketTagging",
  "PutPublicAccessBlock",
  "PutBucketOwnershipControls",
  "PutBucketCors",
  "SelectObjectContent",
  "PutBucketEncryption",
  "PutBucketReplication",
  "PutBucketWebsite",
  "PutBucketLogging",
]);
