// A tiny WebAssembly binary writer: just the sections, types and instructions the erasure kernel
// needs, so the module can be assembled at load time without a toolchain.

/** Value types. */
export const I32 = 0x7f;
export const V128 = 0x7b;

/** Opcodes used by the kernel (SIMD ones are emitted through `simd`). */
export const op = {
  block: 0x02,
  loop: 0x03,
  end: 0x0b,
  br: 0x0c,
  brIf: 0x0d,
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
  i32Load: 0x28,
  i32Const: 0x41,
  i32Eqz: 0x45,
  i32GeU: 0x4f,
  i32Add: 0x6a,
  i32Sub: 0x6b,
  i32Shl: 0x74,
  /** Block type of a block or loop that yields no value. */
  void: 0x40,
} as const;

/** SIMD sub-opcodes (prefix 0xfd). */
export const simdOp = {
  v128Load: 0x00,
  v128Store: 0x0b,
  v128Const: 0x0c,
  i8x16Shuffle: 0x0d,
  i8x16Swizzle: 0x0e,
  v128Not: 0x4d,
  v128And: 0x4e,
  v128Or: 0x50,
  v128Xor: 0x51,
  v128Bitselect: 0x52,
  i16x8ShrU: 0x8d,
  i32x4Shl: 0xab,
  i32x4ShrU: 0xad,
  i32x4Add: 0xae,
  i8x16RelaxedSwizzle: 0x100,
} as const;

export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

export function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    const done = (n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0);
    out.push(done ? byte : byte | 0x80);
    if (done) return out;
  }
}

/** local.get, local.set and local.tee of local `i`; i32.const `n`. */
export const localGet = (i: number): number[] => [op.localGet, ...uleb(i)];
export const localSet = (i: number): number[] => [op.localSet, ...uleb(i)];
export const localTee = (i: number): number[] => [op.localTee, ...uleb(i)];
export const i32Const = (n: number): number[] => [op.i32Const, ...sleb(n)];

export function simd(sub: number, ...immediates: number[]): number[] {
  return [0xfd, ...uleb(sub), ...immediates];
}

/** A memory access immediate: the alignment hint (log2 of bytes) and a constant offset. */
export function memarg(alignLog2: number, offset: number): number[] {
  return [...uleb(alignLog2), ...uleb(offset)];
}

function vec(items: number[][]): number[] {
  return [...uleb(items.length), ...items.flat()];
}

function name(s: string): number[] {
  const bytes = [...new TextEncoder().encode(s)];
  return [...uleb(bytes.length), ...bytes];
}

function section(id: number, contents: number[]): number[] {
  return [id, ...uleb(contents.length), ...contents];
}

export interface WasmFunction {
  name: string;
  params: number[];
  results: number[];
  /** Extra locals as [count, type] groups, after the parameters. */
  locals: [number, number][];
  /** The instructions, without the final `end`. */
  body: number[];
}

/** A module that defines and exports one memory ("memory") and the given functions. */
export function wasmModule(
  functions: WasmFunction[],
  memoryPages: number,
): Uint8Array<ArrayBuffer> {
  const types = functions.map((
    f,
  ) => [0x60, ...vec(f.params.map((t) => [t])), ...vec(f.results.map((t) => [t]))]);
  const codes = functions.map((f) => {
    const locals = vec(f.locals.map(([count, type]) => [...uleb(count), type]));
    const code = [...locals, ...f.body, op.end];
    return [...uleb(code.length), ...code];
  });
  const exports = [
    [...name("memory"), 0x02, 0],
    ...functions.map((f, i) => [...name(f.name), 0x00, ...uleb(i)]),
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec(types)),
    ...section(3, vec(functions.map((_, i) => uleb(i)))),
    ...section(5, vec([[0x00, ...uleb(memoryPages)]])),
    ...section(7, vec(exports)),
    ...section(10, vec(codes)),
  ]);
}
