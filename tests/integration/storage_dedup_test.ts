// Deduplication and reference counting end to end: identical content is stored once, refcounts
// always equal the references, the last reference removes the chunk and its shard files, and
// concurrent (and crashed) writes and deletes leave refcounts, rows and files consistent.
import { assert, assertEquals } from "./assert.ts";
import { randomBytes, reclaimed, type TestServer } from "./server.ts";
import {
  checkConsistency,
  CHUNK,
  chunkRows,
  concat,
  copy,
  createBucket,
  del,
  expectBytes,
  fileExists,
  get,
  KiB,
  listKeys,
  makeSetup,
  md5Etag,
  objectChunks,
  put,
  putOk,
  query,
  removeSetup,
  sha256,
  shardFiles,
  shardPaths,
  sleep,
  startFresh,
  startStorage,
  type StorageSetup,
  tmpFiles,
  waitForLog,
} from "./storage_helpers.ts";

const BUCKET = "dedup";

/** Chunk id -> refcount. */
function refcounts(setup: StorageSetup): Map<string, number> {
  return new Map(chunkRows(setup).map((c) => [c.id, c.refcount]));
}

/** The SHA-256 of each CHUNK-sized slice: the chunk ids dedup gives the content. */
function chunkIds(content: Uint8Array): string[] {
  const ids: string[] = [];
  for (let at = 0; at < content.byteLength; at += CHUNK) {
    ids.push(sha256(content.subarray(at, at + CHUNK)));
  }
  return ids;
}

