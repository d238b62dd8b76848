// ListParts and ListMultipartUploads.
import { el, text, xmlDocument } from "../http/xml.ts";
import { countParam, encoderFor } from "./list.ts";
import { bucketOf, type Handler, isoDate, xmlResult } from "./context.ts";
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

export const listParts: Handler = async (ctx) => {
  const upload = await requireUpload(ctx);
  const maxParts = countParam(ctx.query, "max-parts", { fallback: MAX_LISTED, max: MAX_LISTED });
  const marker = countParam(ctx.query, "part-number-marker", { fallback: 0, max: Infinity });
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
    maxUploads: countParam(ctx.query, "max-uploads", { fallback: MAX_LISTED, max: MAX_LISTED }),
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
