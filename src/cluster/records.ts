// Bearer tokens, share links, token-service sessions and directory (LDAP) access mappings
// replicated between nodes: each change queued in the metadata (RecordReplicationQueue) is sent as
// the whole record then (null once a token was revoked, a session or a mapping removed) with the
// stamp of its last change; the receiver takes it when the stamp is newer. Tokens and shares are
// stored as hashes only; a session's secret and token travel sealed with the cluster's key
// (users.ts wireSealer), never with this node's master key or in the clear.
import { validateBucketAccess } from "../api/admin_input.ts";
import type { SecretSealer } from "../auth/secrets.ts";
import { SESSION_KEY_PREFIX } from "../auth/sts/sessions.ts";
import { log } from "../log.ts";
import {
  type LdapMapping,
  mappingId,
  type RecordChange,
  type RecordReplicationQueue,
  type ReplicatedRecord,
  type SessionRecord,
  type ShareRecord,
} from "../meta/store.ts";
import type { Membership } from "./membership.ts";
import { QueueSender } from "./queue_sender.ts";
import type { Deliver } from "./replication.ts";

/** The sealing contexts of a session's secret and token on the wire. */
const wireSecret = (accessKey: string) => `cluster-session:${accessKey}`;
const wireToken = (accessKey: string) => `cluster-session-token:${accessKey}`;

export class RecordReplicator extends QueueSender<RecordChange> {
  constructor(
    queue: RecordReplicationQueue,
    membership: Membership,
    deliver: Deliver,
    /** This node's sealer (its master key) and the cluster's (users.ts wireSealer). */
    sealer: SecretSealer,
    wire: SecretSealer,
    pollMs?: number,
    pruneMs?: number,
  ) {
    super(
      {
        type: "records",
        what: "Token, share, session and mapping replication",
        changes: (after, limit) => queue.recordChanges(after, limit),
        cursor: (node) => queue.recordReplicationCursor(node),
        setCursor: (node, seq) => queue.setRecordReplicationCursor(node, seq),
        backlog: (after) => queue.recordReplicationBacklog(after),
        prune: (nodes) => queue.pruneRecordChanges(nodes, Date.now()),
        wire: (change) => toWire(change, sealer, wire),
      },
      membership,
      deliver,
      pollMs,
      pruneMs,
    );
  }
}

