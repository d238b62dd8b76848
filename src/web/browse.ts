// GET /browse/{bucket}[/{prefix}]: a server-rendered file browser for buckets that anonymous
// callers may list. Who may browse is the ordinary access decision for an anonymous
// ListObjectsV2; everything else (missing, private, bad names) gets one and the same 404 page.
// The listing is read in batches from the object layer and streamed as it is rendered.
import type { RequestFacts, Verdict } from "../auth/access.ts";
import { ANONYMOUS } from "../auth/principal.ts";
import { compareKeys } from "../meta/keys.ts";
import type { BucketRecord, ListEntry } from "../meta/store.ts";
import type { AppDeps } from "../protocol.ts";
import { isSecureRequest } from "../http/secure_transport.ts";
import { ICON_SVG } from "./assets/icon_svg.ts";
import {
  fileRow,
  folderRow,
  ICON_PATH,
  messagePage,
  NOT_FOUND_PAGE,
  PAGE_CSS,
  pageEnd,
  type PageInfo,
  pageStart,
  type Readable,
} from "./browse_page.ts";
import { pageHeaders, styleHash } from "./html.ts";

const HEADERS = pageHeaders(styleHash(PAGE_CSS));
const DEFAULT_LIMIT = 1000;
/** Rows fetched (and written) per round trip to the metadata store. */
const BATCH = 250;
const encoder = new TextEncoder();

function page(status: number, body: string, head: boolean, extra: Record<string, string> = {}) {
  return new Response(head ? null : body, { status, headers: { ...HEADERS, ...extra } });
}

function isIconRequest(url: string): boolean {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  const path = url.slice(pathStart).split("?")[0];
  return path === ICON_PATH;
}

function notFound(head: boolean): Response {
  return page(404, NOT_FOUND_PAGE, head);
}

