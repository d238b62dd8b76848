// The access decision for protocol operations.
import { S3Error } from "../http/errors.ts";
import type { Principal } from "./principal.ts";

/** Operations any authenticated principal may call without a bucket of its own. */
const ACCOUNT_OPERATIONS = new Set(["ListBuckets", "CreateBucket"]);

/**
 * Decides whether `principal` may run `operation` on a bucket owned by `bucketOwner`
 * (undefined when the bucket does not exist). The administrator may do everything; other
 * principals act on buckets they own.
 */
export function authorize(
  principal: Principal,
  operation: string,
  bucketOwner: string | undefined,
): void {
  if (principal.kind === "admin") return;
  if (principal.kind === "anonymous") {
    throw new S3Error("AccessDenied", "Access Denied");
  }
  if (ACCOUNT_OPERATIONS.has(operation)) return;
  if (bucketOwner === undefined || bucketOwner === principal.id) return;
  throw new S3Error("AccessDenied", "Access Denied");
}
