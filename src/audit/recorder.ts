// Request-level audit entries. Changes write their own entries inside their transactions (see
// SqliteMetaStore#change); this records what is left when a request ends: a state-changing
// request that changed nothing (refused, failed), every denied request, every sign-in, every
// administration and share request, and the failure of a request whose change had committed.
import type { Principal } from "../auth/principal.ts";
import { log } from "../log.ts";
import { isDiskFull } from "../storage/disk_errors.ts";
import type { RecordStore } from "../meta/store.ts";
import type { AuditScope } from "./scope.ts";

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

export function principalName(p: Principal): string {
  return p.kind === "anonymous" ? "anonymous" : `${p.kind}:${p.displayName}`;
}

export interface Outcome {
  method: string;
  status: number;
  /** The request's declared body size. */
  bytes: number;
}

/** Whether a finished request still needs an entry of its own. */
export function needsEntry(scope: AuditScope, o: Outcome): boolean {
  const failed = o.status >= 400;
  if (scope.recorded > 0 || scope.routine) return failed;
  return scope.always || !READS.has(o.method) || o.status === 401 || o.status === 403;
}

export class AuditRecorder {
  constructor(readonly meta: RecordStore, readonly enabled: boolean) {}

  async finish(scope: AuditScope, o: Outcome): Promise<void> {
    if (!this.enabled || !needsEntry(scope, o)) return;
    try {
      await this.meta.appendAudit({
        requestId: scope.requestId,
        principal: scope.principal,
        source: scope.source,
        operation: scope.operation,
        bucket: scope.bucket,
        key: scope.key,
        versionId: "",
        status: o.status,
        errorCode: scope.errorCode ?? "",
        bytes: o.bytes,
        detail: scope.detail ? JSON.stringify(scope.detail) : "",
      });
    } catch (err) {
      // On a full disk the request was refused anyway (507); anything else is a real failure.
      log(isDiskFull(err) ? "warn" : "error", "An audit entry could not be written", {
        source: "audit",
        requestId: scope.requestId,
        operation: scope.operation,
        error: String(err),
      });
    }
  }
}
