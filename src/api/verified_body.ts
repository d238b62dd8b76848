// Small request documents the protocol wants integrity-checked (DeleteObjects, lifecycle
// configurations): Content-MD5 or an additional checksum header is required and verified. Others
// (tagging documents) are verified when the client sends a digest.
import { createHash } from "node:crypto";
import { checksumChecks } from "../http/checksum.ts";
import { h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import type { RequestContext } from "./context.ts";
import { contentMd5 } from "./objects.ts";

/**
 * Reads the body (at most `limit` bytes) and checks it against its digest header, which is
 * required unless `optional` is set.
 */
export async function readVerifiedBody(
  ctx: RequestContext,
  limit: number,
  opts: { optional?: boolean } = {},
): Promise<Uint8Array> {
  const md5 = contentMd5(ctx.headers);
  const checks = checksumChecks(ctx.headers, ctx.dialect, ctx.body);
  if (md5 === undefined && checks.length === 0 && !opts.optional) {
    throw new S3Error(
      "InvalidRequest",
      `Missing required header for this request: Content-MD5 or ${h(ctx.dialect, "checksum-*")}.`,
    );
  }
  const bytes = await ctx.body.bytes(limit);
  if (md5 !== undefined && createHash("md5").update(bytes).digest("base64") !== md5) {
    throw new S3Error("BadDigest", "The Content-MD5 you specified did not match what we received.");
  }
  for (const c of checks) {
    c.update(bytes);
    c.finish();
  }
  return bytes;
}
