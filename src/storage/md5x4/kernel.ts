// Four MD5 streams at once in WebAssembly SIMD: lane i of every i32x4 vector belongs to stream
// i, so one pass of MD5's 64 steps advances four streams by a block each. MD5 is a chain of
// dependent steps (a scalar implementation waits on each one), so four independent chains in
// the lanes of one vector cost little more time than one. The module is assembled at load time
// with the erasure kernel's emitter.
import {
  I32,
  i32Const as i32,
  localGet as get,
  localSet as set,
  localTee as tee,
  memarg,
  op,
  simd,
  simdOp,
  V128,
  wasmModule,
} from "../erasure/wasm_emit.ts";

/** Short names for the opcodes the kernel uses. */
const SIMD = {
  load: simdOp.v128Load,
  store: simdOp.v128Store,
  const: simdOp.v128Const,
  shuffle: simdOp.i8x16Shuffle,
  not: simdOp.v128Not,
  or: simdOp.v128Or,
  xor: simdOp.v128Xor,
  bitselect: simdOp.v128Bitselect,
  shl: simdOp.i32x4Shl,
  shrU: simdOp.i32x4ShrU,
  add: simdOp.i32x4Add,
} as const;

/** Bytes of the state: four vectors (a, b, c, d), lane i of each for stream i. */
export const STATE_BYTES = 64;

// Parameters of md5x4(state, p0, p1, p2, p3, blocks), then locals, by index.
const STATE = 0, P = 1, BLOCKS = 5;
const V = 6; // a, b, c, d
const SAVED = V + 4;
const X = SAVED + 4; // 16 message vectors
const ROW = X + 16; // 4 rows being transposed
const TMP = ROW + 4; // 4 temporaries

function splat32(n: number): number[] {
  const bytes = [];
  for (let lane = 0; lane < 4; lane++) {
    for (let b = 0; b < 4; b++) bytes.push((n >>> (8 * b)) & 0xff);
  }
  return simd(SIMD.const, ...bytes);
}

/** Shuffle immediates taking 4-byte lanes: indices 0-3 from the first vector, 4-7 the second. */
const lanes = (...ix: number[]) => ix.flatMap((i) => [4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3]);

/** Loads 16 bytes at offset `at` of every stream's block and transposes them into X[4q..4q+3]. */
// deno-fmt-ignore
function transposeQuarter(q: number): number[] {
  const out: number[] = [];
  for (let s = 0; s < 4; s++) out.push(...get(P + s), ...simd(SIMD.load, ...memarg(0, 16 * q)), ...set(ROW + s));
  // t0 = a0 b0 a1 b1, t1 = a2 b2 a3 b3, t2 = c0 d0 c1 d1, t3 = c2 d2 c3 d3
  out.push(...get(ROW), ...get(ROW + 1), ...simd(SIMD.shuffle, ...lanes(0, 4, 1, 5)), ...set(TMP));
  out.push(...get(ROW), ...get(ROW + 1), ...simd(SIMD.shuffle, ...lanes(2, 6, 3, 7)), ...set(TMP + 1));
  out.push(...get(ROW + 2), ...get(ROW + 3), ...simd(SIMD.shuffle, ...lanes(0, 4, 1, 5)), ...set(TMP + 2));
  out.push(...get(ROW + 2), ...get(ROW + 3), ...simd(SIMD.shuffle, ...lanes(2, 6, 3, 7)), ...set(TMP + 3));
  // word 4q+j of each stream: (a_j b_j c_j d_j)
  out.push(...get(TMP), ...get(TMP + 2), ...simd(SIMD.shuffle, ...lanes(0, 1, 4, 5)), ...set(X + 4 * q));
  out.push(...get(TMP), ...get(TMP + 2), ...simd(SIMD.shuffle, ...lanes(2, 3, 6, 7)), ...set(X + 4 * q + 1));
  out.push(...get(TMP + 1), ...get(TMP + 3), ...simd(SIMD.shuffle, ...lanes(0, 1, 4, 5)), ...set(X + 4 * q + 2));
  out.push(...get(TMP + 1), ...get(TMP + 3), ...simd(SIMD.shuffle, ...lanes(2, 3, 6, 7)), ...set(X + 4 * q + 3));
  return out;
}

