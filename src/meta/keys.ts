// Key-order helpers. Keys sort by their UTF-8 bytes, which is code point order.

/** Compares two strings by code point (equal to UTF-8 byte order). */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

/**
 * The smallest string greater than every string that starts with `prefix`, or undefined when
 * no such string exists. Used to skip over a whole common prefix in one index seek.
 */
export function prefixSuccessor(prefix: string): string | undefined {
  const points = Array.from(prefix, (c) => c.codePointAt(0)!);
  while (points.length > 0) {
    const last = points.pop()!;
    if (last < 0x10ffff) {
      points.push(last + 1 === 0xd800 ? 0xe000 : last + 1);
      return String.fromCodePoint(...points);
    }
  }
  return undefined;
}
