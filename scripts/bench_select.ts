// SelectObjectContent scan speed: `SELECT COUNT(*) ... WHERE` over a CSV object stored plain,
// stored zstd-compressed, sent as GZIP input, and over a JSON LINES object. Reports MB/s of
// input processed and the server's resident memory sampled during each query.
//
//   deno task bench:select [--mb 64]
import {
  PutObjectCommand,
  type S3Client,
  SelectObjectContentCommand,
  type SelectObjectContentCommandInput,
} from "@aws-sdk/client-s3";
import { gzipSync } from "node:zlib";
import { memoryOf, s3Client, startServer, type TestServer } from "../tests/integration/server.ts";
import { objectPath, signedFetch } from "../tests/integration/signer.ts";

const mbArg = Deno.args.indexOf("--mb");
const MB = mbArg >= 0 ? Number(Deno.args[mbArg + 1]) : 64;
const SIZE = MB * 1024 * 1024;
const BUCKET = "bench";
const CITIES = ["Paris", "Oslo", "Lima", "Kyoto", "Accra", "Quito", "Perth", "Sofia"];

/** `size` bytes of rows (whole rows only) produced by `row`. */
function generate(size: number, header: string, row: (i: number) => string): Uint8Array {
  const out = new Uint8Array(size + 1024);
  const enc = new TextEncoder();
  let at = enc.encodeInto(header, out).written;
  let batch = "";
  for (let i = 0; at < size; i++) {
    batch += row(i);
    if (batch.length > 64 * 1024 || i % 1000 === 999) {
      const bytes = enc.encode(batch);
      if (at + bytes.length > size) break;
      out.set(bytes, at);
      at += bytes.length;
      batch = "";
    }
  }
  return out.subarray(0, at);
}

const csvRow = (i: number) =>
  `${i},name-${i % 9973},${18 + (i * 7) % 70},${CITIES[i % 8]},${(i % 1000) / 10}\n`;
const jsonRow = (i: number) =>
  JSON.stringify({
    id: i,
    name: `name-${i % 9973}`,
    age: 18 + (i * 7) % 70,
    city: CITIES[i % 8],
    score: (i % 1000) / 10,
  }) + "\n";

/** CPU seconds (user + system) the process has used, from /proc (clock ticks of 1/100 s). */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function run(
  server: TestServer,
  s3: S3Client,
  label: string,
  input: Partial<SelectObjectContentCommandInput> & { Key: string },
): Promise<void> {
  let peakRss = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakRss = Math.max(peakRss, (await memoryOf(server.pid)).rss);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  // How long other requests wait while the scan runs: HeadBucket in a loop.
  let worstHead = 0;
  const pinger = (async () => {
    while (sampling) {
      const t = performance.now();
      const res = await signedFetch(server, { method: "HEAD", path: objectPath(BUCKET) });
      await res.body?.cancel();
      worstHead = Math.max(worstHead, performance.now() - t);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const cpuBefore = await cpuSeconds(server.pid);
  const started = performance.now();
  const res = await s3.send(
    new SelectObjectContentCommand({
      Bucket: BUCKET,
      ExpressionType: "SQL",
      Expression: "SELECT COUNT(*) FROM S3Object s WHERE s.age > 50 AND s.city = 'Oslo'",
      InputSerialization: { CSV: { FileHeaderInfo: "USE" } },
      OutputSerialization: { CSV: {} },
      ...input,
    }),
  );
  let result = "";
  let processed = 0;
  let scanned = 0;
  for await (const e of res.Payload!) {
    if (e.Records?.Payload) result += new TextDecoder().decode(e.Records.Payload);
    if (e.Stats?.Details) {
      processed = e.Stats.Details.BytesProcessed ?? 0;
      scanned = e.Stats.Details.BytesScanned ?? 0;
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = await cpuSeconds(server.pid) - cpuBefore;
  sampling = false;
  await sampler;
  await pinger;
  const mbs = processed / 1024 / 1024 / seconds;
  console.log(
    `${label.padEnd(34)} ${(processed / 1048576).toFixed(0).padStart(5)} MiB processed ` +
      `(${(scanned / 1048576).toFixed(0)} MiB scanned) in ${seconds.toFixed(2)} s = ` +
      `${mbs.toFixed(0)} MB/s (${
        (processed / 1048576 / cpu).toFixed(0)
      } MB per server CPU-second); ` +
      `count ${result.trim()}; server RSS during query ` +
      `${(peakRss / 1048576).toFixed(0)} MiB; slowest HeadBucket meanwhile ${
        worstHead.toFixed(0)
      } ms`,
  );
}

async function withServer(
  compression: "off" | "on",
  fn: (s: TestServer, s3: S3Client) => Promise<void>,
) {
  const server = await startServer({ env: { STORE_COMPRESSION: compression } });
  try {
    const s3 = s3Client(server);
    const res = await signedFetch(server, { method: "PUT", path: objectPath(BUCKET) });
    if (res.status !== 200) throw new Error(`CreateBucket: ${res.status} ${await res.text()}`);
    await fn(server, s3);
  } finally {
    await server.stop();
    await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
  }
}

const csv = generate(SIZE, "id,name,age,city,score\n", csvRow);
const lines = generate(SIZE, "", jsonRow);
console.log(`bench:select over ${MB} MiB objects`);
await withServer("off", async (server, s3) => {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "data.csv", Body: csv }));
  const rss = (await memoryOf(server.pid)).rss;
  console.log(`server RSS after upload ${(rss / 1048576).toFixed(0)} MiB`);
  await run(server, s3, "CSV, stored plain", { Key: "data.csv" });
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "data.jsonl", Body: lines }));
  await run(server, s3, "JSON LINES, stored plain", {
    Key: "data.jsonl",
    InputSerialization: { JSON: { Type: "LINES" } },
  });
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "data.csv.gz", Body: gzipSync(csv) }));
  await run(server, s3, "CSV, GZIP input", {
    Key: "data.csv.gz",
    InputSerialization: { CSV: { FileHeaderInfo: "USE" }, CompressionType: "GZIP" },
  });
});
await withServer("on", async (server, s3) => {
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "data.csv", Body: csv }));
  await run(server, s3, "CSV, stored zstd-compressed", { Key: "data.csv" });
  await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "data.jsonl", Body: lines }));
  await run(server, s3, "JSON LINES, stored zstd-compressed", {
    Key: "data.jsonl",
    InputSerialization: { JSON: { Type: "LINES" } },
  });
});
