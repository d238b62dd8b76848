// The buckets the console lists for a principal: those it owns (what ListBuckets answers) and
// those its bucket_access grants it, which ListBuckets does not show but the access decision
// allows; for the administrator, every bucket. Opening any of them is still decided request by
// request.
import type { Principal } from "../auth/principal.ts";
import type { AppDeps } from "../protocol.ts";

export interface VisibleBucket {
  name: string;
  created: string;
  /** "owner", the permission bucket_access grants, or "admin" (another owner's, to the admin). */
  access: string;
}

/** Most buckets the administrator's list shows. */
export const ADMIN_LIST_MAX = 10_000;

export async function visibleBuckets(
  deps: AppDeps,
  principal: Principal,
): Promise<VisibleBucket[]> {
  const meta = deps.layer.meta;
  if (principal.kind === "admin") {
    // The administrator may do anything with any bucket: it sees them all.
    return (await meta.listAllBuckets(ADMIN_LIST_MAX)).map((b) => ({
      name: b.name,
      created: new Date(b.createdAt).toISOString(),
      access: b.owner === principal.id ? "owner" : "admin",
    }));
  }
  const out: VisibleBucket[] = (await meta.listBuckets(principal.id)).map((b) => ({
    name: b.name,
    created: new Date(b.createdAt).toISOString(),
    access: "owner",
  }));
  const owned = new Set(out.map((b) => b.name));
  for (const grant of principal.bucketAccess) {
    if (grant.permission === "none" || owned.has(grant.bucket)) continue;
    const bucket = await meta.getBucket(grant.bucket);
    if (!bucket) continue;
    out.push({
      name: bucket.name,
      created: new Date(bucket.createdAt).toISOString(),
      access: grant.permission,
    });
  }
  return out.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}
