// Systematic Reed-Solomon erasure coding over GF(2^8): k data shards (the data itself) plus m
// parity shards, any k of which rebuild the rest.
import { mulRowsTs } from "./kernel_ts.ts";
import { mulRowsWasm, wasmAvailable } from "./kernel_wasm.ts";
import { STEP } from "./kernel_wasm_module.ts";
import { encodingMatrix, invert, type Matrix, multiply } from "./matrix.ts";

export const MAX_DATA_SHARDS = 32;
export const MAX_PARITY_SHARDS = 16;
export const MAX_TOTAL_SHARDS = 48;
/** Decode matrices kept per instance, keyed by the shards they read. */
const DECODE_CACHE_SIZE = 64;

export interface ReedSolomonOptions {
  /**
   * "auto" (default) uses WebAssembly SIMD where available and the shards are long enough;
   * "wasm" insists on it (throws where unavailable); "ts" uses the portable kernel.
   */
  kernel?: "auto" | "wasm" | "ts";
}

type MulRows = (coefs: Matrix, inputs: Uint8Array[], outputs: Uint8Array[]) => void;

export class ReedSolomon {
  readonly dataShards: number;
  readonly parityShards: number;
  readonly totalShards: number;
  /** (k + m) x k; row i expresses shard i in terms of the data shards. */
  readonly #matrix: Matrix;
  readonly #mulRows: MulRows;
  readonly #decodeCache = new Map<string, Matrix>();

  constructor(dataShards: number, parityShards: number, options: ReedSolomonOptions = {}) {
    if (!Number.isInteger(dataShards) || dataShards < 1 || dataShards > MAX_DATA_SHARDS) {
      throw new RangeError(`Data shards must be an integer from 1 to ${MAX_DATA_SHARDS}`);
    }
    if (!Number.isInteger(parityShards) || parityShards < 0 || parityShards > MAX_PARITY_SHARDS) {
      throw new RangeError(`Parity shards must be an integer from 0 to ${MAX_PARITY_SHARDS}`);
    }
    if (dataShards + parityShards > MAX_TOTAL_SHARDS) {
      throw new RangeError(`At most ${MAX_TOTAL_SHARDS} shards in total`);
    }
    this.dataShards = dataShards;
    this.parityShards = parityShards;
    this.totalShards = dataShards + parityShards;
    this.#matrix = encodingMatrix(dataShards, parityShards);
    this.#mulRows = pickKernel(options.kernel ?? "auto");
  }

  /** Fills the m parity shards from the k data shards (all shards the same length). */
  encode(data: Uint8Array[], parity: Uint8Array[]): void {
    if (data.length !== this.dataShards) {
      throw new RangeError(`Expected ${this.dataShards} data shards, got ${data.length}`);
    }
    if (parity.length !== this.parityShards) {
      throw new RangeError(`Expected ${this.parityShards} parity shards, got ${parity.length}`);
    }
    sameLength([...data, ...parity]);
    if (parity.length === 0) return;
    this.#mulRows(this.#matrix.slice(this.dataShards), data, parity);
  }

  /**
   * Rebuilds every missing (null) shard of `shards` (data and parity, k + m entries) into a new
   * buffer, stored in place; returns the now complete array. Throws when fewer than k are present.
   */
  reconstruct(shards: (Uint8Array | null)[]): Uint8Array[] {
    this.#rebuild(shards, this.totalShards);
    return shards as Uint8Array[];
  }

  /**
   * Rebuilds only the missing data shards (in place, as reconstruct does) and returns the k data
   * shards; missing parity shards stay null.
   */
  reconstructData(shards: (Uint8Array | null)[]): Uint8Array[] {
    this.#rebuild(shards, this.dataShards);
    return shards.slice(0, this.dataShards) as Uint8Array[];
  }

