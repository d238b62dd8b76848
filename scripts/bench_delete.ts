// DeleteObjects throughput: fills a bucket with small (inline) and larger (chunked) objects,
// then removes them with 1,000-key DeleteObjects requests and prints keys/s per size, with the
// server's peak RSS. Starts `deno run -A main.ts` on a temp data directory.
//
//   deno task bench:delete [--sizes 1k,128k] [--batches 2] [--keys 1000] [--versioned]
//
// --versioned enables versioning first, so each key deleted without a version id gets a delete
// marker (a write) instead of losing its only version.
import { createHash, randomFillSync } from "node:crypto";
import { objectPath } from "./bench_client.ts";
import { Client, startLocalServer } from "./bench_run.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : fallback;
}

function parseSize(s: string): number {
  const m = /^(\d+)([km]?)$/i.exec(s.trim());
  if (!m) throw new Error(`Bad size "${s}"`);
  return Number(m[1]) * ({ "": 1, k: 1024, m: 1024 * 1024 }[m[2].toLowerCase()] ?? 1);
}

const SIZES = flag("sizes", "1k,128k").split(",").map(parseSize);
const BATCHES = Number(flag("batches", "2"));
const KEYS = Number(flag("keys", "1000"));
const VERSIONED = Deno.args.includes("--versioned");
const BUCKET = "bench-delete";
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

const server = await startLocalServer("us-east-1");
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
  client.close();
  await server.stop();
}
