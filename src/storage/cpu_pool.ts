// The CPU pool: a few Web Workers (cpu_worker.ts) that take the CPU-heavy stages of the write
// path off the event loop: the MD5 of a body (its ETag), the SHA-256 of a chunk (its content id)
// and zstd compression (node:zlib runs it on the calling thread, ~20 ms per 4 MiB of text).
//
// An MD5 stream is stateful, so it stays on one worker; its bytes are copied into 1 MiB batches
// that travel by transfer and come back for reuse. Chunk work is stateless and goes to the least
// busy worker; the chunk is copied once (the caller still needs its own bytes to write them) and
// that copy goes back and forth by transfer, then serves the next chunk: on this class of machine
// a fresh 4 MiB buffer costs ~10x more main-thread time than copying into a used one. Bytes in
// shared memory (the write path's unencrypted chunk buffers) are not copied: the workers read
// them in place, for the chunk's work and, through `updateHeld`, for the body's MD5. Anything
// small, and everything while no worker is ready (start-up, a worker that cannot start, after
// close), is done inline with the same code, so the results never depend on where they were
// computed. A pool of size 0 does it all inline.
//
// With `idleMs` (the server's setting) the workers start on the first work that could use them
// and stop after that long without any, so an idle server holds no worker isolates (~12 MiB
// each); the work that arrives while they start is done inline.
import { createHash } from "node:crypto";
import { createMd5, type Md5 } from "./md5.ts";
import { compressChunk, type CompressionMode } from "./codec.ts";
import type { CpuReply, CpuRequest } from "./cpu_worker.ts";
import { sharedView } from "./shared_memory.ts";

/** A body shorter than this is hashed inline (<= ~0.6 ms); a longer one binds to a worker. */
export const MD5_FIRST_BATCH_BYTES = 256 * 1024;
/** After the first, MD5 bytes go to the worker in batches of this size. */
export const MD5_BATCH_BYTES = 1024 * 1024;
/** Batches of one stream sent and not yet hashed before `update` asks its caller to wait. */
const MD5_BATCHES_IN_FLIGHT = 4;
/** Batches one stream may hold while its worker starts, before `update` asks its caller to wait. */
const MD5_BATCHES_HELD = 16;
/** Bytes of buffers kept for reuse (batches and chunk copies). */
const SHELF_BYTES = 32 * 1024 * 1024;
/** Chunks smaller than this are hashed and compressed inline: a round trip costs more. */
export const OFFLOAD_MIN_BYTES = 128 * 1024;
/** Rough cost per byte (ns on this class of machine), to spread work over the workers. */
const COST = { md5: 2.2, sha256: 0.7, compress: 5 };

/** The MD5 of a stream of bytes, computed in order on one worker (or inline). */
export interface Md5Stream {
  /**
   * Adds bytes; they are copied, the caller keeps them. Returns a promise when the worker is
   * behind: the caller should await it before adding more (it rejects if the worker failed).
   */
  update(bytes: Uint8Array): Promise<void> | undefined;
  /**
   * Adds bytes the caller keeps unchanged until the returned promise settles. Bytes in shared
   * memory (a SharedArrayBuffer) are read by the stream's worker in place, without a copy; others
   * are copied as by `update`. The caller need not wait before adding more: the stream's own
   * back-pressure is in the promise.
   */
  updateHeld(bytes: Uint8Array): Promise<void> | undefined;
  /** The 16-byte digest; the stream is finished afterwards. */
  digest(): Promise<Uint8Array>;
  /** Forgets the stream (the upload failed). Harmless at any time, also after digest. */
  abort(): void;
}

/** The CPU-heavy steps of storing one chunk of plaintext. */
export interface ChunkWork {
  /**
   * Hex SHA-256 of the plaintext: the chunk's content id. Given the compression mode that will
   * follow, it also looks ahead (the "auto" probe), so that a `compress` that cannot pay costs
   * no second round trip to a worker.
   */
  sha256(next?: CompressionMode): Promise<string>;
  /** codec.ts compressChunk of the plaintext. */
  compress(
    mode: CompressionMode,
    level?: number,
    segmentSize?: number,
  ): Promise<Uint8Array | undefined>;
  /** No more steps: the copy the workers saw may serve another chunk. */
  done(): void;
}

