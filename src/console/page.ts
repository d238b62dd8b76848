// The console's page and its script and stylesheet, embedded in the program (no build step, no
// CDN). The page admits only its own script and stylesheet.
import { APP_CSS } from "./assets/app_css.ts";
import { APP_JS } from "./assets/app_js.ts";
import { INDEX_HTML } from "./assets/index_html.ts";
import { ICON_SVG } from "../web/assets/icon_svg.ts";

const SECURITY = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; " +
    "img-src 'self' blob:; connect-src 'self'; form-action 'none'; base-uri 'none'; " +
    "frame-ancestors 'none'",
};

const ASSETS: Record<string, { type: string; body: string; cache: string }> = {
  "/console": { type: "text/html; charset=utf-8", body: INDEX_HTML, cache: "no-store" },
  "/console/": { type: "text/html; charset=utf-8", body: INDEX_HTML, cache: "no-store" },
  "/console/app.js": { type: "text/javascript; charset=utf-8", body: APP_JS, cache: "no-cache" },
  "/console/app.css": { type: "text/css; charset=utf-8", body: APP_CSS, cache: "no-cache" },
  "/console/icon.svg": { type: "image/svg+xml", body: ICON_SVG, cache: "max-age=86400" },
};

export function serveAsset(req: Request, path: string): Response {
  const asset = ASSETS[path];
  if (!asset) return new Response("Not found\n", { status: 404, headers: SECURITY });
  if (req.method !== "GET" && req.method !== "HEAD") {
    return new Response(null, { status: 405, headers: { ...SECURITY, allow: "GET, HEAD" } });
  }
  return new Response(req.method === "HEAD" ? null : asset.body, {
    headers: { ...SECURITY, "content-type": asset.type, "cache-control": asset.cache },
  });
}
