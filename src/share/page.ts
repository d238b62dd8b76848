// The HTML of a share's listing, in the style of the /browse pages (no scripts; styles by hash).
import { formatDate, formatSize, markup } from "../web/html.ts";
import { ICON_PATH, PAGE_CSS } from "../web/browse_page.ts";
import type { ListEntry } from "../meta/store.ts";

function documentStart(title: string): string {
  return '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    markup`<title>${title}</title>` + `<link rel="icon" href="${ICON_PATH}" type="image/svg+xml">` +
    `<style>${PAGE_CSS}</style></head><body><main>`;
}

const documentEnd = "</main></body></html>\n";

/** Links keep the password the page was opened with (a browser has no other way to send it). */
function href(path: string, password: string | undefined, extra: Record<string, string> = {}) {
  const q = new URLSearchParams({ ...extra, ...(password ? { password } : {}) }).toString();
  return q ? `${path}?${q}` : path;
}

function encodePath(path: string): string {
  return path.split("/").map(encodeURIComponent).join("/");
}

export interface ListingPage {
  token: string;
  bucket: string;
  /** The folder shown, relative to the share's prefix ("" or ending in "/"). */
  folder: string;
  objects: ListEntry[];
  /** Sub-folders, relative to the share's prefix. */
  folders: string[];
  /** The share's prefix, cut from keys for display. */
  prefix: string;
  readable: boolean;
  next?: string;
  password?: string;
}

export function listingPage(p: ListingPage): string {
  const root = `/share/${p.token}/`;
  const rows: string[] = [];
  if (p.folder !== "") {
    const parent = p.folder.slice(0, p.folder.slice(0, -1).lastIndexOf("/") + 1);
    rows.push(
      markup`<li class="folder"><span class="name"><a href="${
        href(root + encodePath(parent), p.password)
      }">..</a></span><span class="size">—</span><span class="date"></span></li>`,
    );
  }
  for (const folder of p.folders) {
    rows.push(
      markup`<li class="folder"><span class="name"><a href="${
        href(root + encodePath(folder), p.password)
      }"><bdi>${folder.slice(p.folder.length)}</bdi></a></span>` +
        '<span class="size">—</span><span class="date"></span></li>',
    );
  }
  for (const o of p.objects) {
    const name = o.key.slice(p.prefix.length + p.folder.length);
    const link = href(root + encodePath(o.key.slice(p.prefix.length)), p.password);
    const label = p.readable
      ? markup`<a href="${link}"><bdi>${name}</bdi></a>`
      : markup`<bdi>${name}</bdi>`;
    rows.push(
      `<li class="file"><span class="name">${label}</span>` +
        markup`<span class="size">${formatSize(o.size)}</span>` +
        markup`<span class="date">${formatDate(o.lastModified)}</span></li>`,
    );
  }
  const next = p.next
    ? markup`<nav class="pages"><a href="${
      href(root + encodePath(p.folder), p.password, { after: p.next })
    }">Next page</a></nav>`
    : "";
  return documentStart(`${p.bucket}/${p.prefix}${p.folder} · shared`) +
    markup`<h1>Shared: <bdi>${p.bucket}/${p.prefix}${p.folder}</bdi></h1>` +
    (rows.length === 0 ? '<p class="note">This folder is empty.</p>' : "") +
    `<ul class="entries">${rows.join("")}</ul>${next}` + documentEnd;
}

export function passwordPage(wrong: boolean): string {
  return documentStart("Password required · shared") +
    "<h1>Password required</h1>" +
    (wrong ? '<p class="note">That password is wrong.</p>' : "") +
    '<form class="search" method="get"><input type="password" name="password" ' +
    'aria-label="Password" autofocus required><button type="submit">Open</button></form>' +
    documentEnd;
}

export function refusalPage(title: string, message: string): string {
  return documentStart(`${title} · shared`) +
    markup`<h1>${title}</h1><p class="note">${message}</p>` + documentEnd;
}
