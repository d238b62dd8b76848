// The audit chain: each entry's hash is SHA-256 over the previous entry's hash and the entry's
// canonical form, so changing, removing, inserting or reordering a stored entry breaks every link
// after it. Pure functions, shared by the writer (src/meta/sqlite_audit.ts), the verifier and the
// exported-file check.
import { createHash } from "node:crypto";

/** The hash an empty chain starts from. */
export const GENESIS_HASH = "0".repeat(64);

/** What an entry records (DESIGN: who did what to which object, with what outcome). */
export interface AuditFacts {
  requestId: string;
  principal: string;
  source: string;
  operation: string;
  bucket: string;
  key: string;
  versionId: string;
  status: number;
  errorCode: string;
  bytes: number;
  /** Extra facts as JSON text ("" when none). */
  detail: string;
}

export interface AuditEntry extends AuditFacts {
  seq: number;
  /** Epoch milliseconds. */
  at: number;
  hash: string;
}

/** The anchor the remaining chain starts from: the last pruned entry (seq 0 = none pruned). */
export interface AuditAnchor {
  seq: number;
  hash: string;
}

/** Fixed field order; JSON escaping makes the form unambiguous. */
export function canonical(e: Omit<AuditEntry, "hash">): string {
  return JSON.stringify([
    e.seq,
    e.at,
    e.requestId,
    e.principal,
    e.source,
    e.operation,
    e.bucket,
    e.key,
    e.versionId,
    e.status,
    e.errorCode,
    e.bytes,
    e.detail,
  ]);
}

export function entryHash(prev: string, e: Omit<AuditEntry, "hash">): string {
  // One update call: each call into node:crypto costs more than hashing a few hundred bytes.
  return createHash("sha256").update(prev + "\n" + canonical(e)).digest("hex");
}

export interface VerifyReport {
  ok: boolean;
  entries: number;
  anchor_seq: number;
  head_seq: number;
  head_hash: string;
  first_bad_seq: number | null;
  reason?: string;
}

/**
 * Walks entries in order from an anchor, holding only the running hash: memory stays flat
 * however long the chain. Stops at the first broken link.
 */
export class ChainVerifier {
  #prev: string;
  #expectSeq: number;
  #entries = 0;
  #bad: { seq: number; reason: string } | undefined;

  constructor(readonly anchor: AuditAnchor) {
    this.#prev = anchor.hash;
    this.#expectSeq = anchor.seq + 1;
  }

  get broken(): boolean {
    return this.#bad !== undefined;
  }

  /** Checks the next entry; false once the chain is broken. */
  add(e: AuditEntry): boolean {
    if (this.#bad) return false;
    if (e.seq !== this.#expectSeq) {
      // A gap or a step back: an entry was deleted, inserted or moved.
      this.#bad = {
        seq: Math.min(e.seq, this.#expectSeq),
        reason: e.seq > this.#expectSeq
          ? `entry ${this.#expectSeq} is missing`
          : `entry ${e.seq} is out of order`,
      };
      return false;
    }
    if (entryHash(this.#prev, e) !== e.hash) {
      this.#bad = { seq: e.seq, reason: `entry ${e.seq} does not match its hash` };
      return false;
    }
    this.#prev = e.hash;
    this.#expectSeq++;
    this.#entries++;
    return true;
  }

  /** A link the caller found broken outside the entries (an anchor mismatch, a bad line). */
  fail(seq: number, reason: string): void {
    this.#bad ??= { seq, reason };
  }

  report(): VerifyReport {
    return {
      ok: this.#bad === undefined,
      entries: this.#entries,
      anchor_seq: this.anchor.seq,
      head_seq: this.#expectSeq - 1,
      head_hash: this.#prev,
      first_bad_seq: this.#bad?.seq ?? null,
      ...(this.#bad ? { reason: this.#bad.reason } : {}),
    };
  }
}
