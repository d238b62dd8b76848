// Encryption of replicated objects. The sender decrypts an SSE-S3 or SSE-KMS version as it
// streams it and sends, instead of its sealed data key, how it was encrypted (SSE-S3, or the
// KMS key id with the algorithm and context); the receiver encrypts the replica with a fresh data
// key of its own (its master key, or its own KMS key of that id: refused when it has none). An
// unencrypted version gets the receiving bucket's default encryption. An SSE-C version is sealed
// with the customer's key, which no node holds: it travels as stored (stored_body.ts) with the
// key's MD5, and is kept so on the receiver.
import { S3Error } from "../http/errors.ts";
import { DEFAULT_KMS_KEY, type Kms } from "../kms/kms.ts";
import type { MetaStore, ObjectVersion } from "../meta/store.ts";
import type { Encryption } from "../object/layer.ts";
import type { SseKeys, SseRecord } from "../object/sse.ts";
import { defaultEncryption, KMS_ALGORITHMS } from "../object/sse_default.ts";

/** How a replicated version was encrypted at its source (never a key). */
export type WireEncryption =
  | { kind: "s3" }
  | { kind: "kms"; algorithm: string; keyId: string; context?: string }
  /** SSE-C: the bytes travel as stored, sealed with the customer's key; only its MD5 here. */
  | { kind: "c"; keyMd5: string };

/** Base64 of an MD5 (16 bytes). */
const KEY_MD5 = /^[A-Za-z0-9+/]{21}[AQgw]==$/;

/** A version this node cannot send, with the reason (logged, and the version ends FAILED). */
export class NotReplicable extends Error {}

export function parseWireEncryption(value: unknown): WireEncryption | undefined | false {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  if (v.kind === "s3") return { kind: "s3" };
  if (v.kind === "c") {
    return typeof v.keyMd5 === "string" && KEY_MD5.test(v.keyMd5)
      ? { kind: "c", keyMd5: v.keyMd5 }
      : false;
  }
  if (
    v.kind !== "kms" || !KMS_ALGORITHMS.includes(v.algorithm as string) ||
    typeof v.keyId !== "string" || v.keyId === "" ||
    (v.context !== undefined && typeof v.context !== "string")
  ) {
    return false;
  }
  return {
    kind: "kms",
    algorithm: v.algorithm as string,
    keyId: v.keyId,
    ...(v.context !== undefined ? { context: v.context as string } : {}),
  };
}

export class ReplicaKeys {
  constructor(readonly meta: MetaStore, readonly sse: SseKeys, readonly kms: Kms) {}

  /**
   * The key to read a version with and how it travels (SSE-C: no key, its stored form travels);
   * NotReplicable when its key cannot be read.
   */
  async source(
    version: Pick<ObjectVersion, "sse">,
  ): Promise<{ key?: CryptoKey; encryption?: WireEncryption }> {
    if (version.sse === undefined) return {};
    const record = JSON.parse(version.sse) as SseRecord;
    if (record.kind === "c") {
      if (!KEY_MD5.test(record.keyMd5 ?? "")) {
        throw new NotReplicable("its SSE-C record is malformed");
      }
      return { encryption: { kind: "c", keyMd5: record.keyMd5! } };
    }
    try {
      if (record.kind === "s3") {
        return {
          key: await this.sse.forExistingObject(record, undefined),
          encryption: { kind: "s3" },
        };
      }
      const key = await this.kms.dataKeyOf({
        keyId: record.keyId ?? "",
        keyVersion: record.keyVersion ?? 0,
        sealedKey: record.sealedKey ?? "",
        ...(record.context !== undefined ? { context: record.context } : {}),
      });
      const encryption: WireEncryption = {
        kind: "kms",
        algorithm: record.algorithm ?? KMS_ALGORITHMS[0],
        keyId: record.keyId ?? "",
        ...(record.context !== undefined ? { context: record.context } : {}),
      };
      return { key, encryption };
    } catch (err) {
      if (err instanceof S3Error) throw new NotReplicable(`its key cannot be read: ${err.message}`);
      throw err;
    }
  }

  /** The replica's encryption: as at the source, else the receiving bucket's default. */
  async replica(
    bucket: string,
    wire: Exclude<WireEncryption, { kind: "c" }> | undefined,
  ): Promise<Encryption | undefined> {
    let want = wire;
    if (!want) {
      const fallback = await defaultEncryption(this.meta, bucket);
      if (!fallback) return undefined;
      want = KMS_ALGORITHMS.includes(fallback.algorithm)
        ? {
          kind: "kms",
          algorithm: fallback.algorithm,
          keyId: fallback.kmsKeyId ?? DEFAULT_KMS_KEY,
        }
        : { kind: "s3" };
    }
    if (want.kind === "s3") {
      const { record, key } = await this.sse.forNewObject({ kind: "s3" });
      return { key: key!, record: JSON.stringify(record) };
    }
    const { sealed, key } = await this.kms.newDataKey(want.keyId, want.context);
    const record: SseRecord = { kind: "kms", algorithm: want.algorithm, ...sealed };
    return { key, record: JSON.stringify(record) };
  }
}
