// The HTML of the /browse pages: header with breadcrumbs and search box, one row per folder or
// file, the pager, and the single not-found page. Every key is escaped and isolated with <bdi>
// so markup and right-to-left text stay text.
import type { ListEntry } from "../meta/store.ts";
import { contentTypeFor } from "../http/mime.ts";
import { BROWSE_CSS } from "./assets/browse_css.ts";
import { escapeHtml, formatDate, formatSize, markup } from "./html.ts";

export const PAGE_CSS = BROWSE_CSS;
export const ICON_PATH = "/browse/_assets/icon.svg";

const FOLDER_ICON = '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M10 4l2 2h8a2 2 ' +
  '0 0 1 2 2v10a2 2 0 0 1-2 2H4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z"/></svg>';
const FILE_ICON = '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M6 2h8l6 6v12a2 2 0 0 ' +
  '1-2 2H6a2 2 0 0 1-2-2V4a2 2 0 0 1 2-2zm7 1.5V9h5.5z"/></svg>';

/** Whether anonymous callers may read a listed object (the page's links depend on it). */
export type Readable = "yes" | "by-object-acl" | "no";

export interface PageInfo {
  bucket: string;
  /** The folder shown: "" or a prefix ending in "/". */
  folder: string;
  /** The search text within the folder ("" for none). */
  search: string;
  limit: number;
  defaultLimit: number;
}

/** A dot segment would be removed by the browser's URL parser, so such paths cannot be links. */
function hasDotSegment(path: string): boolean {
  return path.split("/").some((s) => s === "." || s === "..");
}

function encodePath(path: string): string {
  return path.split("/").map(encodeURIComponent).join("/");
}

/** The object's own URL (GetObject); undefined when no URL can address the key. */
export function objectHref(bucket: string, key: string): string | undefined {
  return hasDotSegment(key) ? undefined : `/${encodeURIComponent(bucket)}/${encodePath(key)}`;
}

/** A folder's page: path form, or `?prefix=` when the prefix has dot segments. */
export function folderHref(
  page: Pick<PageInfo, "bucket" | "limit" | "defaultLimit">,
  folder: string,
  extra: Record<string, string> = {},
): string {
  const params = new URLSearchParams();
  let path = `/browse/${encodeURIComponent(page.bucket)}/`;
  if (hasDotSegment(folder)) params.set("prefix", folder);
  else path += encodePath(folder);
  for (const [k, v] of Object.entries(extra)) if (v !== "") params.set(k, v);
  if (page.limit !== page.defaultLimit) params.set("limit", String(page.limit));
  const query = params.toString();
  return query === "" ? path : `${path}?${query}`;
}

function breadcrumbs(page: PageInfo): string {
  const crumbs = [markup`<a href="${folderHref(page, "")}"><bdi>${page.bucket}</bdi></a>`];
  let at = "";
  for (const segment of page.folder.split("/").slice(0, -1)) {
    at += segment + "/";
    crumbs.push(markup`<a href="${folderHref(page, at)}"><bdi>${segment}</bdi></a>`);
  }
  return crumbs.join('<span class="sep">/</span>');
}

function documentStart(title: string): string {
  return '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    markup`<title>${title}</title>` + `<link rel="icon" href="${ICON_PATH}" type="image/svg+xml">` +
    `<style>${PAGE_CSS}</style></head><body><main>`;
}

/** Everything up to the first row. */
export function pageStart(page: PageInfo): string {
  const title = `${page.bucket}/${page.folder}`;
  return documentStart(`${title} · store`) +
    `<h1><nav class="crumbs" aria-label="Folders">${breadcrumbs(page)}</nav></h1>` +
    markup`<form class="search" method="get" action="${
      folderHref({ ...page, limit: page.defaultLimit }, page.folder)
    }">` +
    (hasDotSegment(page.folder)
      ? markup`<input type="hidden" name="prefix" value="${page.folder}">`
      : "") +
    (page.limit !== page.defaultLimit
      ? markup`<input type="hidden" name="limit" value="${page.limit}">`
      : "") +
    markup`<input type="search" name="q" value="${page.search}" ` +
    'placeholder="Names starting with…" aria-label="Search in this folder">' +
    '<button type="submit">Search</button></form><ul class="entries">';
}

export function folderRow(page: PageInfo, prefix: string): string {
  const name = prefix.slice(page.folder.length);
  return `<li class="folder"><span class="icon">${FOLDER_ICON}</span>` +
    markup`<span class="name"><a href="${folderHref(page, prefix)}"><bdi>${name}</bdi></a></span>` +
    '<span class="size">—</span><span class="date"></span></li>';
}

function fileIcon(href: string | undefined, key: string, readable: Readable): string {
  if (href && readable === "yes" && contentTypeFor(key).startsWith("image/")) {
    return markup`<a class="icon" href="${href}"><img src="${href}" alt="" loading="lazy"></a>`;
  }
  return `<span class="icon">${FILE_ICON}</span>`;
}

export function fileRow(page: PageInfo, entry: ListEntry, readable: Readable): string {
  const name = entry.key.slice(page.folder.length);
  const href = readable === "no" ? undefined : objectHref(page.bucket, entry.key);
  const base = name.slice(name.lastIndexOf("/") + 1);
  const label = href
    ? markup`<a href="${href}"><bdi>${name}</bdi></a>` +
      markup`<a class="dl" href="${href}" download="${base}">download</a>`
    : markup`<bdi>${name}</bdi><span class="private">${
      readable === "no" ? "private" : "no link"
    }</span>`;
  return `<li class="file">${
    fileIcon(href, entry.key, readable)
  }<span class="name">${label}</span>` +
    markup`<span class="size">${formatSize(entry.size)}</span>` +
    markup`<span class="date"><time datetime="${new Date(entry.lastModified).toISOString()}">${
      formatDate(entry.lastModified)
    }</time></span></li>`;
}

/** Closes the list; `next` is the continuation of a truncated page. */
export function pageEnd(page: PageInfo, opts: { empty: boolean; next?: string; first: boolean }) {
  const extra = { q: page.search };
  const links = [
    opts.first
      ? "<span></span>"
      : markup`<a href="${folderHref(page, page.folder, extra)}">First page</a>`,
    opts.next
      ? markup`<a rel="next" href="${
        folderHref(page, page.folder, { ...extra, token: opts.next })
      }">Next page</a>`
      : "",
  ];
  const empty = opts.empty
    ? `<p class="empty">${page.search ? "Nothing here matches." : "This folder is empty."}</p>`
    : "";
  return `</ul>${empty}<nav class="pager" aria-label="Pages">${links.join("")}</nav>` +
    "</main></body></html>\n";
}

/** The one page for a bucket that is missing, not public, or not a bucket name at all. */
export const NOT_FOUND_PAGE = documentStart("Not found · store") +
  '<h1>Not found</h1><p class="note">There is no public bucket at this address.</p>' +
  "</main></body></html>\n";

/** A request the browser pages cannot answer (a bad continuation token, another method). */
export function messagePage(title: string, message: string): string {
  return documentStart(`${title} · store`) +
    `<h1>${escapeHtml(title)}</h1><p class="note">${
      escapeHtml(message)
    }</p></main></body></html>\n`;
}
