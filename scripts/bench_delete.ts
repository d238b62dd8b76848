// DeleteObjects throughput: fills a bucket with small (inline) and larger (chunked) objects,
// then removes them with 1,000-key DeleteObjects requests and prints keys/s per size, with the
// server's peak RSS. Starts `deno run -A main.ts` on a temp data directory.
//
//   deno task bench:delete [--sizes 1k,128k] [--batches 2] [--keys 1000] [--versioned]
//                          [--url URL --access-key KEY --secret-key SECRET [--pid PID]]
//
// --versioned enables versioning first, so each key deleted without a version id gets a delete
// marker (a write) instead of losing its only version. --url runs against a server already
// running (another S3 server, to compare); --pid gives its process for the peak RSS.
import { createHash, randomFillSync } from "node:crypto";
import { objectPath } from "./bench_client.ts";
import { Client, peakRssOf, startLocalServer } from "./bench_run.ts";
import { parseSize, readEndpoint } from "./bench_options.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : fallback;
}

const SIZES = flag("sizes", "1k,128k").split(",").map(parseSize);
const BATCHES = Number(flag("batches", "2"));
const KEYS = Number(flag("keys", "1000"));
const VERSIONED = Deno.args.includes("--versioned");
// A bucket of its own per run: a server given by --url may hold one from an earlier run.
const BUCKET = `bench-delete-${Date.now().toString(36)}`;
const FILL_PARALLEL = 8;

const keyOf = (size: number, batch: number, i: number) =>
  `d/${size}/${batch}/${String(i).padStart(5, "0")}`;

function deleteBody(keys: string[]): Uint8Array {
  const objects = keys.map((k) => `<Object><Key>${k}</Key></Object>`).join("");
  return new TextEncoder().encode(`<Delete><Quiet>true</Quiet>${objects}</Delete>`);
}

async function fill(client: Client, size: number, buffer: Uint8Array): Promise<void> {
  let next = 0;
  const total = BATCHES * KEYS;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      const path = objectPath(BUCKET, keyOf(size, Math.floor(i / KEYS), i % KEYS));
      await client.ok({ method: "PUT", path, body: { buffer, size } }, `PUT ${path}`);
    }
  };
  await Promise.all(Array.from({ length: FILL_PARALLEL }, worker));
}

async function deleteBatch(client: Client, size: number, batch: number): Promise<void> {
  const body = deleteBody(Array.from({ length: KEYS }, (_, i) => keyOf(size, batch, i)));
  const res = await client.ok({
    method: "POST",
    path: objectPath(BUCKET),
    query: [["delete", ""]],
    headers: { "content-md5": createHash("md5").update(body).digest("base64") },
    body: { buffer: body, size: body.length },
    collect: true,
  }, "DeleteObjects");
  if (res.text?.includes("<Error>")) throw new Error(`DeleteObjects: ${res.text.slice(0, 400)}`);
}

/** The server given by --url (or BENCH_URL, as for `deno task bench`), or one started here. */
async function target() {
  const given = ["url", "access-key", "secret-key"].filter((n) => Deno.args.includes(`--${n}`));
  const endpoint = readEndpoint(new Map(given.map((n) => [n, flag(n, "")])), "us-east-1", "");
  if (!endpoint) return await startLocalServer("us-east-1");
  const pid = Number(flag("pid", "0")) || undefined;
  return {
    endpoint,
    peakRss: () => pid ? peakRssOf(pid) : Promise.resolve(undefined),
    stop: () => Promise.resolve(),
  };
}

const server = await target();
const client = new Client(server.endpoint, FILL_PARALLEL);
try {
  await client.ok({ method: "PUT", path: objectPath(BUCKET) }, "CreateBucket");
  if (VERSIONED) {
    const body = new TextEncoder().encode(
      "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>",
    );
    await client.ok({
      method: "PUT",
      path: objectPath(BUCKET),
      query: [["versioning", ""]],
      body: { buffer: body, size: body.length },
    }, "PutBucketVersioning");
  }
  const buffer = randomFillSync(new Uint8Array(Math.max(...SIZES)));
  console.log(
    `DeleteObjects, ${KEYS}-key batches, ${BATCHES} per size${VERSIONED ? ", versioned" : ""}`,
  );
  for (const size of SIZES) {
    await fill(client, size, buffer);
    const started = performance.now();
    for (let b = 0; b < BATCHES; b++) await deleteBatch(client, size, b);
    const seconds = (performance.now() - started) / 1000;
    const rate = Math.round((BATCHES * KEYS) / seconds);
    console.log(`${String(size).padStart(8)} B objects: ${rate} keys/s (${seconds.toFixed(2)} s)`);
  }
  const rss = await server.peakRss();
  if (rss !== undefined) console.log(`server peak RSS: ${Math.round(rss / 1024 / 1024)} MiB`);
} finally {
  // Empty unless the run failed or versioned keys left their markers: removed when it can be.
  await client.send({ method: "DELETE", path: objectPath(BUCKET) }).catch(() => {});
  client.close();
  await server.stop();
}
