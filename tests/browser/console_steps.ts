// The web console (/console) in a real browser: sign-in, buckets, a 50 MiB upload with progress,
// object details (preview, tags, presigned link, versions with restore), bucket settings
// (versioning, policy editor, public/private), deleting several objects, the users screen, audit,
// errors and drives; a user who may only read one bucket; CSRF refusal; sign-out; and, on a server
// of its own with a 2 s idle timeout, session expiry. Every screen is saved under
// test-output/console/.
import {
  CreateBucketCommand,
  GetBucketCorsCommand,
  GetBucketLifecycleConfigurationCommand,
  GetBucketTaggingCommand,
  GetObjectCommand,
  GetObjectLockConfigurationCommand,
  GetObjectTaggingCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
} from "@aws-sdk/client-s3";
import type { Browser, Page } from "puppeteer-core";
import { join } from "node:path";
import { adminApi, createUser } from "../integration/access_helpers.ts";
import { assert, assertEquals } from "../integration/assert.ts";
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  s3Client,
  sha256Hex,
  startServer,
  type TestServer,
} from "../integration/server.ts";
import { createSlapd, READER_PASSWORD, SUFFIXES } from "../services/slapd.ts";
import type { Chromium } from "./chromium.ts";

/** The fields of an input element the steps read and set in the page. */
type HTMLInput = { value: string; disabled: boolean };
type Scrollable = { scrollIntoView(): void };

const OUTPUT = new URL("../../test-output/console/", import.meta.url).pathname;
const BUCKET = "console-made";
const MIB = 1024 * 1024;
/** A 2x2 red PNG, for the image preview. */
const PNG = Uint8Array.from(
  atob(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGP4z8DAwMDAxMDAAAAe9QH/zAqmWAAAAABJRU5ErkJggg==",
  ),
  (c) => c.charCodeAt(0),
);

/** Saves the page (the whole of it, or what the window shows) as test-output/console/{name}.png. */
async function shot(page: Page, name: string, whole = true): Promise<void> {
  await page.screenshot({ path: join(OUTPUT, `${name}.png`), fullPage: whole });
}

/** The desktop window of the tours: its screenshots are the README's (docs/console/). */
const DESKTOP = { width: 1100, height: 760 };

/** The text of the first element matching `selector`, once it contains `expected`. */
async function waitForText(page: Page, selector: string, expected: string): Promise<void> {
  await page.waitForFunction(
    (sel: string, want: string) => {
      const d = (globalThis as unknown as { document: { querySelector(s: string): unknown } })
        .document;
      const node = d.querySelector(sel) as { textContent: string | null } | null;
      return node !== null && (node.textContent ?? "").includes(want);
    },
    { timeout: 20_000 },
    selector,
    expected,
  );
}

/**
 * Text whose contrast with its background is below WCAG AA (4.5:1), as "text (ratio)" strings.
 * Run in the page as source text; disabled controls are exempt, as WCAG allows.
 */
const LOW_CONTRAST = `(() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (let n = el; n; n = n.parentElement) {
      const c = rgb(getComputedStyle(n).backgroundColor);
      if (c.length === 3 || c[3] > 0) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const low = [];
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== "");
    if (!own || el.closest("[disabled]") || el.offsetParent === null) continue;
    const a = lum(rgb(getComputedStyle(el).color));
    const b = lum(background(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) low.push(el.textContent.trim().slice(0, 30) + " (" + ratio.toFixed(2) + ")");
  }
  return low;
})()`;

