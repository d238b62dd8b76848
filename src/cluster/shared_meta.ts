// Cluster nodes that share one metadata database (STORE_META_URL on PostgreSQL): the rows of
// buckets, versions and chunks are the same for all of them, the shard files each node's own.
// - Nodes that registered in the database (table cluster_shared_nodes) are "shared" peers: the
//   bucket and object senders skip them (their rows are these rows), and changes they send anyway
//   are not applied again.
// - Bytes follow by pull: every node walks the object-change queue from its own cursor and, for
//   each version written, fetches the chunks it does not hold from a node that does
//   (GET /cluster/chunk, the chunk's stored bytes, signed) and records its holding
//   (chunk_holdings). A read of a chunk not held here fetches it the same way first.
// - A holding whose chunk row is gone (no version refers to the chunk) is collected here under
//   the chunk's claim lock, so a node removes only its own shards and only when unreferenced.
import { ApiError } from "../api/json.ts";
import { readAtMost } from "../http/progress.ts";
import { log } from "../log.ts";
import { BytesUnavailableError, type SharedHoldings } from "../meta/shared_holdings.ts";
import type { ChunkRecord, MetaStore, ObjectChange } from "../meta/store.ts";
import type { ChunkResolver, ChunkStore } from "../storage/chunk_store.ts";
import type { CallOptions } from "./client.ts";
import type { Membership } from "./membership.ts";
import { ANSWER_HEADER, checkAnswer, signAnswer, signCall } from "./signature.ts";

/** How often the follower looks for work. */
const POLL_MS = 200;
/** How often this node re-registers and re-reads the shared nodes. */
const REGISTER_MS = 1000;
/** How often every holding of this node is checked against the chunk rows (a full pass). */
const FULL_PASS_MS = 10 * 60_000;
/**
 * How long the follower retries a version whose bytes no node holding them answers before it
 * goes on without them (a read then fetches them, if a holder ever comes back).
 */
const STUCK_MS = 10 * 60_000;
/** Changes the follower works on at once (each fetches its chunks one after the other). */
const FOLLOW_PARALLEL = 4;
/** Changes read per round, holdings collected per round. */
const PAGE = 100;
/**
 * A fetch's framing and form header may take this much beyond the stored bytes (twice the larger
 * of the plain and stored sizes: the holder may have stored it in another form than the writer).
 */
const FRAME_SLACK = 64 * 1024;

type Form = Omit<ChunkRecord, "drives" | "dataShards" | "parityShards">;

/** The answer body of /cluster/chunk: 4-byte length, the form as JSON, the stored bytes. */
export function frameChunk(rec: ChunkRecord, stored: Uint8Array): Uint8Array {
  const form: Form = {
    id: rec.id,
    plainSize: rec.plainSize,
    storedSize: rec.storedSize,
    compression: rec.compression,
    encrypted: rec.encrypted,
    ...(rec.segmentSize ? { segmentSize: rec.segmentSize } : {}),
  };
  const head = new TextEncoder().encode(JSON.stringify(form));
  const out = new Uint8Array(4 + head.byteLength + stored.byteLength);
  new DataView(out.buffer).setUint32(0, head.byteLength);
  out.set(head, 4);
  out.set(stored, 4 + head.byteLength);
  return out;
}

/** The form and stored bytes of a framed chunk, or undefined when they do not fit `rec`. */
export function unframeChunk(
  rec: ChunkRecord,
  body: Uint8Array,
): { form: Form; stored: Uint8Array } | undefined {
  if (body.byteLength < 4) return undefined;
  const len = new DataView(body.buffer, body.byteOffset).getUint32(0);
  if (4 + len > body.byteLength) return undefined;
  let form: Form;
  try {
    form = JSON.parse(new TextDecoder().decode(body.subarray(4, 4 + len)));
  } catch {
    return undefined;
  }
  const stored = body.subarray(4 + len);
  const fits = form?.id === rec.id && form.plainSize === rec.plainSize &&
    form.storedSize === stored.byteLength && form.encrypted === rec.encrypted &&
    (form.compression === "none" || form.compression === "zstd");
  return fits ? { form, stored } : undefined;
}

