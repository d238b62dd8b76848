// The CRCs of the protocol's additional checksums, and the math that combines the CRCs of two
// byte strings into the CRC of their concatenation (full-object checksums of multipart uploads).
//
// All three are reflected CRCs whose initial value and final xor are all ones:
//   CRC-32      poly 0x04c11db7          (reflected 0xedb88320)           check 0xcbf43926
//   CRC-32C     poly 0x1edc6f41          (reflected 0x82f63b78)           check 0xe3069283
//   CRC-64/NVME poly 0xad93d23594c93659  (reflected 0x9a6c9329ac4bc9b5)   check 0xae8b14860a799888
// ("check" is the CRC of the ASCII bytes "123456789").
import zlib from "node:zlib";

/** CRC-32 (the zlib/IEEE one); `value` continues an earlier CRC. */
export const crc32: (data: Uint8Array, value?: number) => number =
  (zlib as unknown as { crc32: (d: Uint8Array, v?: number) => number }).crc32;

/** Slice-by-8 tables of a reflected 32-bit polynomial, flat: table t, entry i at t * 256 + i. */
function tables32(poly: number): Uint32Array {
  const out = new Uint32Array(8 * 256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ poly : c >>> 1;
    out[i] = c >>> 0;
  }
  for (let t = 1; t < 8; t++) {
    for (let i = 0; i < 256; i++) {
      const v = out[(t - 1) * 256 + i];
      out[t * 256 + i] = (v >>> 8) ^ out[v & 0xff];
    }
  }
  return out;
}

const CRC32C_TABLE = tables32(0x82f63b78);

/** CRC-32C (Castagnoli); `value` continues an earlier CRC. */
export function crc32c(data: Uint8Array, value = 0): number {
  const T = CRC32C_TABLE;
  let c = ~value >>> 0;
  let i = 0;
  const end8 = data.length - (data.length % 8);
  for (; i < end8; i += 8) {
    c ^= data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    c = T[0x700 + (c & 0xff)] ^ T[0x600 + ((c >>> 8) & 0xff)] ^ T[0x500 + ((c >>> 16) & 0xff)] ^
      T[0x400 + (c >>> 24)] ^ T[0x300 + data[i + 4]] ^ T[0x200 + data[i + 5]] ^
      T[0x100 + data[i + 6]] ^ T[data[i + 7]];
  }
  for (; i < data.length; i++) c = T[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

const CRC64_POLY = 0x9a6c9329ac4bc9b5n;

/**
 * Slice-by-8 tables of CRC-64/NVME in one flat array: entry i of table t is at (t * 256 + i) * 2
 * (low half) and + 1 (high half), so the inner loop stays in small integers.
 */
const CRC64_TABLE = (() => {
  const out = new Uint32Array(8 * 256 * 2);
  const base: bigint[] = [];
  for (let i = 0; i < 256; i++) {
    let c = BigInt(i);
    for (let k = 0; k < 8; k++) c = c & 1n ? (c >> 1n) ^ CRC64_POLY : c >> 1n;
    base.push(c);
  }
  let previous = base;
  for (let t = 0; t < 8; t++) {
    const table = t === 0 ? base : previous.map((v) => (v >> 8n) ^ base[Number(v & 0xffn)]);
    for (let i = 0; i < 256; i++) {
      out[(t * 256 + i) * 2] = Number(table[i] & 0xffffffffn);
      out[(t * 256 + i) * 2 + 1] = Number(table[i] >> 32n);
    }
    previous = table;
  }
  return out;
})();

/** CRC-64/NVME of `data`, continuing `value` (the CRC of the bytes before, unsigned 64-bit). */
export function crc64nvme(data: Uint8Array, value = 0n): bigint {
  const T = CRC64_TABLE;
  let hi = ~Number(value >> 32n) >>> 0;
  let lo = ~Number(value & 0xffffffffn) >>> 0;
  let i = 0;
  const end8 = data.length - (data.length % 8);
  for (; i < end8; i += 8) {
    const a = lo ^ (data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24));
    const b = hi ^ (data[i + 4] | (data[i + 5] << 8) | (data[i + 6] << 16) | (data[i + 7] << 24));
    const k7 = (0x700 + (a & 0xff)) << 1;
    const k6 = (0x600 + ((a >>> 8) & 0xff)) << 1;
    const k5 = (0x500 + ((a >>> 16) & 0xff)) << 1;
    const k4 = (0x400 + (a >>> 24)) << 1;
    const k3 = (0x300 + (b & 0xff)) << 1;
    const k2 = (0x200 + ((b >>> 8) & 0xff)) << 1;
    const k1 = (0x100 + ((b >>> 16) & 0xff)) << 1;
    const k0 = (b >>> 24) << 1;
    lo = T[k7] ^ T[k6] ^ T[k5] ^ T[k4] ^ T[k3] ^ T[k2] ^ T[k1] ^ T[k0];
    hi = T[k7 + 1] ^ T[k6 + 1] ^ T[k5 + 1] ^ T[k4 + 1] ^ T[k3 + 1] ^ T[k2 + 1] ^ T[k1 + 1] ^
      T[k0 + 1];
  }
  for (; i < data.length; i++) {
    const k = ((lo ^ data[i]) & 0xff) << 1;
    lo = ((lo >>> 8) | (hi << 24)) ^ T[k];
    hi = (hi >>> 8) ^ T[k + 1];
  }
  return (BigInt(~hi >>> 0) << 32n) | BigInt(~lo >>> 0);
}

/** A reflected CRC of `width` bits, for the combine math. */
export interface CrcShape {
  width: number;
  /** The reflected polynomial. */
  poly: bigint;
}

export const CRC32_SHAPE: CrcShape = { width: 32, poly: 0xedb88320n };
export const CRC32C_SHAPE: CrcShape = { width: 32, poly: 0x82f63b78n };
export const CRC64NVME_SHAPE: CrcShape = { width: 64, poly: CRC64_POLY };

/** a * b modulo the polynomial, both in reflected bit order (the top bit is x^0). */
function multModP(shape: CrcShape, a: bigint, b: bigint): bigint {
  let m = 1n << BigInt(shape.width - 1);
  let p = 0n;
  while (true) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1n)) === 0n) break;
    }
    m >>= 1n;
    b = b & 1n ? (b >> 1n) ^ shape.poly : b >> 1n;
  }
  return p;
}

