// Server-side encryption: the request headers of SSE-S3 and SSE-C, the per-object keys, and the
// headers echoed in responses.
//
// SSE-S3: every object version gets a fresh random 32-byte data key, stored sealed
// (AES-256-GCM) under the master key's purpose key "sse-s3". SSE-C: the customer's key encrypts
// the chunks; only its MD5 is stored, to tell a wrong key (403) from the right one.
// Errors follow the protocol's answers (codes, statuses and messages as S3 gives them).
import { createHash, timingSafeEqual } from "node:crypto";
import type { MasterKey } from "../auth/master_key.ts";
import { type Dialect, h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { ChunkIntegrityError, decodeChunk, encodeChunk, importAesKey } from "../storage/codec.ts";

export type SseRequest =
  | { kind: "none" }
  | { kind: "s3" }
  | { kind: "c"; key: Uint8Array; keyMd5: string }
  | SseKmsRequest;

/** SSE-KMS (src/kms/): the algorithm as spelled, the named key (the default one when absent). */
export interface SseKmsRequest {
  kind: "kms";
  algorithm: string;
  keyId?: string;
  /** `x-*-server-side-encryption-context`: base64 of a JSON string-to-string map. */
  context?: string;
}

/** What is stored with an encrypted object version (JSON-serializable); never a key in clear. */
export interface SseRecord {
  kind: "s3" | "c" | "kms";
  /**
   * SSE-S3: `v1:` + base64 of the data key sealed with the "sse-s3" purpose key. SSE-KMS: sealed
   * under the named key's version (src/kms/kms.ts).
   */
  sealedKey?: string;
  /** SSE-C: base64 MD5 of the customer key. */
  keyMd5?: string;
  /** SSE-KMS: the algorithm as requested (`aws:kms` or `store:kms`), key id and version. */
  algorithm?: string;
  keyId?: string;
  keyVersion?: number;
  /** SSE-KMS: the encryption context as sent. */
  context?: string;
}

export interface CustomerKey {
  key: Uint8Array;
  keyMd5: string;
}

const AES256 = "AES256";
const KMS_VALUES = ["aws:kms", "store:kms"];
const SEAL_VERSION = "v1:";
const SEAL_AAD = new TextEncoder().encode("store:sse-s3:data-key");

const MSG = {
  unsupported: "The encryption method specified is not supported",
  incompatible:
    "Server Side Encryption with Customer provided key is incompatible with the encryption " +
    "method specified",
  missingKey:
    "Requests specifying Server Side Encryption with Customer provided keys must provide an " +
    "appropriate secret key.",
  missingMd5:
    "Requests specifying Server Side Encryption with Customer provided keys must provide the " +
    "client calculated MD5 of the secret key.",
  missingAlgorithm:
    "Requests specifying Server Side Encryption with Customer provided keys must provide a " +
    "valid encryption algorithm.",
  badAlgorithm:
    "The encryption request that you specified is not valid. The valid value is AES256.",
  badKey: "The secret key was invalid for the specified algorithm.",
  md5Mismatch: "The calculated MD5 hash of the key did not match the hash that was provided.",
  notApplicable: "The encryption parameters are not applicable to this object.",
  kmsOnly: (sse: string) =>
    `Server Side Encryption with KMS managed key requires HTTP header ${sse} : aws:kms or store:kms`,
  badContext: (name: string) =>
    `The header '${name}' shall be Base64-encoded UTF-8 string holding JSON which represents a ` +
    "string-string map",
  badKeyId: "The KMS key id is not valid.",
  encrypted:
    "The object was stored using a form of Server Side Encryption. The correct parameters must " +
    "be provided to retrieve the object.",
};

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict base64 (padded, no whitespace); undefined when the text is not that. */
function fromBase64(text: string): Uint8Array | undefined {
  if (!BASE64.test(text)) return undefined;
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function toBase64(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

function md5(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("md5").update(bytes).digest());
}

function invalidArgument(message: string, name: string, value?: string): S3Error {
  const details: Record<string, string> = { ArgumentName: name };
  if (value !== undefined) details.ArgumentValue = value;
  return new S3Error("InvalidArgument", message, { details });
}

/**
 * The SSE-C trio under `prefix` (e.g. `server-side-encryption-customer-`), checked in the
 * protocol's order: key, MD5 and algorithm present, algorithm AES256, key 32 bytes, MD5 right.
 */
function parseCustomerTrio(
  headers: Headers,
  dialect: Dialect,
  prefix: string,
): CustomerKey | undefined {
  const names = {
    algorithm: h(dialect, `${prefix}algorithm`),
    key: h(dialect, `${prefix}key`),
    md5: h(dialect, `${prefix}key-MD5`),
  };
  const algorithm = headers.get(names.algorithm);
  const keyText = headers.get(names.key);
  const md5Text = headers.get(names.md5);
  if (algorithm === null && keyText === null && md5Text === null) return undefined;
  if (keyText === null) throw invalidArgument(MSG.missingKey, names.key);
  if (md5Text === null) throw invalidArgument(MSG.missingMd5, names.md5);
  if (algorithm === null) throw invalidArgument(MSG.missingAlgorithm, names.algorithm);
  if (algorithm !== AES256) {
    throw new S3Error("InvalidEncryptionAlgorithmError", MSG.badAlgorithm, {
      details: { ArgumentName: names.algorithm, ArgumentValue: algorithm },
    });
  }
  const key = fromBase64(keyText);
  if (!key || key.byteLength !== 32) throw invalidArgument(MSG.badKey, names.key);
  const digest = md5(key);
  const given = fromBase64(md5Text);
  if (!given || given.byteLength !== digest.byteLength || !timingSafeEqual(given, digest)) {
    throw invalidArgument(MSG.md5Mismatch, names.md5);
  }
  return { key, keyMd5: toBase64(digest) };
}

/**
 * The SSE headers of a write (PutObject, CopyObject destination, CreateMultipartUpload).
 * `AES256` and both spellings of the KMS value request SSE-S3; the SSE-C trio requests SSE-C.
 */
export function parseSseWrite(headers: Headers, dialect: Dialect): SseRequest {
  const sseName = h(dialect, "server-side-encryption");
  const sse = headers.get(sseName);
  const customer = parseCustomerTrio(headers, dialect, "server-side-encryption-customer-");
  const keyIdName = h(dialect, `server-side-encryption-${dialect.kmsVendor}-kms-key-id`);
  const keyId = headers.get(keyIdName);
  const contextName = h(dialect, "server-side-encryption-context");
  const context = headers.get(contextName);
  const kms = sse !== null && KMS_VALUES.includes(sse);
  if (!kms && (keyId !== null || context !== null)) {
    throw invalidArgument(MSG.kmsOnly(sseName), sseName, sse ?? undefined);
  }
  if (sse !== null) {
    if (sse !== AES256 && !kms) {
      throw invalidArgument(MSG.unsupported, sseName, sse);
    }
    if (customer) throw invalidArgument(MSG.incompatible, sseName, sse);
    if (!kms) return { kind: "s3" };
    if (context !== null && !validContext(context)) {
      throw invalidArgument(MSG.badContext(contextName), contextName);
    }
    if (keyId !== null && keyId.trim() === "") {
      throw invalidArgument(MSG.badKeyId, keyIdName, keyId);
    }
    return {
      kind: "kms",
      algorithm: sse,
      ...(keyId !== null ? { keyId } : {}),
      ...(context !== null ? { context } : {}),
    };
  }
  return customer ? { kind: "c", ...customer } : { kind: "none" };
}

/** Base64 of a JSON object whose values are all strings. */
function validContext(text: string): boolean {
  const bytes = fromBase64(text);
  if (!bytes) return false;
  try {
    const value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    return value !== null && typeof value === "object" && !Array.isArray(value) &&
      Object.values(value).every((v) => typeof v === "string");
  } catch {
    return false;
  }
}

/** The SSE-C key of a read (GET/HEAD), or of the copy source with `copySource`. */
export function parseSseCustomerKey(
  headers: Headers,
  dialect: Dialect,
  opts: { copySource?: boolean } = {},
): CustomerKey | undefined {
  const prefix = opts.copySource
    ? "copy-source-server-side-encryption-customer-"
    : "server-side-encryption-customer-";
  return parseCustomerTrio(headers, dialect, prefix);
}

/** Issues and recovers the keys of SSE-S3 and SSE-C objects (SSE-KMS: src/kms/kms.ts). */
export class SseKeys {
  readonly #master: MasterKey;
  #sealKey?: Promise<CryptoKey>;

  constructor(master: MasterKey) {
    this.#master = master;
  }

  #sealingKey(): Promise<CryptoKey> {
    this.#sealKey ??= importAesKey(this.#master.derive("sse-s3"));
    return this.#sealKey;
  }

  /** A new object version: a fresh sealed data key (SSE-S3) or the customer's key (SSE-C). */
  async forNewObject(
    req: Exclude<SseRequest, SseKmsRequest>,
  ): Promise<{ record?: SseRecord; key?: CryptoKey }> {
    if (req.kind === "none") return {};
    if (req.kind === "c") {
      const keyMd5 = toBase64(md5(req.key));
      return { record: { kind: "c", keyMd5 }, key: await importAesKey(req.key) };
    }
    const dataKey = crypto.getRandomValues(new Uint8Array(32));
    const sealed = await encodeChunk(dataKey, {
      compression: "off",
      key: await this.#sealingKey(),
      aad: SEAL_AAD,
    });
    const key = await importAesKey(dataKey);
    dataKey.fill(0);
    return { record: { kind: "s3", sealedKey: SEAL_VERSION + toBase64(sealed.bytes) }, key };
  }

  /**
   * The key to read an existing version with, or undefined for an unencrypted one. SSE-C
   * objects need the customer's key (400 without it, 403 with another); SSE-C headers on an
   * object that is not SSE-C encrypted are refused.
   */
  async forExistingObject(
    record: SseRecord | undefined,
    customer: CustomerKey | undefined,
  ): Promise<CryptoKey | undefined> {
    if (record?.kind === "kms") throw new Error("SSE-KMS data keys come from src/kms/kms.ts");
    if (!record || record.kind === "s3") {
      if (customer) throw new S3Error("InvalidRequest", MSG.notApplicable);
      return record ? await this.#unseal(record) : undefined;
    }
    if (!customer) throw new S3Error("InvalidRequest", MSG.encrypted);
    const stored = fromBase64(record.keyMd5 ?? "");
    const digest = md5(customer.key);
    if (!stored || stored.byteLength !== digest.byteLength || !timingSafeEqual(stored, digest)) {
      throw new S3Error("AccessDenied", "Access Denied");
    }
    return await importAesKey(customer.key);
  }

  async #unseal(record: SseRecord): Promise<CryptoKey> {
    const text = record.sealedKey ?? "";
    const sealed = text.startsWith(SEAL_VERSION)
      ? fromBase64(text.slice(SEAL_VERSION.length))
      : undefined;
    if (!sealed) throw new S3Error("InternalError", "The object's sealed data key is malformed");
    try {
      const form = { compression: "none", encrypted: true } as const;
      const dataKey = await decodeChunk(sealed, form, {
        key: await this.#sealingKey(),
        aad: SEAL_AAD,
        size: 32,
      });
      const key = await importAesKey(dataKey);
      dataKey.fill(0);
      return key;
    } catch (err) {
      if (!(err instanceof ChunkIntegrityError)) throw err;
      throw new S3Error(
        "InternalError",
        "The object's data key does not unseal with this server's master key",
      );
    }
  }
}

/**
 * Headers echoed for an encrypted version: the algorithm; for SSE-C the key MD5; for SSE-KMS the
 * key id and the encryption context.
 */
export function sseResponseHeaders(
  record: SseRecord | undefined,
  dialect: Dialect,
): Record<string, string> {
  if (!record) return {};
  if (record.kind === "s3") return { [h(dialect, "server-side-encryption")]: AES256 };
  if (record.kind === "kms") {
    return {
      [h(dialect, "server-side-encryption")]: record.algorithm ?? KMS_VALUES[0],
      [h(dialect, `server-side-encryption-${dialect.kmsVendor}-kms-key-id`)]: record.keyId ?? "",
      ...(record.context !== undefined
        ? { [h(dialect, "server-side-encryption-context")]: record.context }
        : {}),
    };
  }
  return {
    [h(dialect, "server-side-encryption-customer-algorithm")]: AES256,
    [h(dialect, "server-side-encryption-customer-key-MD5")]: record.keyMd5 ?? "",
  };
}