export class SharedMeta implements ChunkResolver {
  /** The other nodes registered in this database. */
  #shared = new Map<string, string>();
  #fetching = new Map<string, Promise<ChunkRecord>>();
  #timer?: ReturnType<typeof setTimeout>;
  #round?: Promise<void>;
  #stopped = false;
  #nextRegister = 0;
  #failures = 0;
  #retryAt = 0;
  #nextFullPass = 0;
  /** Queue positions whose bytes no holder answered for, and since when. */
  #stuck = new Map<number, number>();
  /** Queue position up to which versions were settled by this process. */
  #settled = 0;

  constructor(
    readonly holdings: SharedHoldings,
    readonly meta: MetaStore,
    readonly chunks: ChunkStore,
    readonly membership: Membership,
    readonly call: () => CallOptions,
  ) {}

  get self(): string {
    return this.membership.self.id;
  }

  /** Whether `node` shares this node's metadata database. */
  isShared(node: string): boolean {
    return this.#shared.has(node);
  }

  /**
   * Whether this node sends the shared queues to nodes on metadata of their own (a mixed
   * cluster): the nodes sharing the database share those queues and their cursors, so one of them
   * sends, the lowest id among those alive here (the next takes over when it stops answering).
   */
  sendsToOthers(): boolean {
    const alive = this.membership.view().filter((m) => m.state === "alive").map((m) => m.id);
    return !alive.some((id) => id < this.self && this.#shared.has(id));
  }

  /** Registers this node and learns the others; run before the senders start. */
  async register(): Promise<void> {
    await this.holdings.registerNode(this.self, this.membership.self.url);
    const nodes = await this.holdings.sharedNodes();
    this.#shared = new Map(nodes.filter((n) => n.id !== this.self).map((n) => [n.id, n.url]));
    this.#nextRegister = Date.now() + REGISTER_MS;
  }

  start(): void {
    const tick = () => {
      if (this.#stopped) return;
      this.#round = this.#work().finally(() => {
        this.#round = undefined;
        if (!this.#stopped) this.#timer = setTimeout(tick, POLL_MS);
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#round;
  }

  /** A node forgotten by the cluster: its registration and holdings go. */
  async forget(node: string): Promise<void> {
    this.#shared.delete(node);
    await this.holdings.forgetNode(node);
  }

  held(id: string): Promise<ChunkRecord | undefined> {
    return this.holdings.holding(this.self, id);
  }

  stored(rec: ChunkRecord): Promise<void> {
    return this.holdings.recordHolding(this.self, rec);
  }

  lost(rec: ChunkRecord): Promise<void> {
    log("warn", "A chunk held here cannot be read: fetching it again", { chunk: rec.id });
    return this.holdings.dropHolding(this.self, rec.id);
  }

  /** The chunk as held here: this node's holding, or fetched now from a node that holds it. */
  async local(rec: ChunkRecord): Promise<ChunkRecord> {
    const mine = await this.held(rec.id);
    // A holding on drives this node no longer has (a drive replaced) is fetched again.
    if (mine && this.chunks.isLocal(mine)) return mine;
    let fetching = this.#fetching.get(rec.id);
    if (!fetching) {
      fetching = this.#fetch(rec).finally(() => this.#fetching.delete(rec.id));
      this.#fetching.set(rec.id, fetching);
    }
    return await fetching;
  }

  /** The stored bytes of a chunk this node holds, framed and signed for the calling node. */
  async serve(id: string, secret: string, nonce: string): Promise<Response> {
    const rec = await this.meta.getChunk(id);
    const mine = rec && (this.chunks.isLocal(rec) ? rec : await this.held(id));
    if (!rec || !mine) throw new ApiError(404, "chunk_not_here", "This node does not hold it.");
    const body = frameChunk(mine, await this.chunks.readStoredBytes(mine));
    return new Response(body as BodyInit, {
      status: 200,
      headers: {
        "content-type": "application/octet-stream",
        [ANSWER_HEADER]: signAnswer(secret, nonce, 200, body),
      },
    });
  }

  /** Fetches a chunk from the first node holding it that answers, and stores it here. */
  async #fetch(rec: ChunkRecord): Promise<ChunkRecord> {
    // Nodes of this database that are alive, or not heard from yet (just after a start, before
    // the heartbeats: at the URL they registered); not those seen going silent.
    const states = new Map(this.membership.view().map((m) => [m.id, m]));
    const candidates = [...this.#shared].flatMap(([id, url]) => {
      const m = states.get(id);
      if (!m) return [{ id, url }];
      return m.state === "alive" || m.state === "joining" ? [{ id, url: m.url }] : [];
    });
    const holders = new Set(await this.holdings.holders(rec.id));
    // Nodes recorded as holding it first; then the others (chunks written before this mode).
    const order = [
      ...candidates.filter((m) => holders.has(m.id)),
      ...candidates.filter((m) => !holders.has(m.id)),
    ];
    for (const m of order) {
      let got: { form: Form; stored: Uint8Array } | undefined;
      try {
        got = await this.#fetchFrom(m.url, rec);
      } catch (err) {
        log("debug", "Fetching a chunk failed", { node: m.id, chunk: rec.id, error: String(err) });
        continue;
      }
      if (!got) continue;
      // Claimed while it is written and recorded, so a collection cannot run in between.
      await this.chunks.claims.claim(rec.id);
      try {
        const mine = await this.chunks.writeStoredBytes({
          ...got.form,
          dataShards: 1,
          parityShards: 0,
          drives: [],
        }, got.stored);
        await this.stored(mine);
        return mine;
      } finally {
        await this.chunks.release(rec.id);
      }
    }
    throw new BytesUnavailableError(
      `No node holding chunk ${rec.id} answered (${order.length} asked)`,
    );
  }

  async #fetchFrom(url: string, rec: ChunkRecord) {
    const opts = this.call();
    const target = `/cluster/chunk?id=${encodeURIComponent(rec.id)}`;
    const { header, nonce } = signCall(opts.secret, {
      method: "GET",
      target,
      node: opts.node,
      body: new Uint8Array(0),
    });
    const res = await fetch(url + target, {
      headers: { authorization: header },
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    const body = await readAtMost(
      res.body,
      res.headers,
      Math.max(rec.storedSize, rec.plainSize) * 2 + FRAME_SLACK,
    );
    if (body === null) throw new Error("The answer is too large");
    const signature = res.headers.get(ANSWER_HEADER);
    if (!checkAnswer(opts.secret, { nonce, status: res.status, body, signature })) {
      throw new Error(`Unsigned or badly signed answer (${res.status})`);
    }
    if (res.status !== 200) return undefined;
    const got = unframeChunk(rec, body);
    if (!got) throw new Error("The chunk does not match its record");
    return got;
  }

  /** One round: registration, the bucket cursors, the bytes of new versions, garbage. */
  async #work(): Promise<void> {
    const now = Date.now();
    try {
      if (now >= this.#nextRegister) await this.register();
      await this.#bucketCursors();
      await this.#collect();
      if (now >= this.#retryAt) await this.#follow();
      await this.#settle();
      this.#failures = 0;
    } catch (err) {
      if (this.#stopped) return;
      this.#failures++;
      this.#retryAt = Date.now() + Math.min(60_000, 500 * 2 ** Math.min(7, this.#failures - 1));
      log(this.#failures === 1 ? "warn" : "debug", "Shared-metadata round failed", {
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  /** The shared peers see every bucket change as it commits: their cursors are at the head. */
  async #bucketCursors(): Promise<void> {
    if (this.#shared.size === 0) return;
    const head = await this.holdings.bucketQueueHead();
    for (const node of this.#shared.keys()) await this.meta.setReplicationCursor(node, head);
  }

  /** The object changes after this node's cursor: bytes of versions written are held here. */
  /**
   * The object changes after this node's cursor: bytes of versions written are held here. A page
   * is worked on FOLLOW_PARALLEL changes at a time; the cursor moves past the changes done up to
   * the first that failed (retried next round, with the ones after it).
   */
  async #follow(): Promise<void> {
    let cursor = await this.meta.objectReplicationCursor(this.self);
    while (!this.#stopped) {
      const changes = await this.meta.objectChanges(cursor, PAGE);
      if (changes.length === 0) return;
      const outcomes: PromiseSettledResult<void>[] = new Array(changes.length);
      let next = 0;
      const worker = async () => {
        while (next < changes.length && !this.#stopped) {
          const i = next++;
          const change = changes[i];
          outcomes[i] = await (change.op === "put" ? this.#held(change) : Promise.resolve()).then(
            () => ({ status: "fulfilled", value: undefined }),
            (reason) => ({ status: "rejected", reason }),
          );
        }
      };
      await Promise.all(Array.from({ length: FOLLOW_PARALLEL }, worker));
      const failed = changes.findIndex((_, i) => outcomes[i]?.status !== "fulfilled");
      const done = failed < 0 ? changes.length : failed;
      if (done > 0) {
        cursor = changes[done - 1].seq;
        await this.meta.setObjectReplicationCursor(this.self, cursor);
        for (const seq of this.#stuck.keys()) if (seq <= cursor) this.#stuck.delete(seq);
      }
      if (failed >= 0) {
        const outcome = outcomes[failed];
        throw outcome?.status === "rejected" ? outcome.reason : new Error("Stopped");
      }
    }
  }

  /**
   * Holds the bytes of a version here; throws when no node holding them answered, so the round
   * is tried again later, until STUCK_MS passed: then the change is passed over, with a warning.
   */
  async #held(change: ObjectChange): Promise<void> {
    try {
      await this.#hold(change);
    } catch (err) {
      if (!(err instanceof BytesUnavailableError)) throw err;
      const now = Date.now();
      const since = this.#stuck.get(change.seq) ?? now;
      this.#stuck.set(change.seq, since);
      if (now - since < STUCK_MS) throw err;
      log("warn", "Bytes of a version not held here: no node holding them answered", {
        bucket: change.bucket,
        key: change.key,
        versionId: change.versionId,
        error: err.message,
      });
    }
  }

  async #hold(change: ObjectChange): Promise<void> {
    const v = await this.meta.getObjectVersion(change.bucket, change.key, change.versionId);
    // Removed since: its deletion follows in the queue.
    if (!v || v.data.kind !== "chunks") return;
    for (const { chunk } of await this.meta.versionChunks(v.data.vid)) {
      if (this.chunks.isLocal(chunk)) continue;
      try {
        await this.local(chunk);
      } catch (err) {
        // Gone meanwhile (the version was deleted): nothing to hold.
        if (!(await this.meta.getChunk(chunk.id))) continue;
        throw err;
      }
    }
  }

  /**
   * Versions every node sharing the database holds the bytes of, and every other node known has
   * received (a mixed cluster), are COMPLETED: those queued up to the lowest cursor of these nodes
   * (each node settles them; only PENDING ones change).
   */
  async #settle(): Promise<void> {
    const nodes = new Set([
      this.self,
      ...this.#shared.keys(),
      ...this.membership.view().map((m) => m.id),
    ]);
    const cursors = await Promise.all(
      [...nodes].map((n) => this.meta.objectReplicationCursor(n)),
    );
    const upTo = Math.min(...cursors);
    while (this.#settled < upTo && !this.#stopped) {
      const changes = await this.meta.objectChanges(this.#settled, PAGE);
      if (changes.length === 0) break;
      for (const change of changes) {
        if (change.seq > upTo) return;
        if (change.op === "put") await this.meta.setReplicationStatus(change, "COMPLETED");
        this.#settled = change.seq;
      }
    }
  }

  /** Removes this node's shards of chunks no version refers to any more. */
  async #collect(): Promise<void> {
    if (Date.now() >= this.#nextFullPass) {
      this.#nextFullPass = Date.now() + FULL_PASS_MS;
      await this.holdings.flagOrphans(this.self);
    }
    const orphans = await this.holdings.orphanHoldings(this.self, PAGE);
    for (const held of orphans) {
      await this.chunks.claims.collect(held.id, async () => {
        await this.chunks.removeHeld(held);
        await this.holdings.dropHolding(this.self, held.id);
      });
    }
  }
}
