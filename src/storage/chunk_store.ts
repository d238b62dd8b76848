// Chunks: content-addressed pieces of objects, encoded (zstd, AES-256-GCM), erasure-coded into
// k data + m parity shards spread over the drives, verified on every read and healed.
//
// The stored bytes of a chunk are split into k contiguous slices, one per data shard, so a byte
// range of them is read from the data shards it overlaps, fetching and verifying only the shard
// blocks under it. A range of a chunk stored as it is (not compressed, not encrypted) is such a
// byte range; a compressed or encrypted chunk is written as independently decodable segments
// (codec.ts), whose table and the bodies of the segments under the range are read and decoded
// (readRange). A range whose shards are missing or corrupt, a whole chunk, and a compressed or
// encrypted chunk written before segments are read whole: decoded, rebuilt, and healed (queued
// for the healer).
import type { ChunkRecord, MetaStore } from "../meta/store.ts";
import {
  ChunkIntegrityError,
  type CompressionMode,
  decodeChunk,
  decodeSegment,
  encodeChunk,
  encodePrepared,
  releaseOwned,
  SEGMENT_SIZE,
  segmentBounds,
  segmentCount,
  segmentTableSize,
} from "./codec.ts";
import { type ChunkWork, type CpuPool, inlineCpu } from "./cpu_pool.ts";
import { type Drive, type DriveSet, placeShards } from "./drives.ts";
import type { DriveMonitor } from "./drive_monitor.ts";
import { join, ReedSolomon, split } from "./erasure/reed_solomon.ts";
import { ChunkClaims } from "./chunk_claims.ts";
import { Reclaimer } from "./reclaimer.ts";
import { ReadPins } from "./read_pins.ts";
import type { KeptFiles } from "./kept_files.ts";
import {
  BLOCK_SIZE,
  readShard,
  readShardRange,
  removeShard,
  shardPresent,
  type ShardRead,
  syncDir,
  writeShard,
} from "./shard_files.ts";
import { log } from "../log.ts";

export interface ErasureLayout {
  dataShards: number;
  parityShards: number;
}

export interface ChunkStoreOptions {
  drives: DriveSet;
  layout: ErasureLayout;
  compression: CompressionMode;
  dedup: boolean;
  /** Where hashing and compression run; inline on the calling thread when absent. */
  cpu?: CpuPool;
  /** Which drives are usable (all present ones when absent). */
  monitor?: DriveMonitor;
}

/** A chunk could not be read: too many shards are missing or corrupt. */
export class ChunkLostError extends Error {}

export interface ChunkHealth {
  id: string;
  /** Shards that were missing or corrupt, by index. */
  bad: number[];
  healed: number[];
  lost: boolean;
  /** Freed since its record was read: not checked (see verify). */
  gone?: boolean;
}

/** Freed chunks whose shards are removed at once. */
const COLLECT_PARALLEL = 8;
/** Freed chunks waiting for removal past which a freeing request waits (~100 bytes each). */
const COLLECT_BACKLOG = 8192;
const coders = new Map<string, ReedSolomon>();

function coder(k: number, m: number): ReedSolomon {
  const key = `${k}+${m}`;
  let rs = coders.get(key);
  if (!rs) coders.set(key, rs = new ReedSolomon(k, m));
  return rs;
}

/** Whether the chunk's stored bytes are its plaintext (so a range maps onto its data shards). */
function storedAsIs(rec: ChunkRecord): boolean {
  return rec.compression === "none" && !rec.encrypted && rec.storedSize === rec.plainSize;
}

function randomId(): string {
  return crypto.getRandomValues(new Uint8Array(32)).toHex();
}

/**
 * How a node whose metadata is shared with other nodes (src/cluster/shared_meta.ts) reads chunks
 * another node wrote and records the chunks it stores: the chunk rows are shared, the shards are
 * each node's own.
 */
