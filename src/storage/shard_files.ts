// Shard files: one per shard of a chunk, with checksums so bitrot is caught on every read.
// Written to a temp name, fsynced and renamed: a shard is whole or absent.
//
// Layout (all integers big-endian):
//   header, 16 bytes: magic "STSH" | version u8 | shard index u8 | log2(block size) u8 | 0 u8 |
//                     payload length u32 | checksum u32
//   version 1 (read only): payload; the checksum is the CRC-32 of the whole payload.
//   version 2 (written):   block table | payload. The table holds the CRC-32 of each 16 KiB block
//                          of the payload (the last one may be shorter); the header's checksum is
//                          the CRC-32 of the header's first 12 bytes followed by the table. A range
//                          of the payload is read and verified by reading only the header, the
//                          table and the blocks it overlaps (readShardRange).
import type { KeptFiles } from "./kept_files.ts";
import { join } from "node:path";
import { crc32 } from "../http/crc.ts";
import { badBlockIn } from "./block_crc.ts";
import { DIR_MODE, FILE_MODE } from "./private_modes.ts";
import type { Drive } from "./drives.ts";

const MAGIC = 0x53545348; // "STSH"
const WHOLE_CRC = 1;
const BLOCK_CRCS = 2;
export const HEADER_SIZE = 16;
const BLOCK_LOG2 = 14;
/** The unit a range read fetches and verifies. */
export const BLOCK_SIZE = 1 << BLOCK_LOG2;

function blockCount(length: number, blockSize = BLOCK_SIZE): number {
  return Math.ceil(length / blockSize);
}

/** The size of a (version 2) shard file holding `length` payload bytes. */
export function shardFileSize(length: number): number {
  return HEADER_SIZE + 4 * blockCount(length) + length;
}

export function shardPath(drive: Drive, chunkId: string, index: number): string {
  return join(drive.shardDir, chunkId.slice(0, 2), `${chunkId}.${index}`);
}

/** The header and block table of a shard holding `payload`. */
function headerAndTable(index: number, payload: Uint8Array): Uint8Array {
  const blocks = blockCount(payload.byteLength);
  const out = new Uint8Array(HEADER_SIZE + 4 * blocks);
  const v = new DataView(out.buffer);
  v.setUint32(0, MAGIC);
  v.setUint8(4, BLOCK_CRCS);
  v.setUint8(5, index);
  v.setUint8(6, BLOCK_LOG2);
  v.setUint32(8, payload.byteLength);
  for (let b = 0; b < blocks; b++) {
    v.setUint32(HEADER_SIZE + 4 * b, crc32(payload.subarray(b * BLOCK_SIZE, (b + 1) * BLOCK_SIZE)));
  }
  v.setUint32(12, tableChecksum(out));
  return out;
}

/** The checksum of a version 2 header: its first 12 bytes and the block table after it. */
function tableChecksum(headerAndTable: Uint8Array): number {
  return crc32(headerAndTable.subarray(HEADER_SIZE), crc32(headerAndTable.subarray(0, 12)));
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
    await writeAll(file, headerAndTable(index, payload));
    await writeAll(file, payload);
    await file.sync();
  } catch (err) {
    file.close();
    await Deno.remove(tmp).catch(() => {});
    throw err;
  }
  file.close();
  await Deno.mkdir(dir, { recursive: true, mode: DIR_MODE });
  const path = shardPath(drive, chunkId, index);
  await Deno.rename(tmp, path);
  keptHeads.delete(path);
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

/** Why a shard could not be used. */
type ShardProblem =
  | { state: "missing" }
  | { state: "corrupt"; reason: string }
  /** The drive failed to read (an I/O error, not bad content). */
  | { state: "error"; reason: string };
export type ShardRead = { state: "ok"; payload: Uint8Array } | ShardProblem;
export type ShardState = { state: "ok" } | ShardProblem;

const corrupt = (reason: string): ShardProblem => ({ state: "corrupt", reason });

/** A parsed header, or why it is not one of shard `index` with `expectedLength` bytes. */
function parseHeader(
  bytes: Uint8Array,
  index: number,
  expectedLength: number,
): { version: number; blockSize: number; checksum: number } | string {
  if (bytes.byteLength < HEADER_SIZE) return "bad header";
  const v = new DataView(bytes.buffer, bytes.byteOffset, HEADER_SIZE);
  const version = v.getUint8(4);
  if (v.getUint32(0) !== MAGIC || v.getUint8(5) !== index) return "bad header";
  if (version !== WHOLE_CRC && version !== BLOCK_CRCS) return `unknown version ${version}`;
  if (v.getUint32(8) !== expectedLength) return `length ${v.getUint32(8)} != ${expectedLength}`;
  const log2 = v.getUint8(6);
  if (version === BLOCK_CRCS && (log2 < 9 || log2 > 24)) return "bad block size";
  return { version, blockSize: 1 << log2, checksum: v.getUint32(12) };
}

