// Operation name -> handler, for the operations that are built.
import {
  createBucket,
  deleteBucket,
  getBucketLocation,
  headBucket,
  listBuckets,
} from "./buckets.ts";
import type { Handler } from "./context.ts";
import { copyObject } from "./copy.ts";
import { deleteObjects } from "./delete_objects.ts";
import { listObjectsV1, listObjectsV2 } from "./list.ts";
import { deleteObject, getObject, headObject, putObject } from "./objects.ts";

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
  CopyObject: copyObject,
  GetObject: getObject,
  HeadObject: headObject,
  DeleteObject: deleteObject,
};

/**
 * Operations whose handlers read the request body themselves. For every other operation the
 * body is drained (and its signed hash checked) before the handler acts.
 */
export const READS_BODY = new Set(["PutObject", "CreateBucket", "DeleteObjects", "CopyObject"]);
