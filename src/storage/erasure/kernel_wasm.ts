// Runs the WebAssembly SIMD kernel over whole shards, block by block through its memory.
import { NIBBLE_TABLES } from "./gf256.ts";
import { kernelModuleBytes, STEP } from "./kernel_wasm_module.ts";
import { mulRowsTs } from "./kernel_ts.ts";
import type { Matrix } from "./matrix.ts";

/** Bytes of each shard processed per call into WebAssembly (a multiple of 4096). */
const BLOCK = 32 * 1024;
export const MAX_INPUTS = 32;
export const MAX_OUTPUTS = 16;
const PAGE = 4096;
const TABLES_AT = 0;
const PTRS_AT = TABLES_AT + MAX_OUTPUTS * MAX_INPUTS * 32;
const SLOTS_AT = PTRS_AT + PAGE;
/** A slot holds one shard's block, at a page offset chosen per shard (see slotAddress). */
const SLOT_SIZE = BLOCK + PAGE;
const MEMORY_BYTES = SLOTS_AT + (MAX_INPUTS + MAX_OUTPUTS) * SLOT_SIZE;

interface Instance {
  mulRows: (...args: number[]) => void;
  mem: Uint8Array;
  ptrs: Int32Array;
}

/** Same contract as mulRowsTs over whole shards. */
export type MulRowsFn = (coefs: Matrix, inputs: Uint8Array[], outputs: Uint8Array[]) => void;

/**
 * Builds a kernel with its own WebAssembly instance; "relaxed" uses i8x16.relaxed_swizzle, "plain"
 * only the SIMD proposal. Null where that cannot be compiled or instantiated.
 */
export function createWasmKernel(variant: "relaxed" | "plain"): MulRowsFn | null {
  if (typeof WebAssembly !== "object") return null;
  const bytes = kernelModuleBytes(Math.ceil(MEMORY_BYTES / 65536), variant === "relaxed");
  let instance: WebAssembly.Instance;
  try {
    if (!WebAssembly.validate(bytes)) return null;
    instance = new WebAssembly.Instance(new WebAssembly.Module(bytes));
  } catch {
    return null;
  }
  const { buffer } = instance.exports.memory as WebAssembly.Memory;
  const wasm: Instance = {
    mulRows: instance.exports.mulRows as Instance["mulRows"],
    mem: new Uint8Array(buffer),
    ptrs: new Int32Array(buffer, PTRS_AT, MAX_INPUTS + MAX_OUTPUTS),
  };
  return (coefs, inputs, outputs) => run(wasm, { coefs, inputs, outputs });
}

const defaultKernel = createWasmKernel("relaxed") ?? createWasmKernel("plain");

/** Whether the WebAssembly SIMD kernel could be built here. */
export const wasmAvailable: boolean = defaultKernel !== null;

/** Same contract as mulRowsTs over whole shards; bytes past the last multiple of STEP go to it. */
export function mulRowsWasm(coefs: Matrix, inputs: Uint8Array[], outputs: Uint8Array[]): void {
  if (defaultKernel === null) throw new Error("WebAssembly SIMD is not available");
  defaultKernel(coefs, inputs, outputs);
}

/**
 * Where slot `slot` holds a block of `shard`. Copies between addresses whose distance is close to
 * a multiple of 4096 run up to 15 times slower on some CPUs (store-to-load 4K aliasing in
 * `rep movsb`), and large buffers start on a page boundary, so the block sits half a page away
 * from the shard's page offset, staggered per slot so that the kernel's streams do not alias
 * either.
 */
function slotAddress(slot: number, shard: Uint8Array): number {
  return SLOTS_AT + slot * SLOT_SIZE + ((shard.byteOffset + PAGE / 2 + slot * 32) % PAGE);
}

/** Streams the shards through the instance's memory, BLOCK bytes of each at a time. */
function run(
  { mulRows, mem, ptrs }: Instance,
  { coefs, inputs, outputs }: { coefs: Matrix; inputs: Uint8Array[]; outputs: Uint8Array[] },
): void {
  const nIn = inputs.length, nOut = outputs.length;
  if (nIn > MAX_INPUTS || nOut > MAX_OUTPUTS) {
    throw new RangeError("Too many shards for the WebAssembly kernel");
  }
  const len = inputs[0].length;
  const simdLen = len - (len % STEP);
  for (let r = 0; r < nOut; r++) {
    for (let j = 0; j < nIn; j++) {
      const c = coefs[r][j];
      mem.set(NIBBLE_TABLES.subarray(c * 32, c * 32 + 32), TABLES_AT + (r * nIn + j) * 32);
    }
  }
  const inAt = inputs.map((shard, j) => slotAddress(j, shard));
  const outAt = outputs.map((shard, r) => slotAddress(nIn + r, shard));
  ptrs.set(inAt, 0);
  ptrs.set(outAt, nIn);
  for (let pos = 0; pos < simdLen; pos += BLOCK) {
    const n = Math.min(BLOCK, simdLen - pos);
    for (let j = 0; j < nIn; j++) mem.set(inputs[j].subarray(pos, pos + n), inAt[j]);
    mulRows(TABLES_AT, PTRS_AT, nIn, PTRS_AT + nIn * 4, nOut, n);
    for (let r = 0; r < nOut; r++) outputs[r].set(mem.subarray(outAt[r], outAt[r] + n), pos);
  }
  if (simdLen < len) mulRowsTs(coefs, inputs, outputs, { start: simdLen, end: len });
}
