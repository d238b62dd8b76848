// Healing without waiting for a scrub: a drive replaced by an empty one is refilled in the
// background at start-up, with progress reaching 100%; a drive that throws I/O errors is taken
// offline (reads go around it, writes keep their quorum), shown in /admin/drives, and healed of
// the writes it missed once it answers again; GET /admin/scrub shows a running scrub.
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { join } from "node:path";
import { ADMIN_PASSWORD, ADMIN_USER, type TestServer } from "./server.ts";
import {
  checkConsistency,
  CHUNK,
  createBucket,
  expectBytes,
  makeSetup,
  putOk,
  removeSetup,
  shardFiles,
  sleep,
  startFresh,
  startStorage,
  textBytes,
} from "./storage_helpers.ts";

const AUTH = { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) };
const BUCKET = "healing";

async function admin(server: TestServer, path: string, method = "GET") {
  const res = await fetch(`${server.url}${path}`, { method, headers: AUTH });
  const body = await res.json();
  return { status: res.status, body };
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const found = await fn();
    if (found !== undefined) return found;
    await sleep(100);
  }
  throw new Error(`Timed out waiting for ${what}`);
}

function objects(n: number, size: number) {
  return Array.from({ length: n }, (_, i) => ({ key: `obj-${i}`, bytes: textBytes(size, i + 1) }));
}

Deno.test("heal: a replaced (emptied) drive is refilled at start-up, progress reaches 100%", async () => {
  const setup = await makeSetup(3);
  const objs = objects(12, 3 * CHUNK + 1000);
  try {
    let server = await startFresh(setup, { ec: "2+1", compression: "off" });
    try {
      await createBucket(server, BUCKET);
      for (const o of objs) await putOk(server, BUCKET, o.key, o.bytes);
    } finally {
      await server.stop();
    }
    const onDrive = (await shardFiles([setup.drives[1]])).length;
    assert(onDrive > 0, "the drive holds shards");
    // The disk is swapped for a blank one mounted at the same place.
    await Deno.remove(setup.drives[1], { recursive: true });
    await Deno.mkdir(setup.drives[1]);

    server = await startStorage(setup, { ec: "2+1", compression: "off" });
    try {
      const done = await waitFor("the heal to finish", async () => {
        const { body } = await admin(server, "/admin/heal");
        return body.state === "finished" ? body : undefined;
      });
      assertEquals(done.percent, 100);
      assertEquals(done.chunksDone, done.chunksTotal);
      assertEquals(done.healedShards, onDrive);
      assertEquals(done.errors, 0);
      assertEquals(done.drives, [setup.drives[1]]);
      assert(typeof done.startedAt === "string" && typeof done.estimatedFinish === "string");
      assert(done.bytes > 0, "bytes are counted");
      assertEquals((await shardFiles([setup.drives[1]])).length, onDrive);
      await checkConsistency(setup, "after the heal");
      const { body } = await admin(server, "/admin/drives");
      assertEquals(
        body.drives.map((d: { state: string; needsHeal: boolean }) => [d.state, d.needsHeal]),
        [["online", false], ["online", false], ["online", false]],
      );
      // No scrub ran.
      assertEquals((await admin(server, "/admin/scrub")).body.state, "idle");
      // POST /admin/heal heals every online drive again: nothing left to do.
      const again = await admin(server, "/admin/heal", "POST");
      assertEquals(again.status, 202);
      const second = await waitFor("the second heal", async () => {
        const { body } = await admin(server, "/admin/heal");
        return body.state === "finished" && body.startedAt !== done.startedAt ? body : undefined;
      });
      assertEquals([second.percent, second.healedShards, second.drives.length], [100, 0, 3]);
      for (const o of objs) await expectBytes(server, BUCKET, o.key, o.bytes);
    } finally {
      await server.stop();
    }
  } finally {
    await removeSetup(setup);
  }
});