/** Reads and verifies a whole shard: its header, length and every checksum must match. */
export async function readShard(
  drive: Drive | undefined,
  chunkId: string,
  index: number,
  expectedLength: number,
): Promise<ShardRead> {
  if (!drive) return { state: "missing" };
  let bytes: Uint8Array;
  try {
    bytes = await readWhole(shardPath(drive, chunkId, index));
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { state: "missing" };
    return { state: "error", reason: String(err) };
  }
  const h = parseHeader(bytes, index, expectedLength);
  if (typeof h === "string") return corrupt(h);
  if (h.version === WHOLE_CRC) {
    if (bytes.byteLength !== HEADER_SIZE + expectedLength) return corrupt("file length");
    const payload = bytes.subarray(HEADER_SIZE);
    return h.checksum === crc32(payload) ? { state: "ok", payload } : corrupt("checksum mismatch");
  }
  const start = HEADER_SIZE + 4 * blockCount(expectedLength, h.blockSize);
  if (bytes.byteLength !== start + expectedLength) return corrupt("file length");
  const head = bytes.subarray(0, start);
  if (tableChecksum(head) !== h.checksum) return corrupt("block table checksum mismatch");
  const payload = bytes.subarray(start);
  const table = new DataView(head.buffer, head.byteOffset + HEADER_SIZE);
  const bad = badBlockIn(table, 0, payload, h.blockSize);
  return bad ? corrupt(bad) : { state: "ok", payload };
}

/**
 * Reads bytes [from, to) of a shard's payload into `into` (to - from bytes), verified. A version
 * 2 shard is read only where the range is: its header and block table, the whole blocks under
 * the range straight into `into`, and the partly covered first and last blocks through a
 * block-sized scratch buffer. A version 1 shard has one checksum over everything, so it is read
 * and verified whole.
 */
export async function readShardRange(
  drive: Drive | undefined,
  chunkId: string,
  index: number,
  expectedLength: number,
  from: number,
  to: number,
  into: Uint8Array,
  files?: KeptFiles,
): Promise<ShardState> {
  if (!drive) return { state: "missing" };
  const path = shardPath(drive, chunkId, index);
  const kept = keptHeads.get(path);
  const shard = { drive, chunkId, index, expectedLength, path };
  const read = await readRangeOf(shard, from, to, into, kept, files);
  if (read.state !== "corrupt" || (!kept && !files)) return read;
  // The file may have changed behind the kept head, or been replaced (healed) behind a kept file,
  // which still reads the file it opened: read again, afresh, before the shard is called bad.
  keptHeads.delete(path);
  return await readRangeOf(shard, from, to, into, undefined);
}

/**
 * The header and block table of version 2 shards read lately, by path: a GET reads a chunk in 1
 * MiB pieces, and read the same head again for each (one file read of three per piece). Shard
 * files change only through writeShard and removeShard, which drop their entry here; a kept head
 * that does not verify a read is dropped and the read made again from the file. Every block read
 * is still checked, against a table that was checked when its head was read; a table damaged on
 * disk since is found by the next read of the head (or the scrub, which reads shards whole).
 */
const HEADS_KEPT = 1024;
const keptHeads = new Map<string, Uint8Array>();

function keepHead(path: string, head: Uint8Array): void {
  if (keptHeads.size >= HEADS_KEPT) keptHeads.delete(keptHeads.keys().next().value!);
  keptHeads.set(path, head);
}

