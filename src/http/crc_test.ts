// The CRCs against their catalogue check values, and the combination of part CRCs.
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import {
  crc32,
  CRC32_SHAPE,
  crc32c,
  CRC32C_SHAPE,
  crc32Combiner,
  crc64nvme,
  CRC64NVME_SHAPE,
  crcCombine,
} from "./crc.ts";

const NINE = new TextEncoder().encode("123456789");

function random(size: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(size));
}

Deno.test('crc: catalogue check values of "123456789"', () => {
  assertEquals(crc32(NINE).toString(16), "cbf43926");
  assertEquals(crc32c(NINE).toString(16), "e3069283");
  assertEquals(crc64nvme(NINE).toString(16), "ae8b14860a799888");
  assert(crc64nvme(new Uint8Array(0)) === 0n, "empty crc64nvme");
  assertEquals(crc32c(new Uint8Array(0)), 0);
});

Deno.test("crc: continuing over split input gives the CRC of the whole", () => {
  const data = random(10_007);
  for (const cut of [0, 1, 7, 8, 9, 4096, 10_006, 10_007]) {
    const [a, b] = [data.subarray(0, cut), data.subarray(cut)];
    assertEquals(crc32c(b, crc32c(a)), crc32c(data), `crc32c cut ${cut}`);
    assert(crc64nvme(b, crc64nvme(a)) === crc64nvme(data), `crc64nvme cut ${cut}`);
  }
});

Deno.test("crc: combining part CRCs gives the CRC of the concatenation", () => {
  const sizes = [1, 0, 5, 8, 1000, 65535, 3];
  const parts = sizes.map(random);
  const whole = new Uint8Array(sizes.reduce((a, b) => a + b, 0));
  parts.reduce((at, p) => (whole.set(p, at), at + p.byteLength), 0);
  const shapes = [
    { shape: CRC32_SHAPE, fn: (d: Uint8Array) => BigInt(crc32(d)) },
    { shape: CRC32C_SHAPE, fn: (d: Uint8Array) => BigInt(crc32c(d)) },
    { shape: CRC64NVME_SHAPE, fn: (d: Uint8Array) => crc64nvme(d) },
  ];
  for (const { shape, fn } of shapes) {
    let combined = fn(parts[0]);
    for (const p of parts.slice(1)) combined = crcCombine(shape, combined, fn(p), p.byteLength);
    assert(combined === fn(whole), `width ${shape.width}`);
  }
});

Deno.test("crc: combining across a large (sparse) length stays exact", () => {
  // crc(A + 1 MiB of zeros) from crc(A), crc(zeros) and the length: checks the shift operator
  // on a length with many bits set.
  const a = random(100);
  const zeros = new Uint8Array(1_048_575);
  const whole = new Uint8Array(a.byteLength + zeros.byteLength);
  whole.set(a);
  const got = crcCombine(CRC64NVME_SHAPE, crc64nvme(a), crc64nvme(zeros), zeros.byteLength);
  assert(got === crc64nvme(whole), "crc64nvme over 1 MiB");
});

Deno.test("crc: the CRC-32 combiner for a fixed length equals crcCombine and the concatenation", () => {
  for (const length of [1, 512, 16384, 100_000]) {
    const combine = crc32Combiner(length);
    const b = new Uint8Array(length).map((_, i) => (i * 131 + 7) & 0xff);
    for (const a of [new Uint8Array(0), new TextEncoder().encode("123456789")]) {
      const [crcA, crcB] = [crc32(a), crc32(b)];
      const joined = new Uint8Array(a.length + b.length);
      joined.set(a);
      joined.set(b, a.length);
      assertEquals(combine(crcA, crcB), crc32(joined), `${a.length} + ${length} bytes`);
      const general = crcCombine(CRC32_SHAPE, BigInt(crcA), BigInt(crcB), length);
      assertEquals(combine(crcA, crcB), Number(general), "as crcCombine");
    }
  }
});
