// ListParts and ListMultipartUploads.
import { S3Error } from "../http/errors.ts";
import { el, text, xmlDocument } from "../http/xml.ts";
import { encoderFor } from "./list.ts";
import { bucketOf, type Handler, isoDate, type RequestContext, xmlResult } from "./context.ts";
import { initiator, requireUpload } from "./multipart.ts";
import { checksumElements } from "./checksums.ts";
import type { UploadRecord } from "../meta/store.ts";

/** `ChecksumAlgorithm` and `ChecksumType` elements of an upload created with an algorithm. */
function uploadChecksum(u: UploadRecord): string {
  if (!u.checksumAlgorithm) return "";
  return text("ChecksumAlgorithm", u.checksumAlgorithm) +
    text("ChecksumType", u.checksumType ?? "COMPOSITE");
}

const MAX_LISTED = 1000;

function intParam(ctx: RequestContext, name: string, fallback: number): number {
  const raw = ctx.query.get(name);
  if (raw === null) return fallback;
  if (!/^\d+$/.test(raw)) {
    throw new S3Error(
      "InvalidArgument",
      `Provided ${name} is not an integer or not within range.`,
      {
        details: { ArgumentName: name, ArgumentValue: raw },
      },
    );
  }
  return Number(raw);
}

export const listParts: Handler = async (ctx) => {
  const upload = await requireUpload(ctx);
  const maxParts = Math.min(intParam(ctx, "max-parts", MAX_LISTED), MAX_LISTED);
  const marker = intParam(ctx, "part-number-marker", 0);
  const page = await ctx.layer.meta.listParts(upload.uploadId, marker, maxParts + 1);
  const truncated = page.length > maxParts;
  const shown = page.slice(0, maxParts);
  const owner = await ctx.credentials.ownerName(upload.owner);
  const body = [
    text("Bucket", ctx.bucket),
    text("Key", ctx.key),
    text("UploadId", upload.uploadId),
    initiator(upload.owner, owner),
    text("StorageClass", "STANDARD"),
    text("PartNumberMarker", marker),
    truncated ? text("NextPartNumberMarker", shown[shown.length - 1].partNumber) : "",
    text("MaxParts", maxParts),
    text("IsTruncated", truncated),
    uploadChecksum(upload),
    ...shown.map((p) =>
      el(
        "Part",
        text("PartNumber", p.partNumber),
        text("LastModified", isoDate(p.lastModified)),
        text("ETag", p.etag),
        text("Size", p.size),
        ...checksumElements(p.checksum).map(([k, v]) => text(k, v)),
      )
    ),
  ];
  return xmlResult(xmlDocument("ListPartsResult", ctx.dialect.xmlns, body.join("")));
};

export const listMultipartUploads: Handler = async (ctx) => {
  await bucketOf(ctx);
  const encode = ctx.query.get("encoding-type");
  const enc = encoderFor(ctx.query);
  const query = {
    prefix: ctx.query.get("prefix") ?? "",
    delimiter: ctx.query.get("delimiter") ?? "",
    keyMarker: ctx.query.get("key-marker") ?? "",
    uploadIdMarker: ctx.query.get("upload-id-marker") ?? "",
    maxUploads: Math.min(intParam(ctx, "max-uploads", MAX_LISTED), MAX_LISTED),
  };
  const page = await ctx.layer.meta.listUploads(ctx.bucket, query);
  const uploads: string[] = [];
  for (const u of page.uploads) {
    uploads.push(el(
      "Upload",
      text("Key", enc(u.key)),
      text("UploadId", u.uploadId),
      initiator(u.owner, await ctx.credentials.ownerName(u.owner)),
      text("StorageClass", "STANDARD"),
      text("Initiated", isoDate(u.initiated)),
      uploadChecksum(u),
    ));
  }
  const body = [
    text("Bucket", ctx.bucket),
    text("KeyMarker", enc(query.keyMarker)),
    text("UploadIdMarker", query.uploadIdMarker),
    page.isTruncated && page.nextKeyMarker !== undefined
      ? text("NextKeyMarker", enc(page.nextKeyMarker))
      : "",
    page.isTruncated && page.nextUploadIdMarker !== undefined
      ? text("NextUploadIdMarker", page.nextUploadIdMarker)
      : "",
    query.delimiter ? text("Delimiter", enc(query.delimiter)) : "",
    text("Prefix", enc(query.prefix)),
    text("MaxUploads", query.maxUploads),
    text("IsTruncated", page.isTruncated),
    encode === "url" ? text("EncodingType", "url") : "",
    ...uploads,
    ...page.commonPrefixes.map((p) => el("CommonPrefixes", text("Prefix", enc(p)))),
  ];
  return xmlResult(xmlDocument("ListMultipartUploadsResult", ctx.dialect.xmlns, body.join("")));
};
