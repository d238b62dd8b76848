// The portable kernel: one 256-byte product table per coefficient, one byte at a time.
import { MUL_TABLE } from "./gf256.ts";
import type { Matrix } from "./matrix.ts";

/**
 * outputs[r][start..end) = sum over j of coefs[r][j] * inputs[j][start..end), for every row r.
 * `coefs` has one row per output and one column per input.
 */
export function mulRowsTs(
  coefs: Matrix,
  inputs: Uint8Array[],
  outputs: Uint8Array[],
  range: { start: number; end: number },
): void {
  const { start, end } = range;
  for (let r = 0; r < outputs.length; r++) {
    const out = outputs[r];
    const row = coefs[r];
    setProduct(row[0], inputs[0], out, start, end);
    for (let j = 1; j < inputs.length; j++) addProduct(row[j], inputs[j], out, start, end);
  }
}

/** out = c * input over [start, end). */
function setProduct(c: number, input: Uint8Array, out: Uint8Array, start: number, end: number) {
  if (c === 0) {
    out.fill(0, start, end);
  } else if (c === 1) {
    out.set(input.subarray(start, end), start);
  } else {
    const table = MUL_TABLE.subarray(c * 256, c * 256 + 256);
    for (let i = start; i < end; i++) out[i] = table[input[i]];
  }
}

/** out ^= c * input over [start, end). */
function addProduct(c: number, input: Uint8Array, out: Uint8Array, start: number, end: number) {
  if (c === 0) return;
  if (c === 1) {
    for (let i = start; i < end; i++) out[i] ^= input[i];
    return;
  }
  const table = MUL_TABLE.subarray(c * 256, c * 256 + 256);
  for (let i = start; i < end; i++) out[i] ^= table[input[i]];
}
