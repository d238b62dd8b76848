// User replication: every user change queued in the metadata (UserReplicationQueue) is sent, as
// the user's stamped state then, to every node that is alive, from that node's own cursor, as
// bucket changes are (replication.ts). A user's secret never travels sealed with this node's
// master key (the others cannot open it) nor in the clear: it is opened here and sealed again
// with a key derived from the cluster secret, and the receiver seals it with its own master key.
import { createHash } from "node:crypto";
import { validateBucketAccess } from "../api/admin_input.ts";
import { MasterKey } from "../auth/master_key.ts";
import { SecretSealer } from "../auth/secrets.ts";
import { log } from "../log.ts";
import type { UserReplicationQueue } from "../meta/store.ts";
import type { UserChange, UserState } from "../meta/user_stamps.ts";
import { QueueSender } from "./queue_sender.ts";
import type { Membership } from "./membership.ts";
import type { Deliver } from "./replication.ts";

/** Seals secrets for the trip between nodes with a key only holders of the cluster secret have. */
export function wireSealer(clusterSecret: string): SecretSealer {
  const key = createHash("sha256").update(`store-cluster-users:${clusterSecret}`).digest();
  return new SecretSealer(new MasterKey(new Uint8Array(key)));
}

/** The sealing context of a secret on the wire: bound to the user and its access key. */
const wireContext = (id: string, accessKey: string) => `cluster-user:${id}:${accessKey}`;

export class UserReplicator extends QueueSender<UserChange> {
  constructor(
    queue: UserReplicationQueue,
    membership: Membership,
    deliver: Deliver,
    /** This node's sealer (its master key) and the cluster's (see wireSealer). */
    sealer: SecretSealer,
    wire: SecretSealer,
    pollMs?: number,
    pruneMs?: number,
  ) {
    super(
      {
        type: "users",
        what: "User replication",
        changes: (after, limit) => queue.userChanges(after, limit),
        cursor: (node) => queue.userReplicationCursor(node),
        setCursor: (node, seq) => queue.setUserReplicationCursor(node, seq),
        backlog: (after) => queue.userReplicationBacklog(after),
        prune: (nodes) => queue.pruneUserChanges(nodes),
        wire: (change) => toWire(change, sealer, wire),
      },
      membership,
      deliver,
      pollMs,
      pruneMs,
    );
  }
}

/** A change as it travels: the secret sealed for the wire, never with this node's key. */
function toWire(c: UserChange, sealer: SecretSealer, wire: SecretSealer): unknown {
  const { seq: _seq, queuedAt: _queuedAt, key, ...state } = c;
  if (!key) return state;
  let secret: string;
  try {
    secret = sealer.open(key.value.sealedSecret, c.id);
  } catch (err) {
    // Cannot happen with an intact database: the key part stays here, the rest travels.
    log("warn", "A user's secret does not open; its key is not replicated", {
      user: c.id,
      error: String(err),
    });
    return state;
  }
  const { accessKey, keyCreatedAt } = key.value;
  return {
    ...state,
    key: {
      stamp: key.stamp,
      value: { accessKey, keyCreatedAt, secret: wire.seal(secret, wireContext(c.id, accessKey)) },
    },
  };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function stampOf(v: unknown): { ms: number; node: string } | undefined {
  if (!isObject(v)) return undefined;
  if (!Number.isSafeInteger(v.ms) || (v.ms as number) < 0) return undefined;
  if (typeof v.node !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(v.node)) return undefined;
  return { ms: v.ms as number, node: v.node };
}

/** A stamped part whose value `parse` accepts; null when malformed, undefined when absent. */
function part<T>(v: unknown, parse: (value: unknown) => T | undefined) {
  if (v === undefined) return undefined;
  if (!isObject(v)) return null;
  const stamp = stampOf(v.stamp);
  const value = parse(v.value);
  return stamp && value !== undefined ? { stamp, value } : null;
}

const shortString = (v: unknown, max: number) =>
  typeof v === "string" && v.length <= max ? v : undefined;

/**
 * A user state from a message with its secret sealed again with this node's master key, or
 * undefined when it is malformed (or its secret does not open with the cluster's key).
 */
export function parseUserState(
  value: unknown,
  sealer: SecretSealer,
  wire: SecretSealer,
): UserState | undefined {
  if (!isObject(value)) return undefined;
  const id = value.id;
  if (typeof id !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(id)) return undefined;
  const record = part(value.record, (v) => {
    if (v === null) return null;
    if (!isObject(v) || !Number.isSafeInteger(v.createdAt)) return undefined;
    const name = shortString(v.name, 256);
    const description = shortString(v.description, 4096);
    const email = shortString(v.email, 1024);
    if (!name || description === undefined || email === undefined) return undefined;
    return { name, description, email, createdAt: v.createdAt as number };
  });
  const enabled = part(value.enabled, (v) => typeof v === "boolean" ? v : undefined);
  const access = part(value.access, (v) => {
    try {
      return validateBucketAccess(v);
    } catch {
      return undefined;
    }
  });
  const key = part(value.key, (v) => {
    if (!isObject(v) || !Number.isSafeInteger(v.keyCreatedAt)) return undefined;
    const accessKey = shortString(v.accessKey, 128);
    if (!accessKey || typeof v.secret !== "string") return undefined;
    try {
      const secret = wire.open(v.secret, wireContext(id, accessKey));
      return {
        accessKey,
        keyCreatedAt: v.keyCreatedAt as number,
        sealedSecret: sealer.seal(secret, id),
      };
    } catch {
      return undefined;
    }
  });
  if (record === null || enabled === null || access === null || key === null) return undefined;
  return { id, record, enabled, access, key };
}
