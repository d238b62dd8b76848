// The request parts that bucket policy conditions read beyond the address and the listing
// parameters: vendor headers (`x-*-acl`, `x-*-copy-source`, ...), `versionId`, `delimiter` and
// the tags a write sets through `x-*-tagging`.
import type { RequestFacts } from "../auth/access.ts";
import { type Dialect, h } from "../http/dialect.ts";
import type { TagSet } from "../meta/store.ts";
import { parseTaggingHeader } from "./tags.ts";

export function conditionFacts(
  headers: Headers,
  query: URLSearchParams,
  dialect: Dialect,
): Pick<RequestFacts, "delimiter" | "versionId" | "header" | "requestTags"> {
  const tagging = headers.get(h(dialect, "tagging"));
  let requestTags: TagSet | undefined;
  if (tagging !== null) {
    try {
      requestTags = parseTaggingHeader(tagging, dialect);
    } catch {
      // A malformed header is refused by the handler (InvalidArgument) once the caller may act.
    }
  }
  return {
    delimiter: query.get("delimiter") ?? undefined,
    versionId: query.get("versionId") ?? undefined,
    header: (suffix) => headers.get(h(dialect, suffix)) ?? undefined,
    requestTags,
  };
}
