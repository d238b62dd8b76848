// A password-protected share in a real browser: the password form, the listing (hostile keys shown
// as text, the hashed stylesheet admitted, no script), a click into a folder and back, a file
// link that carries the password.
import { CreateBucketCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import type { Page } from "puppeteer-core";
import { adminApi } from "../integration/access_helpers.ts";
import { assert, assertEquals } from "../integration/assert.ts";
import { s3Client, type TestServer } from "../integration/server.ts";
import { type Chromium, screenshotPath } from "./chromium.ts";
import type { PageGlobals } from "./dom.ts";

const BUCKET = "handouts";
const HOSTILE = `<img src=x onerror="document.title='pwned'">.txt`;

function rowNames(page: Page): Promise<string[]> {
  return page.$$eval("ul.entries li .name", (els) => els.map((e) => e.textContent ?? ""));
}

async function navigate(page: Page, click: () => Promise<unknown>): Promise<void> {
  await Promise.all([page.waitForNavigation({ waitUntil: "load" }), click()]);
}

export async function shareInBrowser(chromium: Chromium, server: TestServer): Promise<void> {
  const s3 = s3Client(server);
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  for (const key of ["week1/notes.txt", `week1/${HOSTILE}`, "week1/lab/a.txt", "private.txt"]) {
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: `content of ${key}` }));
  }
  const { status, json } = await adminApi(server, "POST", "/shares", {
    bucket: BUCKET,
    prefix: "week1/",
    permissions: ["read", "list"],
    expires_in: 600,
    password: "correct horse",
  });
  assertEquals(status, 201);
  const { page, problems } = await chromium.newPage();
  try {
    await page.setViewport({ width: 390, height: 844, deviceScaleFactor: 2, isMobile: true });
    const res = await page.goto(String(json!.url));
    assertEquals(res?.status(), 401);
    await page.type('input[name="password"]', "correct horse");
    await navigate(page, () => page.click('button[type="submit"]'));
    assertEquals(await rowNames(page), ["lab/", HOSTILE, "notes.txt"]);
    const state = await page.evaluate(() => {
      const { document, getComputedStyle } = globalThis as unknown as PageGlobals;
      return {
        title: document.title,
        scripts: document.scripts.length,
        images: document.querySelectorAll("img").length,
        listStyle: getComputedStyle(document.querySelector("ul.entries")!).listStyleType,
      };
    });
    assertEquals(state.title, `${BUCKET}/week1/ · shared`);
    assertEquals([state.scripts, state.images], [0, 0]);
    assertEquals(state.listStyle, "none", "the hashed stylesheet is admitted by the CSP");
    await page.screenshot({ path: screenshotPath("share-phone-root"), fullPage: true });

    const folder = await page.$("li.folder .name a");
    assert(folder);
    await navigate(page, () => folder.click());
    assertEquals(await rowNames(page), ["..", "a.txt"]);
    const file = await page.$eval("li.file .name a", (a) => a.getAttribute("href"));
    assert(file?.endsWith("/lab/a.txt?password=correct+horse"), String(file));
    const up = await page.$("li.folder .name a");
    await navigate(page, () => up!.click());
    assertEquals((await rowNames(page)).length, 3);
    assertEquals(problems.filter((p) => !p.includes("401")), []);
  } finally {
    await page.close();
  }
}
