// Tests in a real browser (headless Chromium): CORS from another origin, the /browse pages,
// a share's pages and the web console.
// One browser and one server are shared by all steps.
import { startServer } from "../integration/server.ts";
import { launchChromium } from "./chromium.ts";
import { browseInBrowser } from "./browse_steps.ts";
import { corsInBrowser } from "./cors_steps.ts";
import { shareInBrowser } from "./share_steps.ts";
import { consoleInBrowser } from "./console_steps.ts";

Deno.test({
  name: "browser: CORS from another origin, the /browse pages, a share and the console",
  // puppeteer keeps timers of its own connection alive past close().
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const server = await startServer();
    const chromium = await launchChromium();
    try {
      await t.step(
        "fetch() with presigned URLs and signed headers, then blocked",
        () => corsInBrowser(chromium, server),
      );
      await t.step(
        "/browse: paging, folders, preview, download, hostile keys",
        () => browseInBrowser(chromium, server),
      );
      await t.step(
        "/share: password form, listing, folders, hostile keys",
        () => shareInBrowser(chromium, server),
      );
      await t.step(
        "/console: sign-in, buckets, 50 MiB upload, objects, settings, users, audit, a reader, " +
          "CSRF, sign-out, session expiry",
        () => consoleInBrowser(chromium, server),
      );
    } finally {
      await chromium.close();
      await server.stop();
      await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
    }
  },
});
