// Translating between request/response headers and stored object metadata.
import { type Dialect, h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { isXmlText } from "../http/xml.ts";
import type { ObjectVersion } from "../meta/store.ts";
import { httpDate } from "./context.ts";

export const MAX_KEY_BYTES = 1024;
export const MAX_USER_META_BYTES = 2048;

/** Standard headers kept with an object and returned on GET/HEAD. */
const STORED_HEADERS = [
  "cache-control",
  "content-disposition",
  "content-encoding",
  "content-language",
  "expires",
];

const encoder = new TextEncoder();

/** A key for a new object: at most 1024 bytes, and text XML 1.0 can carry in listings. */
export function validateKey(key: string): void {
  if (encoder.encode(key).byteLength > MAX_KEY_BYTES) {
    throw new S3Error("KeyTooLongError", "Your key is too long.", {
      details: { MaxSizeAllowed: String(MAX_KEY_BYTES) },
    });
  }
  if (!isXmlText(key)) {
    throw new S3Error(
      "InvalidArgument",
      "Object keys cannot contain control characters other than tab, newline, carriage " +
        "return and DEL, nor U+FFFE, U+FFFF or unpaired surrogates (XML 1.0 cannot list them).",
      { details: { ArgumentName: "key" } },
    );
  }
}

/** Whether `value` can be sent as a header value: Latin-1, no control character but tab. */
export function isHeaderValue(value: string): boolean {
  return !/[^\t\x20-\x7e\x80-\xff]/.test(value);
}

export interface RequestMetadata {
  contentType?: string;
  userMeta: Record<string, string>;
  headers: Record<string, string>;
}

/** Reads content type, user metadata and stored headers from a write request. */
export function readMetadata(headers: Headers, dialect: Dialect): RequestMetadata {
  const metaPrefix = h(dialect, "meta-");
  const userMeta: Record<string, string> = {};
  let metaBytes = 0;
  headers.forEach((value, name) => {
    if (!name.startsWith(metaPrefix)) return;
    const key = name.slice(metaPrefix.length);
    userMeta[key] = value;
    metaBytes += encoder.encode(key).byteLength + encoder.encode(value).byteLength;
  });
  if (metaBytes > MAX_USER_META_BYTES) {
    throw new S3Error(
      "MetadataTooLarge",
      "Your metadata headers exceed the maximum allowed metadata size.",
      {
        details: { MaxSizeAllowed: String(MAX_USER_META_BYTES) },
      },
    );
  }
  const stored: Record<string, string> = {};
  for (const name of STORED_HEADERS) {
    const value = headers.get(name);
    if (value !== null) stored[name] = value;
  }
  // The chunked coding of a streaming upload is framing, not a coding of the stored object.
  const codings = stored["content-encoding"]?.split(",").map((c) => c.trim());
  if (codings?.some((c) => c.toLowerCase() === dialect.chunkedEncoding)) {
    const kept = codings.filter((c) => c !== "" && c.toLowerCase() !== dialect.chunkedEncoding);
    if (kept.length > 0) stored["content-encoding"] = kept.join(",");
    else delete stored["content-encoding"];
  }
  return { contentType: headers.get("content-type") ?? undefined, userMeta, headers: stored };
}

/**
 * Refuses write options this server cannot honour instead of silently dropping them: a storage
 * class other than STANDARD.
 */
export function rejectUnsupportedWriteOptions(headers: Headers, dialect: Dialect): void {
  const storageClass = headers.get(h(dialect, "storage-class"));
  if (storageClass !== null && storageClass !== "STANDARD") {
    throw new S3Error("InvalidStorageClass", "The storage class you specified is not valid.", {
      details: { StorageClassRequested: storageClass },
    });
  }
}

/** Headers describing a stored object on GET and HEAD responses. */
export function objectHeaders(v: ObjectVersion, dialect: Dialect): Record<string, string> {
  const out: Record<string, string> = {
    "content-type": v.contentType,
    etag: v.etag,
    "last-modified": httpDate(v.lastModified),
    "accept-ranges": "bytes",
    ...v.headers,
  };
  for (const [name, value] of Object.entries(v.userMeta)) out[h(dialect, "meta-" + name)] = value;
  if (v.versionId !== "null") out[h(dialect, "version-id")] = v.versionId;
  if (v.replication) out[h(dialect, "replication-status")] = v.replication;
  const tags = v.tags ? Object.keys(v.tags).length : 0;
  if (tags > 0) out[h(dialect, "tagging-count")] = String(tags);
  return out;
}

const OVERRIDES: Record<string, string> = {
  "response-content-type": "content-type",
  "response-content-language": "content-language",
  "response-expires": "expires",
  "response-cache-control": "cache-control",
  "response-content-disposition": "content-disposition",
  "response-content-encoding": "content-encoding",
};

/** Applies `response-*` query overrides to GET/HEAD response headers. */
export function applyResponseOverrides(
  headers: Record<string, string>,
  query: URLSearchParams,
): void {
  for (const [param, header] of Object.entries(OVERRIDES)) {
    const value = query.get(param);
    if (value === null) continue;
    if (!isHeaderValue(value)) {
      throw new S3Error(
        "InvalidArgument",
        `${param} must be Latin-1 text without control characters.`,
        { details: { ArgumentName: param } },
      );
    }
    headers[header] = value;
  }
}
