// Crash consistency: SIGKILL the server while uploads are in flight, restart it on the same data
// directory, and check that acknowledged writes survived whole, that nothing partial became
// visible, and that the start-up sweep removed what the crash left behind.
//
// Uploads fall in three groups so the outcome is deterministic where it must be:
// - acked: sent whole and answered 200 before the kill; must read back byte-identical.
// - held: bodies streamed only part-way and then paused until after the kill (a few of them are
//   aborted by the client before the kill); must never become visible, and where they overwrite
//   an acked key the acked bytes must remain.
// - racing: sent whole right before the kill; each may or may not have committed, but if it was
//   answered 200 it must be there, and if it is listed it must be whole.
import { createHash } from "node:crypto";
import { join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import { randomBytes, startServer, type TestServer } from "./server.ts";
import { objectPath, presign, signedFetch, xmlValue, xmlValues } from "./signer.ts";

const BUCKET = "crash-bucket";
const INLINE_MAX = 64 * 1024;
/** The smallest chunk size, so uploads write shard files while they stream. */
const CHUNK_SIZE = 64 * 1024;
const SERVER_ENV = { STORE_CHUNK_SIZE: String(CHUNK_SIZE) };
const KiB = 1024;
const MiB = 1024 * 1024;
const STREAM_CHUNK = 64 * KiB;

type Group = "acked" | "held" | "racing";

interface Upload {
  key: string;
  body: Uint8Array;
  sha256: string;
  group: Group;
  /** Held uploads stop after this many bytes until the gate opens. */
  holdAt?: number;
  /** Held uploads the client aborts before the kill. */
  abort?: boolean;
  /** The server answered 200. */
  acked?: boolean;
  /** Order of the acknowledgement among all acknowledgements. */
  ackSeq?: number;
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** A deterministic size sequence so every run has the same mix (contents are random). */
function sizeFor(i: number, large: boolean): number {
  if (!large) return 1 * KiB + ((i * 7919) % (59 * KiB)); // 1 KiB .. 60 KiB: inline
  return 1 * MiB + ((i * 104729) % (3 * MiB)); // 1 MiB .. 4 MiB: blob file
}

function upload(key: string, size: number, group: Group, extra: Partial<Upload> = {}): Upload {
  const body = randomBytes(size);
  return { key, body, sha256: sha256(body), group, ...extra };
}

/** Where a held body stops: half-way when small, 100 KiB short of the end when large. */
function holdPoint(size: number): number {
  return size > INLINE_MAX ? size - 100 * KiB : Math.floor(size / 2);
}

function plan(): Upload[] {
  const uploads: Upload[] = [];
  for (let i = 0; i < 16; i++) {
    uploads.push(upload(`acked/${i}`, sizeFor(i, i % 2 === 1), "acked"));
  }
  for (let i = 0; i < 10; i++) {
    const large = i >= 4;
    const size = sizeFor(100 + i, large);
    uploads.push(
      upload(`held/${i}`, size, "held", { holdAt: holdPoint(size), abort: i >= 8 }),
    );
  }
  // Held overwrites of acked keys: a large body over a small object and a small over a large.
  const overLarge = sizeFor(200, false);
  const overSmall = sizeFor(201, true);
  uploads.push(upload("acked/0", overSmall, "held", { holdAt: holdPoint(overSmall) }));
  uploads.push(upload("acked/1", overLarge, "held", { holdAt: holdPoint(overLarge) }));
  for (let i = 0; i < 10; i++) {
    uploads.push(upload(`racing/${i}`, sizeFor(300 + i, i % 2 === 0), "racing"));
  }
  // Racing overwrites of acked keys.
  uploads.push(upload("acked/2", sizeFor(400, true), "racing"));
  uploads.push(upload("acked/3", sizeFor(401, false), "racing"));
  return uploads;
}

let ackCounter = 0;

/** A whole-body PUT signed with the body's SHA-256. */
async function putWhole(server: TestServer, u: Upload): Promise<void> {
  const res = await signedFetch(server, {
    method: "PUT",
    path: objectPath(BUCKET, u.key),
    body: u.body,
  });
  await res.body?.cancel();
  if (res.status === 200) {
    u.acked = true;
    u.ackSeq = ackCounter++;
  } else if (u.group === "acked") {
    throw new Error(`PUT ${u.key} answered ${res.status}`);
  }
}

/** A presigned, unsigned-payload PUT whose body stops at `holdAt` until `gate` resolves. */
async function putHeld(
  server: TestServer,
  u: Upload,
  opts: { gate: Promise<void>; signal: AbortSignal; sent: () => void },
): Promise<void> {
  const url = await presign(server, {
    method: "PUT",
    path: objectPath(BUCKET, u.key),
    expires: 600,
  });
  const holdAt = u.holdAt!;
  const length = u.body.byteLength;
  let offset = 0;
  let paused = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset === holdAt && !paused) {
        paused = true;
        opts.sent();
        await opts.gate;
      }
      if (offset >= length) {
        controller.close();
        return;
      }
      const end = Math.min(offset + STREAM_CHUNK, offset < holdAt ? holdAt : length);
      controller.enqueue(u.body.slice(offset, end));
      offset = end;
    },
  });
  try {
    const res = await fetch(url, { method: "PUT", body, signal: opts.signal });
    await res.body?.cancel();
    if (res.status === 200) {
      u.acked = true;
      u.ackSeq = ackCounter++;
    }
  } catch { /* the connection died with the server, or the client aborted */ }
}

