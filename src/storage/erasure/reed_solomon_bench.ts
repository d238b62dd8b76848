// deno bench src/storage/erasure/reed_solomon_bench.ts
// Each iteration handles one 4 MiB chunk of data: MB/s of data = 4.194 / (avg time in ms) * 1000.
import { ReedSolomon, split } from "./mod.ts";
import { wasmAvailable } from "./kernel_wasm.ts";

const CHUNK = 4 * 1024 * 1024;

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let at = 0; at < n; at += 65536) crypto.getRandomValues(out.subarray(at, at + 65536));
  return out;
}

const kernels = wasmAvailable ? ["ts", "wasm"] as const : ["ts"] as const;

for (const [k, m] of [[4, 2], [8, 4]]) {
  const data = split(randomBytes(CHUNK), k);
  const parity = Array.from({ length: m }, () => new Uint8Array(data[0].length));
  const shards = [...data, ...parity];
  new ReedSolomon(k, m).encode(data, parity);
  for (const kernel of kernels) {
    const rs = new ReedSolomon(k, m, { kernel });
    Deno.bench({
      name: `encode ${k}+${m}, 4 MiB, ${kernel}`,
      group: `encode ${k}+${m}`,
      baseline: kernel === "ts",
      fn: () => rs.encode(data, parity),
    });
    Deno.bench({
      name: `reconstruct ${k}+${m}, 4 MiB, 2 data shards lost, ${kernel}`,
      group: `reconstruct ${k}+${m}`,
      baseline: kernel === "ts",
      fn: () => {
        rs.reconstruct([null, null, ...shards.slice(2)]);
      },
    });
  }
}
