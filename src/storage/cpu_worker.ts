// A worker of the CPU pool (cpu_pool.ts): the hashing and compression of the write path, off the
// event loop. Every request but "md5-drop" and "gc" gets exactly one reply with its id; byte buffers come
// and go by transfer, and the input buffer is handed back so the pool can reuse it; a view on a
// SharedArrayBuffer is read in place and not handed back.
import { createHash } from "node:crypto";
import { createMd5, type Md5 } from "./md5.ts";
import { compressChunk, type CompressionMode, compressionPays } from "./codec.ts";
import { collectGarbage } from "../memory/gc.ts";
import { LaneStream, Md5Lanes } from "./md5x4/lanes.ts";

/** Request bytes are transferred, or shared (a SharedArrayBuffer view, read in place). */
type Bytes = Uint8Array<ArrayBuffer> | Uint8Array<SharedArrayBuffer>;

export type CpuRequest =
  /** Adds `bytes` to MD5 stream `stream` (created on first use); `final` also digests it. */
  | { op: "md5"; id: number; stream: number; bytes: Bytes; final: boolean }
  /** Forgets a stream without a digest; no reply. */
  | { op: "md5-drop"; stream: number }
  /**
   * A full collection, no reply: the worker's isolate keeps the shared buffers it was sent alive
   * until it collects (src/memory/release.ts).
   */
  | { op: "gc" }
  /** With `probe`, also tells whether compressChunk(bytes, "auto") would try the whole chunk. */
  | { op: "sha256"; id: number; bytes: Bytes; probe: boolean }
  | {
    op: "compress";
    id: number;
    bytes: Bytes;
    mode: CompressionMode;
    level?: number;
    segmentSize?: number;
  }
  /** Tests only: the worker dies of an uncaught exception. */
  | { op: "crash" };

export type CpuReply =
  | { ready: true }
  | {
    id: number;
    /** The request's buffer, given back for reuse (absent when it was shared). */
    bytes?: Uint8Array<ArrayBuffer>;
    md5?: Uint8Array<ArrayBuffer>;
    sha256?: string;
    /** The answer to `probe`. */
    worthCompressing?: boolean;
    packed?: Uint8Array<ArrayBuffer>;
  }
  | { id: number; error: string };

interface Scope {
  onmessage: ((e: MessageEvent<CpuRequest>) => void) | null;
  postMessage(message: CpuReply, transfer?: Transferable[]): void;
}
const scope = self as unknown as Scope;
const streams = new Map<number, Md5>();

type Md5Request = Extract<CpuRequest, { op: "md5" }>;

/**
 * With the SIMD lanes (md5x4/), MD5 requests wait for the next turn of the event loop, so that
 * the batches of several streams that arrived meanwhile are hashed together, one per stream and
 * pass; each stream's requests still go in order.
 */
const lanes = Md5Lanes.create();
const laneStreams = new Map<number, LaneStream>();
const waiting: Md5Request[] = [];
/** Streams dropped while requests of theirs were waiting: those are answered unhashed. */
const dropped = new Set<number>();
let drainScheduled = false;

function queueMd5(req: Md5Request): void {
  waiting.push(req);
  if (drainScheduled) return;
  drainScheduled = true;
  setTimeout(drainMd5, 0);
}

