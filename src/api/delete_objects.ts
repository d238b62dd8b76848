// DeleteObjects: up to 1000 keys in one request, with per-key results.
import { refuseMfa } from "./versioning.ts";
import { OPERATION_RULES } from "../auth/actions.ts";
import { S3Error } from "../http/errors.ts";
import { children, el, leafText, parseXml, text, xmlDocument, type XmlNode } from "../http/xml.ts";
import { readVerifiedBody } from "./verified_body.ts";
import { bucketOf, type Handler, originOf, type RequestContext, xmlResult } from "./context.ts";
import type { BucketRecord } from "../meta/store.ts";
import { bypassGovernance } from "./object_lock.ts";
import { MAX_KEY_BYTES } from "./object_headers.ts";
import type { DeleteTarget } from "../object/layer.ts";

const MAX_KEYS = 1000;
const MAX_BODY = 2 * 1024 * 1024;

interface Target {
  key: string;
  versionId?: string;
}

function parseTargets(body: string): { quiet: boolean; targets: Target[] } {
  const root = parseXml(body, "Delete");
  const quietText = leafText(root.Quiet, "Quiet");
  if (quietText !== undefined && quietText !== "true" && quietText !== "false") {
    throw new S3Error("MalformedXML", "Quiet must be true or false.");
  }
  const objects = children(root.Object);
  if (objects.length === 0) {
    throw new S3Error("MalformedXML", "The Delete element lists no Object.");
  }
  if (objects.length > MAX_KEYS) {
    throw new S3Error("MalformedXML", `A Delete request may name at most ${MAX_KEYS} objects.`);
  }
  const targets = objects.map((node: XmlNode) => {
    if (typeof node !== "object") throw new S3Error("MalformedXML", "Object must contain a Key.");
    const key = leafText(node.Key as XmlNode, "Key");
    if (key === undefined) throw new S3Error("MalformedXML", "Object must contain a Key.");
    return { key, versionId: leafText(node.VersionId as XmlNode, "VersionId") };
  });
  return { quiet: quietText === "true", targets };
}

function deletedEntry(t: Target, r: { versionId?: string; deleteMarker: boolean }): string {
  // A marker created by this delete reports DeleteMarkerVersionId; removing a marker by id
  // reports both the VersionId and DeleteMarker.
  const created = t.versionId === undefined && r.deleteMarker;
  return el(
    "Deleted",
    text("Key", t.key),
    text("VersionId", t.versionId),
    r.deleteMarker ? text("DeleteMarker", true) : "",
    created ? text("DeleteMarkerVersionId", r.versionId) : "",
  );
}

function errorEntry(t: Target, err: S3Error): string {
  return el(
    "Error",
    text("Key", t.key),
    text("VersionId", t.versionId),
    text("Code", err.code),
    text("Message", err.message),
  );
}

/** The key's own access decision (and governance bypass), before the batch's transaction. */
async function decide(
  ctx: RequestContext,
  bucket: BucketRecord,
  t: Target,
): Promise<DeleteTarget | S3Error> {
  try {
    if (t.key === "" || new TextEncoder().encode(t.key).byteLength > MAX_KEY_BYTES) {
      throw new S3Error("InvalidArgument", "The key is empty or longer than 1024 bytes.");
    }
    await ctx.access.decideRule(ctx.principal, OPERATION_RULES.DeleteObject, {
      bucket,
      key: t.key,
      versionId: t.versionId,
      facts: ctx.facts,
    });
    return { ...t, bypassGovernance: await bypassGovernance(ctx, t.key) };
  } catch (err) {
    if (!(err instanceof S3Error)) throw err;
    return err;
  }
}

export const deleteObjects: Handler = async (ctx) => {
  refuseMfa(ctx);
  const bytes = await readVerifiedBody(ctx, MAX_BODY);
  const { quiet, targets } = parseTargets(new TextDecoder().decode(bytes));
  const bucket = await bucketOf(ctx);
  const decided: (DeleteTarget | S3Error)[] = [];
  for (const t of targets) decided.push(await decide(ctx, bucket, t));
  // The allowed keys are deleted together: one metadata transaction for the batch.
  const allowed = decided.filter((d): d is DeleteTarget => !(d instanceof S3Error));
  const results = allowed.length === 0 ? [] : await ctx.layer.deleteObjects(ctx.bucket, allowed, {
    owner: ctx.principal.id,
    origin: originOf(ctx),
  });
  let next = 0;
  const parts = targets.map((t, i) => {
    const d = decided[i];
    const result = d instanceof S3Error ? d : results[next++];
    if (result instanceof S3Error) return errorEntry(t, result);
    return quiet ? "" : deletedEntry(t, result);
  });
  return xmlResult(xmlDocument("DeleteResult", ctx.dialect.xmlns, parts.join("")));
};
