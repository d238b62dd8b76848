import { assertBytesEqual } from "../../../tests/integration/assert.ts";
import { mulRowsTs } from "./kernel_ts.ts";
import {
  createWasmKernel,
  MAX_INPUTS,
  MAX_OUTPUTS,
  type MulRowsFn,
  mulRowsWasm,
  wasmAvailable,
} from "./kernel_wasm.ts";
import { ReedSolomon } from "./reed_solomon.ts";

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let at = 0; at < n; at += 65536) crypto.getRandomValues(out.subarray(at, at + 65536));
  return out;
}

/** A coefficient matrix with plenty of the special values 0 and 1. */
function randomCoefs(rows: number, cols: number) {
  return Array.from(
    { length: rows },
    () => randomBytes(cols).map((c) => c < 32 ? 0 : c < 64 ? 1 : c),
  );
}

function checkAgainstTs(kernel: MulRowsFn): void {
  const sizes = [0, 1, 15, 16, 17, 63, 64, 127, 128, 129, 1000, 32768, 32769, 65537, 200_003];
  for (const len of sizes) {
    for (const [nIn, nOut] of [[1, 1], [4, 2], [3, 5], [MAX_INPUTS, MAX_OUTPUTS]]) {
      const coefs = randomCoefs(nOut, nIn);
      const buf = randomBytes(nIn * len + 7);
      // Shards at odd offsets inside one buffer, as split() and file reads give them.
      const inputs = Array.from(
        { length: nIn },
        (_, j) => buf.subarray(7 + j * len, 7 + (j + 1) * len),
      );
      const expected = Array.from({ length: nOut }, () => randomBytes(len));
      const actual = Array.from({ length: nOut }, () => randomBytes(len));
      mulRowsTs(coefs, inputs, expected, { start: 0, end: len });
      kernel(coefs, inputs, actual);
      actual.forEach((a, r) =>
        assertBytesEqual(a, expected[r], `len ${len}, ${nIn}x${nOut}, row ${r}`)
      );
    }
  }
}

Deno.test({
  name: "kernels: WebAssembly and TypeScript agree on random inputs",
  ignore: !wasmAvailable,
  fn: () => checkAgainstTs(mulRowsWasm),
});

Deno.test({
  name: "kernels: the plain-swizzle variant agrees too",
  ignore: createWasmKernel("plain") === null,
  fn: () => checkAgainstTs(createWasmKernel("plain") as MulRowsFn),
});

Deno.test({
  name: "kernels: both give the same parity through ReedSolomon",
  ignore: !wasmAvailable,
  fn() {
    for (const [k, m] of [[4, 2], [10, 4], [32, 16], [1, 3]]) {
      const ts = new ReedSolomon(k, m, { kernel: "ts" });
      const wasm = new ReedSolomon(k, m, { kernel: "wasm" });
      for (const len of [17, 4096, 100_001]) {
        const data = Array.from({ length: k }, () => randomBytes(len));
        const p1 = Array.from({ length: m }, () => new Uint8Array(len));
        const p2 = Array.from({ length: m }, () => new Uint8Array(len));
        ts.encode(data, p1);
        wasm.encode(data, p2);
        p2.forEach((p, r) => assertBytesEqual(p, p1[r], `${k}+${m} len ${len} parity ${r}`));
      }
    }
  },
});
