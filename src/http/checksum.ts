// Additional checksums (CRC32, CRC32C, CRC64NVME, SHA1, SHA256): sent as an `x-*-checksum-<alg>`
// header or as a trailer of a streaming upload (named by `x-*-trailer`), verified as the body
// flows, kept with the object, and combined over the parts of a multipart upload.
import { createHash } from "node:crypto";
import {
  crc32,
  CRC32_SHAPE,
  crc32c,
  CRC32C_SHAPE,
  crc64nvme,
  CRC64NVME_SHAPE,
  crcCombine,
  type CrcShape,
} from "./crc.ts";
import { type Dialect, h } from "./dialect.ts";
import { S3Error } from "./errors.ts";
import type { BodyCheck } from "../object/write_pipeline.ts";
import type { ChecksumRecord } from "../meta/store.ts";

export type ChecksumAlgorithm = "CRC32" | "CRC32C" | "CRC64NVME" | "SHA1" | "SHA256";
export type ChecksumType = "FULL_OBJECT" | "COMPOSITE";

export const CHECKSUM_ALGORITHMS: readonly ChecksumAlgorithm[] = [
  "CRC32",
  "CRC32C",
  "CRC64NVME",
  "SHA1",
  "SHA256",
];

interface Digest {
  update(chunk: Uint8Array): void;
  bytes(): Uint8Array;
}

function crc32Digest(fn: (d: Uint8Array, v?: number) => number): () => Digest {
  return () => {
    let value = 0;
    return {
      update: (chunk) => void (value = fn(chunk, value)),
      bytes: () => bigEndian(BigInt(value), 4),
    };
  };
}

function hashDigest(name: string): () => Digest {
  return () => {
    const hash = createHash(name);
    return {
      update: (chunk) => void hash.update(chunk),
      bytes: () => new Uint8Array(hash.digest()),
    };
  };
}

interface Spec {
  /** Length of the raw checksum in bytes. */
  size: number;
  make: () => Digest;
  /** The CRC's shape, for combining part CRCs into a full-object CRC. */
  crc?: CrcShape;
}

const SPECS: Record<ChecksumAlgorithm, Spec> = {
  CRC32: { size: 4, make: crc32Digest(crc32), crc: CRC32_SHAPE },
  CRC32C: { size: 4, make: crc32Digest(crc32c), crc: CRC32C_SHAPE },
  CRC64NVME: {
    size: 8,
    make: () => {
      let value = 0n;
      return {
        update: (chunk) => void (value = crc64nvme(chunk, value)),
        bytes: () => bigEndian(value, 8),
      };
    },
    crc: CRC64NVME_SHAPE,
  },
  SHA1: { size: 20, make: hashDigest("sha1") },
  SHA256: { size: 32, make: hashDigest("sha256") },
};

function bigEndian(value: bigint, size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = size - 1; i >= 0; i--) {
    out[i] = Number(value & 0xffn);
    value >>= 8n;
  }
  return out;
}

function toBase64(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

/** The raw bytes of a base64 checksum of `algorithm`, or undefined when it is not one. */
function decodeValue(algorithm: ChecksumAlgorithm, value: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) return undefined;
  const bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
  return bytes.byteLength === SPECS[algorithm].size ? bytes : undefined;
}

/** The name of the header (or trailer) carrying a checksum, e.g. `x-store-checksum-crc32`. */
export function checksumHeader(d: Dialect, algorithm: ChecksumAlgorithm): string {
  return h(d, `checksum-${algorithm.toLowerCase()}`);
}

/** An algorithm named in a header (any case); InvalidRequest when it is not supported. */
export function parseAlgorithm(value: string, header: string): ChecksumAlgorithm {
  const upper = value.trim().toUpperCase();
  const found = CHECKSUM_ALGORITHMS.find((a) => a === upper);
  if (!found) {
    throw new S3Error(
      "InvalidRequest",
      `The ${header} value ${value} is not a supported checksum algorithm; use one of ` +
        `${CHECKSUM_ALGORITHMS.join(", ")}.`,
    );
  }
  return found;
}

