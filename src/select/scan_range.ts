// ScanRange over uncompressed input: the records that START within [start, end] are processed,
// each to its end. The object is read from `start - delimiter length` so a record beginning
// exactly at `start` is recognised by the delimiter just before it.
import { MAX_RECORD, recordTooLarge } from "./limits.ts";

/** Index of the first occurrence of `needle` in `hay` at or after `from`, or -1. */
export function indexOfBytes(hay: Uint8Array, needle: Uint8Array, from = 0): number {
  const first = needle[0];
  let i = hay.indexOf(first, from);
  while (i >= 0) {
    if (i + needle.length > hay.length) return -1;
    let k = 1;
    while (k < needle.length && hay[i + k] === needle[k]) k++;
    if (k === needle.length) return i;
    i = hay.indexOf(first, i + 1);
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/**
 * Clips `source`, which starts at object offset `base`, to the records starting in
 * [start, end] (end inclusive). With `skipFirst`, bytes up to the first delimiter belong to a
 * record that started earlier and are dropped.
 */
export async function* clipRecords(
  source: AsyncIterable<Uint8Array>,
  opts: { base: number; end: number; delimiter: Uint8Array; skipFirst: boolean },
): AsyncGenerator<Uint8Array> {
  const d = opts.delimiter;
  let skipping = opts.skipFirst;
  // Bytes held back: the tail that may begin a delimiter cut by the chunk boundary.
  let carry: Uint8Array = new Uint8Array(0);
  let offset = opts.base; // Object offset of carry[0].
  for await (const chunk of source) {
    let buf = concat(carry, chunk);
    if (skipping) {
      const at = indexOfBytes(buf, d);
      if (at < 0) {
        if (buf.length > MAX_RECORD + d.length) throw recordTooLarge();
        carry = buf;
        continue;
      }
      offset += at + d.length;
      buf = buf.subarray(at + d.length);
      skipping = false;
      // The first record starts after the range: there is nothing to process.
      if (offset > opts.end) return;
    }
    // Records start at or before `end`: the one running over `end` ends at the first delimiter
    // whose last byte is at or after `end`.
    const from = Math.max(0, opts.end - (d.length - 1) - offset);
    const at = from < buf.length ? indexOfBytes(buf, d, from) : -1;
    if (at >= 0) {
      yield buf.subarray(0, at + d.length);
      return;
    }
    const keep = Math.min(buf.length, d.length - 1);
    if (buf.length > keep) yield buf.subarray(0, buf.length - keep);
    offset += buf.length - keep;
    carry = buf.slice(buf.length - keep);
  }
  if (!skipping && carry.length > 0) yield carry;
}
