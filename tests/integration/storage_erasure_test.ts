// Erasure coding end to end: with up to m shards of a chunk missing, corrupt or cut short, reads
// return the exact bytes and the damaged shards are rewritten (by the read itself when it needed
// them, otherwise by the scrub); a whole drive may vanish; beyond m lost shards a read fails and
// never returns wrong bytes (a range on intact data shards of such a chunk is still served from
// them, verified); the scrub reports and heals what it finds.
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER, randomBytes, type TestServer } from "./server.ts";
import { join } from "node:path";
import { signedFetch, xmlValue } from "./signer.ts";
import {
  bytesEqual,
  checkConsistency,
  CHUNK,
  type ChunkRow,
  chunkRows,
  combinations,
  createBucket,
  type Damage,
  damage,
  DAMAGES,
  describe,
  expectBytes,
  fileExists,
  get,
  makeSetup,
  objectChunks,
  put,
  putOk,
  query,
  removeSetup,
  scrub,
  shardFiles,
  shardPaths,
  sleep,
  startFresh,
  startStorage,
  type StorageSetup,
  textBytes,
  waitForLog,
} from "./storage_helpers.ts";

const BUCKET = "erasure";

interface Obj {
  key: string;
  bytes: Uint8Array;
}

async function upload(server: TestServer, objs: Obj[]): Promise<void> {
  await createBucket(server, BUCKET);
  for (const o of objs) await putOk(server, BUCKET, o.key, o.bytes);
}

/** The shard files of a chunk and their current (good) contents. */
async function snapshot(setup: StorageSetup, c: ChunkRow) {
  const paths = shardPaths(setup, c);
  const original = await Promise.all(paths.map((p) => Deno.readFile(p)));
  return { c, paths, original };
}
type Snapshot = Awaited<ReturnType<typeof snapshot>>;

/** Indexes whose file is missing or differs from the original. */
async function differing(s: Snapshot): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < s.paths.length; i++) {
    let now: Uint8Array | undefined;
    try {
      now = await Deno.readFile(s.paths[i]);
    } catch { /* missing */ }
    if (!now || !bytesEqual(now, s.original[i])) out.push(i);
  }
  return out;
}

async function damageAll(s: Snapshot, indexes: number[], kind: Damage): Promise<void> {
  for (const i of indexes) await damage(s.paths[i], kind);
}

/** Damaged shards a read needed are rebuilt by the heal queue shortly after the read. */
async function healedSoon(s: Snapshot, expected: number[] = [], ms = 10_000): Promise<number[]> {
  const deadline = Date.now() + ms;
  let left = await differing(s);
  while (JSON.stringify(left) !== JSON.stringify(expected) && Date.now() < deadline) {
    await sleep(20);
    left = await differing(s);
  }
  return left;
}

/**
 * After a read with `damaged` shards of chunk `s`: when the read had to use a damaged shard (a
 * data shard was among them) the chunk was queued and every damaged shard is rewritten in the
 * background; otherwise the scrub does. Either way each file ends byte-identical to the original.
 */
async function expectHealed(
  server: TestServer,
  snaps: { s: Snapshot; damaged: number[] }[],
  what: string,
): Promise<void> {
  let pending = 0;
  for (const { s, damaged } of snaps) {
    const needed = damaged.some((i) => i < s.c.k);
    const left = needed ? await healedSoon(s) : await differing(s);
    if (needed) {
      assertEquals(left, [], `${what}: the read healed chunk ${s.c.id.slice(0, 8)} ${damaged}`);
    } else {
      assert(left.every((i) => damaged.includes(i)), `${what}: only damaged shards differ`);
      pending += left.length;
    }
  }
  if (pending > 0) {
    const report = await scrub(server);
    assertEquals(report.badShards, pending, `${what}: scrub finds the parity damage`);
    assertEquals(report.healedShards, pending, `${what}: scrub heals it`);
    assertEquals(report.lostChunks, []);
    for (const { s } of snaps) assertEquals(await differing(s), [], `${what}: healed by scrub`);
  }
}

