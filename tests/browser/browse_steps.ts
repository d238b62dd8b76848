// The /browse pages in a real browser, on a phone-sized screen: paging, a click into a folder,
// an image preview, a download, and hostile keys shown as text (no script runs, no CSP
// violation, the embedded stylesheet applies).
import { CreateBucketCommand, PutBucketPolicyCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import type { Page } from "puppeteer-core";
import { join } from "node:path";
import { assert, assertEquals } from "../integration/assert.ts";
import { s3Client, type TestServer } from "../integration/server.ts";
import { type Chromium, OUTPUT_DIR, screenshotPath } from "./chromium.ts";
import type { PageGlobals } from "./dom.ts";

const BUCKET = "gallery";
const SCRIPT_KEY = `<script>document.title="pwned"</script> 'q' 🦀 שלום.txt`;
const IMG_KEY = `<img src=x onerror="document.title='pwned'"> \u202Eevil.txt`;
const ROOT_FILES = ["a.txt", "b.txt", "c.txt", "d.txt", IMG_KEY];

async function setUp(server: TestServer, page: Page): Promise<void> {
  const s3 = s3Client(server);
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  await s3.send(
    new PutBucketPolicyCommand({
      Bucket: BUCKET,
      Policy: JSON.stringify({
        Version: "2012-10-17",
        Statement: [{
          Effect: "Allow",
          Principal: "*",
          Action: ["s3:ListBucket", "s3:GetObject"],
          Resource: [`arn:aws:s3:::${BUCKET}`, `arn:aws:s3:::${BUCKET}/*`],
        }],
      }),
    }),
  );
  // A real PNG for the preview: a screenshot of a small coloured square.
  await page.setContent(
    '<div style="width:64px;height:64px;background:linear-gradient(#e33,#36f)"></div>',
  );
  const png = await page.screenshot({ clip: { x: 8, y: 8, width: 64, height: 64 } });
  const put = (Key: string, Body: string | Uint8Array, ContentType?: string) =>
    s3.send(new PutObjectCommand({ Bucket: BUCKET, Key, Body, ContentType }));
  await put("photos/square.png", png, "image/png");
  await put("photos/notes.txt", "notes from the browser test\n");
  await put(SCRIPT_KEY, "hostile");
  for (const key of ROOT_FILES) await put(key, `content of ${key}`);
}

/** Names of the rows on the page, as the browser shows them (text, not markup). */
function rowNames(page: Page): Promise<string[]> {
  return page.$$eval("ul.entries li .name bdi", (els) => els.map((e) => e.textContent ?? ""));
}

async function navigate(page: Page, click: () => Promise<unknown>): Promise<void> {
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), click()]);
}

/** Follows the Next page links from a first page, collecting every row name. */
async function pageThrough(page: Page, url: string): Promise<{ names: string[]; pages: number }> {
  await page.goto(url);
  const names: string[] = [];
  let pages = 1;
  while (true) {
    const rows = await rowNames(page);
    assert(rows.length <= 3, `at most 3 rows a page, got ${rows.length}`);
    names.push(...rows);
    const next = await page.$('a[rel="next"]');
    if (!next) break;
    await navigate(page, () => next.click());
    pages++;
  }
  return { names, pages };
}

async function waitForFile(path: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    try {
      return await Deno.readTextFile(path);
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`No download at ${path}`);
}

export async function browseInBrowser(chromium: Chromium, server: TestServer): Promise<void> {
  const { page, problems } = await chromium.newPage();
  try {
    await page.setViewport({ width: 390, height: 844, deviceScaleFactor: 2, isMobile: true });
    await setUp(server, page);
    const base = `${server.url}/browse/${BUCKET}/`;

    // Paging: three rows a page, in key order, nothing lost or repeated.
    const expected = [
      IMG_KEY,
      '<script>document.title="pwned"</',
      "a.txt",
      "b.txt",
      "c.txt",
      "d.txt",
      "photos/",
    ];
    const paged = await pageThrough(page, `${base}?limit=3`);
    assertEquals(paged.names, expected);
    assertEquals(paged.pages, 3);

    // The whole folder: hostile keys are text, the stylesheet applies, the page fits a phone.
    await page.goto(base);
    assertEquals(await rowNames(page), expected);
    const state = await page.evaluate(() => {
      const { document, getComputedStyle, innerWidth } = globalThis as unknown as PageGlobals;
      return {
        title: document.title,
        scripts: document.scripts.length,
        images: document.querySelectorAll("img").length,
        listStyle: getComputedStyle(document.querySelector("ul.entries")!).listStyleType,
        overflow: document.documentElement.scrollWidth - innerWidth,
      };
    });
    assertEquals(state.title, `${BUCKET}/ · store`);
    assertEquals(state.scripts, 0);
    assertEquals(state.images, 0, "the img key made no element");
    assertEquals(state.listStyle, "none", "the hashed stylesheet is admitted by the CSP");
    assert(state.overflow <= 0, `no sideways scrolling on a phone (${state.overflow}px)`);
    await page.screenshot({ path: screenshotPath("browse-phone-root"), fullPage: true });

    // Into the folder made by the script key's slash: its file is plain text too.
    const scriptFolder = await page.$("li.folder .name a");
    assert(scriptFolder);
    await navigate(page, () => scriptFolder.click());
    assertEquals(await rowNames(page), [`script> 'q' 🦀 שלום.txt`]);
    await page.screenshot({ path: screenshotPath("browse-phone-hostile"), fullPage: true });

    // Into photos/: the breadcrumbs follow, the PNG has a preview that really loaded.
    await page.goto(base);
    const photos = await page.$$("li.folder .name a");
    await navigate(page, () => photos[photos.length - 1].click());
    assertEquals(new URL(page.url()).pathname, `/browse/${BUCKET}/photos/`);
    assertEquals(
      await page.$eval("nav.crumbs", (e) => e.textContent),
      `${BUCKET}/photos`,
    );
    await page.waitForFunction(() => {
      const { document } = globalThis as unknown as PageGlobals;
      const img = document.querySelector("li.file img");
      return img !== null && img.complete && img.naturalWidth === 64 * 2;
    }, { timeout: 10_000 });
    await page.screenshot({ path: screenshotPath("browse-phone-photos"), fullPage: true });

    // A download: the link's file lands in the download folder with the object's bytes.
    const downloads = join(OUTPUT_DIR, "downloads");
    await Deno.remove(downloads, { recursive: true }).catch(() => {});
    await Deno.mkdir(downloads, { recursive: true });
    const cdp = await chromium.browser.target().createCDPSession();
    await cdp.send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: downloads });
    const link = await page.$('a.dl[download="notes.txt"]');
    assert(link, "a download link for notes.txt");
    await link.click();
    assertEquals(await waitForFile(join(downloads, "notes.txt")), "notes from the browser test\n");

    await page.setViewport({ width: 1280, height: 720 });
    await page.goto(base);
    await page.screenshot({ path: screenshotPath("browse-desktop-root") });
    assertEquals(problems, []);
  } finally {
    await page.close();
  }
}