/** No value leaked into the page as "null", "undefined" or "[object ...]" text. */
async function assertNoStrayText(page: Page): Promise<void> {
  const text = await page.$eval("main", (e) => e.textContent ?? "");
  const stray = /\bnull\b|\bundefined\b|\[object /.exec(text);
  assert(stray === null, `stray "${stray?.[0]}" in: ${text.slice(0, 300)}`);
}

async function assertContrast(page: Page): Promise<void> {
  assertEquals(await page.evaluate(LOW_CONTRAST) as string[], [], "text below 4.5:1");
}

async function signIn(page: Page, server: TestServer, key: string, secret: string) {
  await page.goto(`${server.url}/console/`);
  await page.waitForSelector("#sign-in");
  await page.type("#name", key);
  await page.type("#secret", secret);
  await page.click('#sign-in button[type="submit"]');
  await page.waitForSelector("#sign-out");
}

/** Answers the console's confirmation dialog with its confirm button. */
async function confirm(page: Page): Promise<void> {
  await page.waitForSelector("dialog[open] button.danger");
  await page.click("dialog[open] button.danger");
}

async function adminTour(
  chromium: Chromium,
  server: TestServer,
  files: { bigFile: string; resumeFile: string },
) {
  const { bigFile, resumeFile } = files;
  const s3 = s3Client(server);
  const { page, problems } = await chromium.newPage();
  try {
    await page.setViewport(DESKTOP);
    await page.goto(`${server.url}/console/`);
    await page.waitForSelector("#sign-in");
    await assertNoStrayText(page);
    await shot(page, "01-sign-in");
    // A wrong secret is refused with a message, and no session is made.
    await page.type("#name", ADMIN_USER);
    await page.type("#secret", "not-the-secret");
    await page.click('#sign-in button[type="submit"]');
    await waitForText(page, "#alert", "not right");
    await page.$eval("#secret", (e) => (e as unknown as { value: string }).value = "");
    await page.type("#secret", ADMIN_PASSWORD);
    await page.click('#sign-in button[type="submit"]');
    await page.waitForSelector("#sign-out");

    // Buckets: create one through the form.
    await page.waitForSelector("#new-bucket");
    await page.type("#new-bucket", BUCKET);
    await page.click("form.card button[type=submit]");
    await waitForText(page, "#buckets", BUCKET);
    await assertContrast(page);
    await assertNoStrayText(page);
    // The next bucket is made after a whole second: the audit screen's date filter splits them.
    const cutAt = Math.ceil((Date.now() + 1) / 1000) * 1000;
    await new Promise((r) => setTimeout(r, cutAt - Date.now() + 20));
    await page.type("#new-bucket", "locked-bucket");
    await page.click("#new-bucket-lock");
    await page.click("form.card button[type=submit]");
    await waitForText(page, "#buckets", "locked-bucket");
    await assertContrast(page);
    await assertNoStrayText(page);
    await shot(page, "02-buckets");

    // Object Lock defaults in their form: checked before sending, set, changed, removed.
    await page.goto(`${server.url}/console/#/settings/locked-bucket`);
    await waitForText(page, "#lock-summary", "no default retention");
    const lockOf = async () =>
      (await s3.send(new GetObjectLockConfigurationCommand({ Bucket: "locked-bucket" })))
        .ObjectLockConfiguration;
    await page.select("#lock-mode", "GOVERNANCE");
    await page.click("#lock-save");
    await waitForText(page, "#lock-problem", "Give the number of days");
    await page.type("#lock-period", "7");
    await page.click("#lock-save");
    await waitForText(page, "#lock-summary", "GOVERNANCE mode for 7 days");
    assertEquals((await lockOf())?.Rule?.DefaultRetention, { Mode: "GOVERNANCE", Days: 7 });
    await page.$eval("#lock-period", (e) => (e as unknown as { value: string }).value = "");
    await page.type("#lock-period", "200");
    await page.select("#lock-unit", "Years");
    await page.click("#lock-save");
    await waitForText(page, "#lock-problem", "Years must be a whole number from 1 to 100");
    await page.$eval("#lock-period", (e) => (e as unknown as { value: string }).value = "");
    await page.type("#lock-period", "2");
    await page.click("#lock-save");
    await waitForText(page, "#lock-summary", "GOVERNANCE mode for 2 years");
    assertEquals((await lockOf())?.Rule?.DefaultRetention, { Mode: "GOVERNANCE", Years: 2 });
    await shot(page, "04c-object-lock");
    await page.click("#lock-remove");
    await waitForText(page, "#lock-summary", "no default retention");
    const unlocked = await lockOf();
    assertEquals([unlocked?.ObjectLockEnabled, unlocked?.Rule], ["Enabled", undefined]);
    // Object Lock turned on later, for a bucket with versioning on.
    await s3.send(new CreateBucketCommand({ Bucket: "lock-later" }));
    await s3.send(
      new PutBucketVersioningCommand({
        Bucket: "lock-later",
        VersioningConfiguration: { Status: "Enabled" },
      }),
    );
    await page.goto(`${server.url}/console/#/settings/lock-later`);
    await waitForText(page, "#lock-summary", "Object Lock is off");
    await page.click("#lock-enable");
    await confirm(page);
    await waitForText(page, "#lock-summary", "no default retention");
    const later = await s3.send(new GetObjectLockConfigurationCommand({ Bucket: "lock-later" }));
    assertEquals(later.ObjectLockConfiguration?.ObjectLockEnabled, "Enabled");
    await page.goto(`${server.url}/console/#/buckets`);
    await page.waitForSelector("#buckets");

    // Objects: a 50 MiB upload (multipart through the server) whose progress is seen moving.
    await page.click(`#buckets a[href="#/b/${BUCKET}"]`);
    await page.waitForSelector("#upload-files");
    await page.evaluate(() => {
      const g = globalThis as unknown as {
        seen: number[];
        MutationObserver: new (cb: (r: { target: unknown }[]) => void) => {
          observe(n: unknown, o: unknown): void;
        };
        document: { getElementById(id: string): unknown };
      };
      g.seen = [];
      new g.MutationObserver((records) => {
        for (const r of records) {
          const bar = r.target as { tagName: string; value: number };
          if (bar.tagName === "PROGRESS") g.seen.push(bar.value);
        }
      }).observe(g.document.getElementById("uploads"), { attributes: true, subtree: true });
    });
    const input = await page.$("#upload-files");
    const started = performance.now();
    await (input as unknown as { uploadFile(...p: string[]): Promise<void> }).uploadFile(bigFile);
    await page.waitForSelector("#uploads li.done", { timeout: 120_000 });
    const uploadSeconds = (performance.now() - started) / 1000;
    const seen = await page.evaluate(() => (globalThis as unknown as { seen: number[] }).seen);
    const between = new Set(seen.filter((v) => v > 0 && v < 50 * MIB));
    assert(between.size >= 5, `progress moved through ${between.size} values: ${seen}`);
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "big.bin" }));
    assertEquals(head.ContentLength, 50 * MIB);
    assert(head.ETag?.endsWith('-7"'), `multipart in 8 MiB parts: ${head.ETag}`);
    console.log(`console upload of 50 MiB: ${uploadSeconds.toFixed(1)} s`);
    await waitForText(page, "#objects", "big.bin");
    await shot(page, "03-objects");

    // Files dropped on the drop zone, and a folder chosen with the folder picker.
    await page.evaluate(`(() => {
      const dt = new DataTransfer();
      dt.items.add(new File(["alpha"], "drop-a.txt", { type: "text/plain" }));
      dt.items.add(new File(["beta"], "drop-b.txt", { type: "text/plain" }));
      const zone = document.getElementById("drop");
      for (const type of ["dragover", "drop"]) {
        zone.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
      }
    })()`);
    await waitForText(page, "#objects", "drop-b.txt");
    const dropped = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "drop-a.txt" }));
    assertEquals(await dropped.Body!.transformToString(), "alpha");
    const folder = join(await Deno.makeTempDir({ prefix: "store-console-folder-" }), "album");
    await Deno.mkdir(join(folder, "inner"), { recursive: true });
    await Deno.writeTextFile(join(folder, "one.txt"), "one");
    await Deno.writeTextFile(join(folder, "inner", "two.txt"), "two");
    const folderInput = await page.$("#upload-folder");
    await (folderInput as unknown as { uploadFile(...p: string[]): Promise<void> }).uploadFile(
      folder,
    );
    await waitForText(page, "#objects", "album/");
    const two = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "album/inner/two.txt" }));
    assertEquals(await two.Body!.transformToString(), "two");
    // The same folder dragged from the desktop (a real drag of a real directory, through CDP).
    await page.goto(`${server.url}/console/#/b/${BUCKET}?prefix=dropped%2F`);
    await waitForText(page, "#listing", "Nothing here");
    const zone = await (await page.$("#drop"))!.boundingBox();
    const drag = await page.createCDPSession();
    const at = { x: zone!.x + zone!.width / 2, y: zone!.y + zone!.height / 2 };
    const data = { items: [], files: [folder], dragOperationsMask: 1 };
    for (const type of ["dragEnter", "dragOver", "drop"]) {
      await drag.send("Input.dispatchDragEvent", { type, ...at, data } as never);
    }
    await waitForText(page, "#objects", "album/");
    const deep = await s3.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: "dropped/album/inner/two.txt" }),
    );
    assertEquals(await deep.Body!.transformToString(), "two");
    await Deno.remove(join(folder, ".."), { recursive: true });
    await page.goto(`${server.url}/console/#/b/${BUCKET}`);
    await waitForText(page, "#objects", "big.bin");

    // The connection goes down mid-upload and stays down: the upload is kept, and choosing the
    // same file again sends only the parts the server does not hold yet.
    const parts: string[] = [];
    page.on("request", (r) => {
      const n = new URL(r.url()).searchParams.get("partNumber");
      if (n !== null && r.method() === "PUT") parts.push(n);
    });
    const cdp = await page.createCDPSession();
    const throttle = (offline: boolean, upload: number) =>
      cdp.send("Network.emulateNetworkConditions", {
        offline,
        latency: 0,
        downloadThroughput: -1,
        uploadThroughput: upload,
      });
    await throttle(false, 16 * MIB);
    const picker = await page.$("#upload-files");
    await (picker as unknown as { uploadFile(...p: string[]): Promise<void> }).uploadFile(
      resumeFile,
    );
    await page.waitForFunction(
      `Number(document.querySelector("#uploads li:last-child progress").value) > ${17 * MIB}`,
      { polling: 50 },
    );
    await throttle(true, -1);
    await shot(page, "03c-upload-progress");
    await waitForText(page, "#uploads li.failed", "choose the same file again");
    const before = parts.length;
    await throttle(false, -1);
    await (picker as unknown as { uploadFile(...p: string[]): Promise<void> }).uploadFile(
      resumeFile,
    );
    await page.waitForSelector("#uploads li:last-child.done", { timeout: 60_000 });
    const resent = parts.slice(before);
    assert(!resent.includes("1") && !resent.includes("2"), `parts sent again: ${resent}`);
    assert(resent.includes("5"), `the last part was sent: ${resent}`);
    await shot(page, "03b-upload-resumed");
    const resumed = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "resume.bin" }));
    assert(resumed.ETag?.endsWith('-5"'), String(resumed.ETag));
    const got = await resumed.Body!.transformToByteArray();
    assertEquals(await sha256Hex(got), await sha256Hex(await Deno.readFile(resumeFile)));

    // Objects for previews, versions and deleting several.
    await s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: "docs/note.txt",
        Body: "first words",
        ContentType: "text/plain",
      }),
    );
    await s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: "docs/red.png",
        Body: PNG,
        ContentType: "image/png",
      }),
    );
    for (const k of ["docs/x1.txt", "docs/x2.txt", "docs/x3.txt"]) {
      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: k, Body: k }));
    }

    // Settings: versioning on.
    await page.goto(`${server.url}/console/#/settings/${BUCKET}`);
    await page.waitForSelector("#versioning-toggle");
    await page.click("#versioning-toggle");
    await waitForText(page, "#versioning-status", "Versioning is on");
    await s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: "docs/note.txt",
        Body: "second words",
        ContentType: "text/plain",
      }),
    );

    // Policy editor: an invalid document is refused before the server is asked; make public,
    // then private, each checked with an anonymous request.
    await page.waitForSelector("#policy-text");
    await page.type("#policy-text", '{"Statement": [{"Effect": "Maybe"}]}');
    await page.click("#policy-save");
    await waitForText(page, "#policy-verdict", "Effect must be Allow or Deny");
    await page.$eval("#policy", (e) => (e as unknown as Scrollable).scrollIntoView());
    await shot(page, "04-settings", false);
    const anonymous = () => fetch(`${server.url}/${BUCKET}/docs/x1.txt`).then((r) => r.status);
    assertEquals(await anonymous(), 403);
    await page.click("#make-public");
    await confirm(page);
    await waitForText(page, "#policy p", "This bucket has a policy");
    assertEquals(await anonymous(), 200);
    await page.click("#make-private");
    await waitForText(page, "#policy p", "No policy");
    assertEquals(await anonymous(), 403);

    // Lifecycle rules: malformed XML is refused before it is sent; rules are added from the form
    // (checked first), listed, changed and deleted, each change read back with the SDK.
    await page.waitForSelector("#lifecycle-rule-add");
    await page.click("#lifecycle-xml summary");
    await page.type("#lifecycle-text", "<LifecycleConfiguration><Rule>");
    await page.click("#lifecycle-save");
    await waitForText(page, "#lifecycle-verdict", "Not valid XML");
    const rulesOf = async () =>
      (await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: BUCKET }))).Rules ?? [];
    await page.type("#lifecycle-rule-prefix", "logs/");
    await page.click("#lifecycle-rule-add");
    await waitForText(page, "#lifecycle-rule-problem", "at least one action");
    await page.type("#lifecycle-rule-expire", "30");
    await page.type("#lifecycle-rule-abort", "7");
    await page.click("#lifecycle-rule-add");
    await waitForText(page, "#lifecycle-rules", "starting with logs/");
    let rules = await rulesOf();
    assertEquals(rules.length, 1);
    assertEquals(rules[0].ID, "logs", "a rule without a name is named after its prefix");
    assertEquals(rules[0].Filter?.Prefix, "logs/");
    assertEquals(rules[0].Expiration?.Days, 30);
    assertEquals(rules[0].AbortIncompleteMultipartUpload?.DaysAfterInitiation, 7);
    // A rule the form cannot fully show (a tag filter), added as XML: editing it keeps the filter.
    await page.click("#lifecycle-xml summary");
    await page.$eval("#lifecycle-text", (e) => {
      const area = e as unknown as { value: string };
      area.value = area.value.replace(
        "</LifecycleConfiguration>",
        "<Rule><ID>tagged</ID><Filter><Tag><Key>tier</Key><Value>temp</Value></Tag></Filter>" +
          "<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>" +
          "</LifecycleConfiguration>",
      );
    });
    await page.click("#lifecycle-save");
    await waitForText(page, "#lifecycle-rules", "with more conditions");
    await page.click('#lifecycle-rules button[aria-label="Edit rule 2"]');
    await waitForText(page, "#lifecycle-rule-prefix-note", "tags or sizes");
    assert(await page.$eval("#lifecycle-rule-prefix", (e) => (e as unknown as HTMLInput).disabled));
    await page.$eval("#lifecycle-rule-expire", (e) => (e as unknown as HTMLInput).value = "");
    await page.type("#lifecycle-rule-expire", "3");
    await page.click("#lifecycle-rule-add");
    await waitForText(page, "#lifecycle-rules", "delete after 3 days");
    // The first rule: 60 days, no abort, switched off.
    await page.click('#lifecycle-rules button[aria-label="Edit rule 1"]');
    assertEquals(
      await page.$eval("#lifecycle-rule-expire", (e) => (e as unknown as HTMLInput).value),
      "30",
    );
    await page.$eval("#lifecycle-rule-expire", (e) => (e as unknown as HTMLInput).value = "");
    await page.type("#lifecycle-rule-expire", "60");
    await page.$eval("#lifecycle-rule-abort", (e) => (e as unknown as HTMLInput).value = "");
    await page.click("#lifecycle-rule-enabled");
    await page.$eval("#config-lifecycle", (e) => (e as unknown as Scrollable).scrollIntoView());
    await shot(page, "04d-lifecycle-rule-edit", false);
    await page.click("#lifecycle-rule-add");
    await waitForText(page, "#lifecycle-rules", "delete after 60 days");
    rules = await rulesOf();
    assertEquals(rules.length, 2);
    const logs = rules.find((r) => r.Filter?.Prefix === "logs/");
    assertEquals([logs?.Expiration?.Days, logs?.AbortIncompleteMultipartUpload, logs?.Status], [
      60,
      undefined,
      "Disabled",
    ]);
    const tagged = rules.find((r) => r.ID === "tagged");
    assertEquals(tagged?.Filter?.Tag, { Key: "tier", Value: "temp" });
    assertEquals(tagged?.Expiration?.Days, 3);
    await shot(page, "04b-settings-rules");
    await page.click('#lifecycle-rules button[aria-label="Delete rule 2"]');
    await confirm(page);
    await page.waitForFunction(
      `document.querySelectorAll("#lifecycle-rules tbody tr").length === 1`,
    );
    assertEquals((await rulesOf()).map((r) => r.Filter?.Prefix), ["logs/"]);

    // Bucket tags, key=value a line: a key given twice is refused before sending.
    await page.type("#bucket-tags-text", "team=blue\nteam=red");
    await page.click("#bucket-tags-save");
    await waitForText(page, "#bucket-tags-problem", "The key team is given twice");
    await page.$eval("#bucket-tags-text", (e) => (e as unknown as HTMLInput).value = "");
    await page.type("#bucket-tags-text", "team=blue\ncost-centre=4711");
    await page.click("#bucket-tags-save");
    await waitForText(page, "#status", "Bucket tags saved");
    const bucketTags = await s3.send(new GetBucketTaggingCommand({ Bucket: BUCKET }));
    assertEquals(bucketTags.TagSet, [
      { Key: "cost-centre", Value: "4711" },
      { Key: "team", Value: "blue" },
    ]);
    await waitForText(page, "#bucket-tags-text", "cost-centre=4711");

    // CORS rules: an unknown method is refused before sending; a rule is added, changed, deleted.
    await page.type("#cors-rule-origin", "https://app.example.com");
    await page.$eval("#cors-rule-methods", (e) => (e as unknown as HTMLInput).value = "");
    await page.type("#cors-rule-methods", "get, put, fetch");
    await page.click("#cors-rule-add");
    await waitForText(page, "#cors-rule-problem", "FETCH is not one of");
    await page.$eval("#cors-rule-methods", (e) => (e as unknown as HTMLInput).value = "");
    await page.type("#cors-rule-methods", "get, put");
    await page.click("#cors-rule-add");
    await waitForText(page, "#cors-rules", "https://app.example.com");
    await page.click('#cors-rules button[aria-label="Edit rule 1"]');
    await page.type("#cors-rule-origin", ", https://admin.example.com");
    await page.$eval("#cors-rule-maxage", (e) => (e as unknown as HTMLInput).value = "");
    await page.type("#cors-rule-maxage", "600");
    await page.click("#cors-rule-add");
    await waitForText(page, "#cors-rules", "admin.example.com");
    const cors = await s3.send(new GetBucketCorsCommand({ Bucket: BUCKET }));
    assertEquals(cors.CORSRules?.length, 1);
    assertEquals(cors.CORSRules?.[0]?.AllowedOrigins, [
      "https://app.example.com",
      "https://admin.example.com",
    ]);
    assertEquals(cors.CORSRules?.[0]?.AllowedMethods, ["GET", "PUT"]);
    assertEquals(cors.CORSRules?.[0]?.MaxAgeSeconds, 600);
    await assertNoStrayText(page);
    await page.click('#cors-rules button[aria-label="Delete rule 1"]');
    await confirm(page);
    await waitForText(page, "#config-cors", "No rules yet");
    let noCors = false;
    await s3.send(new GetBucketCorsCommand({ Bucket: BUCKET })).catch(() => noCors = true);
    assert(noCors, "the last CORS rule deleted removes the configuration");

    // The folder, with search, then deleting two objects at once.
    await page.goto(`${server.url}/console/#/b/${BUCKET}?prefix=docs%2F`);
    await waitForText(page, "#objects", "note.txt");
    await page.type("#search", "x");
    await page.click('form[role="search"] button');
    await page.waitForFunction(() =>
      (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } })
        .document.querySelectorAll("#objects tr.file").length === 3
    );
    await page.click('input.pick[value="docs/x1.txt"]');
    await page.click('input.pick[value="docs/x2.txt"]');
    await page.click("#delete-selected");
    await confirm(page);
    await page.waitForFunction(() =>
      (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } })
        .document.querySelectorAll("#objects tr.file").length === 1
    );
    await shot(page, "05-folder-search");

    // A share link for the folder: it lists the folder for anyone, until it is revoked.
    await page.click("details summary");
    await page.click("#share-form button[type=submit]");
    await page.waitForSelector("#share-url");
    const shareUrl = await page.$eval(
      "#share-url",
      (e) => (e as unknown as { value: string }).value,
    );
    const shared = await fetch(shareUrl);
    assertEquals(shared.status, 200);
    assert((await shared.text()).includes("note.txt"), "the share lists the folder");
    await page.goto(`${server.url}/console/#/shares`);
    await waitForText(page, "#shares", `${BUCKET}/docs/`);
    await assertNoStrayText(page);
    await shot(page, "05b-shares");
    await page.click("#shares button.danger");
    await waitForText(page, "#shares", "revoked");
    const revoked = await fetch(shareUrl);
    assert(revoked.status >= 400, `a revoked share answers ${revoked.status}`);
    await revoked.body?.cancel();

    // One object: preview, tags, a presigned link, versions with restore.
    await page.goto(`${server.url}/console/#/o/${BUCKET}?key=docs%2Fnote.txt`);
    await waitForText(page, "#preview pre", "second words");
    await page.waitForSelector("#tags-text");
    await page.$eval("#tags-text", (e) => (e as unknown as { value: string }).value = "team=blue");
    await page.click("#tags button[type=submit]");
    await waitForText(page, "#status", "Tags saved");
    const tags = await s3.send(
      new GetObjectTaggingCommand({ Bucket: BUCKET, Key: "docs/note.txt" }),
    );
    assertEquals(tags.TagSet, [{ Key: "team", Value: "blue" }]);
    await page.select("#expiry", "900");
    await page.click("#link button[type=submit]");
    await page.waitForFunction(() =>
      (globalThis as unknown as { document: { getElementById(i: string): { value: string } } })
        .document.getElementById("link-url").value.startsWith("http")
    );
    const link = await page.$eval("#link-url", (e) => (e as unknown as { value: string }).value);
    assert(/X-Amz-Expires=900|X-Store-Expires=900/i.test(link), link);
    const linked = await fetch(link);
    assertEquals([linked.status, await linked.text()], [200, "second words"]);
    await waitForText(page, "#version-list", "(current)");
    await assertContrast(page);
    await shot(page, "06-object");
    await page.click("#version-list button.restore");
    await waitForText(page, "#status", "restored");
    const restored = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "docs/note.txt" }));
    assertEquals(await restored.Body!.transformToString(), "first words");
    await waitForText(page, "#preview pre", "first words");
    // Metadata: a key that is no header name is refused on the page; then type and metadata are
    // replaced (a copy onto itself), the content and tags kept.
    const tagsOfNote = async () =>
      (await s3.send(new GetObjectTaggingCommand({ Bucket: BUCKET, Key: "docs/note.txt" }))).TagSet;
    await s3.send(
      new PutObjectTaggingCommand({
        Bucket: BUCKET,
        Key: "docs/note.txt",
        Tagging: { TagSet: [{ Key: "stage", Value: "draft" }] },
      }),
    );
    await page.type("#meta-text", "bad key=1");
    await page.click("#meta-save");
    await waitForText(page, "#meta-problem", "may hold only letters");
    await page.$eval("#meta-text", (e) => (e as unknown as HTMLInput).value = "");
    await page.type("#meta-text", "author=ann\nReviewed=yes");
    await page.$eval("#meta-type", (e) => (e as unknown as HTMLInput).value = "");
    await page.type("#meta-type", "text/markdown");
    await page.click("#meta-save");
    await waitForText(page, "#status", "Metadata saved");
    await waitForText(page, "#facts", "Metadata author");
    const described = await s3.send(
      new HeadObjectCommand({ Bucket: BUCKET, Key: "docs/note.txt" }),
    );
    assertEquals(described.Metadata, { author: "ann", reviewed: "yes" });
    assertEquals(described.ContentType, "text/markdown");
    const kept = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "docs/note.txt" }));
    assertEquals(await kept.Body!.transformToString(), "first words");
    assertEquals(await tagsOfNote(), [{ Key: "stage", Value: "draft" }]);

    await page.goto(`${server.url}/console/#/o/${BUCKET}?key=docs%2Fred.png`);
    await page.waitForSelector("#preview img");
    await page.waitForFunction(() => {
      const img = (globalThis as unknown as {
        document: { querySelector(s: string): { complete: boolean; naturalWidth: number } };
      }).document.querySelector("#preview img");
      return img.complete && img.naturalWidth === 2;
    });
    await shot(page, "07-image-preview");

    // Users: create (secret shown once, and it works), bucket access, disable, rotate.
    await page.goto(`${server.url}/console/#/users`);
    await page.waitForSelector("#user-name");
    await page.type("#user-name", "alice");
    await page.click("#new-user button[type=submit]");
    await page.waitForSelector("#new-secret");
    const aliceKey = await page.$eval("#new-access-key", (e) => e.textContent ?? "");
    const aliceSecret = await page.$eval("#new-secret", (e) => e.textContent ?? "");
    const alice = s3Client(server, { user: aliceKey, password: aliceSecret });
    await alice.send(new ListBucketsCommand({}));
    await shot(page, "08-users-created");
    await page.click('tr[data-user="alice"] button[aria-label="Access alice"]');
    await page.waitForSelector("#access-add");
    await page.click("#access-add");
    await page.type("#access-editor .acc-bucket", BUCKET);
    await page.select("#access-editor .acc-perm", "read");
    await shot(page, "09-access-editor");
    await page.click("#access-editor button[type=submit]");
    await waitForText(page, 'tr[data-user="alice"]', `${BUCKET}: read`);
    const body = await (await alice.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: "docs/x3.txt" }),
    )).Body!.transformToString();
    assertEquals(body, "docs/x3.txt");
    await page.click('tr[data-user="alice"] button[aria-label="Disable alice"]');
    await waitForText(page, 'tr[data-user="alice"]', "disabled");
    let refused = false;
    await alice.send(new ListBucketsCommand({})).catch(() => refused = true);
    assert(refused, "a disabled user is refused");
    await page.click('tr[data-user="alice"] button[aria-label="Rotate keys alice"]');
    await confirm(page);
    await page.waitForSelector("#new-secret");
    assert((await page.$eval("#new-access-key", (e) => e.textContent)) !== aliceKey);
    await assertNoStrayText(page);
    await shot(page, "10-users");

    // Audit log with verification, the error log, drives.
    await page.goto(`${server.url}/console/#/audit`);
    await page.waitForSelector("#audit tbody tr");
    await page.click("#audit-verify");
    await waitForText(page, "#audit-verdict", "The chain is intact");
    await assertContrast(page);
    await assertNoStrayText(page);
    await shot(page, "11-audit", false);
    await page.type("#audit-filter-operation", "CreateBucket");
    await page.click("#audit-filter button[type=submit]");
    await page.waitForFunction(`(() => {
      const ops = [...document.querySelectorAll("#audit tbody tr td:nth-child(4)")]
        .map((td) => td.textContent);
      return ops.length > 0 && ops.every((op) => op === "CreateBucket");
    })()`);
    assert(page.url().endsWith("#/audit?operation=CreateBucket"), page.url());
    // Date filters (UTC): from the whole second between the first two buckets made here (the
    // others come later), and until it.
    const targets = () =>
      page.$$eval("#audit tbody tr td:nth-child(5)", (tds) => tds.map((td) => td.textContent));
    const cutField = new Date(cutAt).toISOString().slice(0, 19);
    const setField = (sel: string, value: string) =>
      page.$eval(sel, (e, v) => (e as unknown as HTMLInput).value = v as string, value);
    await setField("#audit-filter-since", cutField);
    await page.click("#audit-filter button[type=submit]");
    await page.waitForFunction(`location.hash.includes("since=")`);
    await waitForText(page, "#audit", "locked-bucket");
    assertEquals(await targets(), ["locked-bucket", "lock-later"]);
    await assertContrast(page);
    await shot(page, "11b-audit-since");
    await setField("#audit-filter-since", "");
    await setField("#audit-filter-until", cutField);
    await page.click("#audit-filter button[type=submit]");
    await page.waitForFunction(
      `location.hash.includes("until=") && !location.hash.includes("since=")`,
    );
    await waitForText(page, "#audit", BUCKET);
    const earlier = await targets();
    assert(earlier.includes(BUCKET) && !earlier.includes("locked-bucket"), String(earlier));
    // A period that ends before it starts is refused on the page.
    await setField("#audit-filter-since", cutField);
    await setField("#audit-filter-until", "2000-01-01T00:00:00");
    await page.click("#audit-filter button[type=submit]");
    await waitForText(page, "#alert", "must come before its end");
    await page.goto(`${server.url}/console/#/errors`);
    await waitForText(page, "main", "Error log");
    await page.waitForFunction(() =>
      !(globalThis as unknown as {
        document: { querySelector(s: string): { textContent: string } };
      })
        .document.querySelector("main").textContent.includes("Loading")
    );
    await shot(page, "12-errors");
    await page.goto(`${server.url}/console/#/health`);
    await waitForText(page, "#drives", "online");
    await page.waitForSelector("#scrub-status");
    await page.click("#scrub-now");
    await waitForText(page, "#status", "Scrub started");
    await shot(page, "13-drives");
    await page.goto(`${server.url}/console/#/notify`);
    await waitForText(page, "main", "No notification targets");
    await shot(page, "14-notifications");
    // Metrics: protocol traffic while the page samples shows up in the request chart.
    const openedAt = Date.now();
    await page.goto(`${server.url}/console/#/metrics`);
    for (let i = 0; i < 12; i++) {
      await s3.send(new HeadBucketCommand({ Bucket: BUCKET }));
      await new Promise((r) => setTimeout(r, 200));
    }
    await page.waitForFunction(
      `(document.querySelector("#charts polyline")?.getAttribute("points") ?? "").split(" ")
        .length >= 2`,
    );
    const caption = await page.$eval("#charts figcaption", (e) => e.textContent ?? "");
    assert(/^Requests: .*\(peak (?!0\.00)/.test(caption), caption);
    // The charts begin with the server's own samples from before the page opened.
    const spanText = await page.$eval("#metrics-span", (e) => e.textContent ?? "");
    const from = Date.parse(spanText.slice(5, 24).replace(" ", "T") + "Z");
    assert(from < openedAt - 5000, `the charts start before the page opened: ${spanText}`);
    await shot(page, "15-metrics");

    // CSRF: a change without the page's token is refused, and changes nothing.
    const csrf = await page.evaluate(async (bucket: string) => {
      const res = await fetch(`/console/api/s3/${bucket}/forged.txt`, { method: "PUT", body: "x" });
      return { status: res.status, body: await res.text() };
    }, BUCKET);
    assertEquals(csrf.status, 403);
    assert(csrf.body.includes("csrf_refused"), csrf.body);
    let missing = false;
    await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "forged.txt" }))
      .catch(() => missing = true);
    assert(missing, "the forged request wrote nothing");

    // Sign-out ends the session on the server.
    await page.click("#sign-out");
    await waitForText(page, "main", "You have signed out");
    const after = await page.evaluate(() => fetch("/console/api/session").then((r) => r.status));
    assertEquals(after, 401);
    // Refusals (401 wrong secret and after sign-out, 403 CSRF, 404 no policy yet) and the
    // deliberate network drop are expected; script errors and CSP violations are not.
    assertEquals(
      problems.filter((p) => !/status of 40[134]|ERR_INTERNET_DISCONNECTED/.test(p)),
      [],
    );
  } catch (err) {
    console.log("Page problems:", problems, "at", page.url());
    await shot(page, "failure-admin");
    throw err;
  } finally {
    await page.close();
  }
}

