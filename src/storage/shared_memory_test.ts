import { assert, assertBytesEqual } from "../../tests/integration/assert.ts";
import { copyInto } from "./shared_memory.ts";

function random(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, i + 65536));
  return out;
}

Deno.test("copyInto: the same bytes as set, for every skew, size and kind of memory", () => {
  const data = random(300_000);
  for (const targetShared of [true, false]) {
    for (const sourceShared of [true, false]) {
      for (const size of [0, 1, 511, 512, 4093, 65536, 65537, 200_003]) {
        for (const targetOffset of [0, 3, 8]) {
          for (const sourceOffset of [0, 1, 5, 8]) {
            for (const at of [0, 1, 7, 4096]) {
              const sourceBuffer = sourceShared
                ? new SharedArrayBuffer(size + sourceOffset)
                : new ArrayBuffer(size + sourceOffset);
              const source = new Uint8Array(sourceBuffer, sourceOffset, size);
              source.set(data.subarray(0, size));
              const length = size + at + 11;
              const make = () => {
                const b = targetShared
                  ? new SharedArrayBuffer(length + targetOffset)
                  : new ArrayBuffer(length + targetOffset);
                const view = new Uint8Array(b, targetOffset, length);
                view.fill(0xa5);
                return view;
              };
              const expected = make();
              expected.set(source, at);
              const actual = make();
              copyInto(actual, source, at);
              assertBytesEqual(
                actual,
                expected,
                `target shared ${targetShared}, source shared ${sourceShared}, size ${size}, offsets ${targetOffset}/${sourceOffset}, at ${at}`,
              );
              // Bytes around the target view are untouched.
              assert(new Uint8Array(actual.buffer, 0, targetOffset).every((b) => b === 0));
            }
          }
        }
      }
    }
  }
});

Deno.test("copyInto: a copy past the end throws as set does, and writes nothing", () => {
  const target = new Uint8Array(new SharedArrayBuffer(4096 + 1), 1);
  const source = new Uint8Array(new ArrayBuffer(2048 + 3), 3);
  source.fill(7);
  for (const at of [3000, -1]) {
    let thrown: unknown;
    try {
      copyInto(target, source, at);
    } catch (err) {
      thrown = err;
    }
    assert(thrown instanceof RangeError, `at ${at}: ${thrown}`);
  }
  assert(target.every((b) => b === 0));
});

Deno.test("copyInto: overlapping views of one shared buffer copy as set does", () => {
  const buffer = new SharedArrayBuffer(200_000);
  const whole = new Uint8Array(buffer);
  whole.set(random(200_000));
  const expected = whole.slice();
  expected.set(expected.subarray(1, 150_001), 3);
  copyInto(whole, whole.subarray(1, 150_001), 3);
  assertBytesEqual(whole, expected);
});
