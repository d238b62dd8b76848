// MD5 streams hashed together: up to four streams with bytes waiting advance side by side in the
// lanes of the SIMD kernel (kernel.ts), 2.3-2.8x the bytes per second of libcrypto's one-stream
// MD5 on this machine class; a stream alone goes through libcrypto, which is faster for one.
// A stream's state (the four words, its length and the bytes of an unfinished block) lives here,
// in neither place, and is loaded into a libcrypto MD5_CTX for each scalar step. Only used where
// libcrypto's MD5 is (md5.ts) and its context has the layout this expects (checked once).
import { type Md5Library, md5Library } from "../md5.ts";
import { md5x4ModuleBytes, STATE_BYTES } from "./kernel.ts";

const INIT = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];
/** Bytes of one stream that go through the lanes per pass. */
const REGION = 1024 * 1024;
/** A region with room for an unfinished block before the bytes. */
const REGION_STRIDE = REGION + 128;
/** MD5_CTX: A, B, C, D, Nl, Nh (bit count), data[64 bytes], num (bytes in data); 92 bytes. */
const CTX_BYTES = 128;
const CTX_DATA = 24;
const CTX_NUM = 88;

export class LaneStream {
  readonly h = Uint32Array.from(INIT);
  /** Bytes hashed so far, the unfinished block included. */
  length = 0;
  readonly partial = new Uint8Array(64);
  partialLength = 0;
}

type Kernel = (state: number, p0: number, p1: number, p2: number, p3: number, n: number) => void;

export class Md5Lanes {
  readonly #memory: WebAssembly.Memory;
  readonly #kernel: Kernel;
  readonly #ctx = new Uint8Array(CTX_BYTES);
  readonly #ctxView = new DataView(this.#ctx.buffer);
  /** Bytes taken by the lanes path and by the one-stream path (the tests check both run). */
  laneBytes = 0;
  scalarBytes = 0;

  private constructor(readonly lib: Md5Library, instance: WebAssembly.Instance) {
    this.#memory = instance.exports.memory as WebAssembly.Memory;
    this.#kernel = instance.exports.md5x4 as Kernel;
  }

  /** The lanes, or null where libcrypto's MD5 or WebAssembly SIMD is missing. */
  static create(): Md5Lanes | null {
    const lib = md5Library();
    if (!lib) return null;
    try {
      const pages = Math.ceil((STATE_BYTES + 4 * REGION_STRIDE) / 65536);
      const module = new WebAssembly.Module(md5x4ModuleBytes(pages));
      const lanes = new Md5Lanes(lib, new WebAssembly.Instance(module));
      return lanes.#selfCheck() ? lanes : null;
    } catch {
      return null;
    }
  }

  /** Adds each item's bytes to its stream (distinct streams; any number of items). */
  update(items: { stream: LaneStream; bytes: Uint8Array }[]): void {
    for (let at = 0; at < items.length; at += 4) {
      const group = items.slice(at, at + 4);
      if (group.length === 1) this.#scalarUpdate(group[0].stream, group[0].bytes);
      else this.#lanesUpdate(group);
    }
  }