/** Base64url of the last key or prefix shown, as ListObjectsV2's continuation token. */
function encodeToken(after: string): string {
  return btoa(String.fromCharCode(...encoder.encode(after)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeToken(token: string): string | undefined {
  try {
    const bin = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
    return new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(bin, (c) => c.charCodeAt(0)),
    );
  } catch {
    return undefined;
  }
}

interface BrowseRequest {
  bucket: string;
  folder: string;
  search: string;
  limit: number;
  after: string;
  token: string | null;
}

/** Reads bucket, folder and options from the request target (no URL normalisation). */
function parseRequest(url: string): BrowseRequest | undefined {
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  const target = url.slice(pathStart);
  const question = target.indexOf("?");
  const rawPath = (question < 0 ? target : target.slice(0, question)).slice("/browse".length);
  const query = new URLSearchParams(question < 0 ? "" : target.slice(question + 1));
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    return undefined;
  }
  const slash = path.indexOf("/", 1);
  const bucket = slash < 0 ? path.slice(1) : path.slice(1, slash);
  let folder = query.get("prefix") ?? (slash < 0 ? "" : path.slice(slash + 1));
  if (folder !== "" && !folder.endsWith("/")) folder += "/";
  const limitText = query.get("limit") ?? "";
  const limit = /^\d{1,4}$/.test(limitText) && Number(limitText) >= 1
    ? Math.min(Number(limitText), DEFAULT_LIMIT)
    : DEFAULT_LIMIT;
  const token = query.get("token");
  const after = token === null ? "" : decodeToken(token);
  if (after === undefined) return { bucket, folder, search: "", limit, after: "", token: "" };
  return { bucket, folder, search: query.get("q") ?? "", limit, after, token };
}

function factsOf(
  req: Request,
  info: Deno.ServeHandlerInfo,
  deps: AppDeps,
  opts: { prefix: string; limit: number },
): RequestFacts {
  const addr = info.remoteAddr as Deno.NetAddr;
  const { prefix, limit } = opts;
  return {
    sourceIp: addr.hostname ?? "",
    secureTransport: isSecureRequest(req.headers, deps.config.trustProxy),
    now: new Date(),
    prefix,
    maxKeys: limit,
  };
}

/** Whether an anonymous GetObject of `key` is allowed, deferred to the object, or denied. */
async function readable(
  deps: AppDeps,
  bucket: BucketRecord,
  key: string,
  facts: RequestFacts,
): Promise<Readable> {
  let verdict: Verdict;
  try {
    verdict = await deps.access.decide(ANONYMOUS, "GetObject", { bucket, key, facts });
  } catch {
    return "no";
  }
  return verdict === "allow" ? "yes" : "by-object-acl";
}

async function rows(
  deps: AppDeps,
  info: PageInfo,
  batch: { bucket: BucketRecord; objects: ListEntry[]; prefixes: string[]; facts: RequestFacts },
): Promise<string> {
  // Folders and files in the listing's key order, so every page size shows the same sequence.
  let out = "";
  let p = 0;
  for (const entry of batch.objects) {
    while (p < batch.prefixes.length && compareKeys(batch.prefixes[p], entry.key) < 0) {
      out += folderRow(info, batch.prefixes[p++]);
    }
    out += fileRow(info, entry, await readable(deps, batch.bucket, entry.key, batch.facts));
  }
  for (; p < batch.prefixes.length; p++) out += folderRow(info, batch.prefixes[p]);
  return out;
}

/** The page as a stream: the head at once, then the rows batch by batch, then the pager. */
function listingStream(
  deps: AppDeps,
  bucket: BucketRecord,
  req: BrowseRequest,
  facts: RequestFacts,
): ReadableStream<Uint8Array> {
  const info: PageInfo = { ...req, defaultLimit: DEFAULT_LIMIT };
  const prefix = req.folder + req.search;
  let after = req.after;
  let shown = 0;
  let more = true;
  let started = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!started) {
        started = true;
        controller.enqueue(encoder.encode(pageStart(info)));
        return;
      }
      if (more && shown < req.limit) {
        const page = await deps.layer.listObjects(bucket.name, {
          prefix,
          delimiter: "/",
          after,
          maxKeys: Math.min(BATCH, req.limit - shown),
        });
        const html = await rows(deps, info, {
          bucket,
          objects: page.objects,
          prefixes: page.commonPrefixes,
          facts,
        });
        shown += page.objects.length + page.commonPrefixes.length;
        more = page.isTruncated && page.lastReturned !== undefined;
        if (page.lastReturned !== undefined) after = page.lastReturned;
        controller.enqueue(encoder.encode(html));
        return;
      }
      controller.enqueue(encoder.encode(pageEnd(info, {
        empty: shown === 0,
        next: more ? encodeToken(after) : undefined,
        first: req.token === null,
      })));
      controller.close();
    },
  });
}

export async function handleBrowse(
  req: Request,
  info: Deno.ServeHandlerInfo,
  deps: AppDeps,
): Promise<Response> {
  const head = req.method === "HEAD";
  if (req.method !== "GET" && !head) {
    return page(405, messagePage("Method not allowed", "Pages here are read with GET."), false, {
      allow: "GET, HEAD",
    });
  }
  if (isIconRequest(req.url)) {
    return new Response(head ? null : ICON_SVG, {
      headers: {
        "content-type": "image/svg+xml",
        "cache-control": "public, max-age=86400",
        "x-content-type-options": "nosniff",
        "content-security-policy": "default-src 'none'",
      },
    });
  }
  const parsed = parseRequest(req.url);
  if (!parsed || parsed.bucket === "") return notFound(head);
  if (parsed.token === "") {
    return page(400, messagePage("Bad request", "The page link is not valid."), head);
  }
  const bucket = await deps.layer.meta.getBucket(parsed.bucket);
  if (!bucket) return notFound(head);
  const facts = factsOf(req, info, deps, {
    prefix: parsed.folder + parsed.search,
    limit: parsed.limit,
  });
  try {
    await deps.access.decide(ANONYMOUS, "ListObjectsV2", { bucket, facts });
  } catch {
    return notFound(head);
  }
  if (head) return page(200, "", true);
  return new Response(listingStream(deps, bucket, parsed, facts), {
    status: 200,
    headers: HEADERS,
  });
}
