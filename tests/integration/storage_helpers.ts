// Shared helpers of the storage suites (dedup, codec, erasure): servers over several drive
// directories, raw object requests, and checks of the chunk metadata against the shard files.
import { createHash } from "node:crypto";
import { join } from "node:path";
import { DatabaseSync, type SQLOutputValue } from "node:sqlite";
import { assert, AssertionError } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER, startServer, type TestServer } from "./server.ts";
import { headerName, objectPath, signedFetch, xmlValue, xmlValues } from "./signer.ts";

export const KiB = 1024;
export const CHUNK = 64 * KiB;

export interface StorageSetup {
  /** Metadata directory (STORE_DATA_DIR); drives live below it. */
  root: string;
  /** Drive directories (STORE_DATA_DIRS); just `root` when there is only one. */
  drives: string[];
}

/** A temp root with `n` drive directories below it (none created yet: the server does it). */
export async function makeSetup(n: number): Promise<StorageSetup> {
  const root = await Deno.makeTempDir({ prefix: "store-storage-test-" });
  const drives = n <= 1 ? [root] : Array.from({ length: n }, (_, i) => join(root, `drive-${i}`));
  return { root, drives };
}

export interface StorageOptions {
  ec?: string;
  chunkSize?: number;
  compression?: "auto" | "on" | "off";
  dedup?: boolean;
  extra?: Record<string, string>;
}

export function storageEnv(setup: StorageSetup, opts: StorageOptions = {}): Record<string, string> {
  const env: Record<string, string> = {
    STORE_CHUNK_SIZE: String(opts.chunkSize ?? CHUNK),
    STORE_SCRUB_INTERVAL: "0",
    ...(opts.compression ? { STORE_COMPRESSION: opts.compression } : {}),
    ...(opts.dedup === undefined ? {} : { STORE_DEDUP: opts.dedup ? "on" : "off" }),
    ...(opts.ec ? { STORE_EC: opts.ec } : {}),
    ...opts.extra,
  };
  if (setup.drives.length > 1 || setup.drives[0] !== setup.root) {
    env.STORE_DATA_DIRS = setup.drives.join(",");
  }
  return env;
}

export function startStorage(setup: StorageSetup, opts: StorageOptions = {}): Promise<TestServer> {
  return startServer({ dataDir: setup.root, env: storageEnv(setup, opts) });
}

/** The first start on a new setup: when it fails, the setup is removed before the error. */
export async function startFresh(setup: StorageSetup, opts: StorageOptions = {}) {
  try {
    return await startStorage(setup, opts);
  } catch (err) {
    await removeSetup(setup);
    throw err;
  }
}

