// A policy principal names a user; it means the user that had the name when the policy was
// stored. Each name is pinned to that user's stable id (bucket config "policy-principals", with
// the SHA-256 of the policy text it belongs to), so a user deleted and re-created under the same
// name does not inherit the grants (or escape the denials aimed at a NotPrincipal).
import { createHash } from "node:crypto";
import { S3Error } from "../http/errors.ts";
import type { MetaStore } from "../meta/store.ts";
import { type BucketPolicy, policyUserNames } from "./policy.ts";

interface StoredPins {
  /** SHA-256 (hex) of the policy text the pins were made for. */
  policy: string;
  ids: Record<string, string>;
}

function textHash(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function parsePins(raw: string): StoredPins | undefined {
  try {
    return JSON.parse(raw) as StoredPins;
  } catch {
    return undefined; // unreadable: pinned anew
  }
}

async function resolve(
  meta: MetaStore,
  names: string[],
): Promise<{ ids: Record<string, string>; missing: string[] }> {
  const ids: Record<string, string> = {};
  const missing: string[] = [];
  for (const name of names) {
    const user = await meta.getUser({ name });
    if (user) ids[name] = user.id;
    else missing.push(name);
  }
  return { ids, missing };
}

/**
 * PutBucketPolicy: pins every named user, before the policy text itself is stored. A name no
 * user has is MalformedPolicy, as the protocol refuses a principal that does not exist.
 */
export async function pinPrincipals(
  meta: MetaStore,
  bucket: string,
  text: string,
  policy: BucketPolicy,
): Promise<void> {
  const { ids, missing } = await resolve(meta, policyUserNames(policy));
  if (missing.length > 0) {
    throw new S3Error("MalformedPolicy", `Invalid principal in policy: no user "${missing[0]}".`);
  }
  const pins: StoredPins = { policy: textHash(text), ids };
  await meta.putBucketConfig(bucket, "policy-principals", JSON.stringify(pins));
}

/**
 * The pins of a stored policy. A policy stored before pins existed (or whose pins a crash left
 * behind) is pinned now, to the users that have the names at this first use.
 */
export async function principalIds(
  meta: MetaStore,
  bucket: string,
  text: string,
  policy: BucketPolicy,
): Promise<Record<string, string>> {
  const hash = textHash(text);
  const raw = await meta.getBucketConfig(bucket, "policy-principals");
  const stored = raw === undefined ? undefined : parsePins(raw);
  if (stored?.policy === hash) return stored.ids;
  const { ids } = await resolve(meta, policyUserNames(policy));
  await meta.putBucketConfig(
    bucket,
    "policy-principals",
    JSON.stringify({ policy: hash, ids } satisfies StoredPins),
  );
  return ids;
}
