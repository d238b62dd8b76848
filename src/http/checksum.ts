// Additional checksums sent as `x-*-checksum-<algorithm>` headers, verified as the body flows.
import { createHash, type Hash } from "node:crypto";
import zlib from "node:zlib";
import { type Dialect, h } from "./dialect.ts";
import { S3Error } from "./errors.ts";
import type { BodyCheck } from "../object/layer.ts";

const crc32: (data: Uint8Array, value?: number) => number =
  (zlib as unknown as { crc32: (d: Uint8Array, v?: number) => number }).crc32;

/** CRC-32C (Castagnoli), slice-by-8 tables. */
const CRC32C_TABLES = (() => {
  const tables = Array.from({ length: 8 }, () => new Uint32Array(256));
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    tables[0][i] = c >>> 0;
  }
  for (let i = 0; i < 256; i++) {
    for (let t = 1; t < 8; t++) {
      tables[t][i] = (tables[t - 1][i] >>> 8) ^ tables[0][tables[t - 1][i] & 0xff];
    }
  }
  return tables;
})();

export function crc32c(data: Uint8Array, value = 0): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = CRC32C_TABLES;
  let c = ~value >>> 0;
  let i = 0;
  const end8 = data.length - (data.length % 8);
  for (; i < end8; i += 8) {
    c ^= data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    c = t7[c & 0xff] ^ t6[(c >>> 8) & 0xff] ^ t5[(c >>> 16) & 0xff] ^ t4[c >>> 24] ^
      t3[data[i + 4]] ^ t2[data[i + 5]] ^ t1[data[i + 6]] ^ t0[data[i + 7]];
  }
  for (; i < data.length; i++) c = t0[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

function uint32Base64(value: number): string {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, value >>> 0);
  return btoa(String.fromCharCode(...b));
}

interface Digest {
  update(chunk: Uint8Array): void;
  base64(): string;
}

function crcDigest(fn: (d: Uint8Array, v?: number) => number): Digest {
  let value = 0;
  return {
    update(chunk) {
      value = fn(chunk, value);
    },
    base64: () => uint32Base64(value),
  };
}

function hashDigest(algorithm: string): Digest {
  const hash: Hash = createHash(algorithm);
  return { update: (chunk) => hash.update(chunk), base64: () => hash.digest("base64") };
}

const ALGORITHMS: Record<string, () => Digest> = {
  crc32: () => crcDigest(crc32),
  crc32c: () => crcDigest(crc32c),
  sha1: () => hashDigest("sha1"),
  sha256: () => hashDigest("sha256"),
};

/** Body checks for every `x-*-checksum-<alg>` header present on the request. */
export function checksumChecks(headers: Headers, dialect: Dialect): BodyCheck[] {
  const checks: BodyCheck[] = [];
  for (const [name, make] of Object.entries(ALGORITHMS)) {
    const expected = headers.get(h(dialect, `checksum-${name}`));
    if (expected === null) continue;
    const digest = make();
    checks.push({
      update: (chunk) => digest.update(chunk),
      finish() {
        if (digest.base64() !== expected) {
          throw new S3Error(
            "BadDigest",
            `The ${name.toUpperCase()} you specified did not match the calculated checksum.`,
          );
        }
      },
    });
  }
  const named = headers.get(h(dialect, "sdk-checksum-algorithm"));
  if (named && !(named.toLowerCase() in ALGORITHMS)) {
    throw new S3Error("NotImplemented", `The checksum algorithm ${named} is not supported yet.`);
  }
  return checks;
}
