// How fast the web console is with a big bucket: fills the metadata directly (100,000 keys in one
// folder by default), starts the server on it, then times the console's own listing requests
// (first page, a page deep into the folder, a prefix search) over HTTP, and the whole folder screen
// in headless Chromium, from navigation to the rendered table.
//
//   deno task bench:console [--keys 100000]
import { SqliteMetaStore } from "../src/meta/sqlite.ts";
import type { ObjectVersion } from "../src/meta/store.ts";
import { ADMIN_PASSWORD, ADMIN_USER, startServer } from "../tests/integration/server.ts";
import { launchChromium } from "../tests/browser/chromium.ts";

const keysArg = Deno.args.indexOf("--keys");
const KEYS = keysArg >= 0 ? Number(Deno.args[keysArg + 1]) : 100_000;
const BUCKET = "console-bench";
const ROUNDS = 30;

function keyOf(i: number): string {
  return `dir/photo-${String(i).padStart(6, "0")}.jpg`;
}

async function fill(dataDir: string): Promise<void> {
  const meta = new SqliteMetaStore(`${dataDir}/meta.db`);
  await meta.createBucket({
    name: BUCKET,
    owner: "admin",
    createdAt: Date.now(),
    region: "us-east-1",
    versioning: "",
    objectLock: false,
  });
  const writes: Promise<unknown>[] = [];
  for (let i = 0; i < KEYS; i++) {
    const version: ObjectVersion = {
      bucket: BUCKET,
      key: keyOf(i),
      versionId: "null",
      deleteMarker: false,
      size: 1,
      etag: '"c4ca4238a0b923820dcc509a6f75849b"',
      lastModified: Date.now(),
      contentType: "image/jpeg",
      userMeta: {},
      headers: {},
      owner: "admin",
      data: { kind: "inline", bytes: new Uint8Array([49]) },
    };
    // Queued together so the group commit batches them.
    writes.push(meta.putObjectVersion(version));
    if (writes.length === 1000) await Promise.all(writes.splice(0));
  }
  await Promise.all(writes);
  await meta.close();
}

async function timed(label: string, run: () => Promise<void>): Promise<void> {
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    await run();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  const p = (q: number) => samples[Math.floor(q * (ROUNDS - 1))].toFixed(1).padStart(7);
  console.log(`${label.padEnd(52)} p50 ${p(0.5)} ms  p95 ${p(0.95)} ms`);
}

const dataDir = await Deno.makeTempDir({ prefix: "store-bench-console-" });
try {
  const filling = performance.now();
  await fill(dataDir);
  console.log(`${KEYS} keys written in ${((performance.now() - filling) / 1000).toFixed(1)} s`);
  const server = await startServer({ dataDir });
  try {
    const signIn = await fetch(`${server.url}/console/api/sign-in`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ access_key: ADMIN_USER, secret_key: ADMIN_PASSWORD }),
    });
    await signIn.body?.cancel();
    const cookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0];
    const list = (query: string) => async () => {
      const res = await fetch(`${server.url}/console/api/s3/${BUCKET}?${query}`, {
        headers: { cookie },
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`status ${res.status}`);
    };
    await timed(
      "first page (100 of the folder)",
      list("list-type=2&delimiter=/&max-keys=100&prefix=dir/"),
    );
    await timed(
      "a page half-way through the folder",
      list(`list-type=2&delimiter=/&max-keys=100&prefix=dir/&start-after=${keyOf(KEYS / 2)}`),
    );
    await timed(
      "prefix search (dir/photo-0999)",
      list("list-type=2&delimiter=/&max-keys=100&prefix=dir/photo-0999"),
    );

    const chromium = await launchChromium();
    try {
      const { page } = await chromium.newPage();
      await page.goto(`${server.url}/console/`);
      await page.waitForSelector("#sign-in");
      await page.type("#name", ADMIN_USER);
      await page.type("#secret", ADMIN_PASSWORD);
      await page.click('#sign-in button[type="submit"]');
      await page.waitForSelector("#sign-out");
      await timed("folder screen in Chromium, navigation to table", async () => {
        await page.goto("about:blank");
        await page.goto(`${server.url}/console/#/b/${BUCKET}?prefix=dir%2F`);
        await page.waitForSelector("#objects tr.file");
      });
    } finally {
      await chromium.close();
    }
  } finally {
    await server.stop();
  }
} finally {
  await Deno.remove(dataDir, { recursive: true });
}
