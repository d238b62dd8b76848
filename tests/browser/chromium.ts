// One headless Chromium (Debian's package, installed by scripts/install/chromium.sh) for the
// browser tests, driven through puppeteer-core with exactly the flags that work on our machines.
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { join } from "node:path";

export const CHROMIUM = "/usr/bin/chromium";
/** Screenshots and downloads of the browser tests (git-ignored). */
export const OUTPUT_DIR = new URL("../../test-output/browser/", import.meta.url).pathname;

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface Chromium {
  browser: Browser;
  /** A fresh page whose console errors (CSP violations among them) and dialogs are recorded. */
  newPage(): Promise<TrackedPage>;
  close(): Promise<void>;
}

export interface TrackedPage {
  page: Page;
  /** Console errors, failed requests and dialogs seen so far. */
  problems: string[];
}

export async function launchChromium(): Promise<Chromium> {
  const profile = await Deno.makeTempDir({ prefix: "store-chromium-" });
  await Deno.mkdir(OUTPUT_DIR, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    ignoreDefaultArgs: true,
    args: [...FLAGS, `--user-data-dir=${profile}`, "--remote-debugging-port=0", "about:blank"],
    headless: true,
  });
  return {
    browser,
    async newPage() {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(`console: ${m.text()}`);
      });
      page.on("pageerror", (e) => problems.push(`page error: ${e}`));
      page.on("dialog", async (d) => {
        problems.push(`dialog: ${d.message()}`);
        await d.dismiss();
      });
      return { page, problems };
    },
    async close() {
      await browser.close();
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    },
  };
}

export function screenshotPath(name: string): string {
  return join(OUTPUT_DIR, `${name}.png`);
}

/** Serves one HTML page from its own port: a second origin for cross-origin requests. */
export function serveOrigin(html: string): { url: string; close(): Promise<void> } {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } }),
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    close: () => server.shutdown(),
  };
}
