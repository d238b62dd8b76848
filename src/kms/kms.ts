// Local key management: named keys the administrator creates, disables, enables and rotates
// (/admin/kms/keys), and the data keys of SSE-KMS objects sealed under them.
//
// A key is a list of versions, each 32 random bytes sealed (AES-256-GCM) under the master key's
// purpose key "kms", bound to the key id and version. A new object gets a fresh data key sealed
// under its key's newest version, bound to the key id, version and encryption context; reading it
// needs that version and the key enabled. Rotation adds a version: new objects use it, older
// objects still read with theirs. The key "default" is created on first use, for requests and
// bucket defaults that name no key.
import { Buffer } from "node:buffer";
import type { MasterKey } from "../auth/master_key.ts";
import { S3Error } from "../http/errors.ts";
import type { KmsKeyRecord, MetaStore } from "../meta/store.ts";
import { ChunkIntegrityError, decodeChunk, encodeChunk, importAesKey } from "../storage/codec.ts";

export const DEFAULT_KMS_KEY = "default";
const SEAL_VERSION = "v1:";
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** What an SSE-KMS object keeps about its data key (part of its SSE record). */
export interface KmsSealed {
  keyId: string;
  keyVersion: number;
  /** `v1:` + base64 of the data key sealed under that key version. */
  sealedKey: string;
  /** The encryption context as sent (base64 JSON), bound into the seal. */
  context?: string;
}

export class KmsError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/** A key id as a request names it: the id itself, or a key ARN ending in `key/{id}`. */
export function keyIdOf(named: string): string {
  const slash = named.lastIndexOf("key/");
  return named.startsWith("arn:") && slash >= 0 ? named.slice(slash + 4) : named;
}

export function validKeyId(id: string): boolean {
  return ID.test(id);
}

function disabled(id: string): S3Error {
  return new S3Error(
    "KMS.DisabledException",
    `The KMS key ${id} is disabled: objects encrypted under it cannot be written or read until ` +
      "an administrator enables it again.",
  );
}

function notFound(id: string): S3Error {
  return new S3Error("KMS.NotFoundException", `Invalid keyId ${id}: no such KMS key.`);
}

export class Kms {
  readonly #meta: MetaStore;
  readonly #master: MasterKey;
  #wrapKey?: Promise<CryptoKey>;
  /** Unsealed key versions by `id:version`; a version never changes once written. */
  readonly #versions = new Map<string, Promise<CryptoKey>>();
  /** Changes to keys run one at a time (read, modify, write). */
  #changes: Promise<unknown> = Promise.resolve();

  constructor(meta: MetaStore, master: MasterKey) {
    this.#meta = meta;
    this.#master = master;
  }