export interface CpuPoolOptions {
  /** Told when a worker fails (it is replaced) or cannot start (its work is done inline). */
  onError?: (message: string) => void;
  /** The worker module (tests); cpu_worker.ts by default. */
  workerUrl?: URL;
  /** Start workers on demand and stop them after this many ms without work (off: always on). */
  idleMs?: number;
  /** Told when idle workers have stopped (their memory can be given back). */
  onIdleStop?: () => void;
}

type Answer = Exclude<CpuReply, { ready: true } | { error: string }>;

interface Task {
  resolve(answer: Answer): void;
  reject(err: Error): void;
  cost: number;
}

/**
 * Large buffers kept for reuse: on this class of machine a fresh 4 MiB buffer costs ~10x more
 * main-thread time (page faults, zeroing, GC) than copying into a used one.
 */
class Shelf {
  #buffers: ArrayBuffer[] = [];
  #bytes = 0;

  constructor(readonly maxBytes: number) {}

  /** A view of `size` bytes over the smallest kept buffer that fits, or a new buffer. */
  take(size: number): Uint8Array<ArrayBuffer> {
    let best = -1;
    for (let i = 0; i < this.#buffers.length; i++) {
      const b = this.#buffers[i];
      if (b.byteLength >= size && (best < 0 || b.byteLength < this.#buffers[best].byteLength)) {
        best = i;
      }
    }
    if (best < 0) return new Uint8Array(size);
    const [buffer] = this.#buffers.splice(best, 1);
    this.#bytes -= buffer.byteLength;
    return new Uint8Array(buffer, 0, size);
  }

  copy(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
    const out = this.take(bytes.byteLength);
    out.set(bytes);
    return out;
  }

  /** Forgets every kept buffer. */
  clear(): void {
    this.#buffers = [];
    this.#bytes = 0;
  }

  /** Keeps `buffer` if there is room (a detached, empty buffer is ignored). */
  give(buffer: ArrayBuffer): void {
    if (buffer.byteLength === 0 || this.#bytes + buffer.byteLength > this.maxBytes) return;
    this.#buffers.push(buffer);
    this.#bytes += buffer.byteLength;
  }
}

/** One worker place in the pool; its worker is replaced when it dies after starting. */
class Slot {
  worker?: Worker;
  ready = false;
  /** Bumped whenever the worker goes away: streams bound to the old one must fail. */
  generation = 0;
  pending = new Map<number, Task>();
  cost = 0;
  streams = 0;
  started: Promise<void> = Promise.resolve();
  markStarted = () => {};
  /** The worker could not be created: the slot's work is done inline for good. */
  unstartable = false;

  constructor(readonly index: number) {}
}

/** The worker an MD5 stream is bound to, as the stream sees it. */
interface Lane {
  call(req: CpuRequest & { id: number }, transfer: ArrayBuffer[], cost: number): Promise<Answer>;
  /** Fire and forget: a request without a reply. */
  post(req: CpuRequest): void;
  /** The stream is over (idempotent). */
  release(): void;
}

export class CpuPool {
  readonly #slots: Slot[] = [];
  readonly #onError?: (message: string) => void;
  readonly #workerUrl: URL;
  #nextId = 1;
  #closed = false;
  readonly #shelf = new Shelf(SHELF_BYTES);
  readonly #idleMs?: number;
  readonly #onIdleStop?: () => void;
  #idleTimer?: ReturnType<typeof setTimeout>;

  /** `size` workers; 0 does everything inline on the calling thread. */
  constructor(readonly size: number, opts: CpuPoolOptions = {}) {
    this.#onError = opts.onError;
    this.#workerUrl = opts.workerUrl ?? new URL("./cpu_worker.ts", import.meta.url);
    this.#idleMs = opts.idleMs;
    this.#onIdleStop = opts.onIdleStop;
    for (let i = 0; i < size; i++) {
      const slot = new Slot(i);
      this.#slots.push(slot);
      if (this.#idleMs === undefined) this.#spawn(slot);
    }
  }

  /** Resolves once every worker has started (or failed to); until then work is done inline. */
  async ready(): Promise<void> {
    await Promise.all(this.#slots.map((s) => s.started));
  }

  /** MD5 streams bound to a worker now. */
  get boundStreams(): number {
    return this.#slots.reduce((n, s) => n + s.streams, 0);
  }

  /** Workers ready to take work now. */
  get running(): number {
    return this.#slots.filter((s) => s.ready).length;
  }

  /** Terminates the workers; work still pending rejects, later work is done inline. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    for (const slot of this.#slots) this.#drop(slot, "The CPU pool is closed");
  }

  md5(): Md5Stream {
    if (this.#slots.length === 0) return new InlineMd5();
    // Workers are wanted only once the stream binds to one (a body past its first batch): a
    // small upload, hashed inline, neither starts them nor keeps them from their idle stop.
    const bind = () => {
      this.#demand();
      return this.#lane();
    };
    return new OffloadedMd5(bind, () => this.#starting(), this.#shelf);
  }

  /**
   * Work on `plain`, which must not change until the returned promises settle. Plaintext in
   * shared memory (a SharedArrayBuffer) is read by the workers in place; other plaintext is
   * copied once for them.
   */
  chunk(plain: Uint8Array): ChunkWork {
    if (this.#slots.length === 0 || plain.byteLength < OFFLOAD_MIN_BYTES) {
      return inlineChunk(plain);
    }
    this.#demand();
    const shared = sharedView(plain);
    // The copy the workers see; away (detached) while a worker has it.
    let copy: Uint8Array<ArrayBuffer> | undefined;
    let finished = false;
    /** False when the look-ahead found that "auto" stores the chunk as it is. */
    let worthCompressing: boolean | undefined;
    const run = async (
      make: (
        bytes: Uint8Array<ArrayBuffer> | Uint8Array<SharedArrayBuffer>,
        id: number,
      ) => CpuRequest & { id: number },
      costPerByte: number,
    ): Promise<Answer | undefined> => {
      const slot = this.#pick();
      if (!slot) return undefined;
      if (shared) {
        return await this.#call(
          slot,
          make(shared, this.#nextId++),
          [],
          costPerByte * shared.byteLength,
        );
      }
      const bytes = copy ?? this.#shelf.copy(plain);
      copy = undefined;
      const answer = await this.#call(
        slot,
        make(bytes, this.#nextId++),
        [bytes.buffer],
        costPerByte * bytes.byteLength,
      );
      copy = answer.bytes;
      return answer;
    };
    return {
      sha256: async (next) => {
        const probe = next === "auto";
        const answer = await run(
          (bytes, id) => ({ op: "sha256", id, bytes, probe }),
          COST.sha256,
        );
        if (!answer) return sha256Hex(plain);
        if (probe) worthCompressing = answer.worthCompressing;
        return answer.sha256!;
      },
      compress: async (mode, level, segmentSize) => {
        if (mode === "off" || (mode === "auto" && worthCompressing === false)) return undefined;
        const answer = await run(
          (bytes, id) => ({ op: "compress", id, bytes, mode, level, segmentSize }),
          COST.compress,
        );
        return answer ? answer.packed : await compressChunk(plain, mode, level, segmentSize);
      },
      done: () => {
        if (finished) return;
        finished = true;
        if (copy) this.#shelf.give(copy.buffer);
        copy = undefined;
      },
    };
  }

  /**
   * Forgets the buffers kept for reuse, and has the workers collect their garbage, which holds
   * the shared buffers they were sent (memory is being released; src/memory/release.ts).
   */
  dropKept(): void {
    this.#shelf.clear();
    for (const slot of this.#slots) {
      if (slot.ready) slot.worker?.postMessage({ op: "gc" } satisfies CpuRequest);
    }
  }

  /** Tests only: makes worker `index` die of an uncaught exception. */
  crashWorkerForTest(index: number): void {
    this.#slots[index]?.worker?.postMessage({ op: "crash" } satisfies CpuRequest);
  }

  /** On-demand pools: starts the missing workers and (re)arms the idle stop. */
  #demand(): void {
    if (this.#idleMs === undefined || this.#closed) return;
    for (const slot of this.#slots) if (!slot.worker && !slot.unstartable) this.#spawn(slot);
    this.#armIdle();
  }

  /** (Re)starts the idle period of an on-demand pool. */
  #armIdle(): void {
    if (this.#idleMs === undefined) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => this.#stopIdle(), this.#idleMs);
    Deno.unrefTimer(this.#idleTimer);
  }

  /** Stops the workers when none has work; otherwise looks again after another idle period. */
  #stopIdle(): void {
    if (this.#slots.some((s) => s.pending.size > 0 || s.streams > 0)) return this.#demand();
    // A worker still starting (a busy machine) is not idle: its period begins when it is ready.
    if (this.#slots.some((s) => s.worker && !s.ready)) return;
    for (const slot of this.#slots) this.#drop(slot, "The CPU worker stopped when idle");
    // The kept buffers go too: they are what an idle server would hold most.
    this.#shelf.clear();
    this.#onIdleStop?.();
  }

  #spawn(slot: Slot): void {
    slot.ready = false;
    slot.started = new Promise((resolve) => slot.markStarted = resolve);
    let worker: Worker;
    try {
      worker = new Worker(this.#workerUrl.href, { type: "module", name: `cpu-${slot.index}` });
    } catch (err) {
      slot.unstartable = true;
      slot.markStarted();
      this.#onError?.(
        `CPU worker ${slot.index} cannot start: ${err}; its work is done on the main thread`,
      );
      return;
    }
    slot.worker = worker;
    worker.onmessage = (e: MessageEvent<CpuReply>) => {
      if (slot.worker === worker) this.#answer(slot, e.data);
    };
    worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      this.#fail(slot, worker, `CPU worker ${slot.index} failed: ${e.message}`);
    };
    worker.onmessageerror = () => {
      this.#fail(slot, worker, `CPU worker ${slot.index} sent a message that does not decode`);
    };
  }

  #answer(slot: Slot, reply: CpuReply): void {
    if ("ready" in reply) {
      slot.ready = true;
      slot.markStarted();
      // The idle period counts from when the workers can take work: a slow start (a busy
      // machine) must not stop them before the work that started them reached them.
      if (!this.#closed) this.#armIdle();
      return;
    }
    const task = slot.pending.get(reply.id);
    if (!task) return;
    slot.pending.delete(reply.id);
    slot.cost -= task.cost;
    if ("error" in reply) task.reject(new Error(reply.error));
    else task.resolve(reply);
  }

  #fail(slot: Slot, worker: Worker, message: string): void {
    if (slot.worker !== worker) return;
    const started = slot.ready;
    this.#drop(slot, message);
    if (!started) slot.unstartable = true;
    this.#onError?.(
      started ? `${message}; replaced` : `${message}; its work is done on the main thread`,
    );
    if (started && !this.#closed) this.#spawn(slot);
  }

  /** Terminates the slot's worker and rejects everything it had. */
  #drop(slot: Slot, message: string): void {
    slot.worker?.terminate();
    slot.worker = undefined;
    slot.ready = false;
    slot.generation++;
    slot.streams = 0;
    slot.cost = 0;
    const err = new Error(message);
    const tasks = [...slot.pending.values()];
    slot.pending.clear();
    for (const task of tasks) task.reject(err);
    slot.markStarted();
  }

  #call(
    slot: Slot,
    req: CpuRequest & { id: number },
    transfer: ArrayBuffer[],
    cost: number,
  ): Promise<Answer> {
    return new Promise((resolve, reject) => {
      if (!slot.worker) return reject(new Error(`CPU worker ${slot.index} is gone`));
      slot.pending.set(req.id, { resolve, reject, cost });
      slot.cost += cost;
      try {
        slot.worker.postMessage(req, transfer);
      } catch (err) {
        slot.pending.delete(req.id);
        slot.cost -= cost;
        reject(err);
      }
    });
  }

  /** The ready worker with the least work queued. */
  #pick(): Slot | undefined {
    let best: Slot | undefined;
    for (const s of this.#slots) if (s.ready && (!best || s.cost < best.cost)) best = s;
    return best;
  }

  /**
   * While no worker is ready but some are starting: settles when the first of them is ready (or
   * all have failed). Undefined when none is starting.
   */
  #starting(): Promise<void> | undefined {
    const starting = this.#slots.filter((s) => s.worker && !s.ready);
    return starting.length > 0 ? Promise.race(starting.map((s) => s.started)) : undefined;
  }

  /** Binds a new MD5 stream to the ready worker with the fewest streams. */
  #lane(): Lane | undefined {
    let slot: Slot | undefined;
    for (const s of this.#slots) {
      if (!s.ready) continue;
      if (!slot || s.streams < slot.streams || (s.streams === slot.streams && s.cost < slot.cost)) {
        slot = s;
      }
    }
    if (!slot) return undefined;
    const bound = slot;
    const generation = bound.generation;
    const alive = () => bound.generation === generation;
    let released = false;
    bound.streams++;
    return {
      call: (req, transfer, cost) =>
        alive()
          ? this.#call(bound, { ...req, id: this.#nextId++ }, transfer, cost)
          : Promise.reject(new Error(`CPU worker ${bound.index} failed`)),
      post: (req) => {
        if (alive()) bound.worker?.postMessage(req);
      },
      release: () => {
        if (released) return;
        released = true;
        if (alive()) bound.streams--;
      },
    };
  }
}

/** Work on nothing: every step inline, on the calling thread. */
export const inlineCpu: CpuPool = new CpuPool(0);

function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function inlineChunk(plain: Uint8Array): ChunkWork {
  return {
    sha256: () => Promise.resolve(sha256Hex(plain)),
    compress: (mode, level, segmentSize) => compressChunk(plain, mode, level, segmentSize),
    done: () => {},
  };
}

class InlineMd5 implements Md5Stream {
  #hash = createMd5();