function upTo<T>(items: T[], max: number): T[][] {
  const out: T[][] = [];
  for (let n = 1; n <= max; n++) out.push(...combinations(items, n));
  return out;
}

async function everyCombination(
  t: Deno.TestContext,
  setup: StorageSetup,
  server: TestServer,
  objs: Obj[],
  k: number,
  m: number,
): Promise<void> {
  const indexes = Array.from({ length: k + m }, (_, i) => i);
  const combos = upTo(indexes, m);

  await t.step(`one chunk: ${combos.length} combinations x ${DAMAGES.length} kinds`, async () => {
    // A middle chunk (read while the body streams) and the first (read before the answer).
    for (const [obj, idx] of [[objs[0], 1], [objs[1], 0]] as const) {
      const s = await snapshot(setup, objectChunks(setup, BUCKET, obj.key)[idx]);
      for (const kind of DAMAGES) {
        for (const combo of combos) {
          const what = `${obj.key} chunk ${idx}, ${kind} ${combo}`;
          await damageAll(s, combo, kind);
          await expectBytes(server, BUCKET, obj.key, obj.bytes);
          await expectHealed(server, [{ s, damaged: combo }], what);
        }
      }
    }
  });

  await t.step("every chunk of an object at once", async () => {
    const obj = objs[1];
    const snaps = await Promise.all(
      objectChunks(setup, BUCKET, obj.key).map((c) => snapshot(setup, c)),
    );
    assert(snaps.length >= 3, "a multi-chunk object");
    for (const kind of DAMAGES) {
      for (let ci = 0; ci < combos.length; ci++) {
        // The same shards on every chunk, then different ones on each.
        for (const rotate of [false, true]) {
          const plan = snaps.map((s, j) => ({
            s,
            damaged: combos[rotate ? (ci + j) % combos.length : ci],
          }));
          for (const p of plan) await damageAll(p.s, p.damaged, kind);
          await expectBytes(server, BUCKET, obj.key, obj.bytes);
          await expectHealed(
            server,
            plan,
            `${kind} ${rotate ? "rotating from" : ""} ${combos[ci]}`,
          );
        }
      }
    }
  });

  await t.step("healed shards hold valid data: they alone serve the next read", async () => {
    const obj = objs[2];
    const s = await snapshot(setup, objectChunks(setup, BUCKET, obj.key)[0]);
    const first = indexes.slice(0, m);
    const others = indexes.slice(m, 2 * m);
    await damageAll(s, first, "delete");
    await expectBytes(server, BUCKET, obj.key, obj.bytes);
    assertEquals(await healedSoon(s), []);
    for (const i of first) assert(await fileExists(s.paths[i]), `shard ${i} rewritten`);
    // Now lose m other shards: the read needs the rewritten ones.
    await damageAll(s, others, "delete");
    await expectBytes(server, BUCKET, obj.key, obj.bytes);
    assertEquals(await healedSoon(s), []);
  });

  await t.step("a range read touches (and heals) only the chunks it covers", async () => {
    const obj = objs[0];
    const chunks = objectChunks(setup, BUCKET, obj.key);
    const s0 = await snapshot(setup, chunks[0]);
    const s2 = await snapshot(setup, chunks[2]);
    await damageAll(s0, [0], "flip");
    await damageAll(s2, [0], "truncate");
    const range = (from: number, to: number) => ({
      header: `bytes=${from}-${to}`,
      from,
      to,
      total: obj.bytes.byteLength,
    });
    await expectBytes(server, BUCKET, obj.key, obj.bytes.subarray(10, 100), range(10, 99));
    assertEquals(await healedSoon(s0), [], "chunk 0 healed after the range read");
    assertEquals(await differing(s2), [0], "chunk 2 not read yet");
    const from = 2 * CHUNK - 5;
    const to = 3 * CHUNK + 5;
    await expectBytes(server, BUCKET, obj.key, obj.bytes.subarray(from, to + 1), range(from, to));
    assertEquals(await healedSoon(s2), [], "chunk 2 healed");
  });

  await t.step("afterwards: everything intact, a scrub finds nothing", async () => {
    for (const o of objs) await expectBytes(server, BUCKET, o.key, o.bytes);
    const report = await scrub(server);
    assertEquals(report.badShards, 0);
    assertEquals(report.lostChunks, []);
    assertEquals(report.chunks, chunkRows(setup).length);
    await checkConsistency(setup, "after the damage rounds");
  });
}