Deno.test("dedup: identical content is stored once and counted by its references", async (t) => {
  // Three drives with 2+1, so each chunk is three shard files.
  const setup = await makeSetup(3);
  const server = await startFresh(setup, { ec: "2+1", compression: "off" });
  const N = 3;
  try {
    await createBucket(server, BUCKET);
    await createBucket(server, "other");
    const a = randomBytes(3 * CHUNK + 5 * KiB); // 4 distinct chunks
    const b = randomBytes(2 * CHUNK + 100); // 3 distinct chunks
    const aIds = chunkIds(a);
    const bIds = chunkIds(b);

    await t.step("ten keys of the same content: 4 chunk rows, 4 x 3 shard files", async () => {
      for (let i = 0; i < 10; i++) {
        await putOk(server, BUCKET, `a/${i}`, a);
        const counts = refcounts(setup);
        assertEquals([...counts.keys()].sort(), [...aIds].sort(), "chunk ids are the hashes");
        for (const id of aIds) assertEquals(counts.get(id), i + 1, `refcount after ${i + 1} PUTs`);
        assertEquals((await shardFiles(setup.drives)).length, aIds.length * N);
        await checkConsistency(setup, `after PUT a/${i}`);
      }
      const placed = objectChunks(setup, BUCKET, "a/7");
      assertEquals(placed.map((c) => c.id), aIds, "the version refers to the chunks in order");
      assertEquals(
        placed.map((c) => [c.offset, c.size]),
        [[0, CHUNK], [CHUNK, CHUNK], [2 * CHUNK, CHUNK], [3 * CHUNK, 5 * KiB]],
      );
      for (let i = 0; i < 10; i += 3) await expectBytes(server, BUCKET, `a/${i}`, a);
    });

    await t.step("repeated blocks inside one object are one chunk counted per use", async () => {
      const block = randomBytes(CHUNK);
      const tail = randomBytes(1000);
      const r = concat(block, block, block, block, tail);
      await putOk(server, BUCKET, "repeated", r);
      const counts = refcounts(setup);
      assertEquals(counts.get(sha256(block)), 4);
      assertEquals(counts.get(sha256(tail)), 1);
      assertEquals(counts.size, aIds.length + 2);
      assertEquals((await shardFiles(setup.drives)).length, (aIds.length + 2) * N);
      await checkConsistency(setup, "after the repeated-block object");
      await expectBytes(server, BUCKET, "repeated", r);
      await expectBytes(server, BUCKET, "repeated", r.subarray(CHUNK - 10, 3 * CHUNK + 10), {
        header: `bytes=${CHUNK - 10}-${3 * CHUNK + 9}`,
        from: CHUNK - 10,
        to: 3 * CHUNK + 9,
        total: r.byteLength,
      });
      assertEquals(await del(server, BUCKET, "repeated"), 204);
      assertEquals(refcounts(setup).size, aIds.length, "both chunks gone with the object");
      await checkConsistency(setup, "after deleting the repeated-block object");
    });

    await t.step("small objects stay inline: no chunks", async () => {
      const small = randomBytes(60 * KiB);
      await putOk(server, BUCKET, "small/1", small);
      await putOk(server, BUCKET, "small/2", small);
      assertEquals(refcounts(setup).size, aIds.length);
      await expectBytes(server, BUCKET, "small/2", small);
    });

    await t.step("CopyObject adds references, no chunks or files", async () => {
      const before = (await shardFiles(setup.drives)).map((f) => f.path);
      const copies = [[BUCKET, "copy/1"], [BUCKET, "copy/2"], ["other", "copy/3"]];
      for (const [bucket, key] of copies) {
        const r = await copy(server, bucket, key, `/${BUCKET}/a/0`);
        assertEquals(r.status, 200, r.text);
      }
      const counts = refcounts(setup);
      assertEquals(counts.size, aIds.length);
      for (const id of aIds) assertEquals(counts.get(id), 13);
      assertEquals((await shardFiles(setup.drives)).map((f) => f.path), before);
      await checkConsistency(setup, "after the copies");
      for (const [bucket, key] of copies) await expectBytes(server, bucket, key, a);
      // A copy of an inline object stays inline.
      assertEquals((await copy(server, BUCKET, "small/3", `/${BUCKET}/small/1`)).status, 200);
      assertEquals(refcounts(setup).size, aIds.length);
    });

    await t.step("deletes lower the counts; the last one removes rows and files", async () => {
      const keys = [
        ...Array.from({ length: 10 }, (_, i) => [BUCKET, `a/${i}`]),
        [BUCKET, "copy/1"],
        [BUCKET, "copy/2"],
      ];
      const paths = shardPaths(setup, chunkRows(setup)[0]);
      let left = 13;
      for (const [bucket, key] of keys) {
        assertEquals(await del(server, bucket, key), 204);
        left--;
        const counts = refcounts(setup);
        for (const id of aIds) assertEquals(counts.get(id), left, `after deleting ${key}`);
        await checkConsistency(setup, `after deleting ${key}`);
      }
      await expectBytes(server, "other", "copy/3", a);
      assertEquals(await del(server, "other", "copy/3"), 204);
      assertEquals(refcounts(setup).size, 0, "no chunk rows left");
      await reclaimed(server);
      assertEquals(await shardFiles(setup.drives), [], "no shard files left");
      for (const p of paths) assert(!(await fileExists(p)), `${p} removed`);
      await checkConsistency(setup, "after the last delete");
      assertEquals((await get(server, BUCKET, "a/0")).status, 404);
      // Deleting again changes nothing.
      assertEquals(await del(server, BUCKET, "a/0"), 204);
      assertEquals(refcounts(setup).size, 0);
    });

    await t.step("overwrites free the old chunks", async () => {
      for (let i = 0; i < 3; i++) await putOk(server, BUCKET, `o/${i}`, a);
      await putOk(server, BUCKET, "o/0", b);
      let counts = refcounts(setup);
      for (const id of aIds) assertEquals(counts.get(id), 2);
      for (const id of bIds) assertEquals(counts.get(id), 1);
      await checkConsistency(setup, "after the first overwrite");
      // Overwriting with the same content keeps one reference.
      await putOk(server, BUCKET, "o/0", b);
      counts = refcounts(setup);
      for (const id of bIds) assertEquals(counts.get(id), 1);
      await checkConsistency(setup, "after overwriting with the same bytes");
      // A partially overlapping body: the shared first chunks stay, the rest changes.
      const aPrefix = concat(a.subarray(0, 2 * CHUNK), randomBytes(CHUNK));
      await putOk(server, BUCKET, "o/1", aPrefix);
      counts = refcounts(setup);
      assertEquals(counts.get(aIds[0]), 2);
      assertEquals(counts.get(aIds[2]), 1);
      await checkConsistency(setup, "after a partial overlap");
      await putOk(server, BUCKET, "o/2", b);
      counts = refcounts(setup);
      assertEquals(counts.get(aIds[0]), 1);
      assert(!counts.has(aIds[2]) && !counts.has(aIds[3]), "chunks only `a` had are freed");
      // An overwrite with a small (inline) body frees every chunk of the old version.
      await putOk(server, BUCKET, "o/1", randomBytes(10));
      await putOk(server, BUCKET, "o/0", randomBytes(10));
      await putOk(server, BUCKET, "o/2", randomBytes(10));
      assertEquals(refcounts(setup).size, 0);
      await reclaimed(server);
      assertEquals(await shardFiles(setup.drives), []);
      await checkConsistency(setup, "after inline overwrites");
    });

    await t.step("a rejected upload (bad Content-MD5) leaves no chunk behind", async () => {
      await putOk(server, BUCKET, "keep", a);
      const r = await put(server, BUCKET, "bad", concat(a, randomBytes(CHUNK)), {
        "content-md5": btoa("0123456789abcdef"),
      });
      assertEquals(r.status, 400, r.text);
      const counts = refcounts(setup);
      assertEquals(counts.size, aIds.length, "only the kept object's chunks");
      for (const id of aIds) assertEquals(counts.get(id), 1);
      await checkConsistency(setup, "after the rejected upload");
      await expectBytes(server, BUCKET, "keep", a);
      assertEquals(await tmpFiles(setup.drives), []);
    });
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

Deno.test("dedup off: identical content gets separate chunks", async () => {
  const setup = await makeSetup(1);
  const server = await startFresh(setup, { dedup: false });
  try {
    await createBucket(server, BUCKET);
    const a = randomBytes(2 * CHUNK + 1);
    for (let i = 0; i < 3; i++) await putOk(server, BUCKET, `k/${i}`, a);
    const rows = chunkRows(setup);
    assertEquals(rows.length, 9, "3 chunks per object, none shared");
    assert(rows.every((c) => c.refcount === 1), "each counted once");
    const hashes = new Set(chunkIds(a));
    assert(rows.every((c) => !hashes.has(c.id)), "ids are not content hashes");
    assertEquals((await shardFiles(setup.drives)).length, 9);
    await checkConsistency(setup, "dedup off");
    // A copy still shares the source's chunks.
    assertEquals((await copy(server, BUCKET, "k/copy", `/${BUCKET}/k/0`)).status, 200);
    assertEquals(chunkRows(setup).length, 9);
    await checkConsistency(setup, "dedup off, after a copy");
    const own = objectChunks(setup, BUCKET, "k/1").map((c) => c.id);
    assertEquals(await del(server, BUCKET, "k/1"), 204);
    const after = new Set(chunkRows(setup).map((c) => c.id));
    assertEquals(after.size, 6);
    assert(own.every((id) => !after.has(id)), "the deleted object's chunks are gone");
    await checkConsistency(setup, "dedup off, after a delete");
    for (const key of ["k/0", "k/2", "k/copy"]) await expectBytes(server, BUCKET, key, a);
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

// ---- concurrency ----

/** Contents that share chunks with each other, so concurrent writes meet on the same ids. */
function sharedContents(): Uint8Array[] {
  const blocks = Array.from({ length: 5 }, () => randomBytes(CHUNK));
  return [
    concat(blocks[0], blocks[1], blocks[2], randomBytes(3000)),
    concat(blocks[0], blocks[1], blocks[3]),
    concat(blocks[3], blocks[4], blocks[0], blocks[0]),
    concat(blocks[2], randomBytes(CHUNK / 2)),
    randomBytes(40 * KiB), // inline
  ];
}

type State = number | undefined; // index of the content, or absent

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

/** Reads every key and returns which content it holds; fails on anything else. */
async function observe(
  server: TestServer,
  contents: Uint8Array[],
  keys: string[],
): Promise<Map<string, State>> {
  const out = new Map<string, State>();
  const etags = contents.map(md5Etag);
  for (const key of keys) {
    const r = await get(server, BUCKET, key);
    if (r.status === 404) {
      out.set(key, undefined);
      continue;
    }
    assertEquals(r.status, 200, `GET ${key}`);
    const idx = etags.indexOf(r.headers.get("etag") ?? "");
    assert(idx >= 0, `${key} has an unknown ETag ${r.headers.get("etag")}`);
    assert(
      r.bytes !== undefined && r.bytes.byteLength === contents[idx].byteLength &&
        sha256(r.bytes) === sha256(contents[idx]),
      `${key} reads back as content ${idx}`,
    );
    out.set(key, idx);
  }
  return out;
}

Deno.test("dedup: concurrent PUTs and DELETEs keep refcounts, rows and files exact", async () => {
  const setup = await makeSetup(3);
  const server = await startFresh(setup, { ec: "2+1" });
  try {
    await createBucket(server, BUCKET);
    const contents = sharedContents();
    const keys = Array.from({ length: 10 }, (_, i) => `c/${i}`);
    let state = new Map<string, State>(keys.map((k) => [k, undefined]));
    for (let round = 0; round < 6; round++) {
      const ops = shuffle(Array.from({ length: 30 }, (_, i) => {
        const key = keys[Math.floor(Math.random() * keys.length)];
        const content = i % 3 === 0 ? undefined : Math.floor(Math.random() * contents.length);
        return { key, content };
      }));
      // A key ends as one of its operations left it, or as it was when it had none.
      const possible = new Map<string, Set<State>>(keys.map((k) => {
        const mine = ops.filter((o) => o.key === k).map((o) => o.content);
        return [k, new Set(mine.length > 0 ? mine : [state.get(k)])];
      }));
      const failures: string[] = [];
      await Promise.all(ops.map(async ({ key, content }) => {
        await sleep(Math.random() * 30);
        if (content === undefined) {
          const status = await del(server, BUCKET, key);
          if (status !== 204) failures.push(`DELETE ${key}: ${status}`);
        } else {
          const r = await put(server, BUCKET, key, contents[content]);
          if (r.status !== 200) failures.push(`PUT ${key}: ${r.status} ${r.text}`);
        }
      }));
      assertEquals(failures, [], `round ${round}: every request succeeds`);
      state = await observe(server, contents, keys);
      for (const key of keys) {
        assert(
          possible.get(key)!.has(state.get(key)),
          `round ${round}: ${key} holds ${state.get(key)}, not one of ${[...possible.get(key)!]}`,
        );
      }
      const listed = await listKeys(server, BUCKET);
      assertEquals(listed, keys.filter((k) => state.get(k) !== undefined).sort());
      await checkConsistency(setup, `after round ${round}`);
      assertEquals(await tmpFiles(setup.drives), [], "no temp files left");
    }
    await Promise.all(keys.map((k) => del(server, BUCKET, k)));
    assertEquals(chunkRows(setup).length, 0);
    await reclaimed(server);
    assertEquals(await shardFiles(setup.drives), []);
    await checkConsistency(setup, "after deleting everything");
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

Deno.test("dedup: SIGKILL during concurrent writes and deletes, then restart", async () => {
  const setup = await makeSetup(3);
  let server = await startFresh(setup, { ec: "2+1" });
  try {
    await createBucket(server, BUCKET);
    // Shared contents meet on the same chunk ids; fresh random ones (added as the workers go)
    // write new chunks, so the kill can fall between shard writes and commits.
    const contents = sharedContents();
    // Objects acknowledged before the storm and never touched: must survive as they are. One
    // shares a chunk with the workers' contents; the others' chunks are their own.
    const stable = [randomBytes(3 * CHUNK + 7), randomBytes(2 * CHUNK), contents[3]];
    for (let i = 0; i < stable.length; i++) await putOk(server, BUCKET, `stable/${i}`, stable[i]);
    // Workers own disjoint keys and run their operations one after another, so each key's
    // history is known: its state is the last acknowledged operation's result, or the
    // result of the one in flight when the server died.
    const WORKERS = 12;
    const KEYS_PER_WORKER = 3;
    const acked = new Map<string, State>();
    const inFlight = new Map<string, State>();
    let stop = false;
    let killed = false;
    let done = 0;
    const failures: string[] = [];
    const worker = async (w: number) => {
      while (!stop) {
        const key = `w${w}/${Math.floor(Math.random() * KEYS_PER_WORKER)}`;
        const dice = Math.random();
        let content: State;
        if (dice < 0.3) content = undefined;
        else if (dice < 0.5) {
          content = contents.push(randomBytes((3 + Math.floor(dice * 10)) * CHUNK + 99)) - 1;
        } else content = Math.floor(Math.random() * 4);
        inFlight.set(key, content);
        try {
          if (content === undefined) {
            if (await del(server, BUCKET, key) !== 204) throw new Error("delete failed");
          } else {
            const r = await put(server, BUCKET, key, contents[content]);
            if (r.status !== 200) throw new Error(`PUT answered ${r.status}`);
          }
          acked.set(key, content);
          inFlight.delete(key);
          done++;
        } catch (err) {
          // After the kill the outcome of this one is unknown; before it, a failure is a bug.
          if (!killed) failures.push(`${key}: ${err}`);
          return;
        }
      }
    };
    const running = Array.from({ length: WORKERS }, (_, w) => worker(w));
    const deadline = Date.now() + 20_000;
    while (done < 60 && failures.length === 0 && Date.now() < deadline) await sleep(10);
    killed = true;
    await server.kill();
    stop = true;
    await Promise.all(running);
    assertEquals(failures, [], "no request failed before the kill");
    assert(done >= 60, `${done} operations acknowledged before the kill`);

    server = await startStorage(setup, { ec: "2+1" });
    await waitForLog(server, "Start-up sweep finished");
    await checkConsistency(setup, "after the crash and the sweep");
    assertEquals(await tmpFiles(setup.drives), [], "the sweep removed the temp files");
    for (let i = 0; i < stable.length; i++) {
      await expectBytes(server, BUCKET, `stable/${i}`, stable[i]);
    }
    const keys = Array.from(
      { length: WORKERS * KEYS_PER_WORKER },
      (_, i) => `w${Math.floor(i / KEYS_PER_WORKER)}/${i % KEYS_PER_WORKER}`,
    );
    const state = await observe(server, contents, keys);
    for (const key of keys) {
      const options = new Set<State>([acked.get(key)]);
      if (inFlight.has(key)) options.add(inFlight.get(key));
      assert(
        options.has(state.get(key)),
        `${key} holds ${state.get(key)}; acknowledged ${acked.get(key)}, in flight ` +
          `${inFlight.has(key) ? inFlight.get(key) : "nothing"}`,
      );
    }
    const listed = await listKeys(server, BUCKET);
    const expected = [
      ...keys.filter((k) => state.get(k) !== undefined),
      ...stable.map((_, i) => `stable/${i}`),
    ].sort();
    assertEquals(listed, expected);
    // Everything keeps working: more writes and deletes, then nothing left.
    await putOk(server, BUCKET, "after", contents[0]);
    for (const key of [...listed, "after"]) assertEquals(await del(server, BUCKET, key), 204);
    await checkConsistency(setup, "after deleting everything");
    assertEquals(chunkRows(setup).length, 0);
    await reclaimed(server);
    assertEquals(await shardFiles(setup.drives), []);
    assertEquals(query(setup, "SELECT count(*) AS n FROM version_chunks")[0].n, 0);
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});
