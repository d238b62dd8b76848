// Users replicated between nodes (clustering): a user is stamped part by part (its record, its
// enabled flag, its bucket access and its key), each part carrying the stamp (milliseconds, then
// node id) of the change that last set it; another node's state is merged part by part, newer
// stamps winning, so concurrent changes of different parts both survive and the same part ends
// with the later change everywhere. Shared by both stores: they only read and write rows.
import type { BucketAccess, ChangeStamp, Stamped, UserRecord } from "./store.ts";
import { newerStamp } from "./version_stamps.ts";

export type UserItem = "record" | "enabled" | "access" | "key";
export const USER_ITEMS: readonly UserItem[] = ["record", "enabled", "access", "key"];

export type UserStamps = Partial<Record<UserItem, ChangeStamp>>;

/** What the record part holds: the user's identity and profile. */
export interface UserProfile {
  name: string;
  description: string;
  email: string;
  createdAt: number;
}

/** The key part: the access key and the secret (sealed with this node's master key). */
export interface UserKey {
  accessKey: string;
  sealedSecret: string;
  keyCreatedAt: number;
}

/** A user as replicated: a record of null is a deletion. */
export interface UserState {
  id: string;
  record?: Stamped<UserProfile | null>;
  enabled?: Stamped<boolean>;
  access?: Stamped<BucketAccess[]>;
  key?: Stamped<UserKey>;
}

/** A queued user change with the user's state now. */
export interface UserChange extends UserState {
  seq: number;
  queuedAt: number;
}

/** The parts that differ between two records of one user (all of them for a new one). */
export function changedItems(before: UserRecord | undefined, after: UserRecord): UserItem[] {
  if (!before) return [...USER_ITEMS];
  const items: UserItem[] = [];
  if (
    before.name !== after.name || before.description !== after.description ||
    before.email !== after.email
  ) items.push("record");
  if (before.enabled !== after.enabled) items.push("enabled");
  if (JSON.stringify(before.bucketAccess) !== JSON.stringify(after.bucketAccess)) {
    items.push("access");
  }
  if (
    before.accessKey !== after.accessKey || before.sealedSecret !== after.sealedSecret ||
    before.keyCreatedAt !== after.keyCreatedAt
  ) items.push("key");
  return items;
}

/** `stamps` with `items` stamped by a change made here now. */
export function stampLocal(stamps: UserStamps, items: UserItem[], node: string): UserStamps {
  const latest = Math.max(0, ...Object.values(stamps).map((s) => s.ms));
  const stamp = { ms: Math.max(Date.now(), latest + 1), node };
  const out = { ...stamps };
  for (const item of items) out[item] = stamp;
  return out;
}

/** The stamped parts of a user with their values (the record null once it was deleted). */
export function userState(id: string, user: UserRecord | undefined, s: UserStamps): UserState {
  const state: UserState = { id };
  if (s.record) {
    state.record = {
      stamp: s.record,
      value: user
        ? {
          name: user.name,
          description: user.description,
          email: user.email,
          createdAt: user.createdAt,
        }
        : null,
    };
  }
  if (!user) return state;
  if (s.enabled) state.enabled = { stamp: s.enabled, value: user.enabled };
  if (s.access) state.access = { stamp: s.access, value: user.bucketAccess };
  if (s.key) {
    state.key = {
      stamp: s.key,
      value: {
        accessKey: user.accessKey,
        sealedSecret: user.sealedSecret,
        keyCreatedAt: user.keyCreatedAt,
      },
    };
  }
  return state;
}

/** What merging another node's state here comes to. */
export type UserMerge =
  | { outcome: "stale" }
  | {
    outcome: "applied";
    /** The user as it is to be stored; null: deleted. */
    user: UserRecord | null;
    stamps: UserStamps;
    /** The user was disabled or re-keyed (or deleted): its bearer tokens end. */
    revokeTokens: boolean;
  };

/**
 * Merges `s` into the user here (`local`, with its `stamps`), each part taken when its stamp is
 * newer. A user not here is created only from a whole state (every part present); parts of a
 * user deleted here (or never seen) are ignored.
 */
export function mergeUser(
  local: UserRecord | undefined,
  stamps: UserStamps,
  s: UserState,
): UserMerge {
  const out = { ...stamps };
  let user = local ? { ...local } : undefined;
  let taken = false;
  let revokeTokens = false;
  if (s.record && newerStamp(s.record.stamp, stamps.record)) {
    const value = s.record.value;
    if (value === null) {
      if (user) revokeTokens = true;
      user = undefined;
    } else if (user) {
      user = { ...user, name: value.name, description: value.description, email: value.email };
    } else if (s.enabled && s.access && s.key) {
      user = {
        id: s.id,
        ...value,
        enabled: s.enabled.value,
        bucketAccess: s.access.value,
        ...s.key.value,
      };
      out.enabled = s.enabled.stamp;
      out.access = s.access.stamp;
      out.key = s.key.stamp;
    } else return { outcome: "stale" };
    out.record = s.record.stamp;
    taken = true;
  }
  if (user && local) {
    if (s.enabled && newerStamp(s.enabled.stamp, out.enabled)) {
      if (!s.enabled.value && user.enabled) revokeTokens = true;
      user.enabled = s.enabled.value;
      out.enabled = s.enabled.stamp;
      taken = true;
    }
    if (s.access && newerStamp(s.access.stamp, out.access)) {
      user.bucketAccess = s.access.value;
      out.access = s.access.stamp;
      taken = true;
    }
    if (s.key && newerStamp(s.key.stamp, out.key)) {
      user = { ...user, ...s.key.value };
      out.key = s.key.stamp;
      revokeTokens = true;
      taken = true;
    }
  }
  if (!taken) return { outcome: "stale" };
  return { outcome: "applied", user: user ?? null, stamps: out, revokeTokens };
}

/**
 * Of two users holding one name (or access key) after concurrent creations on two nodes, the one
 * that keeps it: the earlier created (then the lower id), the same choice on every node.
 */
export function keepsName(
  a: { id: string; createdAt: number },
  b: { id: string; createdAt: number },
): boolean {
  return a.createdAt !== b.createdAt ? a.createdAt < b.createdAt : a.id < b.id;
}
