// Multipart upload operations: Create, UploadPart, UploadPartCopy, Complete, Abort, ListParts.
import { CHECKSUM_ALGORITHMS, type ChecksumAlgorithm } from "../http/checksum.ts";
import { checkConditions } from "../http/conditional.ts";
import { h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { contentTypeFor } from "../http/mime.ts";
import { writeConditionOf } from "../object/write_condition.ts";
import { children, el, leafText, parseXml, text, xmlDocument, type XmlNode } from "../http/xml.ts";
import type { ChecksumRecord, ObjectVersion, UploadRecord } from "../meta/store.ts";
import {
  abortUpload,
  completeUpload,
  MAX_PART_NUMBER,
  newUploadId,
  noSuchUpload,
  sameCompletion,
  uploadPart,
} from "../object/multipart.ts";
import { copyConditions, parseCopySource, readableSource } from "./copy.ts";
import {
  bucketOf,
  type Handler,
  type HandlerResult,
  isoDate,
  originOf,
  type RequestContext,
  xmlResult,
} from "./context.ts";
import { readHeaders, readKey, writeEncryption } from "./encryption.ts";
import { contentMd5, newObjectAcl, newObjectOwner } from "./objects.ts";
import { newVersionLock } from "./object_lock.ts";
import { requestTags } from "./tags.ts";
import { readMetadata, rejectUnsupportedWriteOptions, validateKey } from "./object_headers.ts";
import {
  checksumElements,
  completeExpectations,
  partChecksum,
  partChecksumHeaders,
  uploadChecksumHeaders,
  uploadChecksumSettings,
} from "./checksums.ts";
import type { RequestedPart } from "../object/multipart_checksum.ts";
import { single } from "../object/layer.ts";

const MAX_COMPLETE_BODY = 4 * 1024 * 1024;

export const createMultipartUpload: Handler = async (ctx) => {
  validateKey(ctx.key);
  rejectUnsupportedWriteOptions(ctx.headers, ctx.dialect);
  await bucketOf(ctx);
  const meta = readMetadata(ctx.headers, ctx.dialect);
  const tags = requestTags(ctx.headers, ctx.dialect);
  const sse = await writeEncryption(ctx);
  const upload: UploadRecord = {
    bucket: ctx.bucket,
    key: ctx.key,
    uploadId: newUploadId(),
    initiated: Date.now(),
    owner: await newObjectOwner(ctx),
    contentType: meta.contentType ?? contentTypeFor(ctx.key),
    userMeta: meta.userMeta,
    headers: meta.headers,
    acl: await newObjectAcl(ctx),
    sse: sse.encryption?.record,
    ...uploadChecksumSettings(ctx),
    lock: JSON.stringify((await newVersionLock(ctx)) ?? {}),
    tags,
  };
  await ctx.layer.createUpload(upload);
  const result = xmlResult(
    xmlDocument(
      "InitiateMultipartUploadResult",
      ctx.dialect.xmlns,
      text("Bucket", ctx.bucket) + text("Key", ctx.key) + text("UploadId", upload.uploadId),
    ),
  );
  Object.assign(result.headers!, sse.headers, uploadChecksumHeaders(ctx, upload));
  return result;
};

/** The upload named by `uploadId`, which must belong to this bucket and key. */
export async function requireUpload(ctx: RequestContext): Promise<UploadRecord> {
  await bucketOf(ctx);
  const uploadId = ctx.query.get("uploadId") ?? "";
  const upload = await ctx.layer.meta.getUpload(ctx.bucket, ctx.key, uploadId);
  if (!upload) throw noSuchUpload(uploadId);
  return upload;
}

function partNumberParam(ctx: RequestContext): number {
  const raw = ctx.query.get("partNumber") ?? "";
  if (!/^\d+$/.test(raw) || +raw < 1 || +raw > MAX_PART_NUMBER) {
    throw new S3Error(
      "InvalidArgument",
      `Part number must be an integer between 1 and ${MAX_PART_NUMBER}, inclusive.`,
      {
        details: { ArgumentName: "partNumber", ArgumentValue: raw },
      },
    );
  }
  return Number(raw);
}

/**
 * The key parts of an encrypted upload are written with (SSE-C: the same customer key). A part
 * sent with another key than the upload's is a bad request (400), like one without a key.
 */
async function partKey(ctx: RequestContext, upload: UploadRecord): Promise<CryptoKey | undefined> {
  try {
    return await readKey(ctx, upload);
  } catch (err) {
    if (!(err instanceof S3Error) || err.code !== "AccessDenied") throw err;
    throw new S3Error(
      "InvalidRequest",
      "The provided encryption parameters did not match the ones used originally.",
    );
  }
}

export const uploadPartHandler: Handler = async (ctx) => {
  const partNumber = partNumberParam(ctx);
  const upload = await requireUpload(ctx);
  const key = await partKey(ctx, upload);
  const checksum = partChecksum(ctx, upload);
  const part = await uploadPart(ctx.layer, upload, {
    partNumber,
    // Read straight into the chunk buffers; else writeBody copies every chunk before it asks for
    // the next.
    body: ctx.body.direct() ?? ctx.body.chunks({ transient: true }),
    contentMd5: contentMd5(ctx.headers),
    checks: checksum.checks,
    checksum: checksum.record,
    key,
  });
  const headers: Record<string, string> = {
    etag: part.etag,
    ...readHeaders(ctx, upload),
    ...partChecksumHeaders(ctx, part),
  };
  return { status: 200, headers };
};

/** `x-*-copy-source-range: bytes=first-last`, within the source's size. */
function copyRange(
  ctx: RequestContext,
  size: number,
): { offset: number; length: number } | undefined {
  const raw = ctx.headers.get(h(ctx.dialect, "copy-source-range"));
  if (raw === null) return undefined;
  const m = /^bytes=(\d+)-(\d+)$/.exec(raw.trim());
  if (!m || +m[2] < +m[1]) {
    throw new S3Error(
      "InvalidArgument",
      "The x-*-copy-source-range value must be of the form bytes=first-last.",
      {
        details: { ArgumentName: h(ctx.dialect, "copy-source-range"), ArgumentValue: raw },
      },
    );
  }
  if (+m[2] >= size) {
    throw new S3Error("InvalidRange", "The requested range is not satisfiable.", {
      details: { ActualObjectSize: String(size) },
    });
  }
  return { offset: +m[1], length: +m[2] - +m[1] + 1 };
}

export const uploadPartCopy: Handler = async (ctx) => {
  const partNumber = partNumberParam(ctx);
  const upload = await requireUpload(ctx);
  const src = await readableSource(
    ctx,
    parseCopySource(ctx.headers.get(h(ctx.dialect, "copy-source"))!),
  );
  checkConditions(copyConditions(ctx), src, { notModifiedAllowed: false });
  const range = copyRange(ctx, src.size);
  const { body } = await ctx.layer.openObject(
    src,
    range,
    await readKey(ctx, src, { copySource: true }),
  );
  // The upload's algorithm is computed over the copied bytes, so the part can be combined.
  const checksum = partChecksum(ctx, upload, false);
  const part = await uploadPart(ctx.layer, upload, {
    partNumber,
    body: body instanceof Uint8Array ? single(body) : body,
    key: await partKey(ctx, upload),
    checks: checksum.checks,
    checksum: checksum.record,
  });
  const result = xmlResult(
    xmlDocument(
      "CopyPartResult",
      ctx.dialect.xmlns,
      text("LastModified", isoDate(part.lastModified)) + text("ETag", part.etag) +
        checksumElements(part.checksum).map(([k, v]) => text(k, v)).join(""),
    ),
  );
  // The part is stored with the upload's encryption, which the answer names as UploadPart's does.
  Object.assign(result.headers!, readHeaders(ctx, upload));
  if (src.versionId !== "null") {
    result.headers![h(ctx.dialect, "copy-source-version-id")] = src.versionId;
  }
  return result;
};

function parseCompleteBody(body: string): RequestedPart[] {
  const root = parseXml(body, "CompleteMultipartUpload");
  const parts = children(root.Part).map((node: XmlNode) => {
    if (typeof node !== "object") {
      throw new S3Error("MalformedXML", "Part must hold PartNumber and ETag.");
    }
    const n = leafText(node.PartNumber as XmlNode, "PartNumber");
    const etag = leafText(node.ETag as XmlNode, "ETag");
    if (n === undefined || !/^\d+$/.test(n) || etag === undefined) {
      throw new S3Error("MalformedXML", "Part must hold a numeric PartNumber and an ETag.");
    }
    const checksums: Partial<Record<ChecksumAlgorithm, string>> = {};
    for (const algorithm of CHECKSUM_ALGORITHMS) {
      const element = `Checksum${algorithm}`;
      const value = leafText(node[element] as XmlNode, element);
      if (value !== undefined) checksums[algorithm] = value;
    }
    return { partNumber: Number(n), etag, checksums };
  });
  if (parts.length === 0) {
    throw new S3Error("MalformedXML", "The XML you provided did not list any part.");
  }
  return parts;
}

function completeResult(
  ctx: RequestContext,
  done: { etag: string; versionId: string; checksum?: ChecksumRecord },
): HandlerResult {
  const result = xmlResult(
    xmlDocument(
      "CompleteMultipartUploadResult",
      ctx.dialect.xmlns,
      text("Location", `/${ctx.bucket}/${ctx.key}`) + text("Bucket", ctx.bucket) +
        text("Key", ctx.key) +
        text("ETag", done.etag) +
        checksumElements(done.checksum).map(([k, v]) => text(k, v)).join(""),
    ),
  );
  if (done.versionId !== "null") {
    result.headers![h(ctx.dialect, "version-id")] = done.versionId;
  }
  return result;
}

/**
 * A completion of an upload that is already complete with the same part list (a retry whose
 * first answer was lost) gets the first answer again, for COMPLETED_UPLOAD_RETENTION_MS;
 * otherwise (another list, a body that names none) NoSuchUpload.
 */
async function repeatedCompletion(
  ctx: RequestContext,
  err: unknown,
  requested: RequestedPart[] | undefined,
): Promise<HandlerResult> {
  const missing = err instanceof S3Error && err.code === "NoSuchUpload";
  if (!missing || !requested) throw err;
  const done = await ctx.layer.meta.getCompletedUpload(ctx.query.get("uploadId") ?? "");
  if (!done || done.bucket !== ctx.bucket || done.key !== ctx.key) throw err;
  if (!sameCompletion(requested, done.etag)) throw err;
  return completeResult(ctx, done);
}

export const completeMultipartUpload: Handler = async (ctx) => {
  let upload: UploadRecord;
  try {
    upload = await requireUpload(ctx);
  } catch (err) {
    const body = await ctx.body.text(MAX_COMPLETE_BODY);
    let requested: RequestedPart[] | undefined;
    try {
      requested = parseCompleteBody(body);
    } catch {
      // No list to compare: the upload is simply gone.
    }
    return await repeatedCompletion(ctx, err, requested);
  }
  const requested = parseCompleteBody(await ctx.body.text(MAX_COMPLETE_BODY));
  let version: ObjectVersion;
  try {
    version = await completeUpload(ctx.layer, upload, requested, {
      expected: completeExpectations(ctx),
      condition: writeConditionOf(ctx.headers),
      origin: originOf(ctx),
    });
  } catch (err) {
    // A concurrent completion of the same upload with the same list won: answer as it did.
    return await repeatedCompletion(ctx, err, requested);
  }
  const result = completeResult(ctx, version);
  Object.assign(result.headers!, readHeaders(ctx, version));
  return result;
};

export const abortMultipartUpload: Handler = async (ctx) => {
  const upload = await requireUpload(ctx);
  await abortUpload(ctx.layer, upload.uploadId);
  return { status: 204 };
};

export function initiator(id: string, name: string): string {
  return el("Initiator", text("ID", id), text("DisplayName", name)) +
    el("Owner", text("ID", id), text("DisplayName", name));
}
