// ListObjects (V1) and ListObjectsV2.
import { S3Error } from "../http/errors.ts";
import { el, text, xmlDocument } from "../http/xml.ts";
import type { ListEntry, ListPage } from "../meta/store.ts";
import { type Handler, isoDate, type RequestContext, xmlResult } from "./context.ts";

const MAX_KEYS = 1000;

/** A non-negative whole-number query parameter, capped at `max`; InvalidArgument otherwise. */
export function countParam(
  query: URLSearchParams,
  name: string,
  opts: { fallback: number; max: number },
): number {
  const raw = query.get(name);
  if (raw === null) return opts.fallback;
  if (!/^\d+$/.test(raw)) {
    throw new S3Error(
      "InvalidArgument",
      `Provided ${name} not an integer or within integer range.`,
      { details: { ArgumentName: name, ArgumentValue: raw } },
    );
  }
  return Math.min(Number(raw), opts.max);
}

export function maxKeysParam(query: URLSearchParams): number {
  return countParam(query, "max-keys", { fallback: MAX_KEYS, max: MAX_KEYS });
}

/** The encoder for names in the response: URL encoding when `encoding-type=url`. */
export function encoderFor(query: URLSearchParams): (s: string) => string {
  const type = query.get("encoding-type");
  if (type === null) return (s) => s;
  if (type !== "url") {
    throw new S3Error("InvalidArgument", "Invalid Encoding Method specified in Request.", {
      details: { ArgumentName: "encoding-type", ArgumentValue: type },
    });
  }
  return (s) => encodeURIComponent(s).replace(/%2F/g, "/");
}

/** Owner display names of a page, looked up once per distinct owner. */
async function ownerNames(ctx: RequestContext, page: ListPage): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  for (const o of page.objects) {
    if (!names.has(o.owner)) names.set(o.owner, await ctx.credentials.ownerName(o.owner));
  }
  return names;
}

function contents(
  o: ListEntry,
  enc: (s: string) => string,
  owners: Map<string, string> | undefined,
): string {
  return el(
    "Contents",
    text("Key", enc(o.key)),
    text("LastModified", isoDate(o.lastModified)),
    text("ETag", o.etag),
    text("Size", o.size),
    owners
      ? el("Owner", text("ID", o.owner), text("DisplayName", owners.get(o.owner) ?? o.owner))
      : "",
    text("StorageClass", "STANDARD"),
  );
}

function commonPrefixes(page: ListPage, enc: (s: string) => string): string {
  return page.commonPrefixes.map((p) => el("CommonPrefixes", text("Prefix", enc(p)))).join("");
}

function listParams(ctx: RequestContext) {
  return {
    prefix: ctx.query.get("prefix") ?? "",
    delimiter: ctx.query.get("delimiter") ?? "",
    maxKeys: maxKeysParam(ctx.query),
    enc: encoderFor(ctx.query),
  };
}

export const listObjectsV1: Handler = async (ctx) => {
  const { prefix, delimiter, maxKeys, enc } = listParams(ctx);
  const marker = ctx.query.get("marker") ?? "";
  const page = await ctx.layer.listObjects(ctx.bucket, {
    prefix,
    delimiter,
    after: marker,
    maxKeys,
  });
  const owners = await ownerNames(ctx, page);
  const body = [
    text("Name", ctx.bucket),
    text("Prefix", enc(prefix)),
    text("Marker", enc(marker)),
    text("MaxKeys", maxKeys),
    delimiter ? text("Delimiter", enc(delimiter)) : "",
    text("IsTruncated", page.isTruncated),
    page.isTruncated && delimiter && page.lastReturned !== undefined
      ? text("NextMarker", enc(page.lastReturned))
      : "",
    ctx.query.has("encoding-type") ? text("EncodingType", "url") : "",
    ...page.objects.map((o) => contents(o, enc, owners)),
    commonPrefixes(page, enc),
  ];
  return xmlResult(xmlDocument("ListBucketResult", ctx.dialect.xmlns, body.join("")));
};

function encodeToken(after: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(after)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeToken(token: string): string {
  try {
    const bin = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
    return new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(bin, (c) => c.charCodeAt(0)),
    );
  } catch {
    throw new S3Error("InvalidArgument", "The continuation token provided is incorrect.", {
      details: { ArgumentName: "continuation-token" },
    });
  }
}

export const listObjectsV2: Handler = async (ctx) => {
  if (ctx.query.get("list-type") !== "2") {
    throw new S3Error("InvalidArgument", "Invalid List Type specified in Request.", {
      details: { ArgumentName: "list-type", ArgumentValue: ctx.query.get("list-type") ?? "" },
    });
  }
  const { prefix, delimiter, maxKeys, enc } = listParams(ctx);
  const token = ctx.query.get("continuation-token");
  const startAfter = ctx.query.get("start-after") ?? "";
  const fetchOwner = ctx.query.get("fetch-owner") === "true";
  const after = token !== null ? decodeToken(token) : startAfter;
  const page = await ctx.layer.listObjects(ctx.bucket, { prefix, delimiter, after, maxKeys });
  const owners = fetchOwner ? await ownerNames(ctx, page) : undefined;
  const body = [
    text("Name", ctx.bucket),
    text("Prefix", enc(prefix)),
    delimiter ? text("Delimiter", enc(delimiter)) : "",
    text("MaxKeys", maxKeys),
    text("KeyCount", page.objects.length + page.commonPrefixes.length),
    text("IsTruncated", page.isTruncated),
    token !== null ? text("ContinuationToken", token) : "",
    page.isTruncated && page.lastReturned !== undefined
      ? text("NextContinuationToken", encodeToken(page.lastReturned))
      : "",
    startAfter ? text("StartAfter", enc(startAfter)) : "",
    ctx.query.has("encoding-type") ? text("EncodingType", "url") : "",
    ...page.objects.map((o) => contents(o, enc, owners)),
    commonPrefixes(page, enc),
  ];
  return xmlResult(xmlDocument("ListBucketResult", ctx.dialect.xmlns, body.join("")));
};