  /** The digest of a stream; the stream is finished. */
  digest(stream: LaneStream): Uint8Array<ArrayBuffer> {
    this.#load(stream);
    const out = new Uint8Array(16);
    if (this.lib.MD5_Final(out, this.#ctx) !== 1) throw new Error("MD5_Final failed");
    return out;
  }

  #lanesUpdate(group: { stream: LaneStream; bytes: Uint8Array }[]): void {
    const mem = new Uint8Array(this.#memory.buffer);
    const words = new Uint32Array(this.#memory.buffer, 0, 16);
    const offsets = group.map(() => 0);
    for (;;) {
      // One pass: up to REGION bytes of each stream, after its unfinished block, in its region.
      const lanes: { stream: LaneStream; at: number; blocks: number }[] = [];
      group.forEach(({ stream, bytes }, i) => {
        const take = Math.min(REGION, bytes.byteLength - offsets[i]);
        if (take === 0) return;
        const at = STATE_BYTES + i * REGION_STRIDE;
        mem.set(stream.partial.subarray(0, stream.partialLength), at);
        mem.set(bytes.subarray(offsets[i], offsets[i] + take), at + stream.partialLength);
        const total = stream.partialLength + take;
        const blocks = Math.floor(total / 64);
        stream.partialLength = total - blocks * 64;
        stream.partial.set(mem.subarray(at + blocks * 64, at + total));
        stream.length += take;
        offsets[i] += take;
        this.laneBytes += take;
        lanes.push({ stream, at, blocks });
      });
      if (lanes.length === 0) return;
      let active = lanes.filter((l) => l.blocks > 0);
      while (active.length > 1) {
        const n = Math.min(...active.map((l) => l.blocks));
        for (let lane = 0; lane < 4; lane++) {
          const h = active[lane % active.length].stream.h;
          for (let j = 0; j < 4; j++) words[4 * j + lane] = h[j];
        }
        const p = [0, 1, 2, 3].map((lane) => active[lane % active.length].at);
        this.#kernel(0, p[0], p[1], p[2], p[3], n);
        active.forEach((l, lane) => {
          for (let j = 0; j < 4; j++) l.stream.h[j] = words[4 * j + lane];
          l.at += 64 * n;
          l.blocks -= n;
        });
        active = active.filter((l) => l.blocks > 0);
      }
      // What one lane has left goes through libcrypto, from the region.
      for (const l of active) {
        this.#load(l.stream, 0);
        this.#md5Update(mem.subarray(l.at, l.at + 64 * l.blocks));
        this.#store(l.stream, false);
      }
    }
  }

  #scalarUpdate(stream: LaneStream, bytes: Uint8Array): void {
    this.#load(stream);
    this.#md5Update(bytes);
    this.#store(stream, true);
    stream.length += bytes.byteLength;
    this.scalarBytes += bytes.byteLength;
  }

  #md5Update(bytes: Uint8Array): void {
    if (
      bytes.byteLength > 0 && this.lib.MD5_Update(this.#ctx, bytes, BigInt(bytes.byteLength)) !== 1
    ) {
      throw new Error("MD5_Update failed");
    }
  }

  /**
   * The stream into the context, with its unfinished block, or with none (`partialLength` 0)
   * when whole blocks that come before that block follow. The bit count matters only to
   * MD5_Final, which always gets the stream's whole length.
   */
  #load(stream: LaneStream, partialLength = stream.partialLength): void {
    const v = this.#ctxView;
    for (let j = 0; j < 4; j++) v.setUint32(4 * j, stream.h[j], true);
    const hashed = stream.length - stream.partialLength + partialLength;
    const bits = BigInt(hashed) * 8n;
    v.setUint32(16, Number(bits & 0xffffffffn), true);
    v.setUint32(20, Number(bits >> 32n), true);
    this.#ctx.set(stream.partial.subarray(0, partialLength), CTX_DATA);
    v.setUint32(CTX_NUM, partialLength, true);
  }

  /** The context's words back into the stream, and with `partial` its unfinished block. */
  #store(stream: LaneStream, partial: boolean): void {
    const v = this.#ctxView;
    for (let j = 0; j < 4; j++) stream.h[j] = v.getUint32(4 * j, true);
    if (!partial) return;
    const num = v.getUint32(CTX_NUM, true);
    stream.partial.set(this.#ctx.subarray(CTX_DATA, CTX_DATA + num));
    stream.partialLength = num;
  }

  /** Whether streams of awkward lengths, hashed together and alone, give the right digests. */
  #selfCheck(): boolean {
    const expected = [
      "d41d8cd98f00b204e9800998ecf8427e", // ""
      "0cc175b9c0f1b6a831c399e269772661", // "a"
      "900150983cd24fb0d6963f7d28e17f72", // "abc"
      "57edf4a22be3c955ac49da2e2107b67a", // "1234567890" x 8
    ];
    const inputs = ["", "a", "abc", "1234567890".repeat(8)].map((s) => new TextEncoder().encode(s));
    const streams = inputs.map(() => new LaneStream());
    // Split unevenly so passes have unfinished blocks and unequal lane lengths.
    this.update(
      inputs.map((b, i) => ({
        stream: streams[i],
        bytes: b.subarray(0, Math.floor(b.length / 3)),
      })),
    );
    this.update(
      inputs.map((b, i) => ({ stream: streams[i], bytes: b.subarray(Math.floor(b.length / 3)) })),
    );
    const got = streams.map((s) =>
      Array.from(this.digest(s), (b) => b.toString(16).padStart(2, "0")).join("")
    );
    this.laneBytes = this.scalarBytes = 0;
    return got.every((g, i) => g === expected[i]);
  }
}
