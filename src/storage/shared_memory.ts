// Shared memory (SharedArrayBuffer views): telling them apart, and copying into (or out of) them
// at full speed. V8 copies a SharedArrayBuffer's bytes with "relaxed" atomic loads and stores: word
// by word when source and destination sit at the same offset modulo 8, otherwise byte by byte, at
// a quarter of memcpy's speed (~3.5 against ~15 GB/s here). An upload's body arrives at arbitrary
// offsets, so most of its bytes took the slow way into their chunk buffer. A skewed copy now goes
// through a small ordinary buffer placed so that its second leg is aligned: two fast copies cost
// less than one slow one.

const STAGE_BYTES = 64 * 1024;
/** Below this a plain copy is as fast (the two legs' call overhead outweighs the gain). */
const STAGE_MIN_BYTES = 512;
const WORD = 8;

// One per thread, made on the first skewed copy: the copy is synchronous, so nobody else uses it
// meanwhile.
let stage: Uint8Array | undefined;

/** The view itself when its bytes are in shared memory. */
export function sharedView(bytes: Uint8Array): Uint8Array<SharedArrayBuffer> | undefined {
  return typeof SharedArrayBuffer === "function" && bytes.buffer instanceof SharedArrayBuffer
    ? bytes as Uint8Array<SharedArrayBuffer>
    : undefined;
}

/** `target.set(source, at)`, with the same result, faster when either side is shared memory. */
export function copyInto(target: Uint8Array, source: Uint8Array, at: number): void {
  const targetStart = target.byteOffset + at;
  if (
    source.byteLength < STAGE_MIN_BYTES || ((targetStart - source.byteOffset) & (WORD - 1)) === 0 ||
    source.buffer === target.buffer || !(sharedView(target) || sharedView(source))
  ) {
    target.set(source, at);
    return;
  }
  if (at < 0 || at + source.byteLength > target.byteLength) {
    throw new RangeError("offset is out of bounds");
  }
  // The stage's bytes start at the target's offset modulo 8: the second leg copies aligned.
  const lead = targetStart & (WORD - 1);
  stage ??= new Uint8Array(STAGE_BYTES + WORD);
  for (let from = 0; from < source.byteLength; from += STAGE_BYTES) {
    const piece = source.subarray(from, from + STAGE_BYTES);
    const staged = stage.subarray(lead, lead + piece.byteLength);
    staged.set(piece);
    target.set(staged, at + from);
  }
}