async function waitFor(what: string, cond: () => Promise<boolean> | boolean, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function tmpFiles(dataDir: string): Promise<Deno.DirEntry[]> {
  const out: Deno.DirEntry[] = [];
  for await (const e of Deno.readDir(join(dataDir, "tmp"))) out.push(e);
  return out;
}

/** Shard files on the (single) drive; with the default 1+0 layout, one per chunk. */
async function shardFiles(dataDir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const shard of Deno.readDir(join(dataDir, "chunks"))) {
    if (!shard.isDirectory) continue;
    for await (const e of Deno.readDir(join(dataDir, "chunks", shard.name))) out.push(e.name);
  }
  return out;
}

async function listAll(server: TestServer): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  let token: string | undefined;
  do {
    const query: [string, string][] = [["list-type", "2"]];
    if (token) query.push(["continuation-token", token]);
    const res = await signedFetch(server, { method: "GET", path: objectPath(BUCKET), query });
    const xml = await res.text();
    assertEquals(res.status, 200, `ListObjectsV2: ${xml}`);
    const keys = xmlValues(xml, "Key");
    const sizes = xmlValues(xml, "Size");
    keys.forEach((k, i) => out.set(k, Number(sizes[i])));
    token = xmlValue(xml, "IsTruncated") === "true"
      ? xmlValue(xml, "NextContinuationToken")
      : undefined;
  } while (token);
  return out;
}

async function readBack(server: TestServer, key: string): Promise<{ size: number; sha: string }> {
  const res = await signedFetch(server, { method: "GET", path: objectPath(BUCKET, key) });
  assertEquals(res.status, 200, `GET ${key}`);
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of res.body!) {
    hash.update(chunk);
    size += chunk.byteLength;
  }
  return { size, sha: hash.digest("hex") };
}

/** Runs every upload, kills the server mid-flight, and returns the data directory. */
async function crashDuringUploads(uploads: Upload[]): Promise<string> {
  const server = await startServer({ env: SERVER_ENV });
  const res = await signedFetch(server, { method: "PUT", path: objectPath(BUCKET) });
  assertEquals(res.status, 200, `CreateBucket: ${await res.text()}`);

  // 1. The acked group, all at once; every one must be answered 200.
  await Promise.all(uploads.filter((u) => u.group === "acked").map((u) => putWhole(server, u)));

  // 2. The held group: stream each body to its hold point and wait until the server has written
  // a first chunk of each large one (shard files that no metadata refers to yet).
  const shardsBefore = (await shardFiles(server.dataDir)).length;
  let openGate!: () => void;
  const gate = new Promise<void>((r) => (openGate = r));
  const held = uploads.filter((u) => u.group === "held");
  const controllers = held.map(() => new AbortController());
  let reachedHold = 0;
  const heldDone = held.map((u, i) =>
    putHeld(server, u, { gate, signal: controllers[i].signal, sent: () => reachedHold++ })
  );
  await waitFor("held uploads to reach their hold point", () => reachedHold === held.length);
  // A chunk is written once a body outgrows a chunk (the rest may still be buffered).
  const heldChunks = (u: Upload) => Math.floor((u.holdAt! - 1) / CHUNK_SIZE);
  const expectedHeld = held.reduce((n, u) => n + (u.holdAt! > INLINE_MAX ? heldChunks(u) : 0), 0);
  await waitFor(
    "the first chunks of held uploads",
    async () => (await shardFiles(server.dataDir)).length >= shardsBefore + expectedHeld,
  );
  // Some clients give up half-way: the server must throw those chunks away at once.
  held.forEach((u, i) => u.abort && controllers[i].abort());
  const abortedChunks = held.reduce(
    (n, u) => n + (u.abort && u.holdAt! > INLINE_MAX ? heldChunks(u) : 0),
    0,
  );
  await waitFor(
    "the server to remove the chunks of aborted uploads",
    async () =>
      (await shardFiles(server.dataDir)).length === shardsBefore + expectedHeld - abortedChunks,
  );

  // 3. The racing group: fire, let about half be acknowledged, then kill.
  const racing = uploads.filter((u) => u.group === "racing");
  let racingAcks = 0;
  let killed: Promise<void> | undefined;
  const racingDone = racing.map((u) =>
    putWhole(server, u).then(() => {
      if (u.acked && ++racingAcks === Math.ceil(racing.length / 2)) killed ??= server.kill();
    }, () => {})
  );
  // Normally the kill comes from the acknowledgement above, with the rest still in flight.
  await Promise.race([Promise.all(racingDone), waitFor("the kill", () => killed !== undefined)]);
  await (killed ??= server.kill());
  openGate();
  await Promise.all([...heldDone, ...racingDone]);
  return server.dataDir;
}