export interface ChunkResolver {
  /** The chunk as this node holds it: its own holding, or fetched from a node that holds it. */
  local(rec: ChunkRecord): Promise<ChunkRecord>;
  /** How this node holds the chunk already, if it does. */
  held(id: string): Promise<ChunkRecord | undefined>;
  /** This node now holds the chunk's shards as `rec` says. */
  stored(rec: ChunkRecord): Promise<void>;
  /** This node's holding `rec` cannot be read: it is forgotten, so `local` fetches it again. */
  lost(rec: ChunkRecord): Promise<void>;
}

export class ChunkStore {
  readonly claims: ChunkClaims;
  /** Set on a node that shares its metadata with other nodes. */
  resolver?: ChunkResolver;
  /**
   * Takes a chunk a read or write found with a missing or bad shard to heal it in the
   * background; false when it cannot (no healer, queue full): a read then heals it itself.
   */
  queueHeal: (chunkId: string) => boolean = () => false;

  /** Removes freed chunks after their request answered (see reclaimer.ts). */
  readonly reclaimer: Reclaimer;
  /** Chunks GETs in progress read: their removal waits for them (see read_pins.ts). */
  readonly reads = new ReadPins();

  constructor(readonly meta: MetaStore, readonly options: ChunkStoreOptions) {
    this.claims = new ChunkClaims(meta);
    this.reclaimer = new Reclaimer({
      remove: (rec) => this.claims.collect(rec.id, () => this.#removeUnread(rec.id, rec.drives)),
      parallel: COLLECT_PARALLEL,
      backlog: COLLECT_BACKLOG,
    });
  }

  /** The drive with this id when shard I/O may use it. */
  drive(id: number): Drive | undefined {
    const { monitor, drives } = this.options;
    return monitor ? monitor.usable(id) : drives.byId.get(id);
  }

  /** The CPU pool of the write path (also used for the MD5 of bodies). */
  get cpu(): CpuPool {
    return this.options.cpu ?? inlineCpu;
  }

  /**
   * Stores one chunk of plaintext and returns its record. The chunk id stays claimed until the
   * caller calls `claims.release(id)` after committing (or abandoning) the metadata, so it
   * cannot be collected in between. Unencrypted chunks with dedup on are content-addressed: an
   * existing chunk is not written again.
   */
  async write(plain: Uint8Array, opts: { key?: CryptoKey } = {}): Promise<ChunkRecord> {
    const addressed = this.options.dedup && !opts.key;
    const work = this.cpu.chunk(plain);
    try {
      const id = addressed ? await work.sha256(this.options.compression) : randomId();
      await this.claims.claim(id);
      try {
        const existing = addressed ? await this.meta.getChunk(id) : undefined;
        if (existing && this.resolver && !this.isLocal(existing)) {
          await this.#holdHere(existing, plain, work);
          return existing;
        }
        if (existing) return await this.#reuse(existing, plain);
        const rec = await this.#encodeAndWrite(id, plain, work, opts.key);
        await this.resolver?.stored(rec);
        return rec;
      } catch (err) {
        await this.release(id);
        throw err;
      }
    } finally {
      work.done();
    }
  }

  /**
   * Ends the claim `write` took. A chunk written for a commit that did not happen (a bad digest,
   * a crash of the request) is removed here, unless another writer claimed or committed it.
   */
  release(id: string): Promise<void> {
    const { dataShards: k, parityShards: m } = this.options.layout;
    const drives = placeShards(id, k + m, this.options.drives.list);
    return this.claims.release(id, () => this.#removeUnread(id, drives));
  }

  /**
   * Removes the shards of a chunk nothing refers to (called under its claim lock); while a GET
   * still reads it, the removal waits for the last reader and is then tried again as a
   * collection (a writer may have claimed or committed the chunk meanwhile).
   */
  #removeUnread(id: string, drives: number[]): Promise<void> {
    const deferred = this.reads.deferWhileRead(id, () => {
      this.claims.collect(id, () => this.#removeUnread(id, drives)).catch((err) =>
        log("error", "Removing a freed chunk failed; the next start's sweep retries it", {
          chunk: id,
          error: String(err),
        })
      );
    });
    return deferred ? Promise.resolve() : this.#removeShards(id, drives);
  }

  /**
   * Reads another node's chunk through this node's holding of it (fetched first when there is
   * none); a holding that turns out lost is fetched again, once.
   */
  async #resolved<T>(rec: ChunkRecord, read: (held: ChunkRecord) => Promise<T>): Promise<T> {
    const resolver = this.resolver!;
    const held = await resolver.local(rec);
    try {
      return await read(held);
    } catch (err) {
      if (!(err instanceof ChunkLostError)) throw err;
      await resolver.lost(held);
      return await read(await resolver.local(rec));
    }
  }

