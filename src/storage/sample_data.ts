// Deterministic sample data for the storage tests and benchmarks: text that compresses the way
// logs and documents do, and random bytes that do not compress at all.

/** mulberry32: a small seeded generator of 32-bit integers, so a failure can be replayed. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

const WORDS = (
  "object bucket storage chunk server request response header policy version " +
  "metadata upload download region client error status encryption compression key " +
  "the a of to and in is for on with that by from at as be this are or"
).split(" ");

/** English-like text of `size` bytes from `words` (a fixed vocabulary by default). */
export function sampleText(size: number, seed = 1, words = WORDS): Uint8Array {
  const next = mulberry32(seed);
  const parts: string[] = [];
  let length = 0;
  while (length < size) {
    const r = next();
    const word = words[r % words.length] + ((r >>> 24) < 16 ? ".\n" : (r >>> 24) < 40 ? ", " : " ");
    parts.push(word);
    length += word.length;
  }
  return new TextEncoder().encode(parts.join("")).subarray(0, size);
}

/** Random bytes (getRandomValues fills at most 64 KiB a call). */
export function randomBytes(size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i += 65536) crypto.getRandomValues(out.subarray(i, i + 65536));
  return out;
}
