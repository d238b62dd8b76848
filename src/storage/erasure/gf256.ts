// Arithmetic in GF(2^8) with the reducing polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d), the field
// used by most Reed-Solomon erasure codes; 2 generates its multiplicative group.

const POLYNOMIAL = 0x11d;

/** EXP[i] = 2^i, doubled in length so EXP[LOG[a] + LOG[b]] needs no modulo. */
export const EXP: Uint8Array = new Uint8Array(510);
/** LOG[a] = i such that 2^i = a, for a != 0 (LOG[0] is unused). */
export const LOG: Uint8Array = new Uint8Array(256);

(function buildLogTables(): void {
  let x = 1;
  for (let i = 0; i < 255; i++) {
    EXP[i] = x;
    EXP[i + 255] = x;
    LOG[x] = i;
    x <<= 1;
    if (x & 0x100) x ^= POLYNOMIAL;
  }
})();

export function gfMul(a: number, b: number): number {
  if (a === 0 || b === 0) return 0;
  return EXP[LOG[a] + LOG[b]];
}

export function gfDiv(a: number, b: number): number {
  if (b === 0) throw new RangeError("Division by zero in GF(2^8)");
  if (a === 0) return 0;
  return EXP[LOG[a] + 255 - LOG[b]];
}

export function gfInv(a: number): number {
  if (a === 0) throw new RangeError("Zero has no inverse in GF(2^8)");
  return EXP[255 - LOG[a]];
}

/** a^n for n >= 0, with 0^0 = 1 (as a Vandermonde matrix needs). */
export function gfPow(a: number, n: number): number {
  if (n === 0) return 1;
  if (a === 0) return 0;
  return EXP[(LOG[a] * n) % 255];
}

/** MUL_TABLE[c * 256 + x] = c * x: one 256-byte row per coefficient. */
export const MUL_TABLE: Uint8Array = new Uint8Array(256 * 256);
/**
 * Split-nibble tables, 32 bytes per coefficient c: bytes 0..15 hold c * i and bytes 16..31 hold
 * c * (i << 4), so c * x = low[x & 15] ^ high[x >> 4].
 */
export const NIBBLE_TABLES: Uint8Array = new Uint8Array(256 * 32);

(function buildProductTables(): void {
  for (let c = 0; c < 256; c++) {
    for (let x = 0; x < 256; x++) MUL_TABLE[c * 256 + x] = gfMul(c, x);
    for (let i = 0; i < 16; i++) {
      NIBBLE_TABLES[c * 32 + i] = gfMul(c, i);
      NIBBLE_TABLES[c * 32 + 16 + i] = gfMul(c, i << 4);
    }
  }
})();
