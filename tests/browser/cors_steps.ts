// Cross-origin requests from a real browser: a page on a second local port uses fetch() with
// presigned URLs and with signed headers against a bucket whose CORS rule allows that origin,
// and the browser blocks the same calls once the rule is gone.
import {
  CreateBucketCommand,
  DeleteBucketCorsCommand,
  HeadObjectCommand,
  PutBucketCorsCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { assert, assertEquals } from "../integration/assert.ts";
import { s3Client, type TestServer } from "../integration/server.ts";
import { objectPath, presign, signRequest } from "../integration/signer.ts";
import { type Chromium, screenshotPath, serveOrigin } from "./chromium.ts";
import type { PageGlobals } from "./dom.ts";

const BUCKET = "webapp";
const PAGE = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>other origin</title></head>
<body><h1>A page on another origin</h1><pre id="log"></pre></body></html>`;

/** What a fetch() in the page saw: its status and readable headers, or the error it threw. */
interface Outcome {
  status?: number;
  text?: string;
  etag?: string | null;
  error?: string;
}

interface Call {
  url: string;
  method: string;
  headers?: Record<string, string>;
  body?: string;
}

async function exists(server: TestServer, key: string): Promise<boolean> {
  try {
    await s3Client(server).send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
    return true;
  } catch {
    return false;
  }
}

function presigned(server: TestServer, method: string, key: string): Promise<string> {
  return presign(server, { method, path: objectPath(BUCKET, key), expires: 300 });
}

/** A request signed in its headers (amz dialect, as the SDKs send), for the page to send. */
async function headerSigned(
  server: TestServer,
  method: string,
  key: string,
  body?: string,
): Promise<Call> {
  const signed = await signRequest(server, {
    method,
    path: objectPath(BUCKET, key),
    dialect: "amz",
    body,
  });
  return { url: signed.url, method, headers: signed.headers, body };
}

export async function corsInBrowser(chromium: Chromium, server: TestServer): Promise<void> {
  const s3 = s3Client(server);
  const origin = serveOrigin(PAGE);
  const { page, problems } = await chromium.newPage();
  try {
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "keep.txt", Body: "kept" }));
    await s3.send(
      new PutBucketCorsCommand({
        Bucket: BUCKET,
        CORSConfiguration: {
          CORSRules: [{
            AllowedOrigins: [origin.url],
            AllowedMethods: ["GET", "PUT", "DELETE", "HEAD"],
            AllowedHeaders: ["*"],
            ExposeHeaders: ["ETag"],
          }],
        },
      }),
    );
    await page.goto(origin.url);
    const send = (call: Call) =>
      page.evaluate(async (c: Call): Promise<Outcome> => {
        const { document } = globalThis as unknown as PageGlobals;
        try {
          const r = await fetch(c.url, { method: c.method, headers: c.headers, body: c.body });
          const text = await r.text();
          document.getElementById("log")!.textContent += `${c.method} ${r.status}\n`;
          return { status: r.status, text, etag: r.headers.get("etag") };
        } catch (err) {
          document.getElementById("log")!.textContent += `${c.method} blocked\n`;
          return { error: String(err) };
        }
      }, call);

    // Allowed: presigned PUT, GET, DELETE.
    let out = await send({
      url: await presigned(server, "PUT", "pre.txt"),
      method: "PUT",
      body: "from a presigned PUT",
    });
    assertEquals(out.status, 200, JSON.stringify(out));
    assert(out.etag?.startsWith('"'), "the exposed ETag is readable");
    out = await send({ url: await presigned(server, "GET", "pre.txt"), method: "GET" });
    assertEquals(out.text, "from a presigned PUT");
    out = await send({ url: await presigned(server, "DELETE", "pre.txt"), method: "DELETE" });
    assertEquals(out.status, 204, JSON.stringify(out));
    assert(!(await exists(server, "pre.txt")));

    // Allowed: requests signed in their headers (a preflight asks for authorization etc.).
    out = await send(await headerSigned(server, "PUT", "signed.txt", "from a signed PUT"));
    assertEquals(out.status, 200, JSON.stringify(out));
    out = await send(await headerSigned(server, "GET", "signed.txt"));
    assertEquals(out.text, "from a signed PUT");
    out = await send(await headerSigned(server, "DELETE", "signed.txt"));
    assertEquals(out.status, 204, JSON.stringify(out));
    assert(!(await exists(server, "signed.txt")));
    await page.screenshot({ path: screenshotPath("cors-allowed") });
    assertEquals(problems, []);

    // The rule removed: the browser refuses every one of these calls (fresh URLs and keys, so
    // no cached preflight applies) and the refused writes never reach the bucket.
    await s3.send(new DeleteBucketCorsCommand({ Bucket: BUCKET }));
    const blocked: Call[] = [
      { url: await presigned(server, "PUT", "late.txt"), method: "PUT", body: "x" },
      { url: await presigned(server, "GET", "keep.txt"), method: "GET" },
      { url: await presigned(server, "DELETE", "keep.txt"), method: "DELETE" },
      await headerSigned(server, "PUT", "late-signed.txt", "x"),
      await headerSigned(server, "GET", "keep.txt"),
      await headerSigned(server, "DELETE", "keep.txt"),
    ];
    for (const call of blocked) {
      out = await send(call);
      assert(
        out.error?.includes("TypeError"),
        `${call.method} must be blocked: ${JSON.stringify(out)}`,
      );
    }
    assert(!(await exists(server, "late.txt")), "a blocked preflight stops the PUT");
    assert(!(await exists(server, "late-signed.txt")));
    assert(await exists(server, "keep.txt"), "a blocked preflight stops the DELETE");
    await page.screenshot({ path: screenshotPath("cors-blocked") });
  } finally {
    await page.close();
    await origin.close();
  }
}
