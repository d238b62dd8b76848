// Conditional writes (If-Match, If-None-Match: * on PutObject and CompleteMultipartUpload).
// The condition is checked twice: before the body is stored (a write that cannot succeed fails
// early with 412, or 404 for If-Match on a missing key), and again inside the metadata
// transaction that commits the version, against the version current at that moment. When the
// second check fails the first passed, so another write or delete won the race: 409
// ConditionalRequestConflict. Only one of several concurrent conditional writers can commit.
import { S3Error } from "../http/errors.ts";
import type { ObjectVersion } from "../meta/store.ts";

export interface WriteCondition {
  /** ETags (comma-separated, quoted or not) one of which the current object must have. */
  ifMatch?: string;
  /** Only `*`: the key must have no current object. */
  ifNoneMatch?: string;
}

/** The condition of a write request's headers, or undefined when it names none. */
export function writeConditionOf(headers: Headers): WriteCondition | undefined {
  const ifMatch = headers.get("if-match") ?? undefined;
  const ifNoneMatch = headers.get("if-none-match") ?? undefined;
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  if (ifNoneMatch !== undefined && ifNoneMatch.trim() !== "*") {
    throw new S3Error(
      "NotImplemented",
      "A header you provided implies functionality that is not implemented.",
      { details: { Header: "If-None-Match" } },
    );
  }
  if (ifMatch !== undefined && ifMatch.trim() === "") {
    throw new S3Error("InvalidArgument", "If-Match must name an ETag.", {
      details: { ArgumentName: "If-Match", ArgumentValue: ifMatch },
    });
  }
  return { ifMatch, ifNoneMatch };
}

function bare(etag: string): string {
  return etag.trim().replace(/^W\//, "").replace(/^"|"$/g, "");
}

function failed(condition: string): S3Error {
  return new S3Error(
    "PreconditionFailed",
    "At least one of the pre-conditions you specified did not hold",
    { details: { Condition: condition } },
  );
}

/**
 * Throws when `current` (the key's current version; a delete marker counts as no object) does
 * not satisfy the condition: 412 PreconditionFailed, or 404 NoSuchKey for If-Match on a key
 * without an object.
 */
export function checkWriteCondition(
  condition: WriteCondition,
  current: ObjectVersion | undefined,
  key: string,
): void {
  const object = current && !current.deleteMarker ? current : undefined;
  if (condition.ifNoneMatch !== undefined && object) throw failed("If-None-Match");
  if (condition.ifMatch !== undefined) {
    if (!object) {
      throw new S3Error("NoSuchKey", "The specified key does not exist.", {
        details: { Key: key },
      });
    }
    const wanted = condition.ifMatch.split(",").map(bare);
    if (!wanted.includes("*") && !wanted.includes(bare(object.etag))) throw failed("If-Match");
  }
}

/**
 * The guard that runs inside the committing transaction: a condition that no longer holds
 * there was broken by a concurrent request (409).
 */
export function commitGuard(
  condition: WriteCondition | undefined,
  key: string,
): ((current: ObjectVersion | undefined) => void) | undefined {
  if (!condition) return undefined;
  return (current) => {
    try {
      checkWriteCondition(condition, current, key);
    } catch {
      throw new S3Error(
        "ConditionalRequestConflict",
        "A conflicting conditional operation is currently in progress against this resource. " +
          "Please try again.",
        { details: { Key: key } },
      );
    }
  };
}
