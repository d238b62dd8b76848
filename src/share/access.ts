// Whether a share may be used now: it exists, is neither revoked nor expired, its password (if
// any) is given, and its creator still exists, is enabled and still has the access the share
// passes on: every use is decided by the ordinary access rules for the creator.
import type { AccessControl, RequestFacts, Verdict } from "../auth/access.ts";
import { ADMIN_ID } from "../auth/admin_credentials.ts";
import { type Credentials, userPrincipal } from "../auth/credentials.ts";
import { LDAP_ID_PREFIX } from "../auth/ldap/service.ts";
import type { Principal } from "../auth/principal.ts";
import type { BucketRecord, MetaStore, ShareRecord } from "../meta/store.ts";
import { S3Error } from "../http/errors.ts";

/** A refusal of the share page: status, a code for JSON, a sentence for people. */
export class ShareRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export function shareState(share: ShareRecord | undefined, now: number): ShareRecord {
  if (!share) throw new ShareRefusal(404, "no_such_share", "There is no share at this address.");
  if (share.revokedAt !== undefined) {
    throw new ShareRefusal(410, "share_revoked", "This share has been revoked.");
  }
  if (share.expiresAt <= now) {
    throw new ShareRefusal(410, "share_expired", "This share has expired.");
  }
  return share;
}

const CREATOR_DISABLED = "The account that shared this is disabled.";

/**
 * The creator as a principal; refused when the account is gone or disabled. A directory user is
 * as the directory and the mappings have it now (its groups re-read after STORE_LDAP_CACHE_TTL),
 * as for its token and console sessions.
 */
export async function creatorOf(
  share: ShareRecord,
  meta: MetaStore,
  credentials: Credentials,
): Promise<Principal> {
  if (share.creator === ADMIN_ID) return credentials.adminPrincipal();
  if (share.creator.startsWith(LDAP_ID_PREFIX)) {
    const ldap = credentials.ldap;
    if (!ldap) throw new ShareRefusal(403, "creator_disabled", CREATOR_DISABLED);
    const identity = await ldap.identity(share.creator.slice(LDAP_ID_PREFIX.length));
    if (!identity) {
      // Not seen since the server started, and the directory does not answer.
      throw new ShareRefusal(
        503,
        "directory_unavailable",
        "The directory that vouches for this share cannot be reached; try again later.",
        { "retry-after": "30" },
      );
    }
    if (identity.disabled) throw new ShareRefusal(403, "creator_disabled", CREATOR_DISABLED);
    return await ldap.principal(identity);
  }
  const user = await meta.getUser({ id: share.creator });
  if (!user || !user.enabled) {
    throw new ShareRefusal(403, "creator_disabled", CREATOR_DISABLED);
  }
  return userPrincipal(user);
}

/** The creator's access decision for one operation; ShareRefusal 403 when denied. */
export async function decideForCreator(
  access: AccessControl,
  creator: Principal,
  operation: string,
  target: { bucket: BucketRecord; key?: string; facts: RequestFacts },
): Promise<Verdict> {
  try {
    return await access.decide(creator, operation, target);
  } catch (err) {
    if (err instanceof S3Error && err.code === "AccessDenied") {
      throw new ShareRefusal(
        403,
        "creator_lacks_access",
        "The account that shared this no longer has that access.",
      );
    }
    throw err;
  }
}