async function readRangeOf(
  shard: { drive: Drive; chunkId: string; index: number; expectedLength: number; path: string },
  from: number,
  to: number,
  into: Uint8Array,
  kept: Uint8Array | undefined,
  files?: KeptFiles,
): Promise<ShardState> {
  const { drive, chunkId, index, expectedLength, path } = shard;
  let file: Deno.FsFile;
  try {
    file = files ? await files.open(path) : await Deno.open(path, { read: true });
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { state: "missing" };
    return { state: "error", reason: String(err) };
  }
  /** The read went well: a kept file may serve the next one. */
  let ok = false;
  try {
    // Header and table in one read, sized for the block size this version writes (a file just
    // opened is at its start; a kept one is wherever its last read left it).
    let head = kept ?? new Uint8Array(HEADER_SIZE + 4 * blockCount(expectedLength));
    if (!kept) {
      head = head.subarray(0, await (files ? readAt(file, 0, head) : readFull(file, head)));
    }
    const h = parseHeader(head, index, expectedLength);
    if (typeof h === "string") return corrupt(h);
    if (h.version === WHOLE_CRC) {
      const whole = await readShard(drive, chunkId, index, expectedLength);
      if (whole.state === "ok") into.set(whole.payload.subarray(from, to));
      return whole.state === "ok" ? { state: "ok" } : whole;
    }
    const bs = h.blockSize;
    const start = HEADER_SIZE + 4 * blockCount(expectedLength, bs);
    if (head.byteLength !== start) {
      head = new Uint8Array(start);
      if (await readAt(file, 0, head) !== start) return corrupt("file length");
    }
    if (tableChecksum(head) !== h.checksum) return corrupt("block table checksum mismatch");
    if (!kept) keepHead(path, head);
    const table = new DataView(head.buffer, head.byteOffset + HEADER_SIZE);
    /** Reads blocks [b, ...) of the payload into `buf` and verifies them. */
    const read = async (b: number, buf: Uint8Array): Promise<string | undefined> => {
      if (await readAt(file, start + b * bs, buf) !== buf.byteLength) return "file length";
      return badBlockIn(table, b, buf, bs);
    };
    /** A block partly under the range: read whole, the covered part copied. */
    const partial = async (b: number): Promise<string | undefined> => {
      const block = new Uint8Array(Math.min(bs, expectedLength - b * bs));
      const bad = await read(b, block);
      const lo = Math.max(from, b * bs);
      const hi = Math.min(to, b * bs + block.byteLength);
      if (!bad) into.set(block.subarray(lo - b * bs, hi - b * bs), lo - from);
      return bad;
    };
    // Blocks wholly under the range: [firstWhole, endWhole).
    const firstWhole = Math.ceil(from / bs);
    const endWhole = to === expectedLength ? blockCount(expectedLength, bs) : Math.floor(to / bs);
    const headBlock = Math.floor(from / bs);
    const tailBlock = Math.floor(to / bs);
    const problems = [
      from % bs !== 0 ? await partial(headBlock) : undefined,
      endWhole > firstWhole
        ? await read(
          firstWhole,
          into.subarray(firstWhole * bs - from, Math.min(endWhole * bs, expectedLength) - from),
        )
        : undefined,
      tailBlock >= endWhole && to % bs !== 0 && (tailBlock !== headBlock || from % bs === 0)
        ? await partial(tailBlock)
        : undefined,
    ];
    const bad = problems.find((p) => p !== undefined);
    ok = !bad;
    return bad ? corrupt(bad) : { state: "ok" };
  } catch (err) {
    return { state: "error", reason: String(err) };
  } finally {
    if (files) files.done(path, file, ok);
    else file.close();
  }
}

/**
 * The bytes of a shard file, read into a buffer allocated here rather than by Deno.readFile,
 * whose buffer comes from the malloc arena of the I/O thread that read it: freed later by the
 * GC, such buffers left hundreds of MiB resident after large GETs (README, Memory).
 */
async function readWhole(path: string): Promise<Uint8Array> {
  const file = await Deno.open(path, { read: true });
  try {
    const buf = new Uint8Array((await file.stat()).size);
    return buf.subarray(0, await readFull(file, buf));
  } finally {
    file.close();
  }
}

/** Fills `buf` from `position` of `file`; the bytes read (fewer at the end of the file). */
async function readAt(file: Deno.FsFile, position: number, buf: Uint8Array): Promise<number> {
  // lseek only sets the file's offset (no I/O): synchronous, it spares a read the cost of an async
  // operation (a thread hop and a promise), which is what a 1 MiB piece's reading mostly costs.
  file.seekSync(position, Deno.SeekMode.Start);
  return await readFull(file, buf);
}

/**
 * Fills `buf` from the file's current position (a file just opened is at its start: no seek,
 * one operation less per read piece); the bytes read.
 */
async function readFull(file: Deno.FsFile, buf: Uint8Array): Promise<number> {
  let got = 0;
  while (got < buf.byteLength) {
    const n = await file.read(buf.subarray(got));
    if (n === null) break;
    got += n;
  }
  return got;
}

export async function removeShard(
  drive: Drive | undefined,
  chunkId: string,
  index: number,
): Promise<void> {
  if (!drive) return;
  const path = shardPath(drive, chunkId, index);
  keptHeads.delete(path);
  try {
    await Deno.remove(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/** Whether a shard file exists with a length it can have (a cheap check, no checksum). */
export async function shardPresent(
  drive: Drive | undefined,
  chunkId: string,
  index: number,
  expectedLength: number,
): Promise<boolean> {
  if (!drive) return false;
  try {
    const { size } = await Deno.stat(shardPath(drive, chunkId, index));
    return size === shardFileSize(expectedLength) || size === HEADER_SIZE + expectedLength;
  } catch {
    return false;
  }
}
