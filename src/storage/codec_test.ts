import { assert, assertBytesEqual, assertEquals } from "../../tests/integration/assert.ts";
import {
  ChunkIntegrityError,
  compressChunk,
  type CompressionMode,
  compressionPays,
  decodeChunk,
  decodeSegment,
  encodeChunk,
  importAesKey,
  releaseOwned,
  segmentBounds,
  segmentCount,
  type StoredForm,
} from "./codec.ts";
import { randomBytes, sampleText } from "./sample_data.ts";

const MiB = 1024 * 1024;
async function rejectsIntegrity(fn: () => Promise<unknown>, what: string): Promise<void> {
  try {
    await fn();
  } catch (err) {
    assert(err instanceof ChunkIntegrityError, `${what}: expected ChunkIntegrityError, ${err}`);
    return;
  }
  throw new Error(`${what}: decoding succeeded`);
}

const KEY = await importAesKey(crypto.getRandomValues(new Uint8Array(32)));
const OTHER_KEY = await importAesKey(crypto.getRandomValues(new Uint8Array(32)));
const AAD = new TextEncoder().encode("bucket/object@v1#0");

const SAMPLES: Array<{ name: string; data: Uint8Array; compressible: boolean }> = [
  { name: "0 bytes", data: new Uint8Array(0), compressible: false },
  { name: "1 byte", data: sampleText(1), compressible: false },
  { name: "4095 bytes of text", data: sampleText(4095), compressible: true },
  { name: "4096 bytes of text", data: sampleText(4096), compressible: true },
  { name: "1 MiB of text", data: sampleText(MiB), compressible: true },
  { name: "1 MiB random", data: randomBytes(MiB), compressible: false },
];

function expectedCompression(mode: CompressionMode, size: number, compressible: boolean) {
  if (mode === "off" || !compressible) return "none";
  if (mode === "auto" && size < 4096) return "none";
  return "zstd";
}

for (const mode of ["auto", "on", "off"] as const) {
  for (const encrypted of [false, true]) {
    Deno.test(`codec round trip: compression ${mode}, encrypted ${encrypted}`, async () => {
      for (const sample of SAMPLES) {
        const key = encrypted ? KEY : undefined;
        const { bytes, form } = await encodeChunk(sample.data, {
          compression: mode,
          key,
          aad: AAD,
        });
        const want = expectedCompression(mode, sample.data.byteLength, sample.compressible);
        assertEquals(form, { compression: want, encrypted }, sample.name);
        if (encrypted) assertEquals(bytes.byteLength >= 28, true, sample.name);
        const back = await decodeChunk(bytes, form, { key, aad: AAD });
        assertBytesEqual(back, sample.data, `${mode}/${encrypted}/${sample.name}`);
        const size = sample.data.byteLength;
        const sized = await decodeChunk(bytes, form, { key, aad: AAD, size });
        assertBytesEqual(sized, sample.data, `${mode}/${encrypted}/${sample.name} with size`);
      }
    });
  }
}

Deno.test("codec auto: incompressible data stays uncompressed", async () => {
  for (const size of [4096, 65536, 4 * MiB]) {
    const data = randomBytes(size);
    const { bytes, form } = await encodeChunk(data, { compression: "auto" });
    assertEquals(form.compression, "none");
    assertBytesEqual(bytes, data);
  }
});

Deno.test("codec auto: the first 64 KiB decide whether a chunk is tried", async () => {
  const data = new Uint8Array(MiB);
  data.set(randomBytes(65536), 0);
  data.set(sampleText(MiB - 65536), 65536);
  const { form } = await encodeChunk(data, { compression: "auto" });
  assertEquals(form.compression, "none");
  const on = await encodeChunk(data, { compression: "on" });
  assertEquals(on.form.compression, "zstd");
  assertBytesEqual(await decodeChunk(on.bytes, on.form, {}), data);
});

Deno.test("codec: text compresses well, at level 1 and 3", async () => {
  const data = sampleText(MiB);
  for (const level of [1, 3]) {
    const { bytes, form } = await encodeChunk(data, { compression: "auto", level });
    assertEquals(form, { compression: "zstd", encrypted: false });
    assert(bytes.byteLength < data.byteLength / 2, `level ${level}: ${bytes.byteLength}`);
    assertBytesEqual(await decodeChunk(bytes, form, {}), data);
  }
});

