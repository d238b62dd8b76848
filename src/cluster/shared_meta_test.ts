import { assertEquals } from "../../tests/integration/assert.ts";
import type { ChunkRecord } from "../meta/store.ts";
import { frameChunk, unframeChunk } from "./shared_meta.ts";

const rec: ChunkRecord = {
  id: "c1",
  plainSize: 10,
  storedSize: 6,
  compression: "zstd",
  encrypted: false,
  segmentSize: 65536,
  dataShards: 2,
  parityShards: 1,
  drives: [4, 5, 6],
};
const stored = new Uint8Array([1, 2, 3, 4, 5, 6]);

Deno.test("shared meta: a framed chunk reads back with its form, without drives", () => {
  const got = unframeChunk(rec, frameChunk(rec, stored));
  assertEquals(got?.form, {
    id: "c1",
    plainSize: 10,
    storedSize: 6,
    compression: "zstd",
    encrypted: false,
    segmentSize: 65536,
  });
  assertEquals([...got!.stored], [...stored]);
});

Deno.test("shared meta: a frame that does not fit the chunk is refused", () => {
  const framed = frameChunk(rec, stored);
  assertEquals(unframeChunk({ ...rec, id: "other" }, framed), undefined);
  assertEquals(unframeChunk({ ...rec, plainSize: 11 }, framed), undefined);
  assertEquals(unframeChunk({ ...rec, encrypted: true }, framed), undefined);
  // Cut short: the stored bytes no longer match the size in the form.
  assertEquals(unframeChunk(rec, framed.subarray(0, framed.byteLength - 1)), undefined);
  assertEquals(unframeChunk(rec, new Uint8Array([0, 0, 0, 9, 1])), undefined);
  assertEquals(unframeChunk(rec, new Uint8Array([0, 0])), undefined);
});
