import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { EXP, gfDiv, gfInv, gfMul, gfPow, LOG, MUL_TABLE, NIBBLE_TABLES } from "./gf256.ts";
import { encodingMatrix, identity, invert, type Matrix, multiply, vandermonde } from "./matrix.ts";

/** Multiplication straight from the definition: carry-less product reduced by 0x11d. */
function slowMul(a: number, b: number): number {
  let product = 0;
  for (let i = 0; i < 8; i++) if (b & (1 << i)) product ^= a << i;
  for (let bit = 15; bit >= 8; bit--) if (product & (1 << bit)) product ^= 0x11d << (bit - 8);
  return product;
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

Deno.test("gf256: multiplication matches the definition for all pairs", () => {
  for (let a = 0; a < 256; a++) {
    for (let b = 0; b < 256; b++) {
      const expected = slowMul(a, b);
      if (gfMul(a, b) !== expected || MUL_TABLE[a * 256 + b] !== expected) {
        throw new Error(`${a} * ${b}: expected ${expected}, got ${gfMul(a, b)}`);
      }
    }
  }
  assertEquals(gfMul(2, 0x80), 0x1d);
  assertEquals(gfMul(3, 7), 9);
});

Deno.test("gf256: exp and log tables are inverse; 2 generates the group", () => {
  const seen = new Set<number>();
  for (let i = 0; i < 255; i++) {
    seen.add(EXP[i]);
    assertEquals(LOG[EXP[i]], i);
    assertEquals(EXP[i + 255], EXP[i]);
  }
  assertEquals(seen.size, 255);
  assert(!seen.has(0));
});

Deno.test("gf256: division and inverses", () => {
  for (let a = 1; a < 256; a++) {
    assertEquals(gfMul(a, gfInv(a)), 1, `inverse of ${a}`);
    assertEquals(gfDiv(1, a), gfInv(a));
    for (let b = 0; b < 256; b++) {
      if (gfDiv(gfMul(b, a), a) !== b) throw new Error(`(${b} * ${a}) / ${a} != ${b}`);
    }
  }
  assertEquals(gfDiv(0, 7), 0);
  assertThrows(() => gfDiv(5, 0), /zero/);
  assertThrows(() => gfInv(0), /no inverse/);
});

Deno.test("gf256: powers", () => {
  assertEquals(gfPow(0, 0), 1);
  assertEquals(gfPow(0, 3), 0);
  for (let a = 1; a < 256; a++) {
    let expected = 1;
    for (let n = 0; n < 10; n++) {
      assertEquals(gfPow(a, n), expected);
      expected = gfMul(expected, a);
    }
    assertEquals(gfPow(a, 255), 1);
  }
});

Deno.test("gf256: nibble tables give the same products as the full table", () => {
  for (let c = 0; c < 256; c++) {
    for (let x = 0; x < 256; x++) {
      const split = NIBBLE_TABLES[c * 32 + (x & 15)] ^ NIBBLE_TABLES[c * 32 + 16 + (x >> 4)];
      if (split !== MUL_TABLE[c * 256 + x]) throw new Error(`${c} * ${x}`);
    }
  }
});

function randomMatrix(n: number): Matrix {
  return Array.from({ length: n }, () => crypto.getRandomValues(new Uint8Array(n)));
}

Deno.test("matrix: inverse times matrix is the identity", () => {
  let inverted = 0;
  for (let trial = 0; trial < 200; trial++) {
    const n = 1 + (trial % 32);
    const m = randomMatrix(n);
    let inv: Matrix;
    try {
      inv = invert(m);
    } catch {
      continue; // A random matrix is singular now and then.
    }
    inverted++;
    assertEquals(multiply(m, inv).map((r) => [...r]), identity(n).map((r) => [...r]));
    assertEquals(multiply(inv, m).map((r) => [...r]), identity(n).map((r) => [...r]));
  }
  assert(inverted > 150, `only ${inverted} random matrices were invertible`);
});

Deno.test("matrix: singular matrices are rejected", () => {
  assertThrows(() => invert([Uint8Array.of(1, 2), Uint8Array.of(2, 4)]), /singular/);
  assertThrows(() => invert([Uint8Array.of(0, 0), Uint8Array.of(1, 1)]), /singular/);
  assertThrows(() => invert([Uint8Array.of(1, 2)]), /square/);
});

Deno.test("matrix: the encoding matrix is systematic and every k rows are independent", () => {
  for (const [k, m] of [[1, 1], [2, 1], [4, 2], [6, 3], [5, 5], [10, 4]]) {
    const e = encodingMatrix(k, m);
    assertEquals(e.slice(0, k).map((r) => [...r]), identity(k).map((r) => [...r]));
    const pick = (first: number, chosen: number[]): void => {
      if (chosen.length === k) {
        invert(chosen.map((i) => e[i])); // Throws if singular.
        return;
      }
      for (let i = first; i < k + m; i++) pick(i + 1, [...chosen, i]);
    };
    pick(0, []);
  }
  assertEquals(vandermonde(3, 3).map((r) => [...r]), [[1, 0, 0], [1, 1, 1], [1, 2, 4]]);
});