  #wrappingKey(): Promise<CryptoKey> {
    this.#wrapKey ??= importAesKey(this.#master.derive("kms"));
    return this.#wrapKey;
  }

  async #sealVersion(id: string, version: number): Promise<string> {
    const material = crypto.getRandomValues(new Uint8Array(32));
    const sealed = await encodeChunk(material, {
      compression: "off",
      key: await this.#wrappingKey(),
      aad: new TextEncoder().encode(`store:kms:key:${id}:${version}`),
    });
    material.fill(0);
    return SEAL_VERSION + Buffer.from(sealed.bytes).toString("base64");
  }

  #versionKey(key: KmsKeyRecord, version: number): Promise<CryptoKey> {
    const cacheKey = `${key.id}:${version}`;
    let found = this.#versions.get(cacheKey);
    if (!found) {
      const stored = key.versions.find((v) => v.version === version);
      if (!stored) throw notFound(`${key.id} (version ${version})`);
      found = (async () => {
        const material = await decodeChunk(
          Buffer.from(stored.sealed.slice(SEAL_VERSION.length), "base64"),
          { compression: "none", encrypted: true },
          {
            key: await this.#wrappingKey(),
            aad: new TextEncoder().encode(`store:kms:key:${key.id}:${version}`),
            size: 32,
          },
        );
        const imported = await importAesKey(material);
        material.fill(0);
        return imported;
      })();
      found.catch(() => this.#versions.delete(cacheKey));
      this.#versions.set(cacheKey, found);
    }
    return found;
  }

  #serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#changes.then(fn, fn);
    this.#changes = run.catch(() => {});
    return run;
  }

  list(): Promise<KmsKeyRecord[]> {
    return this.#meta.listKmsKeys();
  }

  async get(id: string): Promise<KmsKeyRecord> {
    const key = await this.#meta.getKmsKey(id);
    if (!key) throw new KmsError(404, "no_such_key", `There is no KMS key ${id}.`);
    return key;
  }

  create(id: string, description: string): Promise<KmsKeyRecord> {
    if (!validKeyId(id)) {
      throw new KmsError(
        400,
        "invalid_field",
        "id must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit.",
      );
    }
    return this.#serialized(async () => {
      const now = Date.now();
      const key: KmsKeyRecord = {
        id,
        description,
        enabled: true,
        createdAt: now,
        versions: [{ version: 1, sealed: await this.#sealVersion(id, 1), createdAt: now }],
      };
      await this.#meta.createKmsKey(key);
      return key;
    });
  }

  /** A new newest version; earlier versions keep decrypting. */
  rotate(id: string): Promise<KmsKeyRecord> {
    return this.#serialized(async () => {
      const key = await this.get(id);
      const version = key.versions[key.versions.length - 1].version + 1;
      const now = Date.now();
      key.versions.push({ version, sealed: await this.#sealVersion(id, version), createdAt: now });
      await this.#meta.updateKmsKey(key);
      return key;
    });
  }

  setEnabled(id: string, enabled: boolean): Promise<KmsKeyRecord> {
    return this.#serialized(async () => {
      const key = await this.get(id);
      key.enabled = enabled;
      await this.#meta.updateKmsKey(key);
      return key;
    });
  }

  /** A named key that may encrypt: it exists (the default key is created) and is enabled. */
  async #usable(id: string): Promise<KmsKeyRecord> {
    let key = await this.#meta.getKmsKey(id);
    if (!key && id === DEFAULT_KMS_KEY) {
      key = await this.create(DEFAULT_KMS_KEY, "Used when no key is named").catch(async (err) => {
        // Created meanwhile by another request.
        const again = await this.#meta.getKmsKey(id);
        if (!again) throw err;
        return again;
      });
    }
    if (!key) throw notFound(id);
    if (!key.enabled) throw disabled(id);
    return key;
  }

  /** Whether a key id names an existing key (bucket defaults are checked when set). */
  async exists(id: string): Promise<boolean> {
    return id === DEFAULT_KMS_KEY || (await this.#meta.getKmsKey(id)) !== undefined;
  }

  /** A fresh data key for a new object, sealed under `keyId`'s newest version. */
  async newDataKey(
    keyId: string,
    context: string | undefined,
  ): Promise<{ sealed: KmsSealed; key: CryptoKey }> {
    const record = await this.#usable(keyId);
    const version = record.versions[record.versions.length - 1].version;
    const dataKey = crypto.getRandomValues(new Uint8Array(32));
    const sealed = await encodeChunk(dataKey, {
      compression: "off",
      key: await this.#versionKey(record, version),
      aad: dataKeyAad(keyId, version, context),
    });
    const key = await importAesKey(dataKey);
    dataKey.fill(0);
    return {
      sealed: {
        keyId,
        keyVersion: version,
        sealedKey: SEAL_VERSION + Buffer.from(sealed.bytes).toString("base64"),
        ...(context !== undefined ? { context } : {}),
      },
      key,
    };
  }

  /** The data key of an existing object; its key must exist and be enabled. */
  async dataKeyOf(sealed: KmsSealed): Promise<CryptoKey> {
    const record = await this.#meta.getKmsKey(sealed.keyId);
    if (!record) throw notFound(sealed.keyId);
    if (!record.enabled) throw disabled(sealed.keyId);
    try {
      const dataKey = await decodeChunk(
        Buffer.from(sealed.sealedKey.slice(SEAL_VERSION.length), "base64"),
        { compression: "none", encrypted: true },
        {
          key: await this.#versionKey(record, sealed.keyVersion),
          aad: dataKeyAad(sealed.keyId, sealed.keyVersion, sealed.context),
          size: 32,
        },
      );
      const key = await importAesKey(dataKey);
      dataKey.fill(0);
      return key;
    } catch (err) {
      if (!(err instanceof ChunkIntegrityError)) throw err;
      throw new S3Error(
        "InternalError",
        `The object's data key does not unseal with KMS key ${sealed.keyId}`,
      );
    }
  }
}

function dataKeyAad(keyId: string, version: number, context: string | undefined): Uint8Array {
  return new TextEncoder().encode(`store:kms:data-key:${keyId}:${version}:${context ?? ""}`);
}
