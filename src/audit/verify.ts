// Verification of the stored chain and of exported files: entries are read in pages (stored) or
// line by line (a file), so memory stays flat however long the chain.
import type { RecordStore } from "../meta/store.ts";
import { type AuditAnchor, type AuditEntry, ChainVerifier, type VerifyReport } from "./chain.ts";

/** The operation of the entry retention appends after pruning. */
export const CHECKPOINT_OPERATION = "AuditCheckpoint";
/** Entries read a round trip: small pages die young, so the heap stays small (see bench:audit). */
const PAGE = 1000;
/** Work between yields to the event loop, so requests keep being served during a long verify. */
const SLICE_MS = 20;

/** A checkpoint's detail names the anchor it left; the newest must name the current one. */
function checkpointAnchor(e: AuditEntry): AuditAnchor | undefined {
  if (e.operation !== CHECKPOINT_OPERATION) return undefined;
  try {
    const d = JSON.parse(e.detail);
    return { seq: d.anchor_seq, hash: d.anchor_hash };
  } catch {
    return { seq: -1, hash: "" };
  }
}

function checkAnchor(v: ChainVerifier, last: AuditAnchor | undefined): void {
  if (v.anchor.seq === 0) return;
  if (!last || last.seq !== v.anchor.seq || last.hash !== v.anchor.hash) {
    v.fail(v.anchor.seq + 1, "the anchor does not match the newest checkpoint entry");
  }
}

/**
 * Verifies the stored chain from its anchor. `expect` is a head recorded elsewhere (a logged
 * head hash): the entry at that position must still carry that hash.
 */
export async function verifyStored(
  meta: RecordStore,
  expect?: AuditAnchor,
): Promise<VerifyReport> {
  const v = new ChainVerifier(await meta.auditAnchor());
  let last: AuditAnchor | undefined;
  let after = v.anchor.seq;
  let matched = expect === undefined ||
    (expect.seq === v.anchor.seq && expect.hash === v.anchor.hash);
  let sliceStart = performance.now();
  for (;;) {
    const page = await meta.auditPage(after, PAGE);
    for (const e of page) {
      if (!v.add(e)) break;
      last = checkpointAnchor(e) ?? last;
      if (expect && e.seq === expect.seq) matched = e.hash === expect.hash;
    }
    if (v.broken || page.length < PAGE) break;
    after = page[page.length - 1].seq;
    if (performance.now() - sliceStart > SLICE_MS) {
      await new Promise((r) => setTimeout(r, 0));
      sliceStart = performance.now();
    }
  }
  checkAnchor(v, last);
  if (!matched) v.fail(expect!.seq, `entry ${expect!.seq} does not carry the expected hash`);
  return v.report();
}

/** The export's first line: where the exported chain starts. */
export function anchorLine(anchor: AuditAnchor): string {
  return JSON.stringify({ anchor: { seq: anchor.seq, hash: anchor.hash } });
}

export function entryView(e: AuditEntry): Record<string, unknown> {
  return {
    seq: e.seq,
    time: new Date(e.at).toISOString(),
    at: e.at,
    request_id: e.requestId,
    principal: e.principal,
    source: e.source,
    operation: e.operation,
    bucket: e.bucket,
    key: e.key,
    version_id: e.versionId,
    status: e.status,
    error_code: e.errorCode,
    bytes: e.bytes,
    detail: e.detail,
    hash: e.hash,
  };
}

function fromView(o: Record<string, unknown>): AuditEntry | undefined {
  const e = {
    seq: o.seq,
    at: o.at,
    requestId: o.request_id,
    principal: o.principal,
    source: o.source,
    operation: o.operation,
    bucket: o.bucket,
    key: o.key,
    versionId: o.version_id,
    status: o.status,
    errorCode: o.error_code,
    bytes: o.bytes,
    detail: o.detail,
    hash: o.hash,
  };
  const numbers = [e.seq, e.at, e.status, e.bytes];
  const texts = [
    e.requestId,
    e.principal,
    e.source,
    e.operation,
    e.bucket,
    e.key,
    e.versionId,
    e.errorCode,
    e.detail,
    e.hash,
  ];
  if (
    !numbers.every((n) => Number.isSafeInteger(n)) || !texts.every((t) => typeof t === "string")
  ) {
    return undefined;
  }
  return e as AuditEntry;
}

/** Longest line accepted in an exported file: an entry is far smaller. */
export const MAX_LINE = 1 << 20;

export class BadExportError extends Error {}

/** Splits a byte stream into lines of at most MAX_LINE bytes. */
async function* lines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let pending = "";
  for await (const chunk of body) {
    pending += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = pending.indexOf("\n")) >= 0) {
      yield pending.slice(0, nl);
      pending = pending.slice(nl + 1);
    }
    if (pending.length > MAX_LINE) throw new BadExportError("A line is longer than 1 MiB.");
  }
  pending += decoder.decode();
  if (pending !== "") yield pending;
}

/**
 * Verifies an exported file (JSON Lines: the anchor line, then entries). Without an anchor line
 * the chain must start at the beginning.
 */
export async function verifyExport(body: ReadableStream<Uint8Array>): Promise<VerifyReport> {
  let v: ChainVerifier | undefined;
  let last: AuditAnchor | undefined;
  let n = 0;
  for await (const line of lines(body)) {
    n++;
    // Once broken, the rest is only read so the client's upload completes.
    if (v?.broken || line.trim() === "") continue;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(line);
    } catch {
      throw new BadExportError(`Line ${n} is not JSON.`);
    }
    if (!v && typeof o.anchor === "object" && o.anchor !== null) {
      const a = o.anchor as Record<string, unknown>;
      if (!Number.isSafeInteger(a.seq) || typeof a.hash !== "string") {
        throw new BadExportError("The anchor line needs a seq and a hash.");
      }
      v = new ChainVerifier({ seq: a.seq as number, hash: a.hash });
      continue;
    }
    v ??= new ChainVerifier({ seq: 0, hash: "0".repeat(64) });
    const e = fromView(o);
    if (!e) throw new BadExportError(`Line ${n} is not an audit entry.`);
    if (!v.add(e)) continue;
    last = checkpointAnchor(e) ?? last;
  }
  v ??= new ChainVerifier({ seq: 0, hash: "0".repeat(64) });
  checkAnchor(v, last);
  return v.report();
}
