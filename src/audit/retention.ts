// Audit retention: entries older than STORE_AUDIT_RETENTION_DAYS are pruned through a checkpoint
// entry naming the new anchor, so what remains still verifies. The head hash is logged every hour
// so a copy kept elsewhere (the log collector) can anchor the chain against rewriting.
import { log } from "../log.ts";
import type { RecordStore } from "../meta/store.ts";
import type { AuditAnchor } from "./chain.ts";
import { CHECKPOINT_OPERATION } from "./verify.ts";

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

export async function pruneAudit(
  meta: RecordStore,
  before: number,
  requestId = "retention",
  principal = "system:retention",
): Promise<{ anchor: AuditAnchor; pruned: number } | undefined> {
  return await meta.pruneAudit(before, (anchor, pruned) => ({
    requestId,
    principal,
    source: "",
    operation: CHECKPOINT_OPERATION,
    bucket: "",
    key: "",
    versionId: "",
    status: 200,
    errorCode: "",
    bytes: 0,
    detail: JSON.stringify({
      anchor_seq: anchor.seq,
      anchor_hash: anchor.hash,
      pruned,
      before: new Date(before).toISOString(),
    }),
  }));
}

export async function logHead(meta: RecordStore): Promise<void> {
  const head = await meta.auditHead();
  log("info", "Audit head", { source: "audit", seq: head.seq, hash: head.hash });
}

/** Runs retention (when configured) and logs the head: now, then every hour. */
export function startAuditRetention(
  meta: RecordStore,
  retentionDays: number,
): { stop(): void } {
  const tick = async () => {
    try {
      if (retentionDays > 0) {
        const done = await pruneAudit(meta, Date.now() - retentionDays * DAY_MS);
        if (done) log("info", "Audit entries pruned", { source: "audit", ...done });
      }
      await logHead(meta);
    } catch (err) {
      log("error", "Audit retention failed", { source: "audit", error: String(err) });
    }
  };
  tick();
  const timer = setInterval(tick, HOUR_MS);
  return { stop: () => clearInterval(timer) };
}