  /** Whether the chunk's shards are on this node's drives. */
  isLocal(rec: ChunkRecord): boolean {
    return rec.drives.some((d) => this.options.drives.byId.has(d));
  }

  /**
   * A chunk another node stored (shared metadata) that this write also has the plaintext of:
   * kept as it is when this node holds it already, else stored here too.
   */
  async #holdHere(rec: ChunkRecord, plain: Uint8Array, work: ChunkWork): Promise<void> {
    const mine = await this.resolver!.held(rec.id);
    if (mine && !(await this.verify(mine)).lost) return;
    await this.resolver!.stored(await this.#encodeAndWrite(rec.id, plain, work));
  }

  /**
   * The stored bytes of a chunk on this node's drives (compressed and sealed as `rec` says),
   * rebuilt from parity when a shard is bad: what another node sharing the metadata fetches.
   */
  async readStoredBytes(rec: ChunkRecord): Promise<Uint8Array> {
    return (await this.#readStored(rec, { heal: "queue" })).stored;
  }

  /**
   * Stores the stored bytes of a chunk fetched from another node in this node's own layout;
   * returns how this node holds it (the caller records it).
   */
  async writeStoredBytes(form: ChunkRecord, stored: Uint8Array): Promise<ChunkRecord> {
    const { dataShards: k, parityShards: m } = this.options.layout;
    const shards = shardsOf(stored, k);
    if (m > 0) {
      const parity = Array.from({ length: m }, () => new Uint8Array(shards[0].byteLength));
      coder(k, m).encode(shards, parity);
      shards.push(...parity);
    }
    const drives = placeShards(form.id, k + m, this.options.drives.list);
    await this.#writeShards(form.id, shards, drives, k + (m > 0 ? 1 : 0));
    return { ...form, dataShards: k, parityShards: m, drives };
  }

  /** Removes this node's shards of a chunk it holds as `rec` says. */
  removeHeld(rec: ChunkRecord): Promise<void> {
    return this.#removeShards(rec.id, rec.drives);
  }

  async #encodeAndWrite(
    id: string,
    plain: Uint8Array,
    work: ChunkWork,
    key?: CryptoKey,
  ): Promise<ChunkRecord> {
    const { dataShards: k, parityShards: m } = this.options.layout;
    // encodeChunk in two steps: compression on the CPU pool, encryption (WebCrypto) here.
    const packed = await work.compress(this.options.compression, undefined, SEGMENT_SIZE);
    work.done();
    const { bytes, form } = await encodePrepared(plain, packed, {
      key,
      aad: key ? new TextEncoder().encode(id) : undefined,
      segmentSize: SEGMENT_SIZE,
    });
    const shards = shardsOf(bytes, k);
    if (m > 0) {
      const parity = Array.from({ length: m }, () => new Uint8Array(shards[0].byteLength));
      coder(k, m).encode(shards, parity);
      shards.push(...parity);
    }
    const drives = placeShards(id, k + m, this.options.drives.list);
    await this.#writeShards(id, shards, drives, k + (m > 0 ? 1 : 0));
    const record: ChunkRecord = {
      id,
      plainSize: plain.byteLength,
      storedSize: bytes.byteLength,
      compression: form.compression,
      encrypted: form.encrypted,
      ...(form.segmentSize ? { segmentSize: form.segmentSize } : {}),
      dataShards: k,
      parityShards: m,
      drives,
    };
    // Written: what was made for this write (the compressed or sealed form, the shards cut from
    // it, parity) is given back now, not left to the collector.
    for (const made of [packed, bytes, ...shards]) {
      if (made && made.buffer !== plain.buffer) releaseOwned(made);
    }
    return record;
  }

