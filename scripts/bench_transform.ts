// Image transformations: thumbnails per second from 12-megapixel JPEGs (256 px WebP, metadata
// stripped, asked for through POST /api/v1/jobs), and the latency of small GETs before and while
// the jobs run, with the server's peak resident memory.
//
//   deno task bench:transform [--count 12] [--workers 1]
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import sharp from "sharp";
import { memoryOf, s3Client, startServer } from "../tests/integration/server.ts";
import { api, bearer, settled } from "../tests/integration/transform_helpers.ts";

function arg(name: string, fallback: number): number {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}

const COUNT = arg("--count", 12);
const WORKERS = arg("--workers", 1);
const BUCKET = "bench";

/** A 4000 x 3000 photo-like JPEG: blurred noise, so it neither compresses nor decodes trivially. */
async function photo(seed: number): Promise<Uint8Array> {
  const noise = await sharp({
    create: {
      width: 4000,
      height: 3000,
      channels: 3,
      background: "black",
      noise: { type: "gaussian", mean: 100 + seed, sigma: 40 },
    },
  }).blur(1.5).jpeg({ quality: 88 }).toBuffer();
  return new Uint8Array(noise);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/** Small GETs one after another until `done` resolves (or `count` of them): their latencies. */
async function gets(s3: S3Client, until: Promise<unknown> | number): Promise<number[]> {
  const out: number[] = [];
  let finished = false;
  if (typeof until !== "number") until.then(() => finished = true);
  while (typeof until === "number" ? out.length < until : !finished) {
    const t0 = performance.now();
    const res = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "small.txt" }));
    await res.Body!.transformToByteArray();
    out.push(performance.now() - t0);
  }
  return out.sort((a, b) => a - b);
}

function summary(ms: number[]): string {
  const f = (n: number) => n.toFixed(1);
  return `n=${ms.length} p50=${f(percentile(ms, 0.5))} ms p95=${f(percentile(ms, 0.95))} ms ` +
    `p99=${f(percentile(ms, 0.99))} ms max=${f(ms[ms.length - 1])} ms`;
}

const server = await startServer({ env: { STORE_TRANSFORM_WORKERS: String(WORKERS) } });
try {
  const s3 = s3Client(server);
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  await s3.send(
    new PutObjectCommand({ Bucket: BUCKET, Key: "small.txt", Body: new Uint8Array(1024) }),
  );
  let bytes = 0;
  for (let i = 0; i < COUNT; i++) {
    const body = await photo(i);
    bytes += body.length;
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `in/${i}.jpg`, Body: body }));
  }
  const token = await bearer(server);
  await gets(s3, 50); // warm-up
  const idle = await gets(s3, 500);
  const before = await memoryOf(server.pid);
  // Resets the peak (VmHWM) to the present: the peak printed is that of the transformations.
  await Deno.writeTextFile(`/proc/${server.pid}/clear_refs`, "5");
  const t0 = performance.now();
  const ids: string[] = [];
  for (let i = 0; i < COUNT; i++) {
    const r = await api(server, token, "POST", "/jobs", {
      bucket: BUCKET,
      key: `in/${i}.jpg`,
      actions: [
        { strip_metadata: true },
        { thumbnail: { width: 256, height: 256, fit: "inside" } },
        { convert: { format: "webp", quality: 75 } },
      ],
      output: { prefix: "thumbs/" },
    });
    ids.push(r.json.id);
  }
  const jobs = Promise.all(ids.map((id) => settled(server, token, id, 600_000)));
  const busy = await gets(s3, jobs);
  const ended = await jobs;
  const seconds = (performance.now() - t0) / 1000;
  const failed = ended.filter((j) => j.state !== "done");
  if (failed.length > 0) throw new Error(`jobs failed: ${JSON.stringify(failed)}`);
  const after = await memoryOf(server.pid);
  console.log(
    `${COUNT} JPEGs of 12 MP (${(bytes / COUNT / 1e6).toFixed(1)} MB each), ` +
      `STORE_TRANSFORM_WORKERS=${WORKERS}, ${navigator.hardwareConcurrency} cores`,
  );
  console.log(
    `thumbnails: ${(COUNT / seconds).toFixed(2)}/s (${seconds.toFixed(1)} s for ${COUNT})`,
  );
  console.log(`small GETs, idle:         ${summary(idle)}`);
  console.log(`small GETs, transforming: ${summary(busy)}`);
  console.log(
    `server RSS: ${(before.rss / 2 ** 20).toFixed(0)} MiB before the jobs, peak while they ran ` +
      `${(after.peak / 2 ** 20).toFixed(0)} MiB`,
  );
} finally {
  await server.stop();
  await Deno.remove(server.dataDir, { recursive: true });
}
