// Bucket replication: every bucket change queued in the metadata (ReplicationQueue) is sent, as
// the bucket's whole state then, to every node that is alive, from that node's own cursor; a node
// that is down or failing is retried with exponential backoff and catches up from its cursor.
import { QueueSender, type SentQueue } from "./queue_sender.ts";
import type {
  BucketChange,
  BucketConfigKind,
  BucketState,
  ChangeStamp,
  ReplicationQueue,
  Stamped,
} from "../meta/store.ts";
import type { Membership } from "./membership.ts";

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

/**
 * The bucket-change queue as a sender reads it. Pruning removes only deleted buckets' rows
 * every node has received: a live bucket's row is its state for nodes that join later.
 */
function bucketQueue(queue: ReplicationQueue): SentQueue<BucketChange> {
  return {
    type: "buckets",
    what: "Bucket replication",
    changes: (after, limit) => queue.bucketChanges(after, limit),
    cursor: (node) => queue.replicationCursor(node),
    setCursor: (node, seq) => queue.setReplicationCursor(node, seq),
    backlog: (after) => queue.replicationBacklog(after),
    prune: (nodes) => queue.pruneBucketChanges(nodes),
    wire,
  };
}

/** Sends the bucket-change queue to every node that is alive (queue_sender.ts). */
export class BucketReplicator extends QueueSender<BucketChange> {
  constructor(
    queue: ReplicationQueue,
    membership: Membership,
    deliver: Deliver,
    pollMs = 100,
    /** How often deleted buckets every node has received leave the queue (as objects.ts). */
    pruneMs = 10_000,
  ) {
    super(bucketQueue(queue), membership, deliver, pollMs, pruneMs);
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
