import { assert, assertBytesEqual, assertEquals } from "../../../tests/integration/assert.ts";
import { join, ReedSolomon, split } from "./mod.ts";

const LENGTHS = [1, 15, 16, 17, 4095, 65537];

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let at = 0; at < n; at += 65536) crypto.getRandomValues(out.subarray(at, at + 65536));
  return out;
}

/** All subsets of {0..n-1} with 1..maxSize elements. */
function subsets(n: number, maxSize: number): number[][] {
  const out: number[][] = [];
  const grow = (first: number, chosen: number[]) => {
    if (chosen.length > 0) out.push(chosen);
    if (chosen.length === maxSize) return;
    for (let i = first; i < n; i++) grow(i + 1, [...chosen, i]);
  };
  grow(0, []);
  return out;
}

function assertThrows(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (err) {
    assert(pattern.test(String(err)), `Unexpected error: ${err}`);
    return;
  }
  throw new Error("Expected an error");
}

/** Splits `length` random bytes into k data shards and encodes m parity shards. */
function encoded(rs: ReedSolomon, length: number) {
  const original = randomBytes(length);
  const data = split(original, rs.dataShards);
  const parity = Array.from({ length: rs.parityShards }, () => new Uint8Array(data[0].length));
  rs.encode(data, parity);
  return { original, shards: [...data, ...parity] };
}

/** Drops `missing`, reconstructs, and checks every shard and the joined data. */
function checkReconstruct(
  rs: ReedSolomon,
  shards: Uint8Array[],
  missing: number[],
  original: Uint8Array,
) {
  const label = `${rs.dataShards}+${rs.parityShards} missing [${missing}]`;
  const partial: (Uint8Array | null)[] = shards.map((s, i) => missing.includes(i) ? null : s);
  const dataOnly = rs.reconstructData([...partial]);
  assertEquals(dataOnly.length, rs.dataShards);
  dataOnly.forEach((s, i) => assertBytesEqual(s, shards[i], `${label}: data shard ${i}`));
  const all = rs.reconstruct(partial);
  assert(all === partial, "reconstruct fills the given array");
  all.forEach((s, i) => assertBytesEqual(s, shards[i], `${label}: shard ${i}`));
  assertBytesEqual(join(all, rs.dataShards, original.length), original, `${label}: joined`);
}

for (const [k, m] of [[4, 2], [2, 1], [6, 3], [1, 1]]) {
  Deno.test(`reed-solomon ${k}+${m}: every combination of up to ${m} missing shards`, () => {
    const rs = new ReedSolomon(k, m);
    const combos = subsets(k + m, m);
    for (const length of LENGTHS) {
      const { original, shards } = encoded(rs, length);
      for (const missing of combos) checkReconstruct(rs, shards, missing, original);
    }
  });
}

Deno.test("reed-solomon 8+4: a sample of missing-shard combinations", () => {
  const rs = new ReedSolomon(8, 4);
  const combos = subsets(12, 4);
  for (const length of LENGTHS) {
    const { original, shards } = encoded(rs, length);
    const sample = combos.filter((c) => c.length === 1 || Math.random() < 0.05);
    for (const missing of sample) checkReconstruct(rs, shards, missing, original);
  }
});

Deno.test("reed-solomon: shard lengths that are not multiples of the SIMD step", () => {
  for (const kernel of ["auto", "ts"] as const) {
    const rs = new ReedSolomon(4, 2, { kernel });
    for (const size of [0, ...LENGTHS, 127, 128, 129, 32768 + 200]) {
      const { original, shards } = encoded(rs, size * 4);
      for (const missing of subsets(6, 2)) checkReconstruct(rs, shards, missing, original);
    }
  }
});

Deno.test("reed-solomon: matches the Backblaze / klauspost 5+5 known answer", () => {
  const rs = new ReedSolomon(5, 5);
  const data = [[0, 1], [4, 5], [2, 3], [6, 7], [8, 9]].map((s) => Uint8Array.from(s));
  const parity = Array.from({ length: 5 }, () => new Uint8Array(2));
  rs.encode(data, parity);
  assertEquals(parity.map((p) => [...p]), [[12, 13], [10, 11], [14, 15], [90, 91], [94, 95]]);
});