  /**
   * Writes shards to their drives and waits for every write to settle (so a failure cannot race
   * a cleanup). A chunk is stored when at least `quorum` shards are durable; the others (a drive
   * that vanished) are rebuilt by reads and scrubs once it is back.
   */
  async #writeShards(
    id: string,
    shards: Uint8Array[],
    drives: number[],
    quorum: number,
  ): Promise<void> {
    const monitor = this.options.monitor;
    const results = await Promise.allSettled(
      shards.map(async (s, i) => {
        const drive = this.drive(drives[i]);
        if (!drive) {
          await monitor?.missedWrite(drives[i]);
          throw new Error(`Drive ${drives[i]} is offline or gone`);
        }
        try {
          const dir = await writeShard(drive, id, i, s);
          monitor?.succeeded(drive.id);
          return dir;
        } catch (err) {
          monitor?.failed(drive.id, err);
          this.queueHeal(id);
          throw err;
        }
      }),
    );
    const dirs = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const synced = await Promise.allSettled([...new Set(dirs)].map(syncDir));
    const failed = results.find((r) => r.status === "rejected") ??
      synced.find((r) => r.status === "rejected");
    if (
      dirs.length < Math.min(quorum, shards.length) || synced.some((r) => r.status === "rejected")
    ) {
      throw (failed as PromiseRejectedResult).reason;
    }
  }

  /**
   * A deduplicated write reuses an existing chunk only when its shards are there: missing ones
   * are healed from the others, or, when too few remain, rewritten from the plaintext at hand.
   * An acknowledged write never refers to a chunk that cannot be read.
   */
  async #reuse(rec: ChunkRecord, plain: Uint8Array): Promise<ChunkRecord> {
    const n = rec.dataShards + rec.parityShards;
    const shardLen = Math.ceil(rec.storedSize / rec.dataShards) || 0;
    const present = await Promise.all(
      rec.drives.map((d, i) => shardPresent(this.drive(d), rec.id, i, shardLen)),
    );
    const count = present.filter(Boolean).length;
    if (count === n) return rec;
    if (count >= rec.dataShards && !(await this.verify(rec)).lost) return rec;
    const { bytes, form } = await encodeChunk(plain, {
      compression: rec.compression === "zstd" ? "on" : "off",
      segmentSize: rec.segmentSize ?? 0,
    });
    if (bytes.byteLength !== rec.storedSize || form.compression !== rec.compression) {
      throw new ChunkLostError(`Chunk ${rec.id} is lost and cannot be rebuilt from this upload`);
    }
    const shards = shardsOf(bytes, rec.dataShards);
    if (rec.parityShards > 0) {
      const parity = Array.from(
        { length: rec.parityShards },
        () => new Uint8Array(shards[0].byteLength),
      );
      coder(rec.dataShards, rec.parityShards).encode(shards, parity);
      shards.push(...parity);
    }
    await this.#writeShards(
      rec.id,
      shards,
      rec.drives,
      rec.dataShards + (rec.parityShards > 0 ? 1 : 0),
    );
    return rec;
  }

  /**
   * The chunk's plaintext; missing or corrupt shards are rebuilt from the others, and the chunk
   * is queued for healing (healed here when the queue does not take it).
   */
  async read(rec: ChunkRecord, opts: { key?: CryptoKey } = {}): Promise<Uint8Array> {
    if (this.resolver && !this.isLocal(rec)) {
      return await this.#resolved(rec, (held) => this.read(held, opts));
    }
    const { stored } = await this.#readStored(rec, { heal: "queue" });
    const plain = await decodeChunk(stored, rec, {
      key: opts.key,
      aad: rec.encrypted ? new TextEncoder().encode(rec.id) : undefined,
      size: rec.plainSize,
    });
    if (plain.byteLength !== rec.plainSize) {
      throw new ChunkLostError(
        `Chunk ${rec.id} decoded to ${plain.byteLength} bytes, not ${rec.plainSize}`,
      );
    }
    return plain;
  }

  /**
   * Bytes [from, to) of the chunk's plaintext. A part of a chunk stored as it is, or of a
   * segmented one, reads only the shard blocks under it (and decodes only its segments); whole
   * chunks, chunks in one piece, and ranges whose shards are missing or corrupt are read whole
   * (rebuilt, and queued for healing). The answer holds no more memory than heldBytes says.
   * `into`: a buffer a part of a chunk stored as it is may be read into (the answer is then a
   * view of it; any other answer is a buffer of its own). `files`: the reader's kept shard files,
   * for a part read from the shards directly.
   */
  async readRange(
    rec: ChunkRecord,
    from: number,
    to: number,
    opts: { key?: CryptoKey; into?: Uint8Array; files?: KeptFiles } = {},
  ): Promise<Uint8Array> {
    if (from < 0 || to > rec.plainSize || from > to) {
      throw new RangeError(`Range ${from}-${to} is outside chunk ${rec.id} (${rec.plainSize})`);
    }
    if (from === to) return new Uint8Array(0);
    if (this.resolver && !this.isLocal(rec)) {
      return await this.#resolved(rec, (held) => this.readRange(held, from, to, opts));
    }
    // A whole chunk is read as such: every data shard verified whole (padding-only ones too).
    const whole = from === 0 && to === rec.plainSize;
    if (!whole && storedAsIs(rec)) {
      const direct = await this.#readDirect(rec, from, to, opts.into, opts.files);
      if (direct) return direct;
    } else if (!whole && rec.segmentSize) {
      const decoded = await this.#readSegments(rec, from, to, opts);
      if (decoded) return decoded;
    }
    // Whole, in one piece, or a shard is missing or corrupt: the chunk is read whole, which
    // rebuilds it and queues its heal; a part is copied out, so that the whole chunk is not kept.
    const plain = await this.read(rec, opts);
    return whole ? plain : plain.slice(from, to);
  }

  /**
   * Whether a part of this chunk is read without the rest: it is stored as it is, or in
   * segments (decoded by the segments under the part).
   */
  readsInPieces(rec: ChunkRecord): boolean {
    return storedAsIs(rec) || !!rec.segmentSize;
  }

  /**
   * Where a piece of at most `max` bytes starting at `from` should end (at most `to`): for a
   * segmented chunk at a segment boundary when one is in reach, so that no segment is decoded
   * for two pieces.
   */
  pieceEnd(rec: ChunkRecord, from: number, to: number, max: number): number {
    const end = Math.min(to, from + max);
    const s = rec.segmentSize;
    if (!s || storedAsIs(rec) || end === to) return end;
    const aligned = Math.floor(end / s) * s;
    return aligned > from ? aligned : end;
  }

  /**
   * The memory reading a range of this chunk takes: the range and two scratch shard blocks,
   * plus the segments under it and their stored bodies for a segmented chunk; the whole chunk
   * when it is read whole.
   */
  heldBytes(rec: ChunkRecord, from: number, to: number): number {
    const part = from > 0 || to < rec.plainSize;
    if (part && storedAsIs(rec)) return to - from + 2 * BLOCK_SIZE;
    if (!part || !rec.segmentSize) return rec.plainSize;
    const s = rec.segmentSize;
    const segments = Math.ceil(to / s) - Math.floor(from / s);
    return to - from + 2 * BLOCK_SIZE + 2 * segments * s;
  }

  /**
   * A range of a segmented chunk: its segment table and the bodies of the segments under the
   * range, read from the data shards, then decoded; undefined when a shard is not good or a
   * segment does not decode (the whole-chunk read then rebuilds, heals or reports it).
   */
  async #readSegments(
    rec: ChunkRecord,
    from: number,
    to: number,
    opts: { key?: CryptoKey; into?: Uint8Array; files?: KeptFiles },
  ): Promise<Uint8Array | undefined> {
    const { key, into, files } = opts;
    const size = rec.segmentSize!;
    const count = segmentCount(rec.plainSize, size);
    const tableSize = segmentTableSize(count);
    if (tableSize > rec.storedSize) return undefined;
    const table = await this.#readDirect(rec, 0, tableSize, undefined, files);
    if (!table) return undefined;
    const first = Math.floor(from / size);
    const last = Math.ceil(to / size) - 1;
    try {
      const bounds = segmentBounds(table, rec.storedSize);
      if (bounds.length !== count + 1) return undefined;
      const bodies = await this.#readDirect(rec, bounds[first], bounds[last + 1], undefined, files);
      if (!bodies) return undefined;
      const out = into && into.byteLength >= to - from
        ? into.subarray(0, to - from)
        : new Uint8Array(to - from);
      const aad = rec.encrypted ? new TextEncoder().encode(rec.id) : undefined;
      for (let index = first; index <= last; index++) {
        const at = bounds[index] - bounds[first];
        const body = bodies.subarray(at, at + bounds[index + 1] - bounds[index]);
        const plain = await decodeSegment(body, rec, { index, count }, {
          key,
          aad,
          size: Math.min(size, rec.plainSize - index * size),
        });
        const lo = Math.max(from, index * size);
        const hi = Math.min(to, (index + 1) * size);
        out.set(plain.subarray(lo - index * size, hi - index * size), lo - from);
        // Copied: a decoded segment's memory goes now (not at V8's next collection).
        if (plain.buffer !== bodies.buffer) releaseOwned(plain);
      }
      releaseOwned(bodies);
      return out;
    } catch (err) {
      if (err instanceof ChunkIntegrityError) return undefined;
      throw err;
    }
  }

  /**
   * The range from the data shards it overlaps (in `into` when it is large enough), or undefined
   * when one of them is not good.
   */
  async #readDirect(
    rec: ChunkRecord,
    from: number,
    to: number,
    into?: Uint8Array,
    files?: KeptFiles,
  ): Promise<Uint8Array | undefined> {
    const shardLen = Math.ceil(rec.storedSize / rec.dataShards);
    const out = into && into.byteLength >= to - from
      ? into.subarray(0, to - from)
      : new Uint8Array(to - from);
    const reads = [];
    for (let i = Math.floor(from / shardLen); i * shardLen < to; i++) {
      const lo = Math.max(from, i * shardLen);
      const hi = Math.min(to, (i + 1) * shardLen);
      const drive = this.drive(rec.drives[i]);
      const part = out.subarray(lo - from, hi - from);
      reads.push(
        readShardRange(
          drive,
          rec.id,
          i,
          shardLen,
          lo - i * shardLen,
          hi - i * shardLen,
          part,
          files,
        )
          .then((read) => {
            if (drive && this.options.monitor) {
              if (read.state === "error") this.options.monitor.failed(drive.id, read.reason);
              else this.options.monitor.succeeded(drive.id);
            }
            return read;
          }),
      );
    }
    const states = await Promise.all(reads);
    return states.every((r) => r.state === "ok") ? out : undefined;
  }

  /** Verifies every shard of a chunk and heals the bad ones (the scrub's unit of work). */
  async verify(rec: ChunkRecord): Promise<ChunkHealth> {
    // Claimed while checked: a chunk freed since its record was read (a scrub's page, a queued
    // heal) is skipped, not reported lost, and one freed meanwhile is collected when the claim
    // ends, not under the check, so its shards are never written back after their removal.
    await this.claims.claim(rec.id);
    try {
      if (!(await this.meta.hasChunk(rec.id))) {
        return { id: rec.id, bad: [], healed: [], lost: false, gone: true };
      }
      const { health } = await this.#readStored(rec, { heal: "now", all: true });
      return health;
    } catch (err) {
      if (!(err instanceof ChunkLostError)) throw err;
      return { id: rec.id, bad: [], healed: [], lost: true };
    } finally {
      await this.claims.release(rec.id, () => this.#removeUnread(rec.id, rec.drives));
    }
  }

  async #readStored(
    rec: ChunkRecord,
    opts: { heal: "now" | "queue"; all?: boolean },
  ): Promise<{ stored: Uint8Array; health: ChunkHealth }> {
    const k = rec.dataShards;
    const n = k + rec.parityShards;
    const shardLen = Math.ceil(rec.storedSize / k) || 0;
    const reads: (ShardRead | undefined)[] = new Array(n);
    const readOne = async (i: number) => {
      reads[i] = await this.#readShard(rec, i, shardLen);
    };
    await Promise.all(Array.from({ length: opts.all ? n : k }, (_, i) => readOne(i)));
    const ok = () => reads.filter((r) => r?.state === "ok").length;
    if (ok() < k || opts.all) {
      await Promise.all(
        Array.from({ length: n }, (_, i) => i).filter((i) => !reads[i]).map(readOne),
      );
    }
    const bad = reads.flatMap((r, i) => (r && r.state !== "ok" ? [i] : []));
    const health: ChunkHealth = { id: rec.id, bad, healed: [], lost: false };
    if (ok() < k) {
      throw new ChunkLostError(`Chunk ${rec.id} has only ${ok()} of the ${k} shards it needs`);
    }
    const shards = reads.map((r) => (r?.state === "ok" ? r.payload : null));
    let full = shards;
    if (bad.length > 0) {
      full = coder(k, rec.parityShards).reconstruct(shards);
      // Shards on offline or missing drives wait for that drive's heal.
      const fixable = bad.some((i) => this.drive(rec.drives[i]));
      if (opts.heal === "now" || (fixable && !this.queueHeal(rec.id))) {
        health.healed = await this.#heal(rec, full, bad);
      }
    }
    // One data shard is the stored bytes themselves: no copy.
    const stored = k === 1
      ? full[0]!.subarray(0, rec.storedSize)
      : join(full.slice(0, k), k, rec.storedSize);
    return { stored, health };
  }

  /** Reads one shard, telling the drive monitor how the drive did. */
  async #readShard(rec: ChunkRecord, i: number, shardLen: number): Promise<ShardRead> {
    const drive = this.drive(rec.drives[i]);
    const read = await readShard(drive, rec.id, i, shardLen);
    if (drive && this.options.monitor) {
      if (read.state === "error") this.options.monitor.failed(drive.id, read.reason);
      else this.options.monitor.succeeded(drive.id);
    }
    return read;
  }

  /**
   * Checks the chunk's shards on the given drives (header, length, checksum) and, when one is
   * missing or bad, rebuilds and rewrites it from the others: the heal of a returning drive.
   */
  async healOn(rec: ChunkRecord, driveIds: Set<number>): Promise<ChunkHealth> {
    const shardLen = Math.ceil(rec.storedSize / rec.dataShards) || 0;
    for (let i = 0; i < rec.drives.length; i++) {
      if (!driveIds.has(rec.drives[i])) continue;
      if ((await this.#readShard(rec, i, shardLen)).state !== "ok") return await this.verify(rec);
    }
    return { id: rec.id, bad: [], healed: [], lost: false };
  }

  /** Rewrites rebuilt shards where they belong; returns the indexes healed. */
  async #heal(rec: ChunkRecord, shards: (Uint8Array | null)[], bad: number[]): Promise<number[]> {
    const healed: number[] = [];
    for (const i of bad) {
      const drive = this.drive(rec.drives[i]);
      if (!drive || !shards[i]) continue;
      try {
        await syncDir(await writeShard(drive, rec.id, i, shards[i]!));
        this.options.monitor?.succeeded(drive.id);
        healed.push(i);
      } catch (err) {
        // The drive is failing; the heal queue (or its drive's heal) tries again.
        this.options.monitor?.failed(drive.id, err);
      }
    }
    return healed;
  }

  async #removeShards(id: string, drives: number[]): Promise<void> {
    await Promise.all(drives.map((d, i) => removeShard(this.drive(d), id, i)));
  }

  /**
   * Queues the shards of chunks no version refers to any more (after the metadata commit) for
   * removal; resolves at once unless the removal backlog is full. `reclaimer.drained()` waits
   * for the removals.
   */
  collect(freed: ChunkRecord[]): Promise<void> {
    return this.reclaimer.add(freed);
  }
}

/**
 * The k data shards of a stored chunk. With one data shard (one or two drives) that is the
 * chunk itself, not a copy: nothing writes to shards, and a copy per chunk is 4 MiB of garbage.
 */
function shardsOf(bytes: Uint8Array, k: number): Uint8Array[] {
  return k === 1 ? [bytes] : split(bytes, k);
}
