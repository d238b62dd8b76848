// Object Lock rules: default retention, retention changes and what may be deleted.
import { S3Error } from "../http/errors.ts";
import type { ObjectVersion, Retention } from "../meta/store.ts";

export interface LockConfig {
  defaultRetention?: { mode: Retention["mode"]; days?: number; years?: number };
}

export const LOCK_MODES = ["GOVERNANCE", "COMPLIANCE"];
const DAY_MS = 24 * 3600 * 1000;

export function lockDenied(message: string): S3Error {
  return new S3Error("AccessDenied", message);
}

/** The retention a new version gets from the bucket's default, if any. */
export function defaultRetention(config: LockConfig, now: number): Retention | undefined {
  const d = config.defaultRetention;
  if (!d) return undefined;
  if (d.days !== undefined) return { mode: d.mode, until: now + d.days * DAY_MS };
  const until = new Date(now);
  until.setUTCFullYear(until.getUTCFullYear() + d.years!);
  return { mode: d.mode, until: until.getTime() };
}

function active(r: Retention | undefined, now: number): r is Retention {
  return r !== undefined && r.until > now;
}

/**
 * Whether a retention change is allowed: compliance retention can only be extended before it
 * expires; governance retention can be shortened, removed or changed to compliance only with
 * the bypass.
 */
export function checkRetentionChange(
  current: Retention | undefined,
  next: Retention | null,
  opts: { bypassGovernance: boolean; now: number },
): void {
  if (!active(current, opts.now)) return;
  const extends_ = next !== null && next.until >= current.until;
  if (current.mode === "COMPLIANCE") {
    if (!extends_ || next!.mode !== "COMPLIANCE") {
      throw lockDenied("Access Denied because object protected by object lock.");
    }
    return;
  }
  // Shortening, removing or turning governance into compliance all need the bypass.
  if ((!extends_ || next!.mode !== "GOVERNANCE") && !opts.bypassGovernance) {
    throw lockDenied("Access Denied because object protected by object lock.");
  }
}

/** Refuses to delete a version under legal hold or active retention. */
export function assertDeletable(
  v: ObjectVersion,
  opts: { bypassGovernance: boolean; now: number },
): void {
  if (v.legalHold) throw lockDenied("Access Denied because object protected by object lock.");
  if (!active(v.retention, opts.now)) return;
  if (v.retention.mode === "GOVERNANCE" && opts.bypassGovernance) return;
  throw lockDenied("Access Denied because object protected by object lock.");
}