/** The base64 checksum of `data`. */
export function checksumOf(algorithm: ChecksumAlgorithm, data: Uint8Array): string {
  const digest = SPECS[algorithm].make();
  digest.update(data);
  return toBase64(digest.bytes());
}

/**
 * Computes a checksum of the body as it flows and, when an expected value is known (a header, or
 * a trailer read once the body has ended), compares them: BadDigest on a mismatch.
 */
export class ChecksumCheck implements BodyCheck {
  readonly algorithm: ChecksumAlgorithm;
  readonly #digest: Digest;
  readonly #expected: () => string | undefined;
  /** The computed base64 checksum, once `finish` has run. */
  value?: string;

  constructor(algorithm: ChecksumAlgorithm, expected?: string | (() => string | undefined)) {
    this.algorithm = algorithm;
    this.#digest = SPECS[algorithm].make();
    this.#expected = typeof expected === "function" ? expected : () => expected;
  }

  update(chunk: Uint8Array): void {
    this.#digest.update(chunk);
  }

  finish(): void {
    this.value = toBase64(this.#digest.bytes());
    const expected = this.#expected();
    if (expected !== undefined && expected !== this.value) {
      throw new S3Error(
        "BadDigest",
        `The ${this.algorithm} you specified did not match the calculated checksum.`,
      );
    }
  }
}

/** What a request body offers for trailing checksums (see RequestBody). */
export interface TrailerSource {
  hasTrailer: boolean;
  trailers: Headers;
}

function invalidValue(name: string, where: string): S3Error {
  return new S3Error("InvalidRequest", `Value for ${name} ${where} is invalid.`);
}

/** The checksum algorithm a streaming upload's `x-*-trailer` header announces, if any. */
function trailerAlgorithm(
  headers: Headers,
  d: Dialect,
  body?: TrailerSource,
): ChecksumAlgorithm | undefined {
  const declared = headers.get(h(d, "trailer"));
  if (declared === null) return undefined;
  if (!body?.hasTrailer) {
    throw new S3Error(
      "InvalidRequest",
      `The ${h(d, "trailer")} header needs a streaming upload body with a trailer.`,
    );
  }
  let found: ChecksumAlgorithm | undefined;
  for (const name of declared.split(",").map((n) => n.trim().toLowerCase()).filter(Boolean)) {
    const algorithm = CHECKSUM_ALGORITHMS.find((a) => checksumHeader(d, a) === name);
    if (!algorithm) {
      throw new S3Error("InvalidRequest", `The trailing header ${name} is not supported.`);
    }
    if (found) {
      throw new S3Error("InvalidRequest", "Only one trailing checksum may be sent.");
    }
    found = algorithm;
  }
  return found;
}

/**
 * The checksum a write request asks to be verified: one `x-*-checksum-<alg>` header, or one
 * trailing checksum named by `x-*-trailer`, agreeing with `x-*-sdk-checksum-algorithm` when that
 * is sent. Undefined when the request carries none.
 */
export function requestChecksum(
  headers: Headers,
  d: Dialect,
  body?: TrailerSource,
): ChecksumCheck | undefined {
  const sent = CHECKSUM_ALGORITHMS
    .map((algorithm) => ({ algorithm, value: headers.get(checksumHeader(d, algorithm)) }))
    .filter((c): c is { algorithm: ChecksumAlgorithm; value: string } => c.value !== null);
  const trailed = trailerAlgorithm(headers, d, body);
  if (sent.length + (trailed ? 1 : 0) > 1) {
    throw new S3Error(
      "InvalidRequest",
      `Expecting a single ${h(d, "checksum-")} header. Multiple checksum types are not allowed.`,
    );
  }
  const algorithm = sent[0]?.algorithm ?? trailed;
  const sdkHeader = h(d, "sdk-checksum-algorithm");
  const named = headers.get(sdkHeader);
  if (named !== null) {
    const sdk = parseAlgorithm(named, sdkHeader);
    if (!algorithm) {
      throw new S3Error(
        "InvalidRequest",
        `${sdkHeader} specified, but no corresponding ${h(d, "checksum-*")} or ` +
          `${h(d, "trailer")} headers were found.`,
      );
    }
    if (sdk !== algorithm) {
      throw new S3Error(
        "InvalidRequest",
        `${sdkHeader} (${sdk}) does not match the checksum sent (${algorithm}).`,
      );
    }
  }
  if (sent.length === 1) {
    const { value } = sent[0];
    const name = checksumHeader(d, sent[0].algorithm);
    if (!decodeValue(sent[0].algorithm, value)) throw invalidValue(name, "header");
    return new ChecksumCheck(sent[0].algorithm, value);
  }
  if (trailed) {
    const name = checksumHeader(d, trailed);
    return new ChecksumCheck(trailed, () => {
      const value = body!.trailers.get(name);
      if (value === null) {
        throw new S3Error(
          "IncompleteBody",
          `The body ended without the trailing ${name} its ${h(d, "trailer")} header announced.`,
        );
      }
      if (!decodeValue(trailed, value)) throw invalidValue(name, "trailing header");
      return value;
    });
  }
  return undefined;
}

/** Body checks for the checksum a request carries (none, or one). */
export function checksumChecks(headers: Headers, d: Dialect, body?: TrailerSource): BodyCheck[] {
  const check = requestChecksum(headers, d, body);
  return check ? [check] : [];
}

/** Whether a multipart upload may combine its parts' checksums of `algorithm` as `type`. */
export function supportsType(algorithm: ChecksumAlgorithm, type: ChecksumType): boolean {
  if (type === "COMPOSITE") return algorithm !== "CRC64NVME";
  return SPECS[algorithm].crc !== undefined;
}

/** A composite checksum: the checksum of the parts' raw checksums, then `-<parts>`. */
export function compositeChecksum(algorithm: ChecksumAlgorithm, parts: string[]): string {
  const digest = SPECS[algorithm].make();
  for (const p of parts) digest.update(decodeValue(algorithm, p) ?? new Uint8Array(0));
  return `${toBase64(digest.bytes())}-${parts.length}`;
}

/** The CRC of the whole object, combined from its parts' CRCs and sizes. */
export function fullObjectChecksum(
  algorithm: ChecksumAlgorithm,
  parts: { value: string; size: number }[],
): string {
  const spec = SPECS[algorithm];
  if (!spec.crc) throw new Error(`${algorithm} cannot be combined`);
  let crc: bigint | undefined;
  for (const p of parts) {
    const bytes = decodeValue(algorithm, p.value);
    if (!bytes) throw new Error(`Stored ${algorithm} checksum is malformed`);
    const value = bytes.reduce((v, b) => (v << 8n) | BigInt(b), 0n);
    crc = crc === undefined ? value : crcCombine(spec.crc, crc, value, p.size);
  }
  return toBase64(bigEndian(crc ?? 0n, spec.size));
}

/** True when `value` is a well-formed base64 checksum of `algorithm`. */
export function isChecksumValue(algorithm: ChecksumAlgorithm, value: string): boolean {
  return decodeValue(algorithm, value) !== undefined;
}

/** Response headers naming a stored checksum (and, with `type`, its checksum type). */
export function checksumResponseHeaders(
  d: Dialect,
  record: ChecksumRecord,
  opts: { type: boolean },
): Record<string, string> {
  const out: Record<string, string> = {
    [checksumHeader(d, record.algorithm as ChecksumAlgorithm)]: record.value,
  };
  if (opts.type) out[h(d, "checksum-type")] = record.type;
  return out;
}