  update(bytes: Uint8Array): undefined {
    this.#hash.update(bytes);
  }

  updateHeld(bytes: Uint8Array): undefined {
    this.#hash.update(bytes);
  }

  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.#hash.digest());
  }

  abort(): void {}
}

let nextStream = 1;

/** Bytes waiting for a starting worker: a batch (a copy), or shared bytes and their caller's promise. */
interface Held {
  bytes: Uint8Array<ArrayBuffer> | Uint8Array<SharedArrayBuffer>;
  settled?: PromiseWithResolvers<void>;
}

const abortedError = () => new Error("The MD5 stream was aborted");

/**
 * An MD5 stream for a worker. A stream that begins while the workers start (an on-demand pool
 * after an idle period) holds its first batches until one is ready rather than hashing all of
 * its body on the main thread: eight 64 MiB uploads after a pause used to cost the event loop
 * ~1.4 s of MD5. Only when no worker can start is the stream hashed inline.
 */
class OffloadedMd5 implements Md5Stream {
  readonly #bind: () => Lane | undefined;
  readonly #starting: () => Promise<void> | undefined;
  readonly #shelf: Shelf;
  readonly #stream = nextStream++;
  #lane?: Lane;
  /** Set when the stream found no worker ready: it is hashed inline from then on. */
  #local?: Md5;
  #batch?: Uint8Array<ArrayBuffer>;
  #filled = 0;
  #inFlight = 0;
  #waiter?: { resolve(): void; reject(err: Error): void; promise: Promise<void> };
  #error?: Error;
  #finished = false;
  /**
   * What waits for a starting worker, in order, while #binding is set: full batches (copies), and
   * the caller's own shared bytes with the promise `updateHeld` returned for them.
   */
  #held: Held[] = [];
  #binding?: Promise<void>;

