// Version ids and the versioning state of a bucket, as writes see it.
import type { BucketRecord } from "../meta/store.ts";

let lastMs = 0;
let counter = 0;

/**
 * A new version id: milliseconds and a counter (so ids sort by creation time within this
 * process), then random bits. 28 characters of [0-9a-v] (base32hex).
 */
export function newVersionId(): string {
  const now = Date.now();
  counter = now === lastMs ? counter + 1 : 0;
  lastMs = now;
  const random = crypto.getRandomValues(new Uint32Array(2));
  return now.toString(32).padStart(10, "0") + counter.toString(32).padStart(4, "0") +
    random[0].toString(32).padStart(7, "0") + random[1].toString(32).padStart(7, "0");
}

/** The version id a write creates: a fresh one when versioning is enabled, else "null". */
export function versionIdFor(bucket: BucketRecord): string {
  return bucket.versioning === "Enabled" ? newVersionId() : "null";
}
