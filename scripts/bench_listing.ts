// Listing latency with many keys: fills a bucket's metadata directly (100,000 keys with two
// versions each by default), starts the server on it, and times ListObjectsV2 and
// ListObjectVersions pages at the start, the middle and the end of the key space.
//
//   deno task bench:listing [--keys 100000] [--rounds 1] [--postgres]
//
// --postgres keeps the metadata in a PostgreSQL started for the run (tests/services/postgres.ts,
// fsync off: only the reads are timed) instead of the SQLite file.
//
// Each round ends with a walk of the whole bucket in ListObjectsV2 pages of 1000 (keys/s), the
// figure that varies across rounds.
import postgres from "postgres";
import { SqliteMetaStore } from "../src/meta/sqlite.ts";
import { PgMetaStore } from "../src/meta/pg/store.ts";
import type { MetaStore, ObjectVersion } from "../src/meta/store.ts";
import { createPostgres } from "../tests/services/postgres.ts";
import { newVersionId } from "../src/object/versioning.ts";
import { signRequest } from "../tests/integration/signer.ts";
import { startServer } from "../tests/integration/server.ts";

const keysArg = Deno.args.indexOf("--keys");
const KEYS = keysArg >= 0 ? Number(Deno.args[keysArg + 1]) : 100_000;
const roundsArg = Deno.args.indexOf("--rounds");
const ROUNDS = roundsArg >= 0 ? Number(Deno.args[roundsArg + 1]) : 1;
const POSTGRES = Deno.args.includes("--postgres");
const BUCKET = "listing";

function keyName(i: number): string {
  return `dir${String(i % 100).padStart(2, "0")}/file-${String(i).padStart(7, "0")}.txt`;
}