/** A user who may only read `shared`: sees only it, and is told plainly what it may not do. */
async function readerTour(browser: Browser, server: TestServer) {
  const s3 = s3Client(server);
  await s3.send(new CreateBucketCommand({ Bucket: "shared" }));
  await s3.send(new CreateBucketCommand({ Bucket: "secret-stuff" }));
  await s3.send(
    new PutObjectCommand({
      Bucket: "shared",
      Key: "readme.txt",
      Body: "hello",
      ContentType: "text/plain",
    }),
  );
  const reader = await createUser(server, "reader", [{ bucket: "shared", permission: "read" }]);
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  try {
    await page.setViewport({ width: 390, height: 844, deviceScaleFactor: 2, isMobile: true });
    await signIn(page, server, reader.accessKey, reader.secret);
    await page.waitForSelector("#buckets");
    const names = await page.$$eval(
      "#buckets tbody tr td:first-child",
      (tds) => tds.map((td) => td.textContent),
    );
    assertEquals(names, ["shared"]);
    const nav = await page.$$eval("#nav a", (as) => as.map((a) => a.textContent));
    assertEquals(nav, ["Buckets", "Shares"]);
    const width = await page.evaluate(() =>
      (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } })
        .document.documentElement.scrollWidth
    );
    assert(width <= 390, `no sideways scrolling on a phone: ${width}`);
    await shot(page, "20-reader-phone-buckets");

    // Deleting the bucket it may only read: refused, and said so.
    await page.click('button[aria-label="Delete bucket shared"]');
    await confirm(page);
    await waitForText(page, "#alert", "Access denied");

    // Another bucket: the listing is refused with a clear message.
    await page.goto(`${server.url}/console/#/b/secret-stuff`);
    await waitForText(page, "#listing", "Access denied");
    await shot(page, "21-reader-refused");

    // Its own bucket: listing works, an upload is refused, the preview reads.
    await page.goto(`${server.url}/console/#/b/shared`);
    await waitForText(page, "#objects", "readme.txt");
    const file = await Deno.makeTempFile({ suffix: ".txt" });
    await Deno.writeTextFile(file, "not allowed");
    const input = await page.$("#upload-files");
    await (input as unknown as { uploadFile(...p: string[]): Promise<void> }).uploadFile(file);
    await waitForText(page, "#uploads li.failed", "Access denied");
    await Deno.remove(file);
    await shot(page, "22-reader-phone-objects");
    await page.goto(`${server.url}/console/#/o/shared?key=readme.txt`);
    await waitForText(page, "#preview pre", "hello");

    // The administration API is not theirs, whatever the page shows.
    await page.goto(`${server.url}/console/#/users`);
    await waitForText(page, "main", "Only the administrator");
  } catch (err) {
    await shot(page, "failure-reader");
    throw err;
  } finally {
    await context.close();
  }
}