  constructor(
    bind: () => Lane | undefined,
    starting: () => Promise<void> | undefined,
    shelf: Shelf,
  ) {
    this.#bind = bind;
    this.#starting = starting;
    this.#shelf = shelf;
  }

  update(bytes: Uint8Array): Promise<void> | undefined {
    if (this.#finished || this.#error) {
      return Promise.reject(this.#error ?? new Error("The MD5 stream is finished"));
    }
    let at = 0;
    while (at < bytes.byteLength) {
      if (this.#local) {
        this.#local.update(at === 0 ? bytes : bytes.subarray(at));
        break;
      }
      const batch = this.#batch ??= this.#shelf.take(
        this.#lane ? MD5_BATCH_BYTES : MD5_FIRST_BATCH_BYTES,
      );
      const n = Math.min(batch.byteLength - this.#filled, bytes.byteLength - at);
      batch.set(bytes.subarray(at, at + n), this.#filled);
      this.#filled += n;
      at += n;
      if (this.#filled === batch.byteLength) this.#send();
    }
    if (!this.#behind()) return undefined;
    // Every caller told to wait (updateHeld's caller may not have waited yet) gets the same wait.
    if (this.#waiter) return this.#waiter.promise;
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    promise.catch(() => {}); // a caller that did not wait learns of the failure from digest
    this.#waiter = { resolve, reject, promise };
    return promise;
  }

  updateHeld(bytes: Uint8Array): Promise<void> | undefined {
    const shared = sharedView(bytes);
    if (!shared || this.#finished || this.#error || this.#local) return this.update(bytes);
    if (!this.#lane && !this.#binding && shared.byteLength >= MD5_FIRST_BATCH_BYTES) {
      this.#lane = this.#bind();
      const starting = this.#lane ? undefined : this.#starting();
      if (starting) this.#binding = starting.then(() => this.#bound());
    }
    // Neither bound nor waiting for a worker (short, or none can start): copied like any bytes.
    if (!this.#lane && !this.#binding) return this.update(bytes);
    // The bytes still batched go first, so that the worker sees the stream in order.
    if (this.#filled > 0) this.#send(true);
    if (this.#lane) return this.#post(shared);
    // The worker is starting: the caller's bytes wait for it as they are, not copied (eight
    // large uploads arriving at an idle server copied 40 MiB into batches here, and kept them).
    const settled = Promise.withResolvers<void>();
    settled.promise.catch(() => {}); // the stream's error surfaces through update and digest
    this.#held.push({ bytes: shared, settled });
    return settled.promise;
  }

  /** Whether the caller should wait before adding more. */
  #behind(): boolean {
    return this.#inFlight >= MD5_BATCHES_IN_FLIGHT || this.#held.length >= MD5_BATCHES_HELD;
  }

  async digest(): Promise<Uint8Array> {
    if (this.#finished || this.#error) {
      throw this.#error ?? new Error("The MD5 stream is finished");
    }
    this.#finished = true;
    if (this.#binding) {
      await this.#binding;
      if (this.#error) throw this.#error;
    }
    const lane = this.#lane;
    if (!lane) {
      const hash = this.#local ?? createMd5();
      if (this.#batch) {
        hash.update(this.#batch.subarray(0, this.#filled));
        this.#shelf.give(this.#batch.buffer);
        this.#batch = undefined;
      }
      return hash.digest();
    }
    const buffer = this.#batch?.buffer ?? new ArrayBuffer(0);
    const bytes = new Uint8Array(buffer, 0, this.#filled);
    this.#batch = undefined;
    try {
      const answer = await lane.call(
        { op: "md5", id: 0, stream: this.#stream, bytes, final: true },
        [buffer],
        COST.md5 * bytes.byteLength,
      );
      if (answer.bytes) this.#shelf.give(answer.bytes.buffer);
      if (this.#error) throw this.#error;
      return answer.md5!;
    } finally {
      lane.release();
    }
  }

  abort(): void {
    const wasFinished = this.#finished;
    this.#finished = true;
    if (this.#batch) this.#shelf.give(this.#batch.buffer);
    this.#batch = undefined;
    for (const held of this.#held.splice(0)) this.#letGo(held, this.#error ?? abortedError());
    if (this.#lane) {
      if (!wasFinished) this.#lane.post({ op: "md5-drop", stream: this.#stream });
      this.#lane.release();
    }
    this.#error ??= abortedError();
    this.#wake(this.#error);
  }

  /** A held entry is done with: a batch back to the shelf, the caller told about its bytes. */
  #letGo(held: Held, err?: Error): void {
    if (!held.settled) this.#shelf.give(held.bytes.buffer as ArrayBuffer);
    else if (err) held.settled.reject(err);
    else held.settled.resolve();
  }

  /** Sends the full batch (or with `part`, what it holds) to the stream's worker, binding one on first use. */
  #send(part = false): void {
    const batch = part ? this.#batch!.subarray(0, this.#filled) : this.#batch!;
    this.#batch = undefined;
    this.#filled = 0;
    if (this.#binding) {
      this.#held.push({ bytes: batch });
      return;
    }
    this.#lane ??= this.#bind();
    if (!this.#lane) {
      const starting = this.#starting();
      if (starting) {
        this.#held.push({ bytes: batch });
        this.#binding = starting.then(() => this.#bound());
        return;
      }
      this.#local = createMd5().update(batch);
      this.#shelf.give(batch.buffer);
      return;
    }
    this.#post(batch);
  }

  /** The wait for a worker is over: the held batches go to it, or are hashed here. */
  #bound(): void {
    this.#binding = undefined;
    if (this.#error) return; // aborted meanwhile: abort() gave the batches back
    const held = this.#held.splice(0);
    this.#lane = this.#bind();
    if (this.#lane) {
      for (const h of held) {
        const hashed = this.#post(h.bytes);
        if (h.settled) hashed.then(h.settled.resolve, h.settled.reject);
      }
    } else {
      this.#local = createMd5();
      for (const h of held) {
        this.#local.update(h.bytes);
        this.#letGo(h);
      }
    }
    this.#wake();
  }

  /**
   * Sends a batch (transferred) or shared bytes (read in place) to the stream's worker; settles
   * once the worker hashed them and the caller may add more.
   */
  #post(batch: Uint8Array<ArrayBuffer> | Uint8Array<SharedArrayBuffer>): Promise<void> {
    const lane = this.#lane!;
    this.#inFlight++;
    const hashed = lane.call(
      { op: "md5", id: 0, stream: this.#stream, bytes: batch, final: false },
      batch.buffer instanceof ArrayBuffer ? [batch.buffer] : [],
      COST.md5 * batch.byteLength,
    ).then(
      (answer) => {
        this.#inFlight--;
        if (answer.bytes) this.#shelf.give(answer.bytes.buffer);
        this.#wake();
      },
      (err: Error) => {
        this.#inFlight--;
        this.#error ??= err;
        this.#wake(err);
        throw err;
      },
    );
    hashed.catch(() => {}); // the stream's error surfaces through update and digest
    return hashed;
  }

  /** Lets a waiting `update` go on (or fail). */
  #wake(err?: Error): void {
    const waiter = this.#waiter;
    if (!waiter || (!err && this.#behind())) return;
    this.#waiter = undefined;
    if (err) waiter.reject(err);
    else waiter.resolve();
  }
}