Deno.test("crash: SIGKILL during uploads keeps acknowledged objects and nothing partial", async () => {
  const uploads = plan();
  const dataDir = await crashDuringUploads(uploads);
  const acked = uploads.filter((u) => u.acked);
  assertEquals(
    uploads.filter((u) => u.group === "held" && u.acked).map((u) => u.key),
    [],
    "held uploads must not be acknowledged",
  );
  assert(acked.length >= 16 && acked.length < uploads.length, `acked ${acked.length}`);

  // The window between a shard's rename into chunks/ and its metadata commit is too short to hit
  // on purpose, so plant what a crash there leaves: an unreferenced shard file, written earlier.
  const orphanId = "ff" + crypto.randomUUID().replaceAll("-", "").repeat(2).slice(2);
  await Deno.mkdir(join(dataDir, "chunks", "ff"), { recursive: true });
  const orphanPath = join(dataDir, "chunks", "ff", `${orphanId}.0`);
  await Deno.writeFile(orphanPath, randomBytes(100 * KiB));
  const past = new Date(Date.now() - 60_000);
  await Deno.utime(orphanPath, past, past);

  const server = await startServer({ dataDir, env: SERVER_ENV });
  try {
    await waitFor("the start-up sweep", () => server.logs().includes("Start-up sweep finished"));
    const listed = await listAll(server);

    // What each key may hold: the last acknowledged body, or a later whole body whose answer was
    // lost in the crash (the racing overwrites of acked keys start after those were acked). Bodies that were never sent whole (held) are never acceptable.
    const allowed = new Map<string, Set<string>>();
    const required = new Map<string, string>();
    for (const u of [...acked].sort((a, b) => a.ackSeq! - b.ackSeq!)) {
      required.set(u.key, u.sha256);
      allowed.set(u.key, new Set([u.sha256]));
    }
    for (const u of uploads) {
      if (u.group === "racing" && !u.acked) {
        if (!allowed.has(u.key)) allowed.set(u.key, new Set());
        allowed.get(u.key)!.add(u.sha256);
      }
    }
    const sizeOf = new Map(uploads.map((u) => [u.sha256, u.body.byteLength]));

    const describe = (sha: string) => {
      const u = uploads.find((x) => x.sha256 === sha);
      return u ? `the ${u.group} body of ${u.key} (acked: ${u.acked ?? false})` : "unknown bytes";
    };
    for (const [key, sha] of required) {
      assert(listed.has(key), `acknowledged ${key} is missing after the crash`);
      const back = await readBack(server, key);
      assert(
        allowed.get(key)!.has(back.sha),
        `acknowledged ${key} reads back ${describe(back.sha)}, expected ${describe(sha)}`,
      );
    }
    for (const [key, size] of listed) {
      const ok = allowed.get(key);
      assert(ok, `${key} is listed but no whole body was ever sent for it`);
      const back = await readBack(server, key);
      assert(ok.has(back.sha), `${key} holds ${describe(back.sha)}: not a whole upload of it`);
      assertEquals(size, sizeOf.get(back.sha), `listed size of ${key}`);
      assertEquals(back.size, size, `bytes read from ${key}`);
    }

    assertEquals((await tmpFiles(dataDir)).map((e) => e.name), [], "files left under tmp/");
    // Bodies are random, so every chunk of every listed object above the inline limit is its
    // own (one shard each in the default one-drive layout), and nothing else may remain.
    const shards = await shardFiles(dataDir);
    const expected = [...listed.values()].filter((s) => s > INLINE_MAX)
      .reduce((n, s) => n + Math.ceil(s / CHUNK_SIZE), 0);
    assertEquals(shards.length, expected, "shard files vs. chunks of listed objects");
  } finally {
    await server.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
