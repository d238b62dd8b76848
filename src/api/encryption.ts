// Server-side encryption as the handlers see it: the key and record for a new version, the key
// to read an existing one, and the headers echoed back. SSE-S3 and SSE-C keys come from
// src/object/sse.ts, SSE-KMS keys from the named keys of src/kms/kms.ts.
import { S3Error } from "../http/errors.ts";
import type { Encryption } from "../object/layer.ts";
import {
  parseSseCustomerKey,
  parseSseWrite,
  type SseKmsRequest,
  type SseRecord,
  type SseRequest,
  sseResponseHeaders,
} from "../object/sse.ts";
import { DEFAULT_KMS_KEY, keyIdOf, validKeyId } from "../kms/kms.ts";
import { defaultEncryption, KMS_ALGORITHMS } from "../object/sse_default.ts";
import type { ObjectVersion } from "../meta/store.ts";
import type { RequestContext } from "./context.ts";

/** Anything that carries a stored SSE record: a version or a multipart upload. */
type Encrypted = Pick<ObjectVersion, "sse">;

export type SseKind = "none" | "s3" | "c" | "kms";

export function sseRecordOf(holder: Encrypted): SseRecord | undefined {
  return holder.sse === undefined ? undefined : JSON.parse(holder.sse) as SseRecord;
}

/** The request's SSE headers, or the bucket's default encryption when it sends none. */
async function effectiveRequest(ctx: RequestContext, requested: SseRequest): Promise<SseRequest> {
  if (requested.kind !== "none") return requested;
  const fallback = await defaultEncryption(ctx.layer.meta, ctx.bucket);
  if (!fallback) return requested;
  if (!KMS_ALGORITHMS.includes(fallback.algorithm)) return { kind: "s3" };
  return { kind: "kms", algorithm: fallback.algorithm, keyId: fallback.kmsKeyId };
}

async function kmsEncryption(
  ctx: RequestContext,
  req: SseKmsRequest,
): Promise<{ record: SseRecord; key: CryptoKey }> {
  const keyId = req.keyId === undefined ? DEFAULT_KMS_KEY : keyIdOf(req.keyId);
  if (!validKeyId(keyId)) {
    throw new S3Error("KMS.NotFoundException", `Invalid keyId ${req.keyId}`);
  }
  const { sealed, key } = await ctx.kms.newDataKey(keyId, req.context);
  return { record: { kind: "kms", algorithm: req.algorithm, ...sealed }, key };
}

/**
 * What a write asks for: the encryption of the new version, and the headers to echo. Without
 * SSE headers the bucket's default encryption applies; `requested` is what the headers asked.
 */
export async function writeEncryption(
  ctx: RequestContext,
): Promise<
  {
    kind: SseKind;
    requested: SseKind;
    encryption?: Encryption;
    headers: Record<string, string>;
  }
> {
  const requested = parseSseWrite(ctx.headers, ctx.dialect);
  const request = await effectiveRequest(ctx, requested);
  const { record, key } = request.kind === "kms"
    ? await kmsEncryption(ctx, request)
    : await ctx.sseKeys.forNewObject(request);
  return {
    kind: request.kind,
    requested: requested.kind,
    encryption: key && record ? { key, record: JSON.stringify(record) } : undefined,
    headers: sseResponseHeaders(record, ctx.dialect),
  };
}

/** The key to read `holder` with (SSE-C needs the customer's key on the request). */
export async function readKey(
  ctx: RequestContext,
  version: Encrypted,
  opts: { copySource?: boolean } = {},
): Promise<CryptoKey | undefined> {
  const customer = parseSseCustomerKey(ctx.headers, ctx.dialect, opts);
  const record = sseRecordOf(version);
  if (record?.kind !== "kms") {
    return await ctx.sseKeys.forExistingObject(
      record as SseRecord & { kind: "s3" | "c" },
      customer,
    );
  }
  if (customer) {
    throw new S3Error(
      "InvalidRequest",
      "The encryption parameters are not applicable to this object.",
    );
  }
  return await ctx.kms.dataKeyOf({
    keyId: record.keyId ?? "",
    keyVersion: record.keyVersion ?? 0,
    sealedKey: record.sealedKey ?? "",
    ...(record.context !== undefined ? { context: record.context } : {}),
  });
}

export function readHeaders(ctx: RequestContext, version: Encrypted): Record<string, string> {
  return sseResponseHeaders(sseRecordOf(version), ctx.dialect);
}