Deno.test("heal: a failing drive goes offline, reads and writes go on, it is healed when back", async () => {
  const setup = await makeSetup(4);
  const opts = {
    ec: "2+2",
    compression: "off" as const,
    extra: { STORE_DRIVE_ERROR_LIMIT: "2", STORE_DRIVE_CHECK_INTERVAL: "1" },
  };
  const before = objects(6, 2 * CHUNK + 10);
  const during = objects(6, 2 * CHUNK + 20).map((o) => ({ ...o, key: `late-${o.key}` }));
  try {
    const server = await startFresh(setup, opts);
    try {
      await createBucket(server, BUCKET);
      for (const o of before) await putOk(server, BUCKET, o.key, o.bytes);
      // Fault injection: the drive's directory turns into a file (its identity file too):
      // every shard read and write there fails with an I/O error, not "not found".
      const failing = setup.drives[2];
      const aside = join(setup.root, "aside-2");
      await Deno.rename(failing, aside);
      await Deno.writeTextFile(failing, "not a directory");

      for (const o of before) await expectBytes(server, BUCKET, o.key, o.bytes);
      const offline = await waitFor("the drive to go offline", async () => {
        const { body } = await admin(server, "/admin/drives");
        const d = body.drives.find((d: { path: string }) => d.path === failing);
        return d.state === "offline" ? d : undefined;
      });
      // Taken offline by its I/O errors, or by the probe that finds its identity file gone.
      assertMatch(offline.lastError, /not a directory|identity file/i);
      const metrics = await fetch(`${server.url}/metrics`, { headers: AUTH });
      assertMatch(
        await metrics.text(),
        new RegExp(`store_drive_online\\{drive="${failing}",state="offline"\\} 0`),
      );
      // Writes keep their quorum (3 of 4 shards) and reads go around the drive.
      for (const o of during) await putOk(server, BUCKET, o.key, o.bytes);
      for (const o of [...before, ...during]) await expectBytes(server, BUCKET, o.key, o.bytes);
      const health = await fetch(`${server.url}/health/ready`);
      assertEquals(health.status, 200, "3 of 4 drives keep the server ready");
      await health.body?.cancel();

      // The drive is repaired: it answers the next probe, comes back and gets what it missed.
      await Deno.remove(failing);
      await Deno.rename(aside, failing);
      const healed = await waitFor("the returning drive's heal", async () => {
        const { body } = await admin(server, "/admin/heal");
        return body.state === "finished" && body.drives.includes(failing) ? body : undefined;
      });
      assertEquals(healed.percent, 100);
      assertEquals(healed.errors, 0);
      assert(healed.healedShards > 0, "the missed shards were written");
      await checkConsistency(setup, "after the returning drive's heal");
      const { body } = await admin(server, "/admin/drives");
      assert(
        body.drives.every((d: { state: string; needsHeal: boolean }) =>
          d.state === "online" && !d.needsHeal
        ),
        JSON.stringify(body.drives),
      );
    } finally {
      await server.stop();
    }
  } finally {
    await removeSetup(setup);
  }
});

Deno.test("heal: a drive missing at start-up that appears later is healed; scrub progress", async () => {
  const setup = await makeSetup(3);
  const opts = {
    ec: "2+1",
    compression: "off" as const,
    extra: { STORE_DRIVE_CHECK_INTERVAL: "1" },
  };
  const objs = objects(8, 2 * CHUNK + 5);
  try {
    let server = await startFresh(setup, opts);
    try {
      await createBucket(server, BUCKET);
      for (const o of objs) await putOk(server, BUCKET, o.key, o.bytes);
    } finally {
      await server.stop();
    }
    const aside = join(setup.root, "aside-0");
    await Deno.rename(setup.drives[0], aside);
    // Lost while it was away (a bad sector, say): one of its shards.
    const lost = (await shardFiles([aside]))[0];
    await Deno.remove(lost.path);
    server = await startStorage(setup, opts);
    try {
      const { body } = await admin(server, "/admin/drives");
      assertEquals(
        body.drives.find((d: { path: string }) => d.path === setup.drives[0]).state,
        "missing",
      );
      for (const o of objs) await expectBytes(server, BUCKET, o.key, o.bytes);
      await Deno.rename(aside, setup.drives[0]);
      const healed = await waitFor("the heal of the drive that appeared", async () => {
        const { body } = await admin(server, "/admin/heal");
        return body.state === "finished" ? body : undefined;
      });
      assertEquals([healed.percent, healed.healedShards, healed.errors], [100, 1, 0]);
      await checkConsistency(setup, "after the heal");

      // A scrub started without waiting shows its progress, then its report.
      const started = await admin(server, "/admin/scrub?wait=false", "POST");
      assertEquals(started.status, 202);
      assertEquals(started.body.state, "running");
      const finished = await waitFor("the scrub", async () => {
        const { body } = await admin(server, "/admin/scrub");
        return body.state === "finished" ? body : undefined;
      });
      assertEquals([finished.percent, finished.badShards], [100, 0]);
      assertEquals(finished.chunksDone, finished.chunksTotal);
    } finally {
      await server.stop();
    }
  } finally {
    await removeSetup(setup);
  }
});

Deno.test("heal: a disk swapped for an empty one while the server runs is detected and refilled", async () => {
  const setup = await makeSetup(3);
  const opts = {
    ec: "2+1",
    compression: "off" as const,
    extra: { STORE_DRIVE_CHECK_INTERVAL: "1" },
  };
  const objs = objects(6, 2 * CHUNK + 3);
  try {
    const server = await startFresh(setup, opts);
    try {
      await createBucket(server, BUCKET);
      for (const o of objs) await putOk(server, BUCKET, o.key, o.bytes);
      const onDrive = (await shardFiles([setup.drives[2]])).length;
      await Deno.remove(setup.drives[2], { recursive: true });
      await Deno.mkdir(setup.drives[2]);
      const healed = await waitFor("the swapped drive's heal", async () => {
        const { body } = await admin(server, "/admin/heal");
        return body.state === "finished" ? body : undefined;
      });
      assertEquals([healed.percent, healed.errors], [100, 0]);
      assertEquals((await shardFiles([setup.drives[2]])).length, onDrive);
      await checkConsistency(setup, "after the swapped drive's heal");
      assertMatch(server.logs(), /Drive was replaced by an empty one; healing it/);
      for (const o of objs) await expectBytes(server, BUCKET, o.key, o.bytes);
    } finally {
      await server.stop();
    }
  } finally {
    await removeSetup(setup);
  }
});
