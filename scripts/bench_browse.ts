// Latency of the /browse page against the XML listing it is built on, and the cost of CORS
// headers on GETs: fills a public bucket's metadata directly (10,000 keys in one folder by
// default), starts the server on it and times anonymous requests.
//
//   deno task bench:browse [--keys 10000]
import { SqliteMetaStore } from "../src/meta/sqlite.ts";
import type { ObjectVersion } from "../src/meta/store.ts";
import { startServer } from "../tests/integration/server.ts";

const keysArg = Deno.args.indexOf("--keys");
const KEYS = keysArg >= 0 ? Number(Deno.args[keysArg + 1]) : 10_000;
const BUCKET = "browse-bench";
const ROUNDS = 30;

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
  const policy = {
    Version: "2012-10-17",
    Statement: [{
      Effect: "Allow",
      Principal: "*",
      Action: ["s3:ListBucket", "s3:GetObject"],
      Resource: [`arn:aws:s3:::${BUCKET}`, `arn:aws:s3:::${BUCKET}/*`],
    }],
  };
  await meta.putBucketConfig(BUCKET, "policy", JSON.stringify(policy));
  const rules = [{
    allowedOrigins: ["https://app.example.com"],
    allowedMethods: ["GET"],
    allowedHeaders: [],
    exposeHeaders: ["ETag"],
  }];
  await meta.putBucketConfig(BUCKET, "cors", JSON.stringify(rules));
  for (let i = 0; i < KEYS; i++) {
    const version: ObjectVersion = {
      bucket: BUCKET,
      key: `dir/photo-${String(i).padStart(6, "0")}.jpg`,
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
    await meta.putObjectVersion(version);
  }
  await meta.close();
}

async function timed(url: string, label: string, headers: Record<string, string> = {}) {
  const samples: number[] = [];
  let bytes = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const t = performance.now();
    const res = await fetch(url, { headers });
    bytes = (await res.arrayBuffer()).byteLength;
    if (res.status !== 200) throw new Error(`${label}: status ${res.status}`);
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  const p = (q: number) => samples[Math.floor(q * (ROUNDS - 1))].toFixed(2).padStart(7);
  console.log(`${label.padEnd(46)} p50 ${p(0.5)} ms  p95 ${p(0.95)} ms  (${bytes} bytes)`);
}

const dataDir = await Deno.makeTempDir({ prefix: "store-bench-browse-" });
try {
  await fill(dataDir);
  const server = await startServer({ dataDir });
  try {
    const base = `${server.url}/${BUCKET}`;
    await timed(
      `${base}?list-type=2&prefix=dir/&delimiter=/`,
      "ListObjectsV2 (anonymous), 1000 keys",
    );
    await timed(`${server.url}/browse/${BUCKET}/dir/`, "/browse page, 1000 keys");
    await timed(`${server.url}/browse/${BUCKET}/dir/?limit=100`, "/browse page, 100 keys");
    await timed(`${base}/dir/photo-000001.jpg`, "GetObject (anonymous), no Origin");
    await timed(`${base}/dir/photo-000001.jpg`, "GetObject (anonymous), Origin matching a rule", {
      origin: "https://app.example.com",
    });
  } finally {
    await server.stop();
  }
} finally {
  await Deno.remove(dataDir, { recursive: true });
}
