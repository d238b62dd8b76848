// Abandoned multipart uploads in the administration API: GET /admin/uploads?older_than=<s>
// lists them (oldest first, paged by limit, with the total), DELETE
// /admin/uploads/{bucket}/{upload_id} aborts one and frees its parts' chunks.
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { createUser } from "./access_helpers.ts";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  chunkCount,
  randomBytes,
  s3Client,
  shardFileCount,
  type TestServer,
  withServer,
} from "./server.ts";

const KiB = 1024;

interface UploadView {
  bucket: string;
  key: string;
  upload_id: string;
  initiated: string;
  owner: string;
}

async function admin(
  server: TestServer,
  method: string,
  path: string,
  auth = "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`),
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/admin${path}`, {
    method,
    headers: { authorization: auth },
  });
  const text = await res.text();
  if (text !== "") {
    assertEquals(res.headers.get("content-type"), "application/json", `${method} ${path}`);
  }
  return { status: res.status, json: text === "" ? {} : JSON.parse(text) };
}

async function list(server: TestServer, query: string) {
  const res = await admin(server, "GET", `/uploads${query}`);
  assertEquals(res.status, 200, `GET /admin/uploads${query}: ${JSON.stringify(res.json)}`);
  return res.json as { uploads: UploadView[]; total: number };
}

/** Creates an upload with `parts` parts of `size` random bytes each. */
async function startUpload(
  s3: S3Client,
  opts: { bucket: string; key: string; parts: number; size: number },
): Promise<string> {
  const { UploadId } = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: opts.bucket, Key: opts.key }),
  );
  for (let n = 1; n <= opts.parts; n++) {
    await s3.send(
      new UploadPartCommand({
        Bucket: opts.bucket,
        Key: opts.key,
        UploadId,
        PartNumber: n,
        Body: randomBytes(opts.size),
      }),
    );
  }
  return UploadId!;
}

function errorCode(json: Record<string, unknown>): string {
  return (json.error as { code: string }).code;
}

Deno.test("admin API: abandoned multipart uploads", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "mpu" }));
    await s3.send(new CreateBucketCommand({ Bucket: "other" }));
    const carol = await createUser(server, "carol", [{ bucket: "mpu", permission: "readwrite" }]);
    const carolS3 = s3Client(server, { user: carol.accessKey, password: carol.secret });

    const emptyChunks = await chunkCount(server);
    // 3 parts of 200 KiB in 64 KiB chunks: 12 chunks for the old upload.
    const old = await startUpload(s3, {
      bucket: "mpu",
      key: "old/file.bin",
      parts: 3,
      size: 200 * KiB,
    });
    const oldChunks = (await chunkCount(server)) - emptyChunks;
    assertEquals(oldChunks, 12, "the old upload's chunks");
    await new Promise((r) => setTimeout(r, 2100));
    const fresh = await startUpload(carolS3, {
      bucket: "mpu",
      key: "new/file.bin",
      parts: 1,
      size: 100 * KiB,
    });
    const otherBucket = await startUpload(s3, { bucket: "other", key: "x", parts: 0, size: 0 });

    await t.step("list by age, oldest first", async () => {
      const byDefault = await list(server, "");
      assertEquals(byDefault, { uploads: [], total: 0 }, "nothing is a day old");
      const older = await list(server, "?older_than=2");
      assertEquals(older.total, 1);
      assertEquals(older.uploads.map((u) => u.upload_id), [old]);
      const u = older.uploads[0];
      assertEquals([u.bucket, u.key, u.owner], ["mpu", "old/file.bin", ADMIN_USER]);
      assert(Date.now() - Date.parse(u.initiated) >= 2000, `initiated ${u.initiated}`);
      const all = await list(server, "?older_than=0");
      assertEquals(all.total, 3);
      assertEquals(all.uploads.map((u) => u.upload_id).sort(), [old, fresh, otherBucket].sort());
      assertEquals(all.uploads[0].upload_id, old, "oldest first");
      assertEquals(all.uploads.find((u) => u.upload_id === fresh)!.owner, "carol");
      const page = await list(server, "?older_than=0&limit=1");
      assertEquals(page.total, 3, "total counts every match");
      assertEquals(page.uploads.map((u) => u.upload_id), [old]);
    });

    await t.step("bad parameters", async () => {
      for (const q of ["older_than=-1", "older_than=abc", "limit=0", "limit=1001", "limit=1.5"]) {
        const res = await admin(server, "GET", `/uploads?${q}`);
        assertEquals(res.status, 400, q);
        assertEquals(errorCode(res.json), "invalid_argument", q);
      }
      const post = await admin(server, "POST", "/uploads");
      assertEquals(post.status, 405);
    });

    await t.step("bad credentials get 401", async () => {
      const wrong = "Basic " + btoa(`${ADMIN_USER}:not-the-password`);
      for (const [method, path] of [["GET", "/uploads"], ["DELETE", `/uploads/mpu/${old}`]]) {
        const res = await admin(server, method, path, wrong);
        assertEquals(res.status, 401, `${method} ${path}`);
        assertEquals(errorCode(res.json), "unauthorized");
        const none = await admin(server, method, path, "");
        assertEquals(none.status, 401, `${method} ${path} without credentials`);
      }
      // A user's own key pair is no administrator credential.
      const user = await admin(
        server,
        "GET",
        "/uploads",
        "Basic " + btoa(`${carol.accessKey}:${carol.secret}`),
      );
      assertEquals(user.status, 401);
      assertEquals((await list(server, "?older_than=0")).total, 3, "nothing was aborted");
    });

    await t.step("unknown uploads get 404", async () => {
      for (
        const path of [
          "/uploads/mpu/00000000000000000000000000000000000000000000",
          `/uploads/other/${old}`, // the right id in the wrong bucket
          `/uploads/no-such-bucket/${old}`,
        ]
      ) {
        const res = await admin(server, "DELETE", path);
        assertEquals(res.status, 404, path);
        assertEquals(errorCode(res.json), "no_such_upload", path);
      }
      const short = await admin(server, "DELETE", "/uploads/mpu");
      assertEquals(short.status, 404);
      assertEquals((await list(server, "?older_than=0")).total, 3, "nothing was aborted");
    });

    await t.step("abort frees the upload's chunks", async () => {
      const chunksBefore = await chunkCount(server);
      const filesBefore = await shardFileCount(server.dataDir);
      const res = await admin(server, "DELETE", `/uploads/mpu/${old}`);
      assertEquals(res.status, 204);
      assertEquals(await chunkCount(server), chunksBefore - oldChunks, "chunk rows freed");
      const filesAfter = await shardFileCount(server.dataDir);
      assert(filesAfter < filesBefore, `shard files removed (${filesBefore} -> ${filesAfter})`);
      const left = await s3.send(new ListMultipartUploadsCommand({ Bucket: "mpu" }));
      assertEquals(left.Uploads?.map((u) => u.UploadId), [fresh]);
      await assertRejectsCode(
        () =>
          s3.send(
            new UploadPartCommand({
              Bucket: "mpu",
              Key: "old/file.bin",
              UploadId: old,
              PartNumber: 4,
              Body: "late part",
            }),
          ),
        "NoSuchUpload",
      );
      const again = await admin(server, "DELETE", `/uploads/mpu/${old}`);
      assertEquals(again.status, 404, "a second abort");
      assertEquals(errorCode(again.json), "no_such_upload");
      const remaining = await list(server, "?older_than=0");
      assertEquals(remaining.total, 2);
      assertEquals(remaining.uploads.map((u) => u.upload_id).sort(), [fresh, otherBucket].sort());
    });

    await t.step("the owner can still abort its own upload through the protocol", async () => {
      await carolS3.send(
        new AbortMultipartUploadCommand({ Bucket: "mpu", Key: "new/file.bin", UploadId: fresh }),
      );
      assertEquals(await chunkCount(server), emptyChunks, "every part's chunk freed");
      const res = await admin(server, "DELETE", `/uploads/other/${otherBucket}`);
      assertEquals(res.status, 204, "an upload without parts");
      assertEquals(await list(server, "?older_than=0"), { uploads: [], total: 0 });
    });
  }, { env: { STORE_CHUNK_SIZE: String(64 * KiB) } });
});