Deno.test("codec: encrypting the same chunk twice gives different bytes", async () => {
  const data = sampleText(10000);
  const a = await encodeChunk(data, { compression: "auto", key: KEY, aad: AAD });
  const b = await encodeChunk(data, { compression: "auto", key: KEY, aad: AAD });
  assert(a.bytes.some((v, i) => v !== b.bytes[i]), "nonce reused");
});

Deno.test("codec: every flipped bit of a small encrypted chunk is detected", async () => {
  for (const mode of ["off", "on"] as const) {
    const data = sampleText(200);
    const { bytes, form } = await encodeChunk(data, { compression: mode, key: KEY, aad: AAD });
    for (let bit = 0; bit < bytes.byteLength * 8; bit++) {
      const bad = bytes.slice();
      bad[bit >> 3] ^= 1 << (bit & 7);
      await rejectsIntegrity(() => decodeChunk(bad, form, { key: KEY, aad: AAD }), `bit ${bit}`);
    }
  }
});

Deno.test("codec: flipped bits in large encrypted chunks are detected", async () => {
  for (const data of [sampleText(MiB), randomBytes(MiB)]) {
    const { bytes, form } = await encodeChunk(data, { compression: "auto", key: KEY, aad: AAD });
    const positions = [0, 11, 12, 13, bytes.byteLength >> 1, bytes.byteLength - 17];
    positions.push(bytes.byteLength - 16, bytes.byteLength - 1);
    for (const at of positions) {
      const bad = bytes.slice();
      bad[at] ^= 0x80;
      await rejectsIntegrity(() => decodeChunk(bad, form, { key: KEY, aad: AAD }), `byte ${at}`);
    }
  }
});

Deno.test("codec: wrong key, aad, form or truncation are detected", async () => {
  const data = sampleText(MiB);
  const { bytes, form } = await encodeChunk(data, { compression: "auto", key: KEY, aad: AAD });
  assertEquals(form.compression, "zstd");
  const otherAad = new TextEncoder().encode("bucket/object@v1#1");
  const flipped: StoredForm = { compression: "none", encrypted: true };
  const cases: Array<[string, () => Promise<unknown>]> = [
    ["wrong key", () => decodeChunk(bytes, form, { key: OTHER_KEY, aad: AAD })],
    ["wrong aad", () => decodeChunk(bytes, form, { key: KEY, aad: otherAad })],
    ["missing aad", () => decodeChunk(bytes, form, { key: KEY })],
    ["compression flag", () => decodeChunk(bytes, flipped, { key: KEY, aad: AAD })],
    ["truncated tag", () => decodeChunk(bytes.subarray(0, -1), form, { key: KEY, aad: AAD })],
    ["only a nonce", () => decodeChunk(bytes.subarray(0, 12), form, { key: KEY, aad: AAD })],
    ["empty", () => decodeChunk(new Uint8Array(0), form, { key: KEY, aad: AAD })],
  ];
  for (const [what, fn] of cases) await rejectsIntegrity(fn, what);
});

Deno.test("codec: a corrupted unencrypted zstd chunk does not decode", async () => {
  const data = sampleText(MiB);
  const { bytes, form } = await encodeChunk(data, { compression: "on" });
  assertEquals(form, { compression: "zstd", encrypted: false });
  for (const at of [bytes.byteLength >> 1, bytes.byteLength - 2]) {
    const bad = bytes.slice();
    bad[at] ^= 0x55;
    await rejectsIntegrity(() => decodeChunk(bad, form, {}), `byte ${at}`);
  }
});

Deno.test("codec: an encrypted chunk needs a key; keys must be 32 bytes", async () => {
  const { bytes, form } = await encodeChunk(sampleText(100), { compression: "off", key: KEY });
  let failed = false;
  await decodeChunk(bytes, form, {}).catch(() => failed = true);
  assert(failed, "decoded without a key");
  failed = false;
  await importAesKey(new Uint8Array(16)).catch(() => failed = true);
  assert(failed, "accepted a 16-byte key");
});

