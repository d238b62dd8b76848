// The WebAssembly SIMD kernel, assembled at load time: GF(2^8) multiply-accumulate with the
// split-nibble technique (two 16-entry product tables per coefficient, looked up with
// i8x16.swizzle on the low and high nibbles of each input byte), STEP bytes per loop iteration.
import {
  I32,
  i32Const as i32,
  localGet as get,
  localSet as set,
  memarg,
  op,
  simd,
  simdOp,
  uleb,
  V128,
  wasmModule,
} from "./wasm_emit.ts";

/** 16-byte vectors per input per step of the position loop (len must be a multiple of 16x). */
export const UNROLL = 8;
export const STEP = 16 * UNROLL;

// Parameters of mulRows, then its locals, by index.
const TABLES = 0, IN_PTRS = 1, N_IN = 2, OUT_PTRS = 3, N_OUT = 4, LEN = 5;
const POS = 6, J = 7, PP = 8, T = 9, OUT = 10, P = 11;
const X = 12, MASK = 13, LOW = 14, HIGH = 15, ACC = 16; // ACC .. ACC + UNROLL - 1

const splat = (byte: number) => simd(simdOp.v128Const, ...new Array(16).fill(byte));
const loadV128 = (offset: number) => simd(simdOp.v128Load, ...memarg(4, offset));
const storeV128 = (offset: number) => simd(simdOp.v128Store, ...memarg(4, offset));
const loadI32 = (offset: number) => [op.i32Load, ...memarg(2, offset)];
/** local[i] += the value the instructions `n` push. */
const addTo = (i: number, n: number[]) => [...get(i), ...n, op.i32Add, ...set(i)];
const each = (f: (u: number) => number[]) => Array.from({ length: UNROLL }, (_, u) => f(u)).flat();

/** For each vector u: acc[u] ^= low[x & 15] ^ high[x >> 4], x the input at *PP + POS + 16u. */
// deno-fmt-ignore
function accumulate(swizzle: number): number[] {
  return [
    ...get(PP), ...loadI32(0), ...get(POS), op.i32Add, ...set(P),
    ...get(T), ...loadV128(0), ...set(LOW),
    ...get(T), ...loadV128(16), ...set(HIGH),
    ...each((u) => [
      ...get(P), ...loadV128(16 * u), ...set(X),
      ...get(ACC + u),
      ...get(LOW), ...get(X), ...get(MASK), ...simd(simdOp.v128And),
      ...simd(swizzle), ...simd(simdOp.v128Xor),
      ...get(HIGH), ...get(X), ...i32(4), ...simd(simdOp.i16x8ShrU), ...get(MASK),
      ...simd(simdOp.v128And),
      ...simd(swizzle), ...simd(simdOp.v128Xor),
      ...set(ACC + u),
    ]),
  ];
}

/** One output row: for each STEP bytes, sum the products over all inputs, then store once. */
// deno-fmt-ignore
function rowBody(swizzle: number): number[] {
  return [
    ...i32(0), ...set(POS),
    op.block, op.void, op.loop, op.void,
    ...get(POS), ...get(LEN), op.i32GeU, op.brIf, 1,
    ...each((u) => [...splat(0), ...set(ACC + u)]),
    ...get(IN_PTRS), ...set(PP),
    ...get(TABLES), ...set(T),
    ...get(N_IN), ...set(J),
    op.loop, op.void,
    ...accumulate(swizzle),
    ...addTo(PP, i32(4)),
    ...addTo(T, i32(32)),
    ...get(J), ...i32(1), op.i32Sub, op.localTee, ...uleb(J), op.brIf, 0,
    op.end,
    ...get(OUT), ...get(POS), op.i32Add, ...set(P),
    ...each((u) => [...get(P), ...get(ACC + u), ...storeV128(16 * u)]),
    ...addTo(POS, i32(STEP)),
    op.br, 0,
    op.end, op.end,
  ];
}

/**
 * mulRows(tables, inPtrs, nIn, outPtrs, nOut, len), all byte addresses in its memory: for each
 * of the nOut rows r, the len bytes (a multiple of STEP, nIn >= 1) at address outPtrs[r] become
 * the sum over j of coef[r][j] times the bytes at inPtrs[j], where coef[r][j] is given by its 32
 * bytes of nibble tables at tables + (r * nIn + j) * 32.
 */
// deno-fmt-ignore
function mulRowsBody(swizzle: number): number[] {
  return [
    ...splat(0x0f), ...set(MASK),
    op.block, op.void, op.loop, op.void,
    ...get(N_OUT), op.i32Eqz, op.brIf, 1,
    ...get(OUT_PTRS), ...loadI32(0), ...set(OUT),
    ...rowBody(swizzle),
    ...addTo(TABLES, [...get(N_IN), ...i32(5), op.i32Shl]),
    ...addTo(OUT_PTRS, i32(4)),
    ...get(N_OUT), ...i32(1), op.i32Sub, ...set(N_OUT),
    op.br, 0,
    op.end, op.end,
  ];
}

/**
 * The kernel module: exports "memory" (memoryPages of 64 KiB) and "mulRows". With `relaxed`, it
 * uses i8x16.relaxed_swizzle (plain pshufb; the indices are always below 16 so the result is the
 * same) and needs the relaxed-SIMD proposal.
 */
export function kernelModuleBytes(memoryPages: number, relaxed: boolean): Uint8Array<ArrayBuffer> {
  const swizzle = relaxed ? simdOp.i8x16RelaxedSwizzle : simdOp.i8x16Swizzle;
  return wasmModule([{
    name: "mulRows",
    params: [I32, I32, I32, I32, I32, I32],
    results: [],
    locals: [[6, I32], [4 + UNROLL, V128]],
    body: mulRowsBody(swizzle),
  }], memoryPages);
}