const powerTables = new Map<CrcShape, bigint[]>();

/** x^(2^k) modulo the polynomial for k = 0..63. */
function powers(shape: CrcShape): bigint[] {
  let table = powerTables.get(shape);
  if (!table) {
    table = [1n << BigInt(shape.width - 2)]; // x^1
    for (let k = 1; k < 64; k++) table.push(multModP(shape, table[k - 1], table[k - 1]));
    powerTables.set(shape, table);
  }
  return table;
}

/** x^(8 * bytes) modulo the polynomial: the operator that moves a CRC past `bytes` zero bytes. */
function shiftOperator(shape: CrcShape, bytes: number): bigint {
  const table = powers(shape);
  let p = 1n << BigInt(shape.width - 1); // x^0
  let n = BigInt(bytes);
  let k = 3; // 8 * bytes = bytes * 2^3
  while (n > 0n) {
    if (n & 1n) p = multModP(shape, table[k % 64], p);
    n >>= 1n;
    k++;
  }
  return p;
}

/**
 * The CRC of A followed by B, from crc(A), crc(B) and the length of B. With an initial value
 * equal to the final xor (all ones here) the two cancel, and the combination is crc(A) moved
 * past len(B) bytes, xor crc(B).
 */
export function crcCombine(shape: CrcShape, crcA: bigint, crcB: bigint, lengthB: number): bigint {
  if (lengthB === 0) return crcA;
  return multModP(shape, shiftOperator(shape, lengthB), crcA) ^ crcB;
}

const crc32Shifts = new Map<number, Uint32Array>();

/**
 * crcCombine for CRC-32 with B's length fixed at `bytes`, fast: the shift past `bytes` zero
 * bytes is linear in the CRC, so it is kept as four byte-indexed tables (built once per length).
 * `crc32Combiner(len(B))(crc32(A), crc32(B))` is the CRC-32 of A followed by B.
 */
export function crc32Combiner(bytes: number): (crcA: number, crcB: number) => number {
  let t = crc32Shifts.get(bytes);
  if (!t) {
    const op = shiftOperator(CRC32_SHAPE, bytes);
    const bit = Array.from({ length: 32 }, (_, i) => multModP(CRC32_SHAPE, op, 1n << BigInt(i)));
    t = new Uint32Array(4 * 256);
    for (let k = 0; k < 4; k++) {
      for (let b = 0; b < 256; b++) {
        let v = 0n;
        for (let i = 0; i < 8; i++) if (b & (1 << i)) v ^= bit[8 * k + i];
        t[k * 256 + b] = Number(v);
      }
    }
    crc32Shifts.set(bytes, t);
  }
  const s = t;
  return (a, b) =>
    (s[a & 255] ^ s[256 + ((a >>> 8) & 255)] ^ s[512 + ((a >>> 16) & 255)] ^ s[768 + (a >>> 24)] ^
      b) >>> 0;
}
