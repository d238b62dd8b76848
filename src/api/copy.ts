// CopyObject: a new object from an existing one, across buckets, keeping or replacing metadata.
import { checkExpectedOwner } from "./expected_owner.ts";
import { expirationHeader } from "./expiration_header.ts";
import { accessDenied } from "../auth/access.ts";
import { OPERATION_RULES } from "../auth/actions.ts";
import { checkConditions } from "../http/conditional.ts";
import { parseAlgorithm } from "../http/checksum.ts";
import { h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { contentTypeFor } from "../http/mime.ts";
import { text, xmlDocument } from "../http/xml.ts";
import {
  bucketOf,
  type Handler,
  isoDate,
  originOf,
  type RequestContext,
  xmlResult,
} from "./context.ts";
import type { ObjectVersion } from "../meta/store.ts";
import type { Encryption } from "../object/layer.ts";
import { readHeaders, readKey, type SseKind, sseRecordOf, writeEncryption } from "./encryption.ts";
import { newVersionLock } from "./object_lock.ts";
import { readMetadata, rejectUnsupportedWriteOptions, validateKey } from "./object_headers.ts";
import { newObjectAcl, newObjectOwner } from "./objects.ts";
import { requestTags } from "./tags.ts";

export interface CopySource {
  bucket: string;
  key: string;
  versionId?: string;
}

/** Parses `x-*-copy-source`: `[/]bucket/key[?versionId=id]`, the key URL-encoded. */
export function parseCopySource(value: string): CopySource {
  let path = value;
  let versionId: string | undefined;
  const question = value.indexOf("?");
  if (question >= 0) {
    path = value.slice(0, question);
    const params = new URLSearchParams(value.slice(question + 1));
    versionId = params.get("versionId") ?? undefined;
  }
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    throw new S3Error("InvalidArgument", "The copy source is not properly URL-encoded.");
  }
  if (decoded.startsWith("/")) decoded = decoded.slice(1);
  const slash = decoded.indexOf("/");
  if (slash <= 0 || slash === decoded.length - 1) {
    throw new S3Error(
      "InvalidArgument",
      "Copy Source must mention the source bucket and key: sourcebucket/sourcekey.",
    );
  }
  return { bucket: decoded.slice(0, slash), key: decoded.slice(slash + 1), versionId };
}

export function copyConditions(ctx: RequestContext) {
  const get = (suffix: string) => ctx.headers.get(h(ctx.dialect, "copy-source-" + suffix));
  return {
    ifMatch: get("if-match"),
    ifNoneMatch: get("if-none-match"),
    ifModifiedSince: get("if-modified-since"),
    ifUnmodifiedSince: get("if-unmodified-since"),
  };
}

/** The source version, when the caller may read it (a second access decision). */
export async function readableSource(
  ctx: RequestContext,
  source: CopySource,
): Promise<ObjectVersion> {
  const bucket = await ctx.layer.meta.getBucket(source.bucket);
  checkExpectedOwner(ctx.headers, ctx.dialect, "source-expected-bucket-owner", bucket);
  const verdict = await ctx.access.decideRule(ctx.principal, OPERATION_RULES.GetObject, {
    bucket,
    key: source.key,
    versionId: source.versionId,
    // Conditions on the read see the source version (ExistingObjectTag, versionid).
    facts: { ...ctx.facts, versionId: source.versionId },
  });
  let src: ObjectVersion;
  try {
    src = await ctx.layer.headObject(source.bucket, source.key, source.versionId);
  } catch (err) {
    if (verdict === "object-acl" && err instanceof S3Error && err.status === 404) {
      throw accessDenied();
    }
    throw err;
  }
  if (verdict === "object-acl") {
    await ctx.access.checkObjectAcl(ctx.principal, src, "READ");
  }
  return src;
}