function objects(): Obj[] {
  return [
    { key: "a", bytes: randomBytes(4 * CHUNK + 1000) },
    { key: "b/c", bytes: randomBytes(3 * CHUNK + 5) },
    { key: "d", bytes: randomBytes(2 * CHUNK + 17) },
  ];
}

Deno.test("erasure 4+2 over 6 drives: up to 2 damaged shards are read through and healed", async (t) => {
  const setup = await makeSetup(6);
  const server = await startFresh(setup, { ec: "4+2", compression: "off" });
  try {
    const objs = objects();
    await upload(server, objs);
    for (const c of chunkRows(setup)) {
      assertEquals([c.k, c.m], [4, 2]);
      assertEquals(new Set(c.drives).size, 6, "six shards on six drives");
    }
    await checkConsistency(setup, "after upload");
    await everyCombination(t, setup, server, objs, 4, 2);
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

Deno.test("erasure 2+1 over 3 drives: any one damaged shard is read through and healed", async (t) => {
  const setup = await makeSetup(3);
  const server = await startFresh(setup, { ec: "2+1", compression: "auto" });
  try {
    const objs = objects();
    await upload(server, objs);
    for (const c of chunkRows(setup)) assertEquals([c.k, c.m], [2, 1]);
    await everyCombination(t, setup, server, objs, 2, 1);
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

Deno.test("erasure 4+2: a whole drive directory removed, while running and across a restart", async (t) => {
  const setup = await makeSetup(6);
  let server = await startFresh(setup, { ec: "4+2" });
  try {
    const objs = objects();
    await upload(server, objs);
    const gone = setup.drives[2];

    await t.step("removed while the server runs: reads are identical", async () => {
      await Deno.remove(gone, { recursive: true });
      for (let round = 0; round < 2; round++) {
        for (const o of objs) await expectBytes(server, BUCKET, o.key, o.bytes);
      }
      const o = objs[0];
      const from = CHUNK - 3;
      const to = 2 * CHUNK + 3;
      await expectBytes(server, BUCKET, o.key, o.bytes.subarray(from, to + 1), {
        header: `bytes=${from}-${to}`,
        from,
        to,
        total: o.bytes.byteLength,
      });
      const report = await scrub(server);
      assertEquals(report.lostChunks, []);
      assertEquals(report.badShards, report.chunks, "one shard of every chunk is missing");
    });

    await t.step(
      "a PUT while the drive is gone is readable, or leaves nothing behind",
      async () => {
        const bytes = randomBytes(6 * CHUNK + 1);
        const r = await put(server, BUCKET, "during", bytes);
        if (r.status === 200) {
          await expectBytes(server, BUCKET, "during", bytes);
          return;
        }
        assertEquals(r.status, 500, r.text);
        await sleep(300); // let any shard write still running finish
        const known = new Set(chunkRows(setup).map((c) => c.id));
        const strays = (await shardFiles(setup.drives)).filter((f) => !known.has(f.id));
        assertEquals(
          strays.map((f) => f.path.slice(setup.root.length)),
          [],
          "shard files of the failed PUT without a chunk row",
        );
      },
    );

    await t.step("restarted with the directory still missing: reads are identical", async () => {
      await server.stop();
      server = await startStorage(setup, { ec: "4+2" });
      await waitForLog(server, "Start-up sweep finished");
      for (const o of objs) await expectBytes(server, BUCKET, o.key, o.bytes);
      const report = await scrub(server);
      assertEquals(report.lostChunks, []);
    });

    await t.step("the missing drive is warned about, not replaced by a fresh one", async () => {
      // src/storage/drives.ts: "A drive whose directory is missing entirely is skipped with a
      // warning: its shards count as lost and are rebuilt from the others."
      const warnings = server.logs().split("\n").filter((l) =>
        l.includes('"level":"warn"') && l.includes(gone)
      );
      const recreated = await fileExists(join(gone, "drive.json"));
      assert(
        warnings.length > 0 && !recreated,
        `restart with ${gone} missing: ${warnings.length} warnings naming it; the directory ` +
          `was ${recreated ? "re-created with a new identity" : "left alone"}; drives table: ` +
          JSON.stringify(query(setup, "SELECT id, uuid, path FROM drives")),
      );
    });

    await t.step("one more shard lost on top of the drive: still readable", async () => {
      const o = objs[1];
      for (const c of objectChunks(setup, BUCKET, o.key)) {
        const paths = shardPaths(setup, c);
        const victim = paths.findIndex((p) => !p.startsWith(gone + "/"));
        await Deno.remove(paths[victim]);
      }
      await expectBytes(server, BUCKET, o.key, o.bytes);
    });
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

/**
 * A GET (of a byte range `[from, to]` when given) of an object with a lost chunk must fail:
 * an error answer, or, when the headers went out before the lost chunk was reached, a body that
 * breaks off. It must never be a whole body of the promised length.
 */
async function expectReadFails(
  server: TestServer,
  obj: Obj,
  what: string,
  range?: { from: number; to: number },
): Promise<void> {
  const r = await get(
    server,
    BUCKET,
    obj.key,
    range ? `bytes=${range.from}-${range.to}` : undefined,
  );
  if (r.status === 200 || r.status === 206) {
    const expected = range
      ? obj.bytes.subarray(range.from, Math.min(range.to, obj.bytes.byteLength - 1) + 1)
      : obj.bytes;
    assert(
      r.bodyError !== undefined || r.bytes!.byteLength !== expected.byteLength,
      `${what}: a lost chunk was answered as a whole body (${describe(r)}, ` +
        `${r.bytes && bytesEqual(r.bytes, expected) ? "identical" : "WRONG BYTES"})`,
    );
    return;
  }
  assertEquals(r.status, 500, `${what}: ${describe(r)}`);
  const xml = new TextDecoder().decode(r.bytes);
  assertEquals(xmlValue(xml, "Code"), "InternalError", `${what}: ${xml}`);
}

Deno.test("erasure 4+2: more than 2 shards lost, reads fail and never return wrong bytes", async (t) => {
  const setup = await makeSetup(6);
  const server = await startFresh(setup, { ec: "4+2" });
  try {
    const objs = [
      { key: "first", bytes: randomBytes(4 * CHUNK + 10) },
      { key: "middle", bytes: randomBytes(4 * CHUNK + 10) },
      { key: "last", bytes: randomBytes(4 * CHUNK + 10) },
    ];
    await upload(server, objs);
    const kinds: Damage[][] = [
      ["delete", "delete", "delete"],
      ["flip", "flip", "flip"],
      ["truncate", "flip", "delete"],
    ];
    const lost: string[] = [];
    await t.step("the first chunk lost: 500 InternalError before any byte", async () => {
      const [c0] = objectChunks(setup, BUCKET, "first");
      const s = await snapshot(setup, c0);
      for (const [n, kind] of kinds.entries()) {
        const victims = [[0, 1, 2], [1, 3, 5], [0, 4, 5]][n];
        for (const [j, i] of victims.entries()) await damage(s.paths[i], kind[j]);
        const r = await get(server, BUCKET, "first");
        assertEquals(r.status, 500, `${kind}: ${describe(r)}`);
        const xml = new TextDecoder().decode(r.bytes);
        assertEquals(xmlValue(xml, "Code"), "InternalError", xml);
        assertMatch(r.headers.get("content-type") ?? "", /xml/);
        // Put the shards back for the next kind.
        for (const [i, p] of s.paths.entries()) await Deno.writeFile(p, s.original[i]);
        await expectBytes(server, BUCKET, "first", objs[0].bytes);
      }
      await damageAll(s, [0, 2, 4], "delete");
      await expectReadFails(server, objs[0], "first");
      lost.push(c0.id);
      // A range that avoids the lost chunk is still served.
      const from = CHUNK + 1;
      const to = 2 * CHUNK + 1;
      await expectBytes(server, BUCKET, "first", objs[0].bytes.subarray(from, to + 1), {
        header: `bytes=${from}-${to}`,
        from,
        to,
        total: objs[0].bytes.byteLength,
      });
      await expectReadFails(server, objs[0], "first, range over chunk 0", { from: 0, to: CHUNK });
    });

    await t.step("a later chunk lost: the read fails (error or cut body)", async () => {
      for (const [key, idx] of [["middle", 2], ["last", 4]] as const) {
        const obj = objs.find((o) => o.key === key)!;
        const c = objectChunks(setup, BUCKET, key)[idx];
        const s = await snapshot(setup, c);
        for (const [n, kind] of kinds.entries()) {
          const victims = [[3, 4, 5], [0, 1, 2], [5, 0, 2]][n];
          for (const [j, i] of victims.entries()) await damage(s.paths[i], kind[j]);
          for (let attempt = 0; attempt < 3; attempt++) {
            await expectReadFails(server, obj, `${key} chunk ${idx}, ${kind}`);
          }
          // A range into a lost data shard fails; one on an intact data shard of the lost chunk
          // is served from it (its blocks verified).
          const size = Math.min(CHUNK, obj.bytes.byteLength - idx * CHUNK);
          const shardLen = Math.ceil(size / 4);
          const lostData = Math.min(...victims.filter((i) => i < 4));
          const from = idx * CHUNK + lostData * shardLen - 10;
          await expectReadFails(
            server,
            obj,
            `${key} range into chunk ${idx}`,
            { from, to: from + 20 },
          );
          const intact = [0, 1, 2, 3].find((i) => !victims.includes(i));
          if (intact !== undefined) {
            const at = idx * CHUNK + intact * shardLen;
            const to = at + Math.min(shardLen, size - intact * shardLen, 100) - 1;
            await expectBytes(server, BUCKET, key, obj.bytes.subarray(at, to + 1), {
              header: `bytes=${at}-${to}`,
              from: at,
              to,
              total: obj.bytes.byteLength,
            });
          }
          for (const [i, p] of s.paths.entries()) await Deno.writeFile(p, s.original[i]);
          await expectBytes(server, BUCKET, key, obj.bytes);
        }
        await damageAll(s, [1, 2, 3, 4], "delete");
        await expectReadFails(server, obj, `${key} with 4 shards gone`);
        lost.push(c.id);
      }
      // The server is still fine: other objects read, new ones write.
      await putOk(server, BUCKET, "new", objs[0].bytes.subarray(CHUNK));
      await expectBytes(server, BUCKET, "new", objs[0].bytes.subarray(CHUNK));
    });

    await t.step("the scrub lists exactly the lost chunks", async () => {
      const report = await scrub(server);
      assertEquals(report.lostChunks.sort(), [...lost].sort());
      assertEquals(report.chunks, chunkRows(setup).length);
    });
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

Deno.test("scrub: reports and heals damage across chunks", async (t) => {
  const setup = await makeSetup(6);
  const server = await startFresh(setup, { ec: "4+2", compression: "auto" });
  try {
    const objs = [...objects(), { key: "e", bytes: randomBytes(5 * CHUNK) }];
    await upload(server, objs);
    const rows = chunkRows(setup);
    const snaps = await Promise.all(rows.slice(0, 6).map((c) => snapshot(setup, c)));
    const plan: [number, Damage][][] = [
      [[0, "delete"]],
      [[1, "flip"], [5, "flip"]],
      [[3, "truncate"]],
      [[4, "delete"], [2, "flip"]],
      [[5, "truncate"]],
      [[0, "flip"], [1, "truncate"]],
    ];
    const bad = plan.reduce((n, p) => n + p.length, 0);

    await t.step("unauthenticated: refused", async () => {
      const res = await fetch(`${server.url}/admin/scrub`, { method: "POST" });
      await res.body?.cancel();
      assertEquals(res.status, 401);
      const signed = await signedFetch(server, { method: "POST", path: "/admin/scrub" });
      await signed.body?.cancel();
      assertEquals(signed.status, 401, "S3 signatures are not admin credentials");
    });

    await t.step("damage in six chunks: counted, healed, nothing lost", async () => {
      for (const [n, p] of plan.entries()) {
        for (const [i, kind] of p) await damage(snaps[n].paths[i], kind);
      }
      const report = await scrub(server);
      assertEquals(report.chunks, rows.length);
      assertEquals(report.shardsChecked, rows.length * 6);
      assertEquals(report.badShards, bad);
      assertEquals(report.healedShards, bad);
      assertEquals(report.lostChunks, []);
      for (const s of snaps) assertEquals(await differing(s), [], `chunk ${s.c.id} healed`);
      for (const o of objs) await expectBytes(server, BUCKET, o.key, o.bytes);
    });

    await t.step("a second scrub finds nothing", async () => {
      const report = await scrub(server);
      assertEquals(report.badShards, 0);
      assertEquals(report.healedShards, 0);
      assertEquals(report.lostChunks, []);
      const res = await fetch(`${server.url}/admin/scrub`, {
        headers: {
          authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`),
        },
      });
      const last = await res.json();
      assertEquals(res.status, 200);
      assertEquals(last.badShards, 0, "GET answers the last report");
    });

    await t.step("more than m shards lost on one chunk: listed as lost", async () => {
      const s = snaps[2];
      await damage(s.paths[0], "delete");
      await damage(s.paths[3], "flip");
      await damage(s.paths[5], "truncate");
      // And a healable chunk next to it.
      await damage(snaps[4].paths[1], "delete");
      const report = await scrub(server);
      assertEquals(report.lostChunks, [s.c.id]);
      assertEquals(report.healedShards, 1);
      assertEquals(await differing(snaps[4]), []);
      const again = await scrub(server);
      assertEquals(again.lostChunks, [s.c.id], "still lost");
      assertEquals(again.healedShards, 0);
    });
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

Deno.test("dedup over a lost chunk: a new upload of the same bytes is readable", async () => {
  // Content addressing finds the existing chunk by its hash; when that chunk is lost, an
  // acknowledged PUT of the same bytes must not end up pointing at it.
  const setup = await makeSetup(3);
  const server = await startFresh(setup, { ec: "2+1" });
  try {
    const bytes = randomBytes(2 * CHUNK + 100);
    await upload(server, [{ key: "orig", bytes }]);
    const c0 = objectChunks(setup, BUCKET, "orig")[0];
    const paths = shardPaths(setup, c0);
    await Deno.remove(paths[0]);
    await Deno.remove(paths[1]);
    await expectReadFails(server, { key: "orig", bytes }, "orig");
    const r = await put(server, BUCKET, "again", bytes);
    if (r.status === 200) {
      await expectBytes(server, BUCKET, "again", bytes);
    } else {
      // Refusing the write would be acceptable too; answering 200 for unreadable data is not.
      assert(r.status >= 500, `PUT answered ${r.status}: ${r.text}`);
    }
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});

Deno.test("no parity (1+0): a damaged shard is an error, never wrong bytes", async () => {
  const setup = await makeSetup(1);
  const server = await startFresh(setup, { compression: "auto" });
  try {
    const objs = [
      { key: "random", bytes: randomBytes(3 * CHUNK + 3) },
      { key: "text", bytes: textBytes(3 * CHUNK + 3, 4) },
    ];
    await upload(server, objs);
    for (const obj of objs) {
      const chunks = objectChunks(setup, BUCKET, obj.key);
      assertEquals([chunks[0].k, chunks[0].m], [1, 0]);
      for (const idx of [0, 1]) {
        const s = await snapshot(setup, chunks[idx]);
        for (const kind of DAMAGES) {
          await damage(s.paths[0], kind);
          await expectReadFails(server, obj, `${obj.key} chunk ${idx} ${kind}`);
          await Deno.writeFile(s.paths[0], s.original[0]);
          await expectBytes(server, BUCKET, obj.key, obj.bytes);
        }
      }
    }
  } finally {
    await server.stop();
    await removeSetup(setup);
  }
});
