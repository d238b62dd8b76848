// The audit facts of a committed metadata change, as both stores write them in the change's own
// transaction (SqliteMetaStore and PgMetaStore `#change`).
import type { AuditFacts } from "../audit/chain.ts";
import type { AuditScope } from "../audit/scope.ts";

/** What a committed change adds to its request's audit facts. */
export interface ChangeDetail {
  /** When the request's own bucket is not the one changed (a replicated change). */
  bucket?: string;
  key?: string;
  versionId?: string;
  bytes?: number;
}

export function changeFacts(scope: AuditScope, change: ChangeDetail): AuditFacts {
  return {
    requestId: scope.requestId,
    principal: scope.principal,
    source: scope.source,
    operation: scope.operation,
    bucket: change.bucket ?? scope.bucket,
    key: change.key ?? scope.key,
    versionId: change.versionId ?? "",
    // The change committed: the request succeeded as far as this entry is concerned.
    status: 200,
    errorCode: "",
    bytes: change.bytes ?? 0,
    detail: scope.detail ? JSON.stringify(scope.detail) : "",
  };
}