const SHIFTS = [[7, 12, 17, 22], [5, 9, 14, 20], [4, 11, 16, 23], [6, 10, 15, 21]];
const K = Array.from(
  { length: 64 },
  (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) >>> 0,
);

function wordIndex(i: number): number {
  const r = i >> 4;
  if (r === 0) return i;
  if (r === 1) return (1 + 5 * i) % 16;
  if (r === 2) return (5 + 3 * i) % 16;
  return (7 * i) % 16;
}

/** The round function of b, c, d for step i, on the stack. */
// deno-fmt-ignore
function roundFunction(i: number, b: number, c: number, d: number): number[] {
  switch (i >> 4) {
    case 0: return [...get(c), ...get(d), ...get(b), ...simd(SIMD.bitselect)]; // (b & c) | (~b & d)
    case 1: return [...get(b), ...get(c), ...get(d), ...simd(SIMD.bitselect)]; // (d & b) | (~d & c)
    case 2: return [...get(c), ...get(d), ...simd(SIMD.xor), ...get(b), ...simd(SIMD.xor)]; // b last: one op on the chain
    default: // c ^ (b | ~d)
      return [...get(c), ...get(b), ...get(d), ...simd(SIMD.not), ...simd(SIMD.or), ...simd(SIMD.xor)];
  }
}

// deno-fmt-ignore
function steps(): number[] {
  const out: number[] = [];
  let [a, b, c, d] = [V, V + 1, V + 2, V + 3];
  for (let i = 0; i < 64; i++) {
    const s = SHIFTS[i >> 4][i & 3];
    out.push(
      // a + X + K does not wait for the previous step, so it comes first: only the round
      // function, one add, the rotation and the add of b are on the chain (~30% faster).
      ...get(a), ...get(X + wordIndex(i)), ...simd(SIMD.add),
      ...splat32(K[i]), ...simd(SIMD.add),
      ...roundFunction(i, b, c, d), ...simd(SIMD.add), ...tee(TMP),
      ...i32(s), ...simd(SIMD.shl),
      ...get(TMP), ...i32(32 - s), ...simd(SIMD.shrU), ...simd(SIMD.or),
      ...get(b), ...simd(SIMD.add), ...set(a),
    );
    [a, b, c, d] = [d, a, b, c];
  }
  return out;
}

// deno-fmt-ignore
function body(): number[] {
  const out: number[] = [];
  for (let j = 0; j < 4; j++) out.push(...get(STATE), ...simd(SIMD.load, ...memarg(4, 16 * j)), ...set(V + j));
  out.push(op.block, op.void, op.loop, op.void);
  out.push(...get(BLOCKS), op.i32Eqz, op.brIf, 1);
  for (let q = 0; q < 4; q++) out.push(...transposeQuarter(q));
  for (let j = 0; j < 4; j++) out.push(...get(V + j), ...set(SAVED + j));
  out.push(...steps());
  for (let j = 0; j < 4; j++) out.push(...get(V + j), ...get(SAVED + j), ...simd(SIMD.add), ...set(V + j));
  for (let s = 0; s < 4; s++) out.push(...get(P + s), ...i32(64), op.i32Add, ...set(P + s));
  out.push(...get(BLOCKS), ...i32(1), op.i32Sub, ...set(BLOCKS));
  out.push(op.br, 0, op.end, op.end);
  for (let j = 0; j < 4; j++) out.push(...get(STATE), ...get(V + j), ...simd(SIMD.store, ...memarg(4, 16 * j)));
  return out;
}

/**
 * The module: exports "memory" (`pages` of 64 KiB) and md5x4(state, p0, p1, p2, p3, blocks),
 * which runs `blocks` 64-byte blocks of each stream s, read from address p_s on, through the
 * states at `state` (STATE_BYTES, 16-byte aligned).
 */
export function md5x4ModuleBytes(pages: number): Uint8Array<ArrayBuffer> {
  return wasmModule([{
    name: "md5x4",
    params: [I32, I32, I32, I32, I32, I32],
    results: [],
    locals: [[4 + 4 + 16 + 4 + 4, V128]],
    body: body(),
  }], pages);
}