/**
 * With LDAP on, against a real slapd: the group mappings screen; a directory user signs in and
 * makes a share link that works; then, with the directory down, a failed sign-in is in the error
 * log, found with the date filters.
 */
async function directoryTour(chromium: Chromium) {
  const slapd = await createSlapd();
  await slapd.start();
  const server = await startServer({
    env: {
      STORE_LDAP_ENABLED: "true",
      STORE_LDAP_URL: slapd.url,
      STORE_LDAP_BASE_DN: SUFFIXES.openldap,
      STORE_LDAP_BIND_DN: `cn=reader,${SUFFIXES.openldap}`,
      STORE_LDAP_BIND_PASSWORD: READER_PASSWORD,
      STORE_LDAP_GROUP_BASE_DN: `ou=groups,${SUFFIXES.openldap}`,
      STORE_LDAP_TIMEOUT: "2",
    },
  });
  const s3 = s3Client(server);
  const { page, problems } = await chromium.newPage();
  const context = await chromium.browser.createBrowserContext();
  try {
    await s3.send(new CreateBucketCommand({ Bucket: "eng-data" }));
    await s3.send(
      new PutObjectCommand({
        Bucket: "eng-data",
        Key: "plans/roadmap.txt",
        Body: "ship it",
        ContentType: "text/plain",
      }),
    );
    await page.setViewport(DESKTOP);
    await page.goto(`${server.url}/console/`);
    await waitForText(page, "#sign-in", "Directory (LDAP)");
    await shot(page, "31-sign-in-ldap");
    await page.type("#name", ADMIN_USER);
    await page.type("#secret", ADMIN_PASSWORD);
    await page.click('#sign-in button[type="submit"]');
    await page.waitForSelector("#sign-out");
    await page.click('#nav a[href="#/directory"]');
    await page.waitForSelector("#mapping-name");
    await page.type("#mapping-name", "Engineers");
    await page.type("#mapping-access", "eng-data=read");
    await page.click("#mapping-form button[type=submit]");
    await waitForText(page, "#mappings", "eng-data: read");
    const { json } = await adminApi(server, "GET", "/ldap/groups/engineers");
    assertEquals(json!.bucket_access, [{ bucket: "eng-data", permission: "read" }]);
    await shot(page, "32-directory");

    // alice, in the engineers group, signs in with the directory and shares a folder.
    const alice = await context.newPage();
    await alice.setViewport(DESKTOP);
    await alice.goto(`${server.url}/console/`);
    await alice.waitForSelector('input[name="method"][value="ldap"]');
    await alice.click('input[name="method"][value="ldap"]');
    await alice.type("#name", "alice");
    await alice.type("#secret", "alice-pw");
    await alice.click('#sign-in button[type="submit"]');
    await alice.waitForSelector("#sign-out");
    await waitForText(alice, "#buckets", "eng-data");
    await alice.goto(`${server.url}/console/#/b/eng-data?prefix=plans%2F`);
    await waitForText(alice, "#objects", "roadmap.txt");
    await alice.click("details summary");
    await alice.click('#share-form input[value="read"]'); // list only
    await alice.click("#share-form button[type=submit]");
    await alice.waitForSelector("#share-url");
    const shareUrl = await alice.$eval(
      "#share-url",
      (e) => (e as unknown as HTMLInput).value,
    );
    const listed = await fetch(shareUrl);
    assertEquals(listed.status, 200);
    assert((await listed.text()).includes("roadmap.txt"), "the share lists the folder");
    const download = await fetch(`${shareUrl}roadmap.txt`);
    assertEquals(download.status, 403, "read was not passed on");
    await download.body?.cancel();
    await shot(alice, "33-directory-user-share");
    await alice.goto(`${server.url}/console/#/shares`);
    await waitForText(alice, "#shares", "eng-data/plans/");
    await shot(alice, "34-directory-user-shares");

    // The directory goes down: a sign-in fails, and the error log shows it in its period.
    const before = new Date(Date.now() - 1000).toISOString().slice(0, 19);
    await slapd.stop();
    await alice.goto(`${server.url}/console/#/`);
    await alice.click("#sign-out");
    await alice.waitForSelector('input[name="method"][value="ldap"]');
    await alice.click('input[name="method"][value="ldap"]');
    await alice.type("#name", "bob");
    await alice.type("#secret", "bob-pw");
    await alice.click('#sign-in button[type="submit"]');
    await waitForText(alice, "#alert", "The directory does not answer");
    // The error log is written after the answer: wait until it holds the entry.
    for (let i = 0; i < 50; i++) {
      const logged = await adminApi(server, "GET", "/errors?code=directory_unavailable");
      if ((logged.json!.errors as unknown[]).length > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const after = new Date(Date.now() + 1000).toISOString().slice(0, 19);
    const setField = (sel: string, value: string) =>
      page.$eval(sel, (e, v) => (e as unknown as HTMLInput).value = v as string, value);
    await page.goto(`${server.url}/console/#/errors`);
    await page.waitForSelector("#error-filter-since");
    await setField("#error-filter-since", before);
    await setField("#error-filter-until", after);
    await page.type("#error-filter-code", "directory_unavailable");
    await page.click("#error-filter button[type=submit]");
    await waitForText(page, "#errors", "LDAP sign-in failed: directory unreachable");
    await assertContrast(page);
    await shot(page, "12b-errors-filtered");
    await setField("#error-filter-since", "2000-01-01T00:00:00");
    await setField("#error-filter-until", before);
    await page.click("#error-filter button[type=submit]");
    await page.waitForSelector("#no-errors");
    await page.click('#nav a[href="#/directory"]');
    await page.waitForSelector("#mappings button.danger");
    await page.click("#mappings button.danger");
    await waitForText(page, "main", "No mappings");
    assertEquals(problems.filter((p) => !/status of 40[134]/.test(p)), []);
  } catch (err) {
    await shot(page, "failure-directory");
    throw err;
  } finally {
    s3.destroy();
    await context.close();
    await page.close();
    await server.stop();
    await slapd.dispose();
    await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
  }
}

/** On a server with a 2 s idle timeout: an idle session ends and the page asks to sign in. */
async function expiryTour(chromium: Chromium) {
  const server = await startServer({ env: { STORE_CONSOLE_IDLE_TIMEOUT: "2" } });
  const { page } = await chromium.newPage();
  try {
    // Keyboard only: the key field has focus, Tab to the secret, Enter signs in.
    await page.goto(`${server.url}/console/`);
    await page.waitForSelector("#sign-in");
    await page.keyboard.type(ADMIN_USER);
    await page.keyboard.press("Tab");
    await page.keyboard.type(ADMIN_PASSWORD);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#buckets, #no-buckets");
    // Then on to the "New bucket" field, by Tab from the skip link through the header.
    const focused: string[] = [];
    for (let i = 0; i < 12 && !focused.includes("new-bucket"); i++) {
      await page.keyboard.press("Tab");
      focused.push(
        await page.evaluate(
          "document.activeElement.id || document.activeElement.tagName",
        ) as string,
      );
    }
    assert(focused.includes("new-bucket"), `Tab order: ${focused}`);
    await new Promise((r) => setTimeout(r, 3000));
    await page.click('#nav a[href="#/users"]');
    await waitForText(page, "main", "Your session ended");
    await page.waitForSelector("#sign-in");
    await shot(page, "30-session-expired");
  } finally {
    await page.close();
    await server.stop();
    await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
  }
}

export async function consoleInBrowser(chromium: Chromium, server: TestServer): Promise<void> {
  await Deno.mkdir(OUTPUT, { recursive: true });
  const dir = await Deno.makeTempDir({ prefix: "store-console-" });
  const bigFile = join(dir, "big.bin");
  const resumeFile = join(dir, "resume.bin");
  for (const [file, mib] of [[bigFile, 50], [resumeFile, 40]] as const) {
    const f = await Deno.open(file, { write: true, create: true });
    const chunk = new Uint8Array(MIB);
    for (let i = 0; i < mib; i++) {
      crypto.getRandomValues(chunk.subarray(0, 65536));
      await f.write(chunk);
    }
    f.close();
  }
  try {
    await adminTour(chromium, server, { bigFile, resumeFile });
    await readerTour(chromium.browser, server);
    await directoryTour(chromium);
    await expiryTour(chromium);
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
