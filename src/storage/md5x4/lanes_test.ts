// Streams hashed together in the SIMD lanes must give exactly node:crypto's MD5, whatever the
// lengths, splits, numbers of streams and pass boundaries.
import { createHash } from "node:crypto";
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { LaneStream, Md5Lanes } from "./lanes.ts";

const lanes = Md5Lanes.create();

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let at = 0; at < n; at += 65536) crypto.getRandomValues(out.subarray(at, at + 65536));
  return out;
}

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

Deno.test("md5 lanes: available here (libcrypto and WebAssembly SIMD)", () => {
  assert(lanes !== null, "Md5Lanes.create() found libcrypto and passed its self-check");
});

Deno.test("md5 lanes: 1 to 7 streams of mixed lengths, fed in uneven pieces, match node:crypto", () => {
  assert(lanes);
  const MiB = 1024 * 1024;
  const lengths = [
    0,
    1,
    55,
    56,
    63,
    64,
    65,
    1000,
    4096 + 17,
    MiB - 1,
    MiB + 129,
    2 * MiB + 77,
    3 * MiB,
  ];
  for (let n = 1; n <= 7; n++) {
    const bodies = Array.from(
      { length: n },
      (_, i) => randomBytes(lengths[(i * 5 + n) % lengths.length]),
    );
    const streams = bodies.map(() => new LaneStream());
    const offsets = bodies.map(() => 0);
    let round = 0;
    while (offsets.some((o, i) => o < bodies[i].byteLength)) {
      const items = [];
      for (let i = 0; i < n; i++) {
        // Pieces of varying size; some streams sit a round out.
        if ((i + round) % 3 === 2) continue;
        const size = [1, 63, 64, 5000, 300_000, MiB + 3][(i + round) % 6];
        const end = Math.min(bodies[i].byteLength, offsets[i] + size);
        if (end === offsets[i]) continue;
        items.push({ stream: streams[i], bytes: bodies[i].subarray(offsets[i], end) });
        offsets[i] = end;
      }
      lanes.update(items);
      round++;
    }
    for (let i = 0; i < n; i++) {
      assertEquals(
        hex(lanes.digest(streams[i])),
        createHash("md5").update(bodies[i]).digest("hex"),
        `stream ${i} of ${n}, ${bodies[i].byteLength} bytes`,
      );
    }
  }
  assert(lanes.laneBytes > 0 && lanes.scalarBytes > 0, "both paths were taken");
});
