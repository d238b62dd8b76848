// Bucket versioning: Get/PutBucketVersioning and ListObjectVersions.
import { S3Error } from "../http/errors.ts";
import { el, leafText, parseXml, text, xmlDocument } from "../http/xml.ts";
import { encoderFor, maxKeysParam } from "./list.ts";
import { h } from "../http/dialect.ts";
import { bucketOf, type Handler, isoDate, type RequestContext, xmlResult } from "./context.ts";
import { LockedVersioningError } from "../meta/store.ts";

const MFA_UNSUPPORTED = "MFA delete is not supported by this server: it has no MFA devices to " +
  "check a code against. Object Lock (retention, legal holds) protects versions from deletion.";

/** `x-*-mfa` (a device serial and code) asks for MFA delete, which is not built. */
export function refuseMfa(ctx: RequestContext): void {
  if (ctx.headers.has(h(ctx.dialect, "mfa"))) {
    throw new S3Error("NotImplemented", MFA_UNSUPPORTED, {
      details: { Header: h(ctx.dialect, "mfa") },
    });
  }
}

export const getBucketVersioning: Handler = async (ctx) => {
  const bucket = await bucketOf(ctx);
  const inner = bucket.versioning ? text("Status", bucket.versioning) : "";
  return xmlResult(xmlDocument("VersioningConfiguration", ctx.dialect.xmlns, inner));
};

function lockedVersioning(): S3Error {
  return new S3Error(
    "InvalidBucketState",
    "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.",
  );
}

export const putBucketVersioning: Handler = async (ctx) => {
  refuseMfa(ctx);
  const bucket = await bucketOf(ctx);
  const root = parseXml(await ctx.body.text(64 * 1024), "VersioningConfiguration");
  for (const name of Object.keys(root)) {
    if (name !== "Status" && name !== "MfaDelete") {
      throw new S3Error("MalformedXML", `Unexpected element ${name} in VersioningConfiguration.`);
    }
  }
  const status = leafText(root.Status, "Status");
  if (status !== "Enabled" && status !== "Suspended") {
    throw new S3Error("MalformedXML", "Status must be Enabled or Suspended.");
  }
  const mfa = leafText(root.MfaDelete, "MfaDelete");
  if (mfa === "Enabled") {
    throw new S3Error("NotImplemented", MFA_UNSUPPORTED);
  }
  if (mfa !== undefined && mfa !== "Disabled") {
    throw new S3Error("MalformedXML", "MfaDelete must be Enabled or Disabled.");
  }
  if (status === "Suspended" && bucket.objectLock) throw lockedVersioning();
  try {
    await ctx.layer.meta.setBucketVersioning(bucket.name, status);
  } catch (err) {
    // Object Lock configured since the check above.
    if (err instanceof LockedVersioningError) throw lockedVersioning();
    throw err;
  }
  return { status: 200 };
};

export const listObjectVersions: Handler = async (ctx) => {
  await bucketOf(ctx);
  const type = ctx.query.get("encoding-type");
  const enc = encoderFor(ctx.query);
  const q = {
    prefix: ctx.query.get("prefix") ?? "",
    delimiter: ctx.query.get("delimiter") ?? "",
    keyMarker: ctx.query.get("key-marker") ?? "",
    versionIdMarker: ctx.query.get("version-id-marker") ?? "",
    maxKeys: maxKeysParam(ctx.query),
  };
  if (q.versionIdMarker && !q.keyMarker) {
    throw new S3Error(
      "InvalidArgument",
      "A version-id marker cannot be specified without a key marker.",
    );
  }
  const page = await ctx.layer.meta.listVersions(ctx.bucket, q);
  const names = new Map<string, string>();
  const entries: string[] = [];
  for (const v of page.versions) {
    if (!names.has(v.owner)) names.set(v.owner, await ctx.credentials.ownerName(v.owner));
    const owner = el("Owner", text("ID", v.owner), text("DisplayName", names.get(v.owner)));
    const common = [
      text("Key", enc(v.key)),
      text("VersionId", v.versionId),
      text("IsLatest", v.isLatest),
      text("LastModified", isoDate(v.lastModified)),
    ];
    entries.push(
      v.deleteMarker ? el("DeleteMarker", ...common, owner) : el(
        "Version",
        ...common,
        text("ETag", v.etag),
        text("Size", v.size),
        text("StorageClass", "STANDARD"),
        owner,
      ),
    );
  }
  const body = [
    text("Name", ctx.bucket),
    text("Prefix", enc(q.prefix)),
    text("KeyMarker", enc(q.keyMarker)),
    text("VersionIdMarker", q.versionIdMarker),
    page.isTruncated && page.nextKeyMarker !== undefined
      ? text("NextKeyMarker", enc(page.nextKeyMarker))
      : "",
    page.isTruncated && page.nextVersionIdMarker !== undefined
      ? text("NextVersionIdMarker", page.nextVersionIdMarker)
      : "",
    text("MaxKeys", q.maxKeys),
    q.delimiter ? text("Delimiter", enc(q.delimiter)) : "",
    text("IsTruncated", page.isTruncated),
    type === "url" ? text("EncodingType", "url") : "",
    ...entries,
    ...page.commonPrefixes.map((p) => el("CommonPrefixes", text("Prefix", enc(p)))),
  ];
  return xmlResult(xmlDocument("ListVersionsResult", ctx.dialect.xmlns, body.join("")));
};
