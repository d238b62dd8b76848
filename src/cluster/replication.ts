// Bucket replication: every bucket change queued in the metadata (ReplicationQueue) is sent, as
// the bucket's whole state then, to every node that is alive, from that node's own cursor; a node
// that is down or failing is retried with exponential backoff and catches up from its cursor.
import { backlogOf, NodeBackoff } from "./backoff.ts";
import { log } from "../log.ts";
import type {
  BucketChange,
  BucketConfigKind,
  BucketState,
  ChangeStamp,
  ReplicationQueue,
  Stamped,
} from "../meta/store.ts";
import type { Membership } from "./membership.ts";

/** Changes read per batch, and the JSON bytes a batch grows to before it is sent. */
const BATCH_CHANGES = 100;
const BATCH_BYTES = 1024 * 1024;

export type Deliver = (url: string, body: unknown) => Promise<unknown>;

/**
 * The part of a change that goes over the wire: the documents of the kinds that replicate (the
 * others, e.g. default encryption naming this node's keys, stay on the node that set them).
 */
export function wire(c: BucketChange): BucketState {
  const { seq: _seq, queuedAt: _queuedAt, configs, ...state } = c;
  const sent = Object.entries(configs).filter(([kind]) => CONFIG_KINDS.has(kind));
  return { ...state, configs: Object.fromEntries(sent) };
}

/** Changes from the front of `changes` up to the batch size (at least one). */
function batch(changes: BucketChange[]): BucketChange[] {
  let bytes = 0;
  for (let i = 0; i < changes.length; i++) {
    bytes += JSON.stringify(wire(changes[i])).length;
    if (bytes > BATCH_BYTES && i > 0) return changes.slice(0, i);
  }
  return changes;
}

export class BucketReplicator {
  /** Nodes not to send to (they share this node's metadata database). */
  skip: (node: string) => boolean = () => false;
  readonly #backoff = new NodeBackoff("Bucket replication");
  /** Nodes being caught up now, with the promise of that work. */
  #busy = new Map<string, Promise<void>>();
  #timer?: ReturnType<typeof setTimeout>;
  #stopped = false;
  #nextPrune = 0;
  #pruning?: Promise<void>;

  constructor(
    readonly queue: ReplicationQueue,
    readonly membership: Membership,
    readonly deliver: Deliver,
    readonly pollMs = 100,
    /** How often deleted buckets every node has received leave the queue (as objects.ts). */
    readonly pruneMs = 10_000,
  ) {}

  start(): void {
    // The first pruning waits a round, so the member list has been learned after a restart.
    this.#nextPrune = Date.now() + this.pruneMs;
    const round = () => {
      if (this.#stopped) return;
      const now = Date.now();
      if (now >= this.#nextPrune && !this.#pruning) {
        this.#nextPrune = now + this.pruneMs;
        this.#pruning = this.#prune().finally(() => this.#pruning = undefined);
      }
      for (const m of this.membership.view(now)) {
        if (m.state !== "alive" || this.#busy.has(m.id) || this.skip(m.id)) continue;
        if (this.#backoff.waiting(m.id, now)) continue;
        this.#busy.set(m.id, this.#catchUp(m.id, m.url));
      }
      this.#timer = setTimeout(round, this.pollMs);
    };
    round();
  }

  /** Stops sending; resolves when the batches on their way have been answered. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await Promise.allSettled([...this.#busy.values(), this.#pruning]);
  }

  /**
   * Deletes the rows of deleted buckets every node has received. Each node known gets a cursor
   * row first (at 0 when it has received nothing), so a node known once holds the queue even
   * after a restart, until it catches up or is forgotten.
   */
  async #prune(): Promise<void> {
    try {
      const nodes = this.membership.view().map((m) => m.id);
      for (const node of nodes) await this.queue.setReplicationCursor(node, 0);
      const pruned = await this.queue.pruneBucketChanges(nodes);
      if (pruned > 0) log("debug", "Deleted buckets every node has received pruned", { pruned });
    } catch (err) {
      log("warn", "Pruning the bucket-change queue failed", {
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  /** Changes not yet delivered to a node, and how long the oldest has waited. */
  async backlog(node: string): Promise<{ depth: number; lagMs: number }> {
    return backlogOf(await this.queue.replicationBacklog(await this.queue.replicationCursor(node)));
  }

  /** Sends everything after the node's cursor, batch by batch, until none is left or one fails. */
  async #catchUp(node: string, url: string): Promise<void> {
    try {
      while (!this.#stopped) {
        const cursor = await this.queue.replicationCursor(node);
        const pending = await this.queue.bucketChanges(cursor, BATCH_CHANGES);
        if (pending.length === 0) break;
        const sent = batch(pending);
        await this.deliver(url, { type: "buckets", changes: sent.map(wire) });
        await this.queue.setReplicationCursor(node, sent[sent.length - 1].seq);
        this.#backoff.succeeded(node);
      }
    } catch (err) {
      this.#backoff.failed(node, err);
    } finally {
      this.#busy.delete(node);
    }
  }
}

const CONFIG_KINDS = new Set<string>([
  "policy",
  "policy-principals",
  "acl",
  "object-lock",
  "lifecycle",
  "tagging",
  "public-access-block",
  "ownership",
  "cors",
  "notification",
  "replication",
]);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function parseStamp(value: unknown): ChangeStamp | undefined {
  if (!isObject(value)) return undefined;
  const { ms, node } = value;
  if (!Number.isSafeInteger(ms) || (ms as number) < 0) return undefined;
  if (typeof node !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(node)) return undefined;
  return { ms: ms as number, node };
}

/** A stamped part whose value passes `valid`; null when malformed, undefined when absent. */
function stamped<T>(value: unknown, valid: (v: unknown) => boolean): Stamped<T> | null | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) return null;
  const stamp = parseStamp(value.stamp);
  return stamp && valid(value.value) ? { stamp, value: value.value as T } : null;
}

function validRecord(v: unknown): boolean {
  return v === null ||
    (isObject(v) && typeof v.owner === "string" && Number.isSafeInteger(v.createdAt) &&
      typeof v.region === "string");
}

/** A bucket state from a message, or undefined when it is not a well-formed one. */
export function parseBucketState(value: unknown): BucketState | undefined {
  if (!isObject(value) || !isObject(value.configs)) return undefined;
  const { bucket } = value;
  if (typeof bucket !== "string" || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) return;
  const record = stamped<{ owner: string; createdAt: number; region: string } | null>(
    value.record,
    validRecord,
  );
  const versioning = stamped<"" | "Enabled" | "Suspended">(
    value.versioning,
    (v) => ["", "Enabled", "Suspended"].includes(v as string),
  );
  const objectLock = stamped<boolean>(value.objectLock, (v) => typeof v === "boolean");
  if (record === null || versioning === null || objectLock === null) return undefined;
  const configs: BucketState["configs"] = {};
  for (const [kind, part] of Object.entries(value.configs)) {
    const doc = stamped<string | null>(part, (v) => v === null || typeof v === "string");
    if (!CONFIG_KINDS.has(kind) || !doc) return undefined;
    configs[kind as BucketConfigKind] = doc;
  }
  return { bucket, record, versioning, objectLock, configs };
}
