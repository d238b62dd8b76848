// Object operations: PutObject, GetObject, HeadObject, DeleteObject.
import { aclToJson } from "../auth/acl.ts";
import { checkConditions } from "../http/conditional.ts";
import { h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { contentTypeFor } from "../http/mime.ts";
import { contentRange, parseRange } from "../http/range.ts";
import type { ObjectVersion } from "../meta/store.ts";
import { MAX_PUT_SIZE } from "../object/layer.ts";
import { writeConditionOf } from "../object/write_condition.ts";
import { partRange } from "../object/multipart.ts";
import { requestedAcl } from "./acl.ts";
import { bypassGovernance, lockHeaders, newVersionLock } from "./object_lock.ts";
import { readChecksumHeaders, writeChecksum } from "./checksums.ts";
import { readHeaders, readKey, writeEncryption } from "./encryption.ts";
import { refuseMfa } from "./versioning.ts";
import type { Handler, RequestContext } from "./context.ts";
import { readableVersion, versionIdParam } from "./object_access.ts";
import { requestTags } from "./tags.ts";
import { expirationHeader } from "./expiration_header.ts";
import {
  applyResponseOverrides,
  objectHeaders,
  readMetadata,
  rejectUnsupportedWriteOptions,
  validateKey,
} from "./object_headers.ts";
import { bucketOf, originOf } from "./context.ts";

/** The Content-MD5 header, checked for shape (a base64 16-byte digest). */
export function contentMd5(headers: Headers): string | undefined {
  const value = headers.get("content-md5");
  if (value === null) return undefined;
  let bytes = -1;
  try {
    bytes = atob(value).length;
  } catch { /* reported below */ }
  if (bytes !== 16) {
    throw new S3Error("InvalidDigest", "The Content-MD5 you specified is not valid.");
  }
  return value;
}

function declaredLength(ctx: RequestContext): number | undefined {
  // A streaming upload's Content-Length counts its framing; the decoded length is the object's.
  const decoded = ctx.body.decodedLength;
  const raw = decoded !== undefined ? String(decoded) : ctx.headers.get("content-length");
  if (raw === null) return undefined;
  if (!/^\d+$/.test(raw)) throw new S3Error("InvalidArgument", "Content-Length must be a number.");
  const length = Number(raw);
  if (length > MAX_PUT_SIZE) {
    throw new S3Error(
      "EntityTooLarge",
      "Your proposed upload exceeds the maximum allowed object size.",
    );
  }
  return length;
}

/** The ACL a new object gets from the request's headers (stored JSON; undefined: private). */
export async function newObjectAcl(ctx: RequestContext): Promise<string | undefined> {
  const bucket = await bucketOf(ctx);
  const ownerId = await newObjectOwner(ctx);
  const owner = ownerId === ctx.principal.id
    ? { id: ownerId, displayName: ctx.principal.displayName }
    : { id: ownerId, displayName: await ctx.credentials.ownerName(ownerId) };
  const acl = await requestedAcl(ctx, { owner, bucketOwnerId: bucket.owner });
  return acl ? aclToJson(acl) : undefined;
}

/**
 * The owner of a new object: its writer, unless the bucket's ownership controls give it to the
 * bucket owner (BucketOwnerEnforced always, BucketOwnerPreferred with bucket-owner-full-control).
 */
export async function newObjectOwner(ctx: RequestContext): Promise<string> {
  const bucket = await bucketOf(ctx);
  if (bucket.owner === ctx.principal.id) return bucket.owner;
  const ownership = (await ctx.access.guards(bucket.name)).ownership;
  const fullControl = ctx.headers.get(h(ctx.dialect, "acl")) === "bucket-owner-full-control";
  if (ownership === "BucketOwnerEnforced") return bucket.owner;
  if (ownership === "BucketOwnerPreferred" && fullControl) return bucket.owner;
  return ctx.principal.id;
}

export const putObject: Handler = async (ctx) => {
  validateKey(ctx.key);
  declaredLength(ctx);
  rejectUnsupportedWriteOptions(ctx.headers, ctx.dialect);
  const meta = readMetadata(ctx.headers, ctx.dialect);
  const tags = requestTags(ctx.headers, ctx.dialect);
  const acl = await newObjectAcl(ctx);
  const sse = await writeEncryption(ctx);
  const checksum = writeChecksum(ctx);
  const condition = writeConditionOf(ctx.headers);
  const version = await ctx.layer.putObject({
    bucket: ctx.bucket,
    key: ctx.key,
    // Read straight into the chunk buffers; else writeBody copies every chunk before it asks for
    // the next.
    body: ctx.body.direct() ?? ctx.body.chunks({ transient: true }),
    contentType: meta.contentType ?? contentTypeFor(ctx.key),
    userMeta: meta.userMeta,
    headers: meta.headers,
    owner: await newObjectOwner(ctx),
    contentMd5: contentMd5(ctx.headers),
    checks: checksum.checks,
    checksum: checksum.record,
    acl,
    encryption: sse.encryption,
    lock: await newVersionLock(ctx),
    tags,
    origin: originOf(ctx),
    condition,
  });
  const headers: Record<string, string> = { etag: version.etag, ...sse.headers };
  if (version.versionId !== "null") headers[h(ctx.dialect, "version-id")] = version.versionId;
  Object.assign(headers, checksum.headers(), await expirationHeader(ctx, version));
  return { status: 200, headers };
};

function readConditions(ctx: RequestContext) {
  return {
    ifMatch: ctx.headers.get("if-match"),
    ifNoneMatch: ctx.headers.get("if-none-match"),
    ifModifiedSince: ctx.headers.get("if-modified-since"),
    ifUnmodifiedSince: ctx.headers.get("if-unmodified-since"),
  };
}

/** The Range header's range, or the range of part `partNumber` (the two do not combine). */
function readRange(ctx: RequestContext, version: ObjectVersion) {
  const part = ctx.query.get("partNumber");
  if (part === null) return parseRange(ctx.headers.get("range"), version.size);
  if (ctx.headers.has("range")) {
    throw new S3Error(
      "InvalidRequest",
      "Cannot specify both Range header and partNumber query parameter.",
    );
  }
  if (!/^\d+$/.test(part)) {
    throw new S3Error(
      "InvalidArgument",
      "Part number must be an integer between 1 and 10000, inclusive.",
      {
        details: { ArgumentName: "partNumber", ArgumentValue: part },
      },
    );
  }
  const range = partRange(version, Number(part));
  return version.size === 0 ? undefined : range;
}

async function readObject(ctx: RequestContext, withBody: boolean) {
  const version = await readableVersion(ctx, { permission: "READ" });
  const key = await readKey(ctx, version);
  const headers = {
    ...objectHeaders(version, ctx.dialect),
    ...readHeaders(ctx, version),
    ...lockHeaders(ctx, version),
    ...(versionIdParam(ctx) === undefined ? await expirationHeader(ctx, version) : {}),
  };
  try {
    checkConditions(readConditions(ctx), version, { notModifiedAllowed: true });
  } catch (err) {
    if (err instanceof S3Error && err.code === "NotModified") {
      return {
        status: 304,
        headers: { etag: version.etag, "last-modified": headers["last-modified"] },
      };
    }
    throw err;
  }
  const range = readRange(ctx, version);
  Object.assign(headers, readChecksumHeaders(ctx, version));
  if (version.parts) headers[h(ctx.dialect, "mp-parts-count")] = String(version.parts.length);
  applyResponseOverrides(headers, ctx.query);
  headers["content-length"] = String(range ? range.length : version.size);
  if (range) headers["content-range"] = contentRange(range, version.size);
  const status = range ? 206 : 200;
  if (!withBody) return { status, headers };
  const { body } = await ctx.layer.openObject(version, range, key);
  return { status, headers, body };
}

export const getObject: Handler = (ctx) => readObject(ctx, true);
export const headObject: Handler = (ctx) => readObject(ctx, false);

export const deleteObject: Handler = async (ctx) => {
  validateKey(ctx.key);
  refuseMfa(ctx);
  const result = await ctx.layer.deleteObject(ctx.bucket, ctx.key, {
    versionId: versionIdParam(ctx),
    owner: ctx.principal.id,
    bypassGovernance: await bypassGovernance(ctx),
    origin: originOf(ctx),
  });
  const headers: Record<string, string> = {};
  // A simple delete reports whether the key's current version is now a delete marker: false
  // when the object was removed outright (an unversioned bucket).
  if (result.deleteMarker) headers[h(ctx.dialect, "delete-marker")] = "true";
  else if (result.versionId === undefined) headers[h(ctx.dialect, "delete-marker")] = "false";
  if (result.versionId !== undefined) headers[h(ctx.dialect, "version-id")] = result.versionId;
  return { status: 204, headers };
};
