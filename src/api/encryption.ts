// Server-side encryption as the handlers see it: the key and record for a new version, the key
// to read an existing one, and the headers echoed back.
import type { Encryption } from "../object/layer.ts";
import {
  parseSseCustomerKey,
  parseSseWrite,
  type SseRecord,
  sseResponseHeaders,
} from "../object/sse.ts";
import { defaultEncryption } from "../object/sse_default.ts";
import type { ObjectVersion } from "../meta/store.ts";
import type { RequestContext } from "./context.ts";

/** Anything that carries a stored SSE record: a version or a multipart upload. */
type Encrypted = Pick<ObjectVersion, "sse">;

export function sseRecordOf(holder: Encrypted): SseRecord | undefined {
  return holder.sse === undefined ? undefined : JSON.parse(holder.sse) as SseRecord;
}

/**
 * What a write asks for: the encryption of the new version, and the headers to echo. Without
 * SSE headers the bucket's default encryption applies; `requested` is what the headers asked.
 */
export async function writeEncryption(
  ctx: RequestContext,
): Promise<
  {
    kind: "none" | "s3" | "c";
    requested: "none" | "s3" | "c";
    encryption?: Encryption;
    headers: Record<string, string>;
  }
> {
  const requested = parseSseWrite(ctx.headers, ctx.dialect);
  const request = requested.kind === "none" && await defaultEncryption(ctx.layer.meta, ctx.bucket)
    ? { kind: "s3" as const }
    : requested;
  const { record, key } = await ctx.sseKeys.forNewObject(request);
  return {
    kind: request.kind,
    requested: requested.kind,
    encryption: key && record ? { key, record: JSON.stringify(record) } : undefined,
    headers: sseResponseHeaders(record, ctx.dialect),
  };
}

/** The key to read `holder` with (SSE-C needs the customer's key on the request). */
export function readKey(
  ctx: RequestContext,
  version: Encrypted,
  opts: { copySource?: boolean } = {},
): Promise<CryptoKey | undefined> {
  const customer = parseSseCustomerKey(ctx.headers, ctx.dialect, opts);
  return ctx.sseKeys.forExistingObject(sseRecordOf(version), customer);
}

export function readHeaders(ctx: RequestContext, version: Encrypted): Record<string, string> {
  return sseResponseHeaders(sseRecordOf(version), ctx.dialect);
}
