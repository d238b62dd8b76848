// Building blocks of the chunk path on one 4 MiB chunk; MB/s = 4.19 MB / time per iteration.
// Run: deno bench -A src/storage/codec_bench.ts (one core each: every call here is serial).
import { createCipheriv, createDecipheriv, createHash } from "node:crypto";
import { constants, zstdCompressSync, zstdDecompressSync } from "node:zlib";
import { decodeChunk, encodeChunk, importAesKey } from "./codec.ts";
import { randomBytes, sampleText } from "./sample_data.ts";

const CHUNK = 4 * 1024 * 1024;
const WORDS = (
  "object bucket storage chunk server request response header policy version metadata " +
  "upload download region client error status encryption compression key the a of to and " +
  "in is for on with that by from at as be this are or 2024-05-01T12:00:00Z GET PUT 200 404"
).split(" ");

const TEXT = sampleText(CHUNK, 7, WORDS);
const RANDOM = randomBytes(CHUNK);
/** Log-like data: one 16 KiB block of text over and over. */
const REPETITIVE = new Uint8Array(CHUNK);
for (let i = 0; i < CHUNK; i += 16384) REPETITIVE.set(TEXT.subarray(0, 16384), i);
const RAW_KEY = crypto.getRandomValues(new Uint8Array(32));
const KEY = await importAesKey(RAW_KEY);
const IV = crypto.getRandomValues(new Uint8Array(12));
const AAD = new TextEncoder().encode("bucket/key@version#0");

const zstdLevel = (level: number) => ({ params: { [constants.ZSTD_c_compressionLevel]: level } });
const TEXT_ZSTD = zstdCompressSync(TEXT, zstdLevel(1));
const RANDOM_ZSTD = zstdCompressSync(RANDOM, zstdLevel(1));
const REPETITIVE_ZSTD = zstdCompressSync(REPETITIVE, zstdLevel(1));
const SEALED = new Uint8Array(
  await crypto.subtle.encrypt({ name: "AES-GCM", iv: IV }, KEY, RANDOM as Uint8Array<ArrayBuffer>),
);

function nodeEncrypt(data: Uint8Array): { out: Uint8Array; tag: Uint8Array } {
  const c = createCipheriv("aes-256-gcm", RAW_KEY, IV);
  const out = c.update(data);
  c.final();
  return { out, tag: c.getAuthTag() };
}
const NODE_SEALED = nodeEncrypt(RANDOM);

Deno.bench("md5 (node:crypto)", { group: "hash" }, () => {
  createHash("md5").update(RANDOM).digest();
});
Deno.bench("sha256 (node:crypto)", { group: "hash" }, () => {
  createHash("sha256").update(RANDOM).digest();
});

for (const level of [1, 3]) {
  Deno.bench(`zstd compress text, level ${level}`, { group: "zstd" }, () => {
    zstdCompressSync(TEXT, zstdLevel(level));
  });
  Deno.bench(`zstd compress repetitive, level ${level}`, { group: "zstd" }, () => {
    zstdCompressSync(REPETITIVE, zstdLevel(level));
  });
  Deno.bench(`zstd compress random, level ${level}`, { group: "zstd" }, () => {
    zstdCompressSync(RANDOM, zstdLevel(level));
  });
}
Deno.bench("zstd probe 64 KiB of random, level 1 (64 KiB!)", { group: "zstd" }, () => {
  zstdCompressSync(RANDOM.subarray(0, 65536), zstdLevel(1));
});
Deno.bench("zstd decompress text", { group: "zstd" }, () => {
  zstdDecompressSync(TEXT_ZSTD);
});
Deno.bench("zstd decompress text, one output piece", { group: "zstd" }, () => {
  zstdDecompressSync(TEXT_ZSTD, { chunkSize: CHUNK + 1024 });
});
Deno.bench("zstd decompress repetitive", { group: "zstd" }, () => {
  zstdDecompressSync(REPETITIVE_ZSTD);
});
Deno.bench("zstd decompress repetitive, one output piece", { group: "zstd" }, () => {
  zstdDecompressSync(REPETITIVE_ZSTD, { chunkSize: CHUNK + 1024 });
});
Deno.bench("zstd decompress random (stored blocks)", { group: "zstd" }, () => {
  zstdDecompressSync(RANDOM_ZSTD);
});

Deno.bench("aes-256-gcm encrypt (WebCrypto)", { group: "aes" }, async () => {
  await crypto.subtle.encrypt({ name: "AES-GCM", iv: IV }, KEY, RANDOM as Uint8Array<ArrayBuffer>);
});
Deno.bench("aes-256-gcm decrypt (WebCrypto)", { group: "aes" }, async () => {
  await crypto.subtle.decrypt({ name: "AES-GCM", iv: IV }, KEY, SEALED);
});
Deno.bench("aes-256-gcm encrypt (node:crypto)", { group: "aes" }, () => {
  nodeEncrypt(RANDOM);
});
Deno.bench("aes-256-gcm decrypt (node:crypto)", { group: "aes" }, () => {
  const d = createDecipheriv("aes-256-gcm", RAW_KEY, IV);
  d.setAuthTag(NODE_SEALED.tag);
  d.update(NODE_SEALED.out);
  d.final();
});

const SAMPLES = [["text", TEXT], ["repetitive", REPETITIVE], ["random", RANDOM]] as const;
for (const [name, data] of SAMPLES) {
  const stored = await encodeChunk(data, { compression: "auto", key: KEY, aad: AAD });
  Deno.bench(`encodeChunk auto + key, ${name}`, { group: "codec" }, async () => {
    await encodeChunk(data, { compression: "auto", key: KEY, aad: AAD });
  });
  Deno.bench(`decodeChunk auto + key, ${name}`, { group: "codec" }, async () => {
    await decodeChunk(stored.bytes, stored.form, { key: KEY, aad: AAD, size: CHUNK });
  });
}