  /** Rebuilds the missing shards among the first `upTo`. */
  #rebuild(shards: (Uint8Array | null)[], upTo: number): void {
    if (shards.length !== this.totalShards) {
      throw new RangeError(`Expected ${this.totalShards} shards, got ${shards.length}`);
    }
    const present: number[] = [];
    const missing: number[] = [];
    shards.forEach((shard, i) => {
      if (shard !== null) present.push(i);
      else if (i < upTo) missing.push(i);
    });
    if (present.length < this.dataShards) {
      throw new Error(
        `Cannot reconstruct: ${present.length} of ${this.totalShards} shards present, ` +
          `${this.dataShards} needed`,
      );
    }
    const inputs = present.slice(0, this.dataShards);
    const inputShards = inputs.map((i) => shards[i] as Uint8Array);
    const size = sameLength(present.map((i) => shards[i] as Uint8Array));
    if (missing.length === 0) return;
    const decode = this.#decodeMatrix(inputs);
    // A data shard is a row of the decode matrix; a parity shard is its encoding row (in terms
    // of the data) times the decode matrix, so every missing shard comes from one pass.
    const rows = missing.map((i) =>
      i < this.dataShards ? decode[i] : multiply([this.#matrix[i]], decode)[0]
    );
    const outputs = missing.map(() => new Uint8Array(size));
    this.#mulRows(rows, inputShards, outputs);
    missing.forEach((shardIndex, r) => shards[shardIndex] = outputs[r]);
  }

  /** The inverse of the encoding rows of `inputs`: data = decode x (those shards). */
  #decodeMatrix(inputs: number[]): Matrix {
    const key = inputs.join(",");
    let decode = this.#decodeCache.get(key);
    if (decode === undefined) {
      decode = invert(inputs.map((i) => this.#matrix[i]));
      if (this.#decodeCache.size >= DECODE_CACHE_SIZE) this.#decodeCache.clear();
      this.#decodeCache.set(key, decode);
    }
    return decode;
  }
}

function pickKernel(kernel: "auto" | "wasm" | "ts"): MulRows {
  const ts: MulRows = (coefs, inputs, outputs) =>
    mulRowsTs(coefs, inputs, outputs, { start: 0, end: inputs[0].length });
  if (kernel === "ts") return ts;
  if (kernel === "wasm") {
    if (!wasmAvailable) throw new Error("WebAssembly SIMD is not available");
    return mulRowsWasm;
  }
  if (kernel !== "auto") throw new RangeError(`Unknown kernel: ${kernel}`);
  if (!wasmAvailable) return ts;
  return (coefs, inputs, outputs) =>
    inputs[0].length < STEP ? ts(coefs, inputs, outputs) : mulRowsWasm(coefs, inputs, outputs);
}

/** Checks that all shards have one length, and returns it. */
function sameLength(shards: Uint8Array[]): number {
  const size = shards[0].length;
  for (const shard of shards) {
    if (!(shard instanceof Uint8Array)) throw new TypeError("Shards must be Uint8Arrays");
    if (shard.length !== size) throw new RangeError("All shards must have the same length");
  }
  return size;
}

/**
 * Splits `buf` into k shards of ceil(length / k) bytes, the last ones zero-padded. The shards are
 * views of one new buffer (a copy: later changes to `buf` do not show).
 */
export function split(buf: Uint8Array, k: number): Uint8Array[] {
  if (!Number.isInteger(k) || k < 1) throw new RangeError("Shard count must be a positive integer");
  const size = Math.ceil(buf.length / k);
  const all = new Uint8Array(size * k);
  all.set(buf);
  return Array.from({ length: k }, (_, i) => all.subarray(i * size, (i + 1) * size));
}

/** The inverse of split: the first `originalLength` bytes of the k data shards, concatenated. */
export function join(shards: (Uint8Array | null)[], k: number, originalLength: number): Uint8Array {
  if (shards.length < k) {
    throw new RangeError(`Expected at least ${k} shards, got ${shards.length}`);
  }
  const data = shards.slice(0, k);
  if (data.some((shard) => shard === null)) throw new Error("A data shard is missing");
  const size = sameLength(data as Uint8Array[]);
  if (!Number.isInteger(originalLength) || originalLength < 0 || originalLength > size * k) {
    throw new RangeError(
      `Original length ${originalLength} does not fit in ${k} shards of ${size}`,
    );
  }
  const out = new Uint8Array(originalLength);
  for (let i = 0, at = 0; at < originalLength; i++, at += size) {
    out.set((data[i] as Uint8Array).subarray(0, Math.min(size, originalLength - at)), at);
  }
  return out;
}
