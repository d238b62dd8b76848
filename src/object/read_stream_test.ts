// The read path's accounting against the HTTP writer's pattern: it asks for the next slice before
// it writes the last one, so two slices can be with it at once, and a client that stops reading
// leaves both of them with it.
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import type { ChunkRecord, VersionChunk } from "../meta/store.ts";
import type { ChunkStore } from "../storage/chunk_store.ts";
import { type Grant, ReadBudget } from "./read_budget.ts";
import { chunkStream, SLICE, watchedReaders } from "./read_stream.ts";
import { PiecePool } from "./piece_pool.ts";
import { reportWritten } from "../http/written.ts";

const KiB = 1024;
const CHUNK = 256 * KiB;

/** Chunks of CHUNK bytes stored as they are, read whole into buffers of their own. */
function fakeStore(): ChunkStore {
  return {
    reads: { pin: () => () => {} },
    readsInPieces: () => false,
    heldBytes: (_: ChunkRecord, from: number, to: number) => to - from,
    readRange: (rec: ChunkRecord, from: number, to: number) =>
      Promise.resolve(new Uint8Array(to - from).fill(Number(rec.id))),
  } as unknown as ChunkStore;
}

function chunks(count: number): VersionChunk[] {
  return Array.from({ length: count }, (_, i) => ({
    chunk: { id: String(i), plainSize: CHUNK } as ChunkRecord,
    offset: i * CHUNK,
    size: CHUNK,
  }));
}

/**
 * A budget that knows which chunks its grants are for: chunks are decoded in order, once each
 * here, so the n-th grant is chunk n's.
 */
class TrackingBudget extends ReadBudget {
  readonly held = new Set<number>();
  #granted = 0;

  #track(grant: Grant): Grant {
    const chunk = this.#granted++;
    this.held.add(chunk);
    return {
      bytes: grant.bytes,
      release: () => {
        this.held.delete(chunk);
        grant.release();
      },
    };
  }

  override acquire(bytes: number, served = 0): Promise<Grant> {
    // ReadBudget.acquire tries tryAcquire first: only a grant from the line is new here.
    const now = this.tryAcquire(bytes);
    if (now) return Promise.resolve(now);
    return super.acquire(bytes, served).then((grant) => this.#track(grant));
  }

  override tryAcquire(bytes: number): Grant | undefined {
    const grant = super.tryAcquire(bytes);
    return grant && this.#track(grant);
  }
}

/** A read of eight chunks under a budget of four. */
async function readEight() {
  const budget = new TrackingBudget(4 * CHUNK);
  const stream = await chunkStream(fakeStore(), chunks(8), {
    offset: 0,
    length: 8 * CHUNK,
    limits: { budget, stallMs: 60_000 },
  });
  return { budget, reader: stream.getReader() };
}

Deno.test("a slice still being written keeps its chunk accounted until the next is taken", async () => {
  const { budget, reader } = await readEight();
  try {
    // The writer takes a slice and, before writing it, asks for the next: every chunk the last
    // two slices are views of (a client that keeps up gets views) must stay accounted. Before,
    // a chunk was given back once its last slice was taken, while the socket still had to take
    // it: a client that stopped reading there held memory the budget no longer counted.
    const out: Uint8Array[] = [];
    let views = 0;
    for (let result = await reader.read(); !result.done; result = await reader.read()) {
      out.push(result.value);
      for (const slice of out.slice(-2)) {
        if (slice.buffer.byteLength !== CHUNK) continue; // a copy: nothing to account
        views++;
        const chunk = slice[0];
        assert(budget.held.has(chunk), `slice ${out.length - 1}: chunk ${chunk} not accounted`);
      }
    }
    assert(views > 8, `the slices were views (${views})`);
    const bytes = out.reduce((n, s) => n + s.byteLength, 0);
    assertEquals(bytes, 8 * CHUNK);
    assertEquals([budget.used, budget.held.size], [0, 0], "everything given back at the end");
  } finally {
    reader.releaseLock();
  }
});

Deno.test("a read abandoned with two slices out gives everything back", async () => {
  const { budget, reader } = await readEight();
  for (let i = 0; i < 4; i++) await reader.read();
  assert(budget.used > 0);
  await reader.cancel();
  assertEquals([budget.used, budget.held.size], [0, 0]);
});