/** Waits until the server's log has `line` (e.g. "Start-up sweep finished"). */
export async function waitForLog(server: TestServer, line: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!server.logs().includes(line)) {
    if (Date.now() > deadline) throw new AssertionError(`No "${line}" in:\n${server.logs()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function removeSetup(setup: StorageSetup): Promise<void> {
  await Deno.remove(setup.root, { recursive: true }).catch(() => {});
}

// ---- requests ----

export async function createBucket(server: TestServer, bucket: string): Promise<void> {
  const res = await signedFetch(server, { method: "PUT", path: objectPath(bucket) });
  const text = await res.text();
  if (res.status !== 200) throw new AssertionError(`CreateBucket ${bucket}: ${res.status} ${text}`);
}

export interface PutResult {
  status: number;
  etag: string | null;
  text: string;
}

export async function put(
  server: TestServer,
  bucket: string,
  key: string,
  body: Uint8Array,
  headers: Record<string, string> = {},
): Promise<PutResult> {
  const res = await signedFetch(server, {
    method: "PUT",
    path: objectPath(bucket, key),
    body,
    headers,
  });
  return { status: res.status, etag: res.headers.get("etag"), text: await res.text() };
}

/** A PUT that must succeed. */
export async function putOk(
  server: TestServer,
  bucket: string,
  key: string,
  body: Uint8Array,
): Promise<string> {
  const r = await put(server, bucket, key, body);
  if (r.status !== 200) throw new AssertionError(`PUT ${bucket}/${key}: ${r.status} ${r.text}`);
  assert(r.etag === md5Etag(body), `ETag of ${key} is the MD5 of the bytes (got ${r.etag})`);
  return r.etag!;
}

export interface GetResult {
  status: number;
  headers: Headers;
  /** The body when it arrived whole (as far as the transport could tell). */
  bytes?: Uint8Array;
  /** Set when reading the body failed (connection cut mid-body). */
  bodyError?: string;
}

export async function get(
  server: TestServer,
  bucket: string,
  key: string,
  range?: string,
): Promise<GetResult> {
  const res = await signedFetch(server, {
    method: "GET",
    path: objectPath(bucket, key),
    headers: range ? { range } : {},
  });
  try {
    return {
      status: res.status,
      headers: res.headers,
      bytes: new Uint8Array(await res.arrayBuffer()),
    };
  } catch (err) {
    return { status: res.status, headers: res.headers, bodyError: String(err) };
  }
}

export function describe(r: GetResult): string {
  const body = r.bytes
    ? r.status === 200 || r.status === 206
      ? `${r.bytes.byteLength} bytes`
      : new TextDecoder().decode(r.bytes).slice(0, 300)
    : `body error ${r.bodyError}`;
  return `status ${r.status}, ${body}`;
}

/** GET (optionally a range) must answer exactly `expected`. */
export async function expectBytes(
  server: TestServer,
  bucket: string,
  key: string,
  expected: Uint8Array,
  range?: { header: string; from: number; to: number; total: number },
): Promise<void> {
  const r = await get(server, bucket, key, range?.header);
  const what = `GET ${bucket}/${key}${range ? ` ${range.header}` : ""}`;
  const status = range ? 206 : 200;
  if (r.status !== status || !r.bytes) throw new AssertionError(`${what}: ${describe(r)}`);
  if (range) {
    const cr = r.headers.get("content-range");
    if (cr !== `bytes ${range.from}-${range.to}/${range.total}`) {
      throw new AssertionError(`${what}: Content-Range ${cr}`);
    }
  } else {
    const etag = r.headers.get("etag");
    if (etag !== md5Etag(expected)) throw new AssertionError(`${what}: ETag ${etag}`);
  }
  if (r.headers.get("content-length") !== String(expected.byteLength)) {
    throw new AssertionError(`${what}: Content-Length ${r.headers.get("content-length")}`);
  }
  if (!bytesEqual(r.bytes, expected)) {
    throw new AssertionError(
      `${what}: ${r.bytes.byteLength} bytes, expected ${expected.byteLength}, content differs`,
    );
  }
}

export async function del(server: TestServer, bucket: string, key: string): Promise<number> {
  const res = await signedFetch(server, { method: "DELETE", path: objectPath(bucket, key) });
  await res.body?.cancel();
  return res.status;
}

export async function copy(
  server: TestServer,
  bucket: string,
  key: string,
  source: string,
): Promise<{ status: number; text: string }> {
  const res = await signedFetch(server, {
    method: "PUT",
    path: objectPath(bucket, key),
    headers: { [headerName("store", "copy-source")]: source },
  });
  return { status: res.status, text: await res.text() };
}

export async function listKeys(server: TestServer, bucket: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const query: [string, string][] = [["list-type", "2"]];
    if (token) query.push(["continuation-token", token]);
    const res = await signedFetch(server, { method: "GET", path: objectPath(bucket), query });
    const xml = await res.text();
    if (res.status !== 200) throw new AssertionError(`List ${bucket}: ${res.status} ${xml}`);
    keys.push(...xmlValues(xml, "Key"));
    token = xmlValue(xml, "IsTruncated") === "true"
      ? xmlValue(xml, "NextContinuationToken")
      : undefined;
  } while (token);
  return keys;
}

export interface ScrubReport {
  chunks: number;
  shardsChecked: number;
  badShards: number;
  healedShards: number;
  lostChunks: string[];
}

export async function scrub(server: TestServer): Promise<ScrubReport> {
  const res = await fetch(`${server.url}/admin/scrub`, {
    method: "POST",
    headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) },
  });
  const text = await res.text();
  if (res.status !== 200) throw new AssertionError(`POST /admin/scrub: ${res.status} ${text}`);
  return JSON.parse(text);
}

// ---- bytes ----

export function md5Etag(bytes: Uint8Array): string {
  return `"${createHash("md5").update(bytes).digest("hex")}"`;
}

export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Compressible, non-repeating text (chunks differ from each other). */
export function textBytes(size: number, seed = 1): Uint8Array {
  const words = ["storage", "object", "bucket", "chunk", "shard", "parity", "drive", "heal"];
  let s = seed;
  let out = "";
  let line = 0;
  while (out.length < size) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    out += `${line++} ${words[s % 8]} ${words[(s >> 3) % 8]} ${s % 100000} lorem ipsum\n`;
  }
  return new TextEncoder().encode(out.slice(0, size));
}

// ---- metadata and shard files ----

type Row = Record<string, SQLOutputValue>;

export function query(setup: StorageSetup, sql: string, ...params: (string | number)[]): Row[] {
  const db = new DatabaseSync(join(setup.root, "meta.db"), { readOnly: true });
  try {
    return db.prepare(sql).all(...params) as Row[];
  } finally {
    db.close();
  }
}

export interface ChunkRow {
  id: string;
  refcount: number;
  plainSize: number;
  storedSize: number;
  compression: string;
  encrypted: number;
  k: number;
  m: number;
  drives: number[];
}

function toChunkRow(r: Row): ChunkRow {
  return {
    id: r.id as string,
    refcount: r.refcount as number,
    plainSize: r.plain_size as number,
    storedSize: r.stored_size as number,
    compression: r.compression as string,
    encrypted: r.encrypted as number,
    k: r.data_shards as number,
    m: r.parity_shards as number,
    drives: (r.drives as string).split(",").map(Number),
  };
}

export function chunkRows(setup: StorageSetup): ChunkRow[] {
  return query(setup, "SELECT * FROM chunks ORDER BY id").map(toChunkRow);
}

/** The chunks of the current version of a key, in order, with their offsets. */
export function objectChunks(
  setup: StorageSetup,
  bucket: string,
  key: string,
): (ChunkRow & { offset: number; size: number })[] {
  return query(
    setup,
    "SELECT vc.offset AS offset, vc.size AS size, c.* FROM versions v " +
      "JOIN version_chunks vc ON vc.version_id = v.vid JOIN chunks c ON c.id = vc.chunk_id " +
      "WHERE v.bucket = ? AND v.key = ? AND v.is_latest = 1 ORDER BY vc.idx",
    bucket,
    key,
  ).map((r) => ({ ...toChunkRow(r), offset: r.offset as number, size: r.size as number }));
}

/** Drive id -> directory, as the metadata records them. */
export function drivePaths(setup: StorageSetup): Map<number, string> {
  return new Map(
    query(setup, "SELECT id, path FROM drives").map((r) => [r.id as number, r.path as string]),
  );
}

export function shardPath(drive: string, id: string, index: number): string {
  return join(drive, "chunks", id.slice(0, 2), `${id}.${index}`);
}

/** Where each shard of a chunk lives (by the metadata). */
export function shardPaths(setup: StorageSetup, c: ChunkRow): string[] {
  const paths = drivePaths(setup);
  return c.drives.map((d, i) => shardPath(paths.get(d)!, c.id, i));
}

export interface ShardFile {
  path: string;
  id: string;
  index: number;
}

/** Every shard file on the given drive directories. */
export async function shardFiles(drives: string[]): Promise<ShardFile[]> {
  const out: ShardFile[] = [];
  for (const drive of drives) {
    const dir = join(drive, "chunks");
    let prefixes: Deno.DirEntry[] = [];
    try {
      prefixes = await Array.fromAsync(Deno.readDir(dir));
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) continue;
      throw err;
    }
    for (const p of prefixes) {
      for await (const e of Deno.readDir(join(dir, p.name))) {
        const [id, index] = e.name.split(".");
        out.push({ path: join(dir, p.name, e.name), id, index: Number(index) });
      }
    }
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** Files left in the drives' tmp directories. */
export async function tmpFiles(drives: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const drive of drives) {
    try {
      for await (const e of Deno.readDir(join(drive, "tmp"))) out.push(join(drive, "tmp", e.name));
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
  return out;
}

/** Chunks whose refcount differs from the number of version_chunks rows naming them. */
export function refcountMismatches(setup: StorageSetup): Row[] {
  return query(
    setup,
    "SELECT c.id AS id, c.refcount AS refcount, " +
      "(SELECT count(*) FROM version_chunks v WHERE v.chunk_id = c.id) AS refs FROM chunks c",
  ).filter((r) => r.refcount !== r.refs);
}

export async function fileExists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/**
 * The storage invariants: every chunk's refcount equals its references (and is positive), every
 * reference names an existing chunk, every chunk row has all its k+m shard files where the
 * metadata says, and no shard file exists without a chunk row (or beyond the chunk's layout).
 */
export async function checkConsistency(setup: StorageSetup, what: string): Promise<void> {
  // The files of freed chunks are removed just after the freeing request answered: shard files
  // without a row are a problem only if they stay.
  const deadline = Date.now() + 10_000;
  for (;;) {
    const problems = await inconsistencies(setup);
    const orphansOnly = problems.length > 0 &&
      problems.every((p) => p.endsWith("has no chunk row"));
    if (orphansOnly && Date.now() < deadline) {
      await sleep(50);
      continue;
    }
    if (problems.length > 0) {
      throw new AssertionError(
        `${what}: ${problems.length} inconsistencies:\n  ${problems.slice(0, 20).join("\n  ")}`,
      );
    }
    return;
  }
}

async function inconsistencies(setup: StorageSetup): Promise<string[]> {
  const problems: string[] = [];
  for (const r of refcountMismatches(setup)) {
    problems.push(`chunk ${r.id}: refcount ${r.refcount} but ${r.refs} references`);
  }
  for (const r of query(setup, "SELECT id FROM chunks WHERE refcount <= 0")) {
    problems.push(`chunk ${r.id} has a non-positive refcount`);
  }
  for (
    const r of query(
      setup,
      "SELECT vc.chunk_id AS id FROM version_chunks vc LEFT JOIN chunks c ON c.id = vc.chunk_id " +
        "WHERE c.id IS NULL",
    )
  ) problems.push(`reference to missing chunk ${r.id}`);
  for (
    const r of query(
      setup,
      // A multipart part's chunks are listed under the part's data_id.
      "SELECT DISTINCT vc.version_id AS vid FROM version_chunks vc " +
        "LEFT JOIN versions v ON v.vid = vc.version_id " +
        "LEFT JOIN parts p ON p.data_id = vc.version_id WHERE v.vid IS NULL AND p.data_id IS NULL",
    )
  ) problems.push(`version_chunks of a missing version or part ${r.vid}`);
  const rows = chunkRows(setup);
  const expected = new Set<string>();
  for (const c of rows) {
    for (const p of shardPaths(setup, c)) {
      expected.add(p);
      if (!(await fileExists(p))) problems.push(`chunk ${c.id}: shard file ${p} missing`);
    }
  }
  const files = await shardFiles(setup.drives);
  for (const f of files) {
    if (!expected.has(f.path)) problems.push(`shard file ${f.path} has no chunk row`);
  }
  return problems;
}

// ---- damage ----

export type Damage = "delete" | "flip" | "truncate";
export const DAMAGES: Damage[] = ["delete", "flip", "truncate"];

/** Damages one shard file: removed, a payload byte run inverted, or cut short. */
export async function damage(path: string, kind: Damage): Promise<void> {
  if (kind === "delete") {
    await Deno.remove(path);
    return;
  }
  const bytes = await Deno.readFile(path);
  if (kind === "flip") {
    // Past the 16-byte header, inside the payload.
    const at = 16 + Math.floor((bytes.byteLength - 16) / 2);
    for (let i = at; i < Math.min(bytes.byteLength, at + 8); i++) bytes[i] ^= 0xff;
    await Deno.writeFile(path, bytes);
    return;
  }
  await Deno.writeFile(path, bytes.subarray(0, 16 + Math.floor((bytes.byteLength - 16) / 2)));
}

/** Every combination of `size` items out of `items`. */
export function combinations<T>(items: T[], size: number): T[][] {
  if (size === 0) return [[]];
  const out: T[][] = [];
  items.forEach((item, i) => {
    for (const rest of combinations(items.slice(i + 1), size - 1)) out.push([item, ...rest]);
  });
  return out;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
