// A full disk must fail the upload, not the server. The data directory is put on a 3 MiB tmpfs,
// so this runs only where the test may mount one (Linux, root, CAP_SYS_ADMIN); elsewhere it is
// ignored.
import { assert, assertEquals } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER, randomBytes, startServer } from "./server.ts";
import { objectPath, presign, signedFetch, xmlValues } from "./signer.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

/** Mounts a small tmpfs on a new temp directory; undefined when that is not allowed here. */
function mountSmallDisk(): string | undefined {
  if (Deno.build.os !== "linux") return undefined;
  try {
    const dir = Deno.makeTempDirSync({ prefix: "store-full-" });
    const out = new Deno.Command("mount", {
      args: ["-t", "tmpfs", "-o", "size=3m", "tmpfs", dir],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    if (out.success) return dir;
    Deno.removeSync(dir);
  } catch { /* no mount command or no permission */ }
  return undefined;
}

function unmount(dir: string): void {
  new Deno.Command("umount", { args: [dir], stdout: "null", stderr: "null" }).outputSync();
  Deno.removeSync(dir, { recursive: true });
}

/** Whether a tmpfs can be mounted here (tried once, and unmounted again). */
function canMount(): boolean {
  const probe = mountSmallDisk();
  if (probe === undefined) return false;
  unmount(probe);
  return true;
}

Deno.test({
  name: "disk full: a failed blob write during a slow upload fails the request, not the server",
  ignore: !canMount(),
  fn: async () => {
    const disk = mountSmallDisk();
    assert(disk, "Mounting a tmpfs failed");
    const dataDir = `${disk}/data`;
    const server = await startServer({ dataDir, env: { STORE_DISK_RESERVE: String(256 * KiB) } });
    try {
      const res = await signedFetch(server, { method: "PUT", path: objectPath("full-bucket") });
      assertEquals(res.status, 200, `CreateBucket: ${await res.text()}`);

      // 8 MiB into 3 MiB, arriving slowly after the first MiB: the failing file write completes
      // while the server is waiting for more of the body.
      const data = randomBytes(8 * MiB);
      let offset = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (offset >= data.byteLength) {
            controller.close();
            return;
          }
          if (offset >= MiB) await new Promise((r) => setTimeout(r, 150));
          controller.enqueue(data.slice(offset, offset + 256 * KiB));
          offset += 256 * KiB;
        },
      });
      const url = await presign(server, {
        method: "PUT",
        path: objectPath("full-bucket", "big"),
        expires: 600,
      });
      let status = 0;
      try {
        const put = await fetch(url, { method: "PUT", body });
        status = put.status;
        await put.body?.cancel();
      } catch { /* the server may close the connection instead of reading the rest */ }
      assert(status !== 200, "an upload larger than the disk was acknowledged");
      // Either the answer arrived (507, the disk is full) or the connection closed first.
      assert(status === 0 || status === 507, `status for a full disk: ${status}`);

      let list: Response;
      try {
        list = await signedFetch(server, {
          method: "GET",
          path: objectPath("full-bucket"),
          query: [["list-type", "2"]],
        });
      } catch (err) {
        throw new Error(`The server died after a failed write: ${err}\n${server.logs()}`);
      }
      const xml = await list.text();
      assertEquals(list.status, 200, `ListObjectsV2 after the failed upload: ${xml}`);
      assertEquals(xmlValues(xml, "Key"), [], "keys after the failed upload");
      const tmp: string[] = [];
      for await (const e of Deno.readDir(`${dataDir}/tmp`)) tmp.push(e.name);
      assertEquals(tmp, [], "temp files left by the failed upload");
    } finally {
      await server.kill();
      unmount(disk);
    }
  },
});

/** Writes a file until the disk is full. */
async function fillDisk(path: string): Promise<void> {
  const file = await Deno.open(path, { write: true, create: true });
  const block = new Uint8Array(16 * KiB);
  try {
    while (true) await file.write(block);
  } catch {
    /* no space left */
  } finally {
    file.close();
  }
}

Deno.test({
  name: "disk full: writes answer 507, never 500, and DELETE still frees space",
  ignore: !canMount(),
  fn: async () => {
    const disk = mountSmallDisk();
    assert(disk, "Mounting a tmpfs failed");
    const dataDir = `${disk}/data`;
    const server = await startServer({ dataDir, env: { STORE_DISK_RESERVE: String(512 * KiB) } });
    const put = (key: string, size: number) =>
      signedFetch(server, {
        method: "PUT",
        path: objectPath("full", key),
        body: randomBytes(size),
      });
    try {
      assertEquals(
        (await signedFetch(server, { method: "PUT", path: objectPath("full") })).status,
        200,
      );
      for (const key of ["a", "b", "c"]) assertEquals((await put(key, 32 * KiB)).status, 200);
      await fillDisk(`${disk}/filler`);

      const statuses: Record<string, number> = {};
      const small = await put("small", KiB);
      statuses.put = small.status;
      await small.body?.cancel();
      const mpu = await signedFetch(server, {
        method: "POST",
        path: objectPath("full", "mpu"),
        query: [["uploads", ""]],
      });
      statuses.createMultipartUpload = mpu.status;
      await mpu.body?.cancel();
      const user = await fetch(`${server.url}/admin/users`, {
        method: "POST",
        headers: {
          authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`),
          "content-type": "application/json",
        },
        body: JSON.stringify({ name: "newbie" }),
      });
      statuses.createUser = user.status;
      await user.body?.cancel();
      const token = await fetch(`${server.url}/api/v1/tokens`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ access_key: ADMIN_USER, secret_key: ADMIN_PASSWORD }),
      });
      statuses.token = token.status;
      await token.body?.cancel();
      assertEquals(statuses, { put: 507, createMultipartUpload: 507, createUser: 507, token: 507 });

      // Deletes work on the full disk and free space.
      for (const key of ["a", "b"]) {
        const del = await signedFetch(server, { method: "DELETE", path: objectPath("full", key) });
        assertEquals(del.status, 204, `DELETE ${key} on a full disk: ${await del.text()}`);
      }
      const list = await signedFetch(server, {
        method: "GET",
        path: objectPath("full"),
        query: [["list-type", "2"]],
      });
      assertEquals(xmlValues(await list.text(), "Key"), ["c"], "keys after the deletes");
      // A query only reads: it is answered on the full disk too.
      const select = await signedFetch(server, {
        method: "POST",
        path: objectPath("full", "c"),
        query: [["select", ""], ["select-type", "2"]],
        body: "<SelectObjectContentRequest><Expression>SELECT COUNT(*) FROM S3Object" +
          "</Expression><ExpressionType>SQL</ExpressionType><InputSerialization><CSV/>" +
          "</InputSerialization><OutputSerialization><CSV/></OutputSerialization>" +
          "</SelectObjectContentRequest>",
      });
      assertEquals(select.status, 200, "SelectObjectContent on a full disk");
      await select.body?.cancel();

      // Once space is back, writes work again (the reserve is retried at most once a second).
      await Deno.remove(`${disk}/filler`);
      await new Promise((r) => setTimeout(r, 1100));
      const again = await put("again", KiB);
      assertEquals(again.status, 200, `PUT after space came back: ${await again.text()}`);
      assert(!server.logs().includes('"level":"error"'), server.logs().slice(-3000));
    } finally {
      await server.kill();
      unmount(disk);
    }
  },
});