Deno.test("codec: subarray inputs are encoded from their own bytes only", async () => {
  const backing = sampleText(3 * MiB);
  const middle = backing.subarray(MiB, 2 * MiB);
  for (const key of [undefined, KEY]) {
    const { bytes, form } = await encodeChunk(middle, { compression: "auto", key, aad: AAD });
    assertBytesEqual(await decodeChunk(bytes, form, { key, aad: AAD }), middle);
  }
});

Deno.test("codec: a chunk that decodes to another size than expected is refused", async () => {
  for (const mode of ["off", "on"] as const) {
    const data = sampleText(100000);
    const { bytes, form } = await encodeChunk(data, { compression: mode });
    for (const size of [99999, 100001, 0]) {
      await rejectsIntegrity(() => decodeChunk(bytes, form, { size }), `${mode} size ${size}`);
    }
  }
});

// ---- segmented layout (what the chunk store writes for compressed or encrypted chunks) ----

const SEG = 64 * 1024;

Deno.test("codec segments: round trips, whole and one segment at a time", async () => {
  const samples = [...SAMPLES, { name: "3 segments + 5 of text", data: sampleText(3 * SEG + 5) }];
  for (const mode of ["auto", "on", "off"] as const) {
    for (const key of [undefined, KEY]) {
      for (const sample of samples) {
        const what = `${mode}/${!!key}/${sample.name}`;
        const { bytes, form } = await encodeChunk(sample.data, {
          compression: mode,
          key,
          aad: AAD,
          segmentSize: SEG,
        });
        const size = sample.data.byteLength;
        if (form.compression === "none" && !key) {
          assertEquals(form.segmentSize, undefined, `${what}: stored as it is`);
          assertBytesEqual(bytes, sample.data, what);
          continue;
        }
        assertEquals(form.segmentSize, SEG, what);
        assertBytesEqual(await decodeChunk(bytes, form, { key, aad: AAD }), sample.data, what);
        assertBytesEqual(
          await decodeChunk(bytes, form, { key, aad: AAD, size }),
          sample.data,
          what,
        );
        const bounds = segmentBounds(bytes, bytes.byteLength);
        const count = segmentCount(size, SEG);
        assertEquals(bounds.length, count + 1, what);
        for (let index = 0; index < count; index++) {
          const body = bytes.subarray(bounds[index], bounds[index + 1]);
          const piece = await decodeSegment(body, form, { index, count }, {
            key,
            aad: AAD,
            size: Math.min(SEG, size - index * SEG),
          });
          assertBytesEqual(piece, sample.data.subarray(index * SEG, (index + 1) * SEG), what);
        }
      }
    }
  }
});

Deno.test("codec segments: text compresses nearly as well as in one piece", async () => {
  const data = sampleText(4 * MiB);
  const whole = await encodeChunk(data, { compression: "auto" });
  const segmented = await encodeChunk(data, { compression: "auto", segmentSize: SEG });
  assert(
    segmented.bytes.byteLength < whole.bytes.byteLength * 1.5,
    `${segmented.bytes.byteLength} vs ${whole.bytes.byteLength} in one piece`,
  );
});

Deno.test("codec segments: every flipped bit of a small sealed chunk is detected", async () => {
  for (const mode of ["off", "on"] as const) {
    const data = sampleText(200);
    const { bytes, form } = await encodeChunk(data, {
      compression: mode,
      key: KEY,
      aad: AAD,
      segmentSize: SEG,
    });
    for (let bit = 0; bit < bytes.byteLength * 8; bit++) {
      const bad = bytes.slice();
      bad[bit >> 3] ^= 1 << (bit & 7);
      await rejectsIntegrity(() => decodeChunk(bad, form, { key: KEY, aad: AAD }), `bit ${bit}`);
    }
  }
});