function drainMd5(): void {
  drainScheduled = false;
  while (waiting.length > 0) {
    // The first waiting request of each stream, four streams at most, in arrival order.
    const picked: Md5Request[] = [];
    const rest: Md5Request[] = [];
    for (const req of waiting) {
      if (picked.length < 4 && !picked.some((p) => p.stream === req.stream)) picked.push(req);
      else rest.push(req);
    }
    waiting.splice(0, waiting.length, ...rest);
    const live = picked.filter((r) => !dropped.has(r.stream));
    try {
      lanes!.update(live.map((r) => ({ stream: laneStream(r.stream), bytes: r.bytes })));
    } catch (err) {
      for (const r of live) laneStreams.delete(r.stream);
      for (const r of picked) {
        scope.postMessage({ id: r.id, error: err instanceof Error ? err.message : String(err) });
      }
      continue;
    }
    for (const r of picked) {
      const { bytes, transfer } = back(r.bytes);
      const stream = laneStreams.get(r.stream);
      const md5 = r.final && stream && !dropped.has(r.stream) ? lanes!.digest(stream) : undefined;
      if (r.final || (dropped.has(r.stream) && !waiting.some((w) => w.stream === r.stream))) {
        laneStreams.delete(r.stream);
        dropped.delete(r.stream);
      }
      scope.postMessage({ id: r.id, bytes, md5 }, transfer.map((b) => b.buffer));
    }
  }
}

function laneStream(id: number): LaneStream {
  let stream = laneStreams.get(id);
  if (!stream) laneStreams.set(id, stream = new LaneStream());
  return stream;
}

/**
 * The request's buffer for the reply: handed back by transfer, or left out when it is shared
 * memory (the pool's caller owns it; nothing to give back).
 */
function back(bytes: Uint8Array<ArrayBufferLike>): {
  bytes?: Uint8Array<ArrayBuffer>;
  transfer: Uint8Array<ArrayBuffer>[];
} {
  if (!(bytes.buffer instanceof ArrayBuffer)) return { transfer: [] };
  const own = bytes as Uint8Array<ArrayBuffer>;
  return { bytes: own, transfer: [own] };
}

/** A view that covers its whole buffer, so transferring the buffer sends nothing else. */
function whole(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const own = bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 &&
    bytes.byteLength === bytes.buffer.byteLength;
  return (own ? bytes : bytes.slice()) as Uint8Array<ArrayBuffer>;
}

async function handle(
  req: Exclude<CpuRequest, { op: "md5-drop" } | { op: "gc" } | { op: "crash" }>,
) {
  switch (req.op) {
    case "md5": {
      let hash = streams.get(req.stream);
      if (!hash) streams.set(req.stream, hash = createMd5());
      hash.update(req.bytes);
      const { bytes, transfer } = back(req.bytes);
      if (!req.final) return { reply: { id: req.id, bytes }, transfer };
      streams.delete(req.stream);
      const md5 = hash.digest();
      return { reply: { id: req.id, bytes, md5 }, transfer };
    }
    case "sha256": {
      const sha256 = createHash("sha256").update(req.bytes).digest("hex");
      const worthCompressing = req.probe ? await compressionPays(req.bytes) : undefined;
      const { bytes, transfer } = back(req.bytes);
      return { reply: { id: req.id, bytes, sha256, worthCompressing }, transfer };
    }
    case "compress": {
      const found = await compressChunk(req.bytes, req.mode, req.level, req.segmentSize);
      const packed = found && whole(found);
      const { bytes, transfer } = back(req.bytes);
      return {
        reply: { id: req.id, bytes, packed },
        transfer: packed ? [...transfer, packed] : transfer,
      };
    }
  }
}

scope.onmessage = (e) => {
  const req = e.data;
  if (req.op === "md5-drop") {
    streams.delete(req.stream);
    if (waiting.some((w) => w.stream === req.stream)) dropped.add(req.stream);
    else laneStreams.delete(req.stream);
    return;
  }
  if (req.op === "gc") {
    collectGarbage();
    return;
  }
  if (req.op === "crash") throw new Error("CPU worker crash requested");
  if (req.op === "md5" && lanes) {
    queueMd5(req);
    return;
  }
  const id = req.id;
  handle(req).then(
    ({ reply, transfer }) => scope.postMessage(reply, transfer.map((b) => b.buffer)),
    (err) => scope.postMessage({ id, error: err instanceof Error ? err.message : String(err) }),
  );
};

scope.postMessage({ ready: true });