/** A change as it travels; undefined when it cannot (a session whose secret does not open). */
export function toWire(
  change: RecordChange,
  sealer: SecretSealer,
  wire: SecretSealer,
): unknown {
  const { seq: _seq, queuedAt: _queuedAt, ...state } = change;
  if (state.kind === "share" && state.value) {
    // Each node counts a share's downloads and uploads itself.
    const { downloads: _d, uploads: _u, ...share } = state.value;
    return { ...state, value: share };
  }
  if (state.kind !== "session" || !state.value) return state;
  const { sealedSecret, sealedToken, accessKey, ...rest } = state.value;
  try {
    const secret = sealer.open(sealedSecret, accessKey);
    const token = sealer.open(sealedToken, `${accessKey}/token`);
    return {
      ...state,
      value: {
        ...rest,
        secret: wire.seal(secret, wireSecret(accessKey)),
        token: wire.seal(token, wireToken(accessKey)),
      },
    };
  } catch (err) {
    // Cannot happen with an intact database: the session stays on this node.
    log("warn", "A session's secret does not open; it is not replicated", {
      session: accessKey,
      error: String(err),
    });
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const int = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
const str = (v: unknown, max = 1024) => typeof v === "string" && v.length <= max;
const HASH = /^[0-9a-f]{64}$/;
const PERMISSIONS = ["read", "write", "list"];

function token(v: Record<string, unknown>, id: string) {
  if (
    !str(v.userId, 256) || !int(v.createdAt) || !int(v.expiresAt) ||
    (v.accessKey !== undefined && !str(v.accessKey, 128))
  ) return undefined;
  return {
    hash: id,
    userId: v.userId as string,
    createdAt: v.createdAt as number,
    expiresAt: v.expiresAt as number,
    ...(v.accessKey !== undefined ? { accessKey: v.accessKey as string } : {}),
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
    (v.revokedAt !== undefined && !int(v.revokedAt)) ||
    (v.bucketCreatedAt !== undefined && !int(v.bucketCreatedAt))
  ) return undefined;
  return {
    id,
    tokenHash: v.tokenHash as string,
    creator: v.creator as string,
    bucket: v.bucket as string,
    ...(v.bucketCreatedAt !== undefined ? { bucketCreatedAt: v.bucketCreatedAt as number } : {}),
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

/** A session from a message, its secret and token sealed again with this node's master key. */
function session(
  v: Record<string, unknown>,
  id: string,
  sealer: SecretSealer,
  wire: SecretSealer,
): SessionRecord | undefined {
  const groups = v.ldapGroups;
  if (
    (v.parentKind !== "user" && v.parentKind !== "ldap") || !str(v.parentId, 256) ||
    (v.parentKey !== undefined && !str(v.parentKey, 128)) ||
    (v.ldapDn !== undefined && !str(v.ldapDn, 4096)) ||
    (groups !== undefined &&
      (!Array.isArray(groups) || groups.length > 10_000 || !groups.every((g) => str(g, 4096)))) ||
    (v.policy !== undefined && !str(v.policy, 4096)) || !int(v.createdAt) ||
    !int(v.expiresAt) || typeof v.secret !== "string" || typeof v.token !== "string"
  ) return undefined;
  let secret: string;
  let sessionToken: string;
  try {
    secret = wire.open(v.secret, wireSecret(id));
    sessionToken = wire.open(v.token, wireToken(id));
  } catch {
    return undefined;
  }
  return {
    accessKey: id,
    sealedSecret: sealer.seal(secret, id),
    sealedToken: sealer.seal(sessionToken, `${id}/token`),
    parentKind: v.parentKind as SessionRecord["parentKind"],
    parentId: v.parentId as string,
    ...(v.parentKey !== undefined ? { parentKey: v.parentKey as string } : {}),
    ...(v.ldapDn !== undefined ? { ldapDn: v.ldapDn as string } : {}),
    ...(groups !== undefined ? { ldapGroups: groups as string[] } : {}),
    ...(v.policy !== undefined ? { policy: v.policy as string } : {}),
    createdAt: v.createdAt as number,
    expiresAt: v.expiresAt as number,
  };
}

function mapping(v: Record<string, unknown>, id: string): LdapMapping | undefined {
  if (
    (v.kind !== "group" && v.kind !== "user") || !str(v.name, 256) ||
    mappingId(v.kind as LdapMapping["kind"], v.name as string) !== id ||
    typeof v.isAdmin !== "boolean"
  ) return undefined;
  try {
    return {
      kind: v.kind as LdapMapping["kind"],
      name: v.name as string,
      bucketAccess: validateBucketAccess(v.bucketAccess),
      isAdmin: v.isAdmin as boolean,
    };
  } catch {
    return undefined;
  }
}

const SESSION_ID = new RegExp(`^${SESSION_KEY_PREFIX}[A-Z0-9]{16}$`);
const MAPPING_ID = /^(group|user):.{1,256}$/s;

/**
 * A token, share, session or mapping from a message, or undefined when it is not a well-formed
 * one (or a session's secret does not open with the cluster's key).
 */
export function parseRecordState(
  value: unknown,
  sealer: SecretSealer,
  wire: SecretSealer,
): ReplicatedRecord | undefined {
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
  if (kind === "session" && SESSION_ID.test(id)) {
    if (value.value === null) return { kind, ...base, value: null };
    const s = isObject(value.value) ? session(value.value, id, sealer, wire) : undefined;
    return s && { kind, ...base, value: s };
  }
  if (kind === "mapping" && MAPPING_ID.test(id)) {
    if (value.value === null) return { kind, ...base, value: null };
    const m = isObject(value.value) ? mapping(value.value, id) : undefined;
    return m && { kind, ...base, value: m };
  }
  return undefined;
}
