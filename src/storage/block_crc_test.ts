// The folded block check must accept exactly what the block-by-block check accepts, and name the
// same bad block.
import { assertEquals } from "../../tests/integration/assert.ts";
import { crc32 } from "../http/crc.ts";
import { badBlockIn } from "./block_crc.ts";

function tableOf(payload: Uint8Array, bs: number): DataView {
  const n = Math.ceil(payload.byteLength / bs);
  const v = new DataView(new ArrayBuffer(4 * n));
  for (let b = 0; b < n; b++) v.setUint32(4 * b, crc32(payload.subarray(b * bs, (b + 1) * bs)));
  return v;
}

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let at = 0; at < n; at += 65536) crypto.getRandomValues(out.subarray(at, at + 65536));
  return out;
}

for (const bs of [512, 16384]) {
  Deno.test(`block crc (${bs}-byte blocks): whole runs, runs from a later block, a short tail`, () => {
    const payload = randomBytes(40 * bs + 123);
    const table = tableOf(payload, bs);
    assertEquals(badBlockIn(table, 0, payload, bs), undefined);
    assertEquals(badBlockIn(table, 3, payload.subarray(3 * bs, 17 * bs), bs), undefined);
    assertEquals(badBlockIn(table, 39, payload.subarray(39 * bs), bs), undefined);
    assertEquals(badBlockIn(table, 40, payload.subarray(40 * bs), bs), undefined);
    assertEquals(badBlockIn(table, 5, payload.subarray(5 * bs, 6 * bs), bs), undefined);
  });

  Deno.test(`block crc (${bs}-byte blocks): a flipped bit or a wrong table entry names its block`, () => {
    const payload = randomBytes(40 * bs + 123);
    const table = tableOf(payload, bs);
    for (const b of [0, 1, 17, 39, 40]) {
      const at = b * bs + (b === 40 ? 100 : bs - 1);
      payload[at] ^= 0x10;
      assertEquals(badBlockIn(table, 0, payload, bs), `checksum mismatch in block ${b}`);
      payload[at] ^= 0x10;
    }
    table.setUint32(4 * 9, table.getUint32(4 * 9) ^ 1);
    assertEquals(
      badBlockIn(table, 2, payload.subarray(2 * bs, 20 * bs), bs),
      "checksum mismatch in block 9",
    );
    assertEquals(badBlockIn(table, 10, payload.subarray(10 * bs, 20 * bs), bs), undefined);
  });
}
