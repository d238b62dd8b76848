// Data at rest is private to the server's account (issue 9 item 6): every directory under the
// data directories is 0700 and every file 0600 (meta.db, its WAL and SHM, shard files, temp
// files, credentials), and an installation made by an older version is tightened at start-up
// without following symbolic links out of the data directory.
import { join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import { adminApi } from "./access_helpers.ts";
import { randomBytes, startServer, type TestServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";

interface Found {
  path: string;
  dir: boolean;
  mode: number;
}

/** Every directory and file under `root` (symbolic links not followed) with its mode bits. */
async function walk(root: string): Promise<Found[]> {
  const out: Found[] = [{ path: root, dir: true, mode: (await Deno.lstat(root)).mode! & 0o777 }];
  for await (const entry of Deno.readDir(root)) {
    if (entry.isSymlink) continue;
    const path = join(root, entry.name);
    if (entry.isDirectory) out.push(...await walk(path));
    else out.push({ path, dir: false, mode: (await Deno.lstat(path)).mode! & 0o777 });
  }
  return out;
}

function assertPrivate(found: Found[]): void {
  const open = found.filter((f) => f.mode !== (f.dir ? 0o700 : 0o600));
  assertEquals(open.map((f) => `${f.path} ${f.mode.toString(8)}`), []);
}

async function writeSome(server: TestServer, bucket: string): Promise<void> {
  const put = async (path: string, body?: Uint8Array) => {
    const res = await signedFetch(server, { method: "PUT", path, body });
    assertEquals(res.status, 200, `PUT ${path}: ${await res.text()}`);
  };
  await put(objectPath(bucket));
  await put(objectPath(bucket, "small"), new TextEncoder().encode("inline"));
  await put(objectPath(bucket, "large"), randomBytes(300 * 1024));
  const user = await adminApi(server, "POST", "/users", { name: `u-${bucket}`, email: "" });
  assertEquals(user.status, 201, JSON.stringify(user.json));
}

Deno.test("data at rest: directories 0700, files 0600", async (t) => {
  const parent = await Deno.makeTempDir({ prefix: "store-modes-" });
  const root = join(parent, "data");
  const env = {
    STORE_DATA_DIRS: [join(root, "d0"), join(root, "d1")].join(","),
    STORE_EC: "1+1",
    STORE_CHUNK_SIZE: String(64 * 1024),
    STORE_SCRUB_INTERVAL: "0",
  };
  try {
    await t.step("a new installation is private", async () => {
      const server = await startServer({ dataDir: root, env });
      try {
        await writeSome(server, "fresh");
        const found = await walk(root);
        for (const name of ["meta.db", "meta.db-wal", "meta.db-shm", "master.key"]) {
          assert(found.some((f) => f.path === join(root, name)), `${name} exists`);
        }
        assert(found.some((f) => f.path.includes("/chunks/") && !f.dir), "shard files exist");
        assertPrivate(found);
      } finally {
        await server.stop();
      }
    });

    await t.step("an existing installation is tightened at start-up", async () => {
      // What an older version left: world-readable directories and files.
      for (const f of await walk(root)) await Deno.chmod(f.path, f.dir ? 0o755 : 0o644);
      const outside = join(parent, "outside.txt");
      await Deno.writeTextFile(outside, "not the server's");
      await Deno.chmod(outside, 0o644);
      await Deno.symlink(outside, join(root, "d0", "link"));
      const server = await startServer({ dataDir: root, env });
      try {
        const deadline = Date.now() + 20_000;
        while (!server.logs().includes("Data directory modes tightened")) {
          assert(Date.now() < deadline, `no tightening log:\n${server.logs()}`);
          await new Promise((r) => setTimeout(r, 25));
        }
        await writeSome(server, "after");
        assertPrivate(await walk(root));
        assertEquals((await Deno.stat(outside)).mode! & 0o777, 0o644, "link target untouched");
      } finally {
        await server.stop();
      }
    });
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});
