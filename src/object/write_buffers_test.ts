import { WriteBuffers } from "./write_buffers.ts";

function assertEquals<T>(actual: T, expected: T, what: string): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("write buffers: the N+1th upload waits for a buffer instead of allocating", async () => {
  const pool = new WriteBuffers(3 * 1024);
  const held = [
    await pool.take(1024, true),
    await pool.take(1024, true),
    await pool.take(1024, true),
  ];
  assertEquals(pool.held, 3 * 1024, "bytes held at the budget");
  let fourth: Uint8Array | undefined;
  const waiting = pool.take(1024, true).then((b) => fourth = b);
  await settled();
  assertEquals(fourth, undefined, "a buffer beyond the budget was handed out");
  assertEquals([pool.waiting, pool.waits], [1, 1], "uploads waiting, waits counted");
  held[1][0] = 42;
  pool.give(held[1].buffer);
  await waiting;
  assertEquals(fourth!.buffer === held[1].buffer, true, "the waiter got the buffer given back");
  assertEquals(fourth![0], 42, "reused as it is, not a fresh allocation");
  assertEquals(pool.held, 3 * 1024, "still within the budget");
  assertEquals(fourth!.buffer instanceof SharedArrayBuffer, true, "shared as asked");
});

Deno.test("write buffers: kept buffers of another kind make room; a huge one waits for all", async () => {
  const pool = new WriteBuffers(2048);
  const a = await pool.take(1024, true);
  const b = await pool.take(1024, true);
  pool.give(a.buffer);
  pool.give(b.buffer);
  assertEquals(pool.kept, 2048, "kept for reuse");
  const plain = await pool.take(1024, false);
  assertEquals(
    plain.buffer instanceof SharedArrayBuffer,
    false,
    "a plain buffer for encrypted bodies",
  );
  assertEquals([pool.held, pool.kept], [2048, 1024], "a shared one was dropped to make room");
  let big = false;
  const huge = pool.take(4096, true).then((x) => (big = true, x));
  await settled();
  assertEquals(big, false, "a buffer over the budget while others are held");
  pool.give(plain.buffer);
  await settled();
  assertEquals(big, true, "handed out once nothing is in use (kept ones dropped for it)");
  assertEquals([pool.held, pool.kept], [4096, 0], "only the big one held");
  pool.give((await huge).buffer);
  pool.dropKept();
  assertEquals([pool.held, pool.kept], [0, 0], "dropKept forgets every kept buffer");
});

Deno.test("write buffers: kept buffers are dropped after the idle time", async () => {
  const pool = new WriteBuffers(4096, 20);
  pool.give((await pool.take(1024, true)).buffer);
  assertEquals(pool.kept, 1024, "kept after an upload");
  await new Promise((resolve) => setTimeout(resolve, 60));
  assertEquals([pool.held, pool.kept], [0, 0], "dropped after the idle time");
});