async function fill(dataDir: string, metaUrl?: string): Promise<void> {
  const meta: MetaStore = metaUrl
    ? await PgMetaStore.open({ url: metaUrl, pool: 16, audit: false })
    : new SqliteMetaStore(`${dataDir}/meta.db`);
  await meta.createBucket({
    name: BUCKET,
    owner: "admin",
    createdAt: Date.now(),
    region: "us-east-1",
    versioning: "",
    objectLock: false,
  });
  await meta.setBucketVersioning(BUCKET, "Enabled");
  const started = performance.now();
  if (metaUrl) await bulkFill(metaUrl);
  else await putAll(meta);
  console.log(
    `filled ${KEYS} keys x 2 versions in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  await meta.close();
}

/**
 * PostgreSQL: the same rows (two versions per key, the second current) in one INSERT ... SELECT,
 * as a transaction per version would take minutes; only the listing is timed.
 */
async function bulkFill(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`
      INSERT INTO versions (bucket, key, seq, version_id, is_latest, delete_marker, size, etag,
        last_modified, content_type, user_meta, headers, owner, inline_data, vid, chunked)
      SELECT ${BUCKET}, 'dir' || lpad((i % 100)::text, 2, '0') || '/file-' ||
          lpad(i::text, 7, '0') || '.txt', v, md5(i::text || '/' || v::text), v = 2, false, 1,
        '"c4ca4238a0b923820dcc509a6f75849b"', ${Date.now()}, 'text/plain', '{}', '{}', 'admin',
        '\x31'::bytea, nextval('data_ids'), false
      FROM generate_series(0, ${KEYS - 1}) AS i, generate_series(1, 2) AS v`;
    await sql`ANALYZE versions`;
  } finally {
    await sql.end();
  }
}

async function putAll(meta: MetaStore): Promise<void> {
  // Writes issued together share a group commit: a thousand keys per fsync, not one.
  let pending: Promise<unknown>[] = [];
  for (let i = 0; i < KEYS; i++) {
    for (let v = 0; v < 2; v++) {
      const version: ObjectVersion = {
        bucket: BUCKET,
        key: keyName(i),
        versionId: newVersionId(),
        deleteMarker: false,
        size: 1,
        etag: '"c4ca4238a0b923820dcc509a6f75849b"',
        lastModified: Date.now(),
        contentType: "text/plain",
        userMeta: {},
        headers: {},
        owner: "admin",
        data: { kind: "inline", bytes: new Uint8Array([49]) },
      };
      pending.push(meta.putObjectVersion(version));
    }
    if (pending.length >= 2000) {
      await Promise.all(pending);
      pending = [];
    }
  }
  await Promise.all(pending);
}

async function timed(
  server: { url: string },
  label: string,
  query: [string, string][],
): Promise<void> {
  const samples: number[] = [];
  let count = 0;
  for (let i = 0; i < 20; i++) {
    const req = await signRequest(server as Parameters<typeof signRequest>[0], {
      method: "GET",
      path: `/${BUCKET}`,
      query,
    });
    const t = performance.now();
    const res = await fetch(req.url, { headers: req.headers });
    const body = await res.text();
    samples.push(performance.now() - t);
    count = (body.match(/<Key>/g) ?? []).length + (body.match(/<Prefix>/g) ?? []).length - 1;
  }
  samples.sort((a, b) => a - b);
  console.log(
    `${label.padEnd(44)} p50 ${samples[10].toFixed(1).padStart(6)} ms  p95 ${
      samples[18].toFixed(1).padStart(6)
    } ms  (${count} entries)`,
  );
}

/** CPU seconds the process has used (user + system), from /proc (Linux); 0 elsewhere. */
function cpuSeconds(pid: number): number {
  try {
    const fields = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/**
 * Lists every key, a page of 1000 at a time: keys per wall second, and per second of the
 * server's CPU (which stays put when the wall figure moves because the machine is busy).
 */
async function walk(server: { url: string; pid: number }): Promise<string> {
  const cpu = cpuSeconds(server.pid);
  const t = performance.now();
  let keys = 0;
  let token: string | undefined;
  do {
    const query: [string, string][] = [["list-type", "2"]];
    if (token) query.push(["continuation-token", token]);
    const req = await signRequest(server as Parameters<typeof signRequest>[0], {
      method: "GET",
      path: `/${BUCKET}`,
      query,
    });
    const body = await (await fetch(req.url, { headers: req.headers })).text();
    keys += (body.match(/<Key>/g) ?? []).length;
    token = /<NextContinuationToken>([^<]*)</.exec(body)?.[1];
  } while (token);
  const wall = Math.round(keys / ((performance.now() - t) / 1000));
  const used = cpuSeconds(server.pid) - cpu;
  return `${wall} keys/s, ${used > 0 ? Math.round(keys / used) : "?"} keys per server CPU second`;
}

const dataDir = await Deno.makeTempDir({ prefix: "store-bench-listing-" });
const pg = POSTGRES ? await createPostgres() : undefined;
try {
  await pg?.start();
  await fill(dataDir, pg?.url);
  console.log(`metadata: ${pg ? "PostgreSQL" : "SQLite"}`);
  const server = await startServer({ dataDir, env: pg ? { STORE_META_URL: pg.url } : {} });
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      if (ROUNDS > 1) console.log(`round ${round}`);
      const middle = keyName(Math.floor(KEYS / 2));
      const end = keyName(KEYS - 50);
      await timed(server, "ListObjectsV2 first 1000", [["list-type", "2"]]);
      await timed(server, "ListObjectsV2 1000 after the middle", [["list-type", "2"], [
        "start-after",
        middle,
      ]]);
      await timed(server, "ListObjectsV2 near the end", [["list-type", "2"], ["start-after", end]]);
      await timed(server, "ListObjectsV2 delimiter / (100 prefixes)", [["list-type", "2"], [
        "delimiter",
        "/",
      ]]);
      await timed(server, "ListObjectsV2 prefix dir42/", [["list-type", "2"], [
        "prefix",
        "dir42/",
      ]]);
      await timed(server, "ListObjectVersions first 1000", [["versions", ""]]);
      await timed(server, "ListObjectVersions 1000 after the middle", [["versions", ""], [
        "key-marker",
        middle,
      ]]);
      await timed(server, "ListObjectVersions delimiter /", [["versions", ""], ["delimiter", "/"]]);
      console.log(`ListObjectsV2 walk of the bucket: ${await walk(server)}`);
    }
  } finally {
    await server.stop();
  }
} finally {
  await pg?.dispose();
  await Deno.remove(dataDir, { recursive: true });
}
