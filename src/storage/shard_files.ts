// Shard files: one per shard of a chunk, with a header carrying a checksum so bitrot is caught
// on every read. Written to a temp name, fsynced and renamed: a shard is whole or absent.
import zlib from "node:zlib";
import { join } from "node:path";
import { DIR_MODE, FILE_MODE } from "./private_modes.ts";
import type { Drive } from "./drives.ts";

const MAGIC = 0x53545348; // "STSH"
const VERSION = 1;
export const HEADER_SIZE = 16;

const crc32: (data: Uint8Array, value?: number) => number =
  (zlib as unknown as { crc32: (d: Uint8Array, v?: number) => number }).crc32;

export function shardPath(drive: Drive, chunkId: string, index: number): string {
  return join(drive.shardDir, chunkId.slice(0, 2), `${chunkId}.${index}`);
}

function header(index: number, payload: Uint8Array): Uint8Array {
  const h = new Uint8Array(HEADER_SIZE);
  const v = new DataView(h.buffer);
  v.setUint32(0, MAGIC);
  v.setUint8(4, VERSION);
  v.setUint8(5, index);
  v.setUint32(8, payload.byteLength);
  v.setUint32(12, crc32(payload));
  return h;
}

/** Writes one shard durably (file fsynced; the directory is synced by the caller). */
export async function writeShard(
  drive: Drive,
  chunkId: string,
  index: number,
  payload: Uint8Array,
): Promise<string> {
  const dir = join(drive.shardDir, chunkId.slice(0, 2));
  const tmp = join(drive.tmpDir, `${chunkId}.${index}.${crypto.randomUUID()}`);
  const file = await Deno.open(tmp, { write: true, createNew: true, mode: FILE_MODE });
  try {
    await writeAll(file, header(index, payload));
    await writeAll(file, payload);
    await file.sync();
  } catch (err) {
    file.close();
    await Deno.remove(tmp).catch(() => {});
    throw err;
  }
  file.close();
  await Deno.mkdir(dir, { recursive: true, mode: DIR_MODE });
  await Deno.rename(tmp, shardPath(drive, chunkId, index));
  return dir;
}

async function writeAll(file: Deno.FsFile, data: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < data.byteLength) offset += await file.write(data.subarray(offset));
}

export async function syncDir(path: string): Promise<void> {
  const dir = await Deno.open(path, { read: true });
  try {
    await dir.sync();
  } finally {
    dir.close();
  }
}

export type ShardRead =
  | { state: "ok"; payload: Uint8Array }
  | { state: "missing" }
  | { state: "corrupt"; reason: string }
  /** The drive failed to read (an I/O error, not bad content). */
  | { state: "error"; reason: string };

/** Reads and verifies a shard: its header, length and checksum must all match. */
export async function readShard(
  drive: Drive | undefined,
  chunkId: string,
  index: number,
  expectedLength: number,
): Promise<ShardRead> {
  if (!drive) return { state: "missing" };
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(shardPath(drive, chunkId, index));
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { state: "missing" };
    return { state: "error", reason: String(err) };
  }
  if (bytes.byteLength !== HEADER_SIZE + expectedLength) {
    return {
      state: "corrupt",
      reason: `length ${bytes.byteLength - HEADER_SIZE} != ${expectedLength}`,
    };
  }
  const v = new DataView(bytes.buffer, bytes.byteOffset, HEADER_SIZE);
  if (v.getUint32(0) !== MAGIC || v.getUint8(4) !== VERSION || v.getUint8(5) !== index) {
    return { state: "corrupt", reason: "bad header" };
  }
  const payload = bytes.subarray(HEADER_SIZE);
  if (v.getUint32(8) !== expectedLength || v.getUint32(12) !== crc32(payload)) {
    return { state: "corrupt", reason: "checksum mismatch" };
  }
  return { state: "ok", payload };
}

export async function removeShard(
  drive: Drive | undefined,
  chunkId: string,
  index: number,
): Promise<void> {
  if (!drive) return;
  try {
    await Deno.remove(shardPath(drive, chunkId, index));
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/** Whether a shard file exists with the expected length (a cheap check, no checksum). */
export async function shardPresent(
  drive: Drive | undefined,
  chunkId: string,
  index: number,
  expectedLength: number,
): Promise<boolean> {
  if (!drive) return false;
  try {
    return (await Deno.stat(shardPath(drive, chunkId, index))).size ===
      HEADER_SIZE + expectedLength;
  } catch {
    return false;
  }
}
