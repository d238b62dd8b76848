// The audit log under /admin/audit (HTTP Basic, checked by the caller):
//   GET  /admin/audit?since&until&bucket&principal&operation&status&key_prefix&after_seq&limit
//   GET  /admin/audit/export     JSON Lines: the anchor line, then every entry, streamed
//   GET  /admin/audit/verify     {ok, entries, head_seq, head_hash, first_bad_seq, ...}
//                                (?head_seq&head_hash: also check a head recorded elsewhere)
//   POST /admin/audit/verify     the same for an exported file sent as the body
//   POST /admin/audit/prune      {older_than: ISO time}: prune through a checkpoint entry
import { ApiError, jsonResponse, readJsonObject } from "../api/json.ts";
import type { AppDeps } from "../protocol.ts";
import { pruneAudit } from "./retention.ts";
import { anchorLine, BadExportError, entryView, verifyExport, verifyStored } from "./verify.ts";
import { intParam, timeParam } from "./params.ts";

const MAX_LIMIT = 1000;
const EXPORT_PAGE = 2000;

async function list(req: Request, deps: AppDeps): Promise<Response> {
  const p = new URL(req.url).searchParams;
  const status = p.get("status");
  const limit = intParam(p, "limit", 1, MAX_LIMIT) ?? 100;
  const entries = await deps.layer.meta.queryAudit({
    afterSeq: intParam(p, "after_seq", 0, Number.MAX_SAFE_INTEGER) ?? 0,
    limit,
    since: timeParam(p, "since"),
    until: timeParam(p, "until"),
    bucket: p.get("bucket") ?? undefined,
    principal: p.get("principal") ?? undefined,
    operation: p.get("operation") ?? undefined,
    status: status === null ? undefined : intParam(p, "status", 100, 599),
    keyPrefix: p.get("key_prefix") ?? undefined,
  });
  return jsonResponse(200, {
    entries: entries.map(entryView),
    next_after_seq: entries.length === limit ? entries[entries.length - 1].seq : null,
  });
}

function exportAll(deps: AppDeps): Response {
  const meta = deps.layer.meta;
  const encoder = new TextEncoder();
  let after: number | undefined;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (after === undefined) {
        const anchor = await meta.auditAnchor();
        after = anchor.seq;
        controller.enqueue(encoder.encode(anchorLine(anchor) + "\n"));
        return;
      }
      const page = await meta.auditPage(after, EXPORT_PAGE);
      if (page.length > 0) {
        after = page[page.length - 1].seq;
        const text = page.map((e) => JSON.stringify(entryView(e)) + "\n").join("");
        controller.enqueue(encoder.encode(text));
      }
      if (page.length < EXPORT_PAGE) controller.close();
    },
  }, { highWaterMark: 1 });
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "application/x-ndjson",
      "content-disposition": 'attachment; filename="audit.jsonl"',
    },
  });
}

async function verify(req: Request, deps: AppDeps): Promise<Response> {
  if (req.method === "GET") {
    const p = new URL(req.url).searchParams;
    const seq = intParam(p, "head_seq", 0, Number.MAX_SAFE_INTEGER);
    const hash = p.get("head_hash");
    if ((seq === undefined) !== (hash === null)) {
      throw new ApiError(400, "invalid_field", "head_seq and head_hash go together.");
    }
    const expect = seq === undefined ? undefined : { seq, hash: hash! };
    return jsonResponse(200, await verifyStored(deps.layer.meta, expect));
  }
  if (!req.body) throw new ApiError(400, "invalid_body", "Send an exported audit file.");
  try {
    return jsonResponse(200, await verifyExport(req.body));
  } catch (err) {
    if (err instanceof BadExportError) throw new ApiError(400, "invalid_export", err.message);
    if (err instanceof TypeError) {
      throw new ApiError(400, "invalid_export", "The file is not valid UTF-8 JSON Lines.");
    }
    throw err;
  }
}

async function prune(req: Request, deps: AppDeps): Promise<Response> {
  const body = await readJsonObject(req, 1024);
  const before = typeof body.older_than === "string" ? Date.parse(body.older_than) : NaN;
  if (!Number.isFinite(before)) {
    throw new ApiError(400, "invalid_field", "older_than must be an ISO 8601 time.");
  }
  const done = await pruneAudit(deps.layer.meta, before, "admin", "admin");
  return jsonResponse(200, {
    pruned: done?.pruned ?? 0,
    anchor_seq: done?.anchor.seq ?? (await deps.layer.meta.auditAnchor()).seq,
  });
}

export async function auditRoute(
  req: Request,
  deps: AppDeps,
  sub: string | undefined,
  extra: string | undefined,
): Promise<Response> {
  const allowed: Record<string, string[]> = {
    "": ["GET"],
    export: ["GET"],
    verify: ["GET", "POST"],
    prune: ["POST"],
  };
  const name = sub ?? "";
  if (extra !== undefined || !(name in allowed)) {
    throw new ApiError(404, "not_found", "No such administration resource.");
  }
  if (!allowed[name].includes(req.method)) {
    throw new ApiError(405, "method_not_allowed", `Use ${allowed[name].join(" or ")}.`);
  }
  if (name === "") return await list(req, deps);
  if (name === "export") return exportAll(deps);
  if (name === "verify") return await verify(req, deps);
  return await prune(req, deps);
}
