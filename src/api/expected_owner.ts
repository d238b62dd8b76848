// `x-*-expected-bucket-owner` and `x-*-source-expected-bucket-owner`: a request may name the
// account it expects to own the bucket; a bucket of another owner is then AccessDenied.
import { type Dialect, h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import type { BucketRecord } from "../meta/store.ts";

/**
 * Throws AccessDenied when the header is present and `bucket` exists with another owner. The
 * account id is the owner id that Owner.ID shows (ListBuckets, ACLs, listings).
 */
export function checkExpectedOwner(
  headers: Headers,
  dialect: Dialect,
  header: "expected-bucket-owner" | "source-expected-bucket-owner",
  bucket: BucketRecord | undefined,
): void {
  const expected = headers.get(h(dialect, header));
  if (expected === null || !bucket) return;
  if (expected !== bucket.owner) throw new S3Error("AccessDenied", "Access Denied");
}
