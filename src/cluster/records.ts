// Bearer tokens of users and share links replicated between nodes: each token or share change
// queued in the metadata (RecordReplicationQueue) is sent as the whole record then (null once a
// token was revoked) with the stamp of its last change; the receiver takes it when the stamp is
// newer. Tokens and shares are stored as hashes only, so nothing secret travels.
import type {
  RecordChange,
  RecordReplicationQueue,
  ReplicatedRecord,
  ShareRecord,
} from "../meta/store.ts";
import type { Membership } from "./membership.ts";
import { QueueSender } from "./queue_sender.ts";
import type { Deliver } from "./replication.ts";

export class RecordReplicator extends QueueSender<RecordChange> {
  constructor(
    queue: RecordReplicationQueue,
    membership: Membership,
    deliver: Deliver,
    pollMs?: number,
    pruneMs?: number,
  ) {
    super(
      {
        type: "records",
        what: "Token and share replication",
        changes: (after, limit) => queue.recordChanges(after, limit),
        cursor: (node) => queue.recordReplicationCursor(node),
        setCursor: (node, seq) => queue.setRecordReplicationCursor(node, seq),
        backlog: (after) => queue.recordReplicationBacklog(after),
        prune: (nodes) => queue.pruneRecordChanges(nodes, Date.now()),
        wire: ({ seq: _seq, queuedAt: _queuedAt, ...state }) => {
          if (state.kind !== "share" || !state.value) return state;
          // Each node counts a share's downloads and uploads itself.
          const { downloads: _d, uploads: _u, ...share } = state.value;
          return { ...state, value: share };
        },
      },
      membership,
      deliver,
      pollMs,
      pruneMs,
    );
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const int = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
const str = (v: unknown, max = 1024) => typeof v === "string" && v.length <= max;
const HASH = /^[0-9a-f]{64}$/;
const PERMISSIONS = ["read", "write", "list"];

function token(v: Record<string, unknown>, id: string) {
  if (!str(v.userId, 256) || !int(v.createdAt) || !int(v.expiresAt)) return undefined;
  return {
    hash: id,
    userId: v.userId as string,
    createdAt: v.createdAt as number,
    expiresAt: v.expiresAt as number,
  };
}

function share(v: Record<string, unknown>, id: string) {
  const permissions = v.permissions;
  if (
    !str(v.tokenHash, 128) || !str(v.creator, 256) || !str(v.bucket, 63) ||
    !str(v.prefix) || !int(v.createdAt) || !int(v.expiresAt) ||
    !Array.isArray(permissions) || !permissions.every((p) => PERMISSIONS.includes(p)) ||
    (v.passwordHash !== undefined && !str(v.passwordHash)) ||
    (v.maxDownloads !== undefined && !int(v.maxDownloads)) ||
    (v.revokedAt !== undefined && !int(v.revokedAt))
  ) return undefined;
  return {
    id,
    tokenHash: v.tokenHash as string,
    creator: v.creator as string,
    bucket: v.bucket as string,
    prefix: v.prefix as string,
    permissions,
    ...(v.passwordHash !== undefined ? { passwordHash: v.passwordHash as string } : {}),
    createdAt: v.createdAt as number,
    expiresAt: v.expiresAt as number,
    ...(v.maxDownloads !== undefined ? { maxDownloads: v.maxDownloads as number } : {}),
    downloads: 0,
    uploads: 0,
    ...(v.revokedAt !== undefined ? { revokedAt: v.revokedAt as number } : {}),
  };
}

/** A token or share from a message, or undefined when it is not a well-formed one. */
export function parseRecordState(value: unknown): ReplicatedRecord | undefined {
  if (!isObject(value) || !isObject(value.stamp)) return undefined;
  const { kind, id, expiresAt, stamp } = value;
  if (
    !int(stamp.ms) || typeof stamp.node !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(stamp.node)
  ) {
    return undefined;
  }
  if (!int(expiresAt) || typeof id !== "string") return undefined;
  const base = {
    id,
    stamp: { ms: stamp.ms as number, node: stamp.node },
    expiresAt: expiresAt as number,
  };
  if (kind === "token" && HASH.test(id)) {
    if (value.value === null) return { kind, ...base, value: null };
    const t = isObject(value.value) ? token(value.value, id) : undefined;
    return t && { kind, ...base, value: t };
  }
  if (kind === "share" && /^[A-Za-z0-9_-]{1,64}$/.test(id)) {
    if (value.value === null) return { kind, ...base, value: null };
    const s = isObject(value.value) ? share(value.value, id) : undefined;
    return s && { kind, ...base, value: s as ShareRecord };
  }
  return undefined;
}
