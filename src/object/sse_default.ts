// A bucket's default encryption (PutBucketEncryption): what a new object without SSE headers is
// encrypted with. Stored as JSON in the bucket config kind "encryption"; its XML form is
// src/api/encryption_xml.ts.
import type { MetaStore } from "../meta/store.ts";

export interface DefaultEncryption {
  /** As given: `AES256`, `aws:kms` or `store:kms`. */
  algorithm: string;
  /** The named key for the KMS algorithms; the default key when absent. */
  kmsKeyId?: string;
  bucketKeyEnabled?: boolean;
}

export const KMS_ALGORITHMS = ["aws:kms", "store:kms"];

/** The bucket's default encryption, or undefined when it has none. */
export async function defaultEncryption(
  meta: MetaStore,
  bucket: string,
): Promise<DefaultEncryption | undefined> {
  const stored = await meta.getBucketConfig(bucket, "encryption");
  return stored === undefined ? undefined : JSON.parse(stored) as DefaultEncryption;
}
