// Small dense matrices over GF(2^8), stored as arrays of rows.
import { gfInv, gfMul, gfPow, MUL_TABLE } from "./gf256.ts";

export type Matrix = Uint8Array[];

export function identity(n: number): Matrix {
  const m = zeros(n, n);
  for (let i = 0; i < n; i++) m[i][i] = 1;
  return m;
}

export function zeros(rows: number, cols: number): Matrix {
  return Array.from({ length: rows }, () => new Uint8Array(cols));
}

/** The rows x cols Vandermonde matrix V[r][c] = r^c; any `cols` of its rows are independent. */
export function vandermonde(rows: number, cols: number): Matrix {
  const m = zeros(rows, cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) m[r][c] = gfPow(r, c);
  }
  return m;
}

export function multiply(a: Matrix, b: Matrix): Matrix {
  const inner = b.length;
  const cols = inner === 0 ? 0 : b[0].length;
  const out = zeros(a.length, cols);
  for (let r = 0; r < a.length; r++) {
    if (a[r].length !== inner) throw new RangeError("Matrix dimensions do not match");
    for (let i = 0; i < inner; i++) {
      const coef = a[r][i];
      if (coef === 0) continue;
      const row = b[i];
      const base = coef * 256;
      for (let c = 0; c < cols; c++) out[r][c] ^= MUL_TABLE[base + row[c]];
    }
  }
  return out;
}

/** Inverts a square matrix by Gauss-Jordan elimination; throws if it is singular. */
export function invert(m: Matrix): Matrix {
  const n = m.length;
  const work = m.map((row) => {
    if (row.length !== n) throw new RangeError("Only square matrices can be inverted");
    return Uint8Array.from(row);
  });
  const inv = identity(n);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    while (pivot < n && work[pivot][col] === 0) pivot++;
    if (pivot === n) throw new Error("Matrix is singular");
    if (pivot !== col) {
      [work[pivot], work[col]] = [work[col], work[pivot]];
      [inv[pivot], inv[col]] = [inv[col], inv[pivot]];
    }
    const scale = gfInv(work[col][col]);
    scaleRow(work[col], scale);
    scaleRow(inv[col], scale);
    for (let r = 0; r < n; r++) {
      const factor = work[r][col];
      if (r === col || factor === 0) continue;
      addScaledRow(work[r], work[col], factor);
      addScaledRow(inv[r], inv[col], factor);
    }
  }
  return inv;
}

function scaleRow(row: Uint8Array, factor: number): void {
  for (let i = 0; i < row.length; i++) row[i] = gfMul(row[i], factor);
}

/** dst ^= factor * src (addition and subtraction are both XOR). */
function addScaledRow(dst: Uint8Array, src: Uint8Array, factor: number): void {
  const base = factor * 256;
  for (let i = 0; i < dst.length; i++) dst[i] ^= MUL_TABLE[base + src[i]];
}

/**
 * The systematic (k + m) x k encoding matrix: a Vandermonde matrix times the inverse of its top
 * k x k square, so the top k rows are the identity (data shards are the data) and any k rows are
 * still independent (any k shards reconstruct).
 */
export function encodingMatrix(dataShards: number, parityShards: number): Matrix {
  const v = vandermonde(dataShards + parityShards, dataShards);
  return multiply(v, invert(v.slice(0, dataShards)));
}
