// Conditional request headers (If-Match and friends), evaluated as the protocol does.
import { S3Error } from "./errors.ts";

export interface Conditions {
  ifMatch?: string | null;
  ifNoneMatch?: string | null;
  ifModifiedSince?: string | null;
  ifUnmodifiedSince?: string | null;
}

function etagMatches(list: string, etag: string): boolean {
  return list.split(",").some((raw) => {
    const t = raw.trim().replace(/^W\//, "");
    return t === "*" || t === etag || `"${t}"` === etag;
  });
}

/** Seconds-resolution comparison: HTTP dates carry no milliseconds. */
function modifiedAfter(lastModified: number, header: string): boolean | undefined {
  const since = Date.parse(header);
  if (Number.isNaN(since)) return undefined;
  return Math.floor(lastModified / 1000) * 1000 > since;
}

/**
 * Throws PreconditionFailed (412) or NotModified (304) when the conditions say so.
 * If-Match wins over If-Unmodified-Since, If-None-Match over If-Modified-Since.
 */
export function checkConditions(
  c: Conditions,
  object: { etag: string; lastModified: number },
  opts: { notModifiedAllowed: boolean },
): void {
  const precondition = () =>
    new S3Error(
      "PreconditionFailed",
      "At least one of the pre-conditions you specified did not hold.",
      {
        details: { Condition: "If-Match" },
      },
    );
  if (c.ifMatch) {
    if (!etagMatches(c.ifMatch, object.etag)) throw precondition();
  } else if (c.ifUnmodifiedSince) {
    if (modifiedAfter(object.lastModified, c.ifUnmodifiedSince) === true) throw precondition();
  }
  const notModified = () =>
    opts.notModifiedAllowed ? new S3Error("NotModified", "Not Modified") : precondition();
  if (c.ifNoneMatch) {
    if (etagMatches(c.ifNoneMatch, object.etag)) throw notModified();
  } else if (c.ifModifiedSince) {
    if (modifiedAfter(object.lastModified, c.ifModifiedSince) === false) throw notModified();
  }
}