export const copyObject: Handler = async (ctx) => {
  validateKey(ctx.key);
  rejectUnsupportedWriteOptions(ctx.headers, ctx.dialect);
  const source = parseCopySource(ctx.headers.get(h(ctx.dialect, "copy-source"))!);
  const directive = ctx.headers.get(h(ctx.dialect, "metadata-directive")) ?? "COPY";
  if (directive !== "COPY" && directive !== "REPLACE") {
    throw new S3Error("InvalidArgument", "Unknown metadata directive.", {
      details: { ArgumentName: h(ctx.dialect, "metadata-directive"), ArgumentValue: directive },
    });
  }
  const tags = taggingDirective(ctx) === "REPLACE"
    ? requestTags(ctx.headers, ctx.dialect) ?? {}
    : undefined;
  const algorithmHeader = h(ctx.dialect, "checksum-algorithm");
  const named = ctx.headers.get(algorithmHeader);
  const checksumAlgorithm = named === null ? undefined : parseAlgorithm(named, algorithmHeader);
  const sameKey = source.bucket === ctx.bucket && source.key === ctx.key;
  const sse = await writeEncryption(ctx);
  const refuseCopyToItself = () => {
    if (directive !== "COPY" || sse.requested !== "none") return;
    throw new S3Error(
      "InvalidRequest",
      "This copy request is illegal because it is trying to copy an object to itself without " +
        "changing the object's metadata, storage class, website redirect location or encryption attributes.",
    );
  };
  if (sameKey && source.versionId === undefined) refuseCopyToItself();
  await bucketOf(ctx);
  const src = await readableSource(ctx, source);
  // Copying an older version over its own key is how a version is restored: only a copy of the
  // current version onto itself is a copy to itself.
  if (sameKey && source.versionId !== undefined && await isCurrent(ctx, src)) refuseCopyToItself();
  checkConditions(copyConditions(ctx), src, { notModifiedAllowed: false });
  const sourceKey = await readKey(ctx, src, { copySource: true });
  await ctx.body.discard();
  let replace;
  if (directive === "REPLACE") {
    const meta = readMetadata(ctx.headers, ctx.dialect);
    replace = {
      contentType: meta.contentType ?? contentTypeFor(ctx.key),
      userMeta: meta.userMeta,
      headers: meta.headers,
    };
  }
  const version = await ctx.layer.copyObject({
    source: src,
    bucket: ctx.bucket,
    key: ctx.key,
    owner: await newObjectOwner(ctx),
    acl: await newObjectAcl(ctx),
    replace,
    ...copyEncryption(sseRecordOf(src)?.kind ?? "none", sse),
    sourceKey,
    lock: await newVersionLock(ctx),
    tags: tags ?? src.tags,
    origin: originOf(ctx),
    checksumAlgorithm,
  });
  const sum = version.checksum?.type === "FULL_OBJECT" ? version.checksum : undefined;
  const result = xmlResult(
    xmlDocument(
      "CopyObjectResult",
      ctx.dialect.xmlns,
      text("LastModified", isoDate(version.lastModified)) + text("ETag", version.etag) +
        (sum ? text(`Checksum${sum.algorithm}`, sum.value) + text("ChecksumType", sum.type) : ""),
    ),
  );
  if (src.versionId !== "null") {
    result.headers![h(ctx.dialect, "copy-source-version-id")] = src.versionId;
  }
  Object.assign(result.headers!, readHeaders(ctx, version), await expirationHeader(ctx, version));
  if (version.versionId !== "null") {
    result.headers![h(ctx.dialect, "version-id")] = version.versionId;
  }
  return result;
};

/**
 * `x-*-tagging-directive`: COPY (the default) keeps the source's tags, and `x-*-tagging` is then
 * not looked at; REPLACE gives the copy the tags of `x-*-tagging` (none without it).
 */
function taggingDirective(ctx: RequestContext): "COPY" | "REPLACE" {
  const name = h(ctx.dialect, "tagging-directive");
  const directive = ctx.headers.get(name) ?? "COPY";
  if (directive !== "COPY" && directive !== "REPLACE") {
    throw new S3Error("InvalidArgument", "Unknown tagging directive.", {
      details: { ArgumentName: name, ArgumentValue: directive },
    });
  }
  return directive;
}

/**
 * Chunks are shared when they need no re-encoding: plain to plain, or SSE-S3 to SSE-S3 (the copy
 * keeps the source's sealed data key). Any other change of encryption, and every SSE-KMS copy
 * (its data key is sealed under the key the request names), stores the data again.
 */
function copyEncryption(
  sourceKind: SseKind,
  dest: Awaited<ReturnType<typeof writeEncryption>>,
): { shareChunks: boolean; encryption?: Encryption } {
  if (sourceKind === dest.kind && (sourceKind === "none" || sourceKind === "s3")) {
    return { shareChunks: true };
  }
  return { shareChunks: false, encryption: dest.encryption };
}

/** Whether `version` is its key's current version. */
async function isCurrent(ctx: RequestContext, version: ObjectVersion): Promise<boolean> {
  try {
    return (await ctx.layer.headObject(version.bucket, version.key)).versionId ===
      version.versionId;
  } catch (err) {
    // The current version is a delete marker: any version copied over it changes the object.
    if (err instanceof S3Error) return false;
    throw err;
  }
}
