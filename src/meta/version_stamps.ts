// Stamps of a version's later changes (clustering): its tags, ACL, retention and legal hold can
// change after it was written, on any node, so each part carries the stamp (milliseconds, then
// node id) of the change that last set it. A replicated change is taken part by part when its
// stamp is newer than the one here, so nodes changing one version at once converge on the later
// change whatever order the changes arrive in. Shared by both stores.
import type { ChangeStamp, ObjectVersion, Retention, Stamped, TagSet } from "./store.ts";

export type VersionPart = "tags" | "acl" | "retention" | "legalHold";
export const VERSION_PARTS: readonly VersionPart[] = ["tags", "acl", "retention", "legalHold"];

/** The stamp of each part changed since the version was written (none: the write's values). */
export type VersionStamps = Partial<Record<VersionPart, ChangeStamp>>;

/** The stamped parts of a version with their values, as they travel between nodes. */
export interface VersionParts {
  tags?: Stamped<TagSet>;
  /** Stored ACL JSON; null for the owner's default private ACL. */
  acl?: Stamped<string | null>;
  retention?: Stamped<Retention | null>;
  legalHold?: Stamped<boolean>;
}

/** Whether stamp `a` comes after `b` (milliseconds, then node id). */
export function newerStamp(a: ChangeStamp, b: ChangeStamp | undefined): boolean {
  if (!b) return true;
  return a.ms !== b.ms ? a.ms > b.ms : a.node > b.node;
}

/** The stamp of a change made here now: after every stamp the version's parts already carry. */
export function nextStamp(stamps: VersionStamps | undefined, node: string): ChangeStamp {
  const latest = Math.max(0, ...Object.values(stamps ?? {}).map((s) => s.ms));
  return { ms: Math.max(Date.now(), latest + 1), node };
}

/** The parts of `v` that carry a stamp, with their values. */
export function stampedParts(v: ObjectVersion): VersionParts {
  const s = v.stamps ?? {};
  const parts: VersionParts = {};
  if (s.tags) parts.tags = { stamp: s.tags, value: v.tags ?? {} };
  if (s.acl) parts.acl = { stamp: s.acl, value: v.acl ?? null };
  if (s.retention) parts.retention = { stamp: s.retention, value: v.retention ?? null };
  if (s.legalHold) parts.legalHold = { stamp: s.legalHold, value: v.legalHold ?? false };
  return parts;
}

/**
 * `v` with each part of `parts` that is newer than its own taken (value and stamp); undefined
 * when none is. Delete markers have no tags.
 */
export function mergeParts(v: ObjectVersion, parts: VersionParts): ObjectVersion | undefined {
  const out: ObjectVersion = { ...v, stamps: { ...v.stamps } };
  let taken = false;
  const take = (part: VersionPart, stamp: ChangeStamp, apply: () => void) => {
    if (!newerStamp(stamp, out.stamps![part])) return;
    apply();
    out.stamps![part] = stamp;
    taken = true;
  };
  if (parts.tags && !v.deleteMarker) {
    const { value } = parts.tags;
    take("tags", parts.tags.stamp, () => out.tags = value);
  }
  if (parts.acl) {
    const { value } = parts.acl;
    take("acl", parts.acl.stamp, () => out.acl = value ?? undefined);
  }
  if (parts.retention) {
    const { value } = parts.retention;
    take("retention", parts.retention.stamp, () => out.retention = value ?? undefined);
  }
  if (parts.legalHold) {
    const { value } = parts.legalHold;
    take("legalHold", parts.legalHold.stamp, () => out.legalHold = value);
  }
  return taken ? out : undefined;
}

/**
 * A replica of a version that is here already: its parts changed here later than the replica's
 * (a later change this node made or received) are kept.
 */
export function keepNewerParts(replica: ObjectVersion, here: ObjectVersion): ObjectVersion {
  return mergeParts(replica, stampedParts(here)) ?? replica;
}

const isStamp = (v: unknown): v is ChangeStamp =>
  typeof v === "object" && v !== null && Number.isSafeInteger((v as ChangeStamp).ms) &&
  typeof (v as ChangeStamp).node === "string";

/** Stamps as stored or received; undefined when malformed. */
export function parseStamps(value: unknown): VersionStamps | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const out: VersionStamps = {};
  for (const [part, stamp] of Object.entries(value)) {
    if (!VERSION_PARTS.includes(part as VersionPart) || !isStamp(stamp)) return undefined;
    out[part as VersionPart] = stamp;
  }
  return out;
}

const isTags = (v: unknown) =>
  typeof v === "object" && v !== null && !Array.isArray(v) &&
  Object.values(v).every((x) => typeof x === "string");
const isRetention = (v: unknown) =>
  typeof v === "object" && v !== null &&
  ["GOVERNANCE", "COMPLIANCE"].includes((v as Retention).mode) &&
  Number.isSafeInteger((v as Retention).until);

/** Parts as received from another node; undefined when malformed. */
export function parseParts(value: unknown): VersionParts | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const checks: Record<VersionPart, (v: unknown) => boolean> = {
    tags: isTags,
    acl: (v) => v === null || typeof v === "string",
    retention: (v) => v === null || isRetention(v),
    legalHold: (v) => typeof v === "boolean",
  };
  for (const [part, item] of Object.entries(value)) {
    const check = Object.hasOwn(checks, part) ? checks[part as VersionPart] : undefined;
    if (!check || typeof item !== "object" || item === null) return undefined;
    const { stamp, value: v } = item as Stamped<unknown>;
    if (!isStamp(stamp) || !check(v)) return undefined;
  }
  return value as VersionParts;
}
