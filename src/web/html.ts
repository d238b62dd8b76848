// Small helpers for server-rendered HTML: escaping, sizes, dates, and the page's security
// headers (a strict Content-Security-Policy that admits only the embedded stylesheet).
import { createHash } from "node:crypto";

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Escapes text for element content and quoted attribute values alike. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** A tagged template that escapes every interpolated value. */
export function markup(parts: TemplateStringsArray, ...values: (string | number)[]): string {
  let out = parts[0];
  for (let i = 0; i < values.length; i++) out += escapeHtml(String(values[i])) + parts[i + 1];
  return out;
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

export function formatSize(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

/** `2026-11-23 18:40 UTC`: the same on every device, no script needed. */
export function formatDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

/** The CSP source expression that admits exactly this inline stylesheet. */
export function styleHash(css: string): string {
  return `'sha256-${createHash("sha256").update(css).digest("base64")}'`;
}

/** Headers of every HTML page: no scripts at all, styles only by hash, images same-origin. */
export function pageHeaders(cssHash: string): Record<string, string> {
  return {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": `default-src 'none'; style-src ${cssHash}; img-src 'self'; ` +
      "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
  };
}
