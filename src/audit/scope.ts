// The audit scope of a request: who is asking, what, from where. Kept in an AsyncLocalStorage so
// the metadata store can write the entry of a change inside the change's own transaction without
// every layer passing it along. Background work (lifecycle) runs in a scope of its own.
import { AsyncLocalStorage } from "node:async_hooks";

export interface AuditScope {
  requestId: string;
  principal: string;
  source: string;
  operation: string;
  bucket: string;
  key: string;
  /** Entries already written for this request (by the changes it committed). */
  recorded: number;
  /** Record the request even when it changed nothing and succeeded (sign-ins, share use). */
  always: boolean;
  /** A successful routine call (a node's heartbeat): no entry unless it failed. */
  routine?: boolean;
  /** The error code answered, once known. */
  errorCode?: string;
  /** Extra facts for the entry (a share's id, a checkpoint's anchor). */
  detail?: Record<string, unknown>;
}

const storage = new AsyncLocalStorage<AuditScope>();

export function currentAudit(): AuditScope | undefined {
  return storage.getStore();
}

export function runAudited<T>(scope: AuditScope, fn: () => T): T {
  return storage.run(scope, fn);
}

export function newScope(init: Partial<AuditScope> & { requestId: string }): AuditScope {
  return {
    principal: "anonymous",
    source: "",
    operation: "Unknown",
    bucket: "",
    key: "",
    recorded: 0,
    always: false,
    ...init,
  };
}