Deno.test("a slow client's copies come from the slice pool and go back once written", async () => {
  const budget = new ReadBudget(4 * CHUNK);
  const slices = new PiecePool(SLICE, 8);
  const stream = await chunkStream(fakeStore(), chunks(4), {
    offset: 0,
    length: 4 * CHUNK,
    limits: { budget, stallMs: 60_000, slices },
  });
  const reader = stream.getReader();
  // Like the HTTP writer: the next slice is taken before the last one is written. A slow client
  // (25 ms per slice) gets copies; a buffer reused before its copy was written would show
  // another chunk's bytes when it is written.
  let held: Uint8Array | undefined;
  let copies = 0;
  let bytes = 0;
  const write = (slice: Uint8Array) => {
    const chunk = Math.floor(bytes / CHUNK);
    assert(slice.every((b) => b === chunk), `bytes ${bytes}: not chunk ${chunk}'s when written`);
    bytes += slice.byteLength;
    reportWritten(slice);
  };
  for (let result = await reader.read(); !result.done; result = await reader.read()) {
    if (result.value.buffer.byteLength === SLICE) copies++;
    if (held) write(held);
    held = result.value;
    await new Promise((r) => setTimeout(r, 25));
  }
  write(held!);
  assertEquals(bytes, 4 * CHUNK);
  assert(copies >= 12, `copies: ${copies}`);
  assert(slices.reused >= copies - 2, `${slices.reused} of ${copies} copies in a reused buffer`);
  assertEquals(slices.kept, 2, "the last two copies came back too");
});

Deno.test("a reader whose client takes nothing is ended after stallMs and gives everything back", async () => {
  const budget = new TrackingBudget(4 * CHUNK);
  const stream = await chunkStream(fakeStore(), chunks(8), {
    offset: 0,
    length: 8 * CHUNK,
    limits: { budget, stallMs: 300 },
  });
  const reader = stream.getReader();
  await reader.read();
  const started = performance.now();
  // Noticed by the idle watch, which looks every 250 ms: between 300 and ~550 ms.
  await new Promise((r) => setTimeout(r, 700));
  const error = await reader.read().then(() => undefined, (err: Error) => err);
  assert(error?.message.includes("took no data for 300 ms"), `ended: ${error}`);
  assert(performance.now() - started >= 300);
  assertEquals([budget.used, budget.held.size], [0, 0]);
});

Deno.test("an idle reader gives its pieces back while another waits for the budget", async () => {
  const budget = new ReadBudget(2 * CHUNK);
  const limits = { budget, stallMs: 60_000 };
  const first = await chunkStream(fakeStore(), chunks(4), { offset: 0, length: 4 * CHUNK, limits });
  const firstReader = first.getReader();
  await firstReader.read();
  assertEquals(budget.used, 2 * CHUNK, "the current chunk and the one read ahead");
  // A second read waits for the budget until the first, idle, gives its pieces back. (The idle
  // watch's timer does not keep a process alive; a server's listener does, this timer here.)
  const started = performance.now();
  const alive = setTimeout(() => {}, 5000);
  const second = await chunkStream(fakeStore(), chunks(1), { offset: 0, length: CHUNK, limits });
  clearTimeout(alive);
  const waited = performance.now() - started;
  assert(waited >= 200 && waited < 2000, `the second read started after ${waited} ms`);
  let bytes = 0;
  for await (const slice of second) bytes += slice.byteLength;
  assertEquals(bytes, CHUNK);
  // The first goes on from where it was, its pieces read again.
  bytes = SLICE;
  for (let r = await firstReader.read(); !r.done; r = await firstReader.read()) {
    assert(r.value.every((b) => b === Math.floor(bytes / CHUNK)), `byte ${bytes}`);
    bytes += r.value.byteLength;
  }
  assertEquals([bytes, budget.used], [4 * CHUNK, 0]);
});

Deno.test("a read that fails midway lets go of everything it held", async () => {
  const budget = new TrackingBudget(4 * CHUNK);
  const store = fakeStore();
  const read = store.readRange;
  // Chunk 2 cannot be read (shards lost beyond repair, say).
  store.readRange = (rec, from, to, opts) =>
    rec.id === "2" ? Promise.reject(new Error("chunk 2 is lost")) : read(rec, from, to, opts);
  const stream = await chunkStream(store, chunks(4), {
    offset: 0,
    length: 4 * CHUNK,
    limits: { budget, stallMs: 60_000 },
  });
  assertEquals(watchedReaders(), 1);
  const reader = stream.getReader();
  let error: Error | undefined;
  try {
    while (!(await reader.read()).done) { /* read on */ }
  } catch (err) {
    error = err as Error;
  }
  assert(error?.message.includes("chunk 2 is lost"), `the read ended with ${error}`);
  // An errored stream is never cancelled: the reader must have closed itself.
  assertEquals(watchedReaders(), 0, "the reader is still watched");
  assertEquals([budget.used, budget.held.size], [0, 0], "read budget still held");
});
