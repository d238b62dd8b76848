// GetObjectAttributes (`GET /{bucket}/{key}?attributes`): the attributes named by the
// `x-*-object-attributes` header (ETag, Checksum, ObjectParts, StorageClass, ObjectSize) of the
// current version or of `versionId`, without its body. ObjectParts pages through the parts of a
// multipart object with `x-*-max-parts` and `x-*-part-number-marker`; as the protocol does, the
// Part elements (with their checksums) are listed only for objects that have an additional
// checksum, and otherwise only the parts count is given.
import { h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { el, text, xmlDocument } from "../http/xml.ts";
import type { ObjectVersion } from "../meta/store.ts";
import { type Handler, httpDate, type RequestContext, xmlResult } from "./context.ts";
import { readKey } from "./encryption.ts";
import { readableVersion } from "./object_access.ts";

const ATTRIBUTES = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"];
const MAX_PARTS = 1000;

function invalid(name: string, value: string, message: string): S3Error {
  return new S3Error("InvalidArgument", message, {
    details: { ArgumentName: name, ArgumentValue: value },
  });
}

/** The attributes the request asks for, in the response's order. */
function requestedAttributes(ctx: RequestContext): Set<string> {
  const name = h(ctx.dialect, "object-attributes");
  const raw = ctx.headers.get(name) ?? "";
  const names = raw.split(",").map((n) => n.trim()).filter((n) => n !== "");
  if (names.length === 0) {
    throw invalid(
      name,
      raw,
      `The ${name} header specifying the attributes to be retrieved is either missing or empty`,
    );
  }
  for (const n of names) {
    if (!ATTRIBUTES.includes(n)) throw invalid(name, n, "Invalid attribute name specified.");
  }
  return new Set(names);
}

function integerHeader(ctx: RequestContext, suffix: string, fallback: number): number {
  const name = h(ctx.dialect, suffix);
  const raw = ctx.headers.get(name);
  if (raw === null) return fallback;
  if (!/^\d{1,9}$/.test(raw.trim())) {
    throw invalid(name, raw, `${name} must be a non-negative integer.`);
  }
  return Number(raw.trim());
}

/** The ObjectParts element of a multipart object, one page of parts from the marker on. */
function objectParts(version: ObjectVersion, page: { max: number; marker: number }): string {
  const sizes = version.parts!;
  const values = version.checksum?.parts;
  const count = text("PartsCount", sizes.length);
  if (!values || values.length !== sizes.length) return el("ObjectParts", count);
  const { max, marker } = page;
  const first = Math.min(marker, sizes.length);
  const last = Math.min(first + max, sizes.length);
  const parts: string[] = [];
  for (let n = first + 1; n <= last; n++) {
    parts.push(el(
      "Part",
      text(`Checksum${version.checksum!.algorithm}`, values[n - 1]),
      text("PartNumber", n),
      text("Size", sizes[n - 1]),
    ));
  }
  return el(
    "ObjectParts",
    text("IsTruncated", last < sizes.length),
    text("MaxParts", max),
    parts.length > 0 ? text("NextPartNumberMarker", last) : "",
    text("PartNumberMarker", marker),
    ...parts,
    count,
  );
}

function checksumElement(version: ObjectVersion): string {
  const c = version.checksum;
  if (!c) return "";
  return el("Checksum", text(`Checksum${c.algorithm}`, c.value), text("ChecksumType", c.type));
}

export const getObjectAttributes: Handler = async (ctx) => {
  const wanted = requestedAttributes(ctx);
  const page = {
    max: Math.min(integerHeader(ctx, "max-parts", MAX_PARTS), MAX_PARTS),
    marker: integerHeader(ctx, "part-number-marker", 0),
  };
  const version = await readableVersion(ctx, { permission: "READ" });
  // An SSE-C object's attributes need its key, as a read does.
  await readKey(ctx, version);
  const parts: string[] = [];
  if (wanted.has("ETag")) parts.push(text("ETag", version.etag.replace(/^"|"$/g, "")));
  if (wanted.has("Checksum")) parts.push(checksumElement(version));
  if (wanted.has("ObjectParts") && version.parts) parts.push(objectParts(version, page));
  if (wanted.has("StorageClass")) parts.push(text("StorageClass", "STANDARD"));
  if (wanted.has("ObjectSize")) parts.push(text("ObjectSize", version.size));
  const result = xmlResult(
    xmlDocument("GetObjectAttributesResponse", ctx.dialect.xmlns, parts.join("")),
  );
  result.headers!["last-modified"] = httpDate(version.lastModified);
  if (version.versionId !== "null") {
    result.headers![h(ctx.dialect, "version-id")] = version.versionId;
  }
  return result;
};
