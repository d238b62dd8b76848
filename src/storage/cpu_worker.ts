// A worker of the CPU pool (cpu_pool.ts): the hashing and compression of the write path, off the
// event loop. Every request but "md5-drop" and "gc" gets exactly one reply with its id; byte buffers come
// and go by transfer, and the input buffer is handed back so the pool can reuse it; a view on a
// SharedArrayBuffer is read in place and not handed back.
import { createHash } from "node:crypto";
import { createMd5, type Md5 } from "./md5.ts";
import { autoProbe, compressChunk, type CompressionMode } from "./codec.ts";
import { collectGarbage } from "../memory/gc.ts";

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
      const worthCompressing = req.probe ? (await autoProbe(req.bytes)) !== undefined : undefined;
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
    return;
  }
  if (req.op === "gc") {
    collectGarbage();
    return;
  }
  if (req.op === "crash") throw new Error("CPU worker crash requested");
  const id = req.id;
  handle(req).then(
    ({ reply, transfer }) => scope.postMessage(reply, transfer.map((b) => b.buffer)),
    (err) => scope.postMessage({ id, error: err instanceof Error ? err.message : String(err) }),
  );
};

scope.postMessage({ ready: true });
