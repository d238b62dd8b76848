// A full disk must fail the upload, not the server. The data directory is put on a 3 MiB tmpfs,
// so this runs only where the test may mount one (Linux, root, CAP_SYS_ADMIN); elsewhere it is
// ignored.
import { assert, assertEquals } from "./assert.ts";
import { randomBytes, startServer } from "./server.ts";
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
    const server = await startServer({ dataDir });
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