Deno.test("codec segments: reordered, dropped or damaged segments are detected", async () => {
  const data = randomBytes(3 * SEG);
  for (const mode of ["off", "on"] as const) {
    const { bytes, form } = await encodeChunk(data, {
      compression: mode,
      key: KEY,
      aad: AAD,
      segmentSize: SEG,
    });
    const b = segmentBounds(bytes, bytes.byteLength);
    // Random data: all three sealed bodies have the same length, so a swap keeps the table valid.
    const swapped = bytes.slice();
    swapped.set(bytes.subarray(b[1], b[2]), b[0]);
    swapped.set(bytes.subarray(b[0], b[1]), b[1]);
    const dropped = bytes.slice(0, b[2]);
    new DataView(dropped.buffer).setUint32(0, 2);
    const cases: Array<[string, () => Promise<unknown>]> = [
      ["swapped", () => decodeChunk(swapped, form, { key: KEY, aad: AAD })],
      ["dropped last", () => decodeChunk(dropped, form, { key: KEY, aad: AAD })],
      ["wrong size", () => decodeChunk(bytes, form, { key: KEY, aad: AAD, size: 2 * SEG })],
      ["wrong aad", () => decodeChunk(bytes, form, { key: KEY, aad: new Uint8Array(1) })],
      ["one piece", () => decodeChunk(bytes, { ...form, segmentSize: 0 }, { key: KEY, aad: AAD })],
      [
        "segment as another index",
        () =>
          decodeSegment(bytes.subarray(b[1], b[2]), form, { index: 0, count: 3 }, {
            key: KEY,
            aad: AAD,
          }),
      ],
    ];
    for (const [what, fn] of cases) await rejectsIntegrity(fn, `${mode}: ${what}`);
  }
  const zstd = await encodeChunk(sampleText(3 * SEG), { compression: "on", segmentSize: SEG });
  const b = segmentBounds(zstd.bytes, zstd.bytes.byteLength);
  const bad = zstd.bytes.slice();
  bad[b[1] + 20] ^= 0x55;
  await rejectsIntegrity(() => decodeChunk(bad, zstd.form, {}), "damaged zstd segment");
});

Deno.test("releaseOwned frees only large bytes that start their own buffer", () => {
  const own = new Uint8Array(128 * 1024);
  releaseOwned(own);
  assertEquals([own.buffer.byteLength, own.byteLength], [0, 0], "detached: its memory is gone");
  // Left alone: small (may be a slice of node's Buffer pool), a view not at its buffer's start,
  // shared memory.
  const small = new Uint8Array(4096);
  const inner = new Uint8Array(new ArrayBuffer(256 * 1024), 1024, 128 * 1024);
  const shared = new Uint8Array(new SharedArrayBuffer(128 * 1024));
  for (const bytes of [small, inner, shared]) {
    const length = bytes.byteLength;
    releaseOwned(bytes);
    assertEquals(bytes.byteLength, length);
  }
  releaseOwned(own); // already released: nothing happens
});

Deno.test("compression gives back the buffers it does not answer with", async () => {
  // Measured on the isolate's external memory (the ArrayBuffers it holds): left to the
  // collector, each 4 MiB chunk of text left 64 output buffers of 64 KiB behind, and a CPU
  // worker piled up ~60 MiB of them before it collected.
  const external = () => Deno.memoryUsage().external;
  const text = sampleText(4 * MiB);
  const noise = randomBytes(4 * MiB);
  const kept: Uint8Array[] = [];
  const before = external();
  for (let i = 0; i < 8; i++) {
    const packed = await compressChunk(text, "auto", undefined, 64 * 1024);
    assert(packed !== undefined && packed.byteLength < text.byteLength / 2);
    kept.push(packed);
    assert(await compressionPays(text), "text is worth compressing");
    assert(!(await compressionPays(noise)), "random bytes are not");
    assertEquals(await compressChunk(noise, "on", undefined, 64 * 1024), undefined);
  }
  const left = external() - before - kept.reduce((n, p) => n + p.byteLength, 0);
  assert(left < 2 * MiB, `${(left / MiB).toFixed(1)} MiB of garbage left behind`);
  const round = await decodeChunk(kept[7], {
    compression: "zstd",
    encrypted: false,
    segmentSize: 64 * 1024,
  }, {
    size: text.byteLength,
  });
  assertBytesEqual(round, text);
});