Deno.test("reed-solomon: encode leaves the data shards unchanged", () => {
  for (const kernel of ["auto", "ts"] as const) {
    const rs = new ReedSolomon(6, 3, { kernel });
    const data = Array.from({ length: 6 }, () => randomBytes(100_003));
    const copies = data.map((d) => d.slice());
    rs.encode(data, Array.from({ length: 3 }, () => new Uint8Array(100_003)));
    data.forEach((d, i) => assertBytesEqual(d, copies[i], `data shard ${i}`));
  }
});

Deno.test("reed-solomon: a corrupt shard treated as missing gives the original back", () => {
  const rs = new ReedSolomon(4, 2);
  const { original, shards } = encoded(rs, 1_000_001);
  for (const bad of [1, 4]) {
    const damaged: (Uint8Array | null)[] = shards.map((s) => s.slice());
    (damaged[bad] as Uint8Array)[12345] ^= 0x40;
    damaged[bad] = null; // What a failed checksum leads to.
    const rebuilt = rs.reconstruct(damaged);
    rebuilt.forEach((s, i) => assertBytesEqual(s, shards[i], `shard ${i}`));
    assertBytesEqual(join(rebuilt, 4, original.length), original);
  }
});

Deno.test("reed-solomon: fewer than k shards present throws", () => {
  const rs = new ReedSolomon(4, 2);
  const { shards } = encoded(rs, 1000);
  for (const missing of subsets(6, 6).filter((c) => c.length > 2)) {
    const partial = shards.map((s, i) => missing.includes(i) ? null : s);
    assertThrows(() => rs.reconstruct(partial), /Cannot reconstruct: \d of 6 shards present/);
    assertThrows(() => rs.reconstructData(partial), /4 needed/);
  }
});

Deno.test("reed-solomon: nothing missing, no parity, and argument checks", () => {
  const rs = new ReedSolomon(3, 0);
  const data = split(randomBytes(10), 3);
  rs.encode(data, []);
  assertEquals(rs.reconstruct([...data]).length, 3);
  assertThrows(() => rs.reconstruct([data[0], null, data[2]]), /2 of 3 shards present/);
  assertThrows(() => new ReedSolomon(0, 2), /Data shards/);
  assertThrows(() => new ReedSolomon(33, 2), /Data shards/);
  assertThrows(() => new ReedSolomon(4, 17), /Parity shards/);
  assertThrows(() => new ReedSolomon(2.5, 1), /Data shards/);
  const rs42 = new ReedSolomon(4, 2);
  const four = split(randomBytes(40), 4);
  assertThrows(
    () => rs42.encode(four.slice(1), [new Uint8Array(10), new Uint8Array(10)]),
    /4 data/,
  );
  assertThrows(() => rs42.encode(four, [new Uint8Array(10)]), /2 parity/);
  assertThrows(() => rs42.encode(four, [new Uint8Array(10), new Uint8Array(9)]), /same length/);
  assertThrows(() => rs42.reconstruct([...four, null]), /Expected 6 shards/);
  assertThrows(
    () => rs42.reconstruct([...four.slice(0, 3), new Uint8Array(3), null, null]),
    /same/,
  );
});

Deno.test("split and join", () => {
  assertEquals(split(new Uint8Array(0), 3).map((s) => s.length), [0, 0, 0]);
  const shards = split(Uint8Array.of(1, 2, 3, 4, 5), 2);
  assertEquals(shards.map((s) => [...s]), [[1, 2, 3], [4, 5, 0]]);
  assertEquals([...join(shards, 2, 5)], [1, 2, 3, 4, 5]);
  assertEquals([...join([...shards, null], 2, 4)], [1, 2, 3, 4]);
  assertEquals(split(Uint8Array.of(9), 4).map((s) => [...s]), [[9], [0], [0], [0]]);
  for (const length of LENGTHS) {
    const buf = randomBytes(length);
    for (const k of [1, 3, 4, 32]) assertBytesEqual(join(split(buf, k), k, length), buf);
  }
  assertThrows(() => join(shards, 2, 7), /does not fit/);
  assertThrows(() => join([shards[0], null], 2, 3), /missing/);
  assertThrows(() => split(new Uint8Array(4), 0), /positive/);
});
