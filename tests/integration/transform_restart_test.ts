// Transformation jobs are durable: jobs queued by writes (put, copy, multipart) and by the API
// survive a crash of a server that ran none of them (STORE_TRANSFORM_WORKERS=0) and run after
// the restart; a job whose output bucket is gone is retried with backoff, then fails, logged.
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { adminApi } from "./access_helpers.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { s3Client, startServer } from "./server.ts";
import { allJobs, api, bearer, bucketSettled, metadataOf, png } from "./transform_helpers.ts";

Deno.test("queued jobs survive a crash and run after the restart", async () => {
  const first = await startServer({ env: { STORE_TRANSFORM_WORKERS: "0" } });
  const dataDir = first.dataDir;
  let second;
  try {
    const s3 = s3Client(first);
    for (const Bucket of ["src", "out", "gone"]) await s3.send(new CreateBucketCommand({ Bucket }));
    const token = await bearer(first);
    const set = await api(first, token, "PUT", "/transforms/src", {
      rules: [{
        id: "t",
        suffix: ".png",
        actions: [{ thumbnail: { width: 8 } }, { convert: { format: "webp" } }],
        output: { bucket: "out", prefix: "t/" },
      }],
    });
    assertEquals(set.status, 200);
    for (const key of ["a.png", "b.png"]) {
      await s3.send(new PutObjectCommand({ Bucket: "src", Key: key, Body: await png(32, 32) }));
    }
    await s3.send(
      new CopyObjectCommand({ Bucket: "src", Key: "c.png", CopySource: "src/a.png" }),
    );
    const upload = await s3.send(new CreateMultipartUploadCommand({ Bucket: "src", Key: "d.png" }));
    const part = await s3.send(
      new UploadPartCommand({
        Bucket: "src",
        Key: "d.png",
        UploadId: upload.UploadId,
        PartNumber: 1,
        Body: await png(32, 32),
      }),
    );
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: "src",
        Key: "d.png",
        UploadId: upload.UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
      }),
    );
    const doomed = await api(first, token, "POST", "/jobs", {
      bucket: "src",
      key: "a.png",
      actions: [{ strip_metadata: true }],
      output: { bucket: "gone" },
    });
    assertEquals(doomed.status, 202);
    await s3.send(new DeleteBucketCommand({ Bucket: "gone" }));
    const queued = await allJobs(first, token, "src");
    assertEquals(queued.map((j) => [j.key, j.state]), [
      ["a.png", "queued"],
      ["b.png", "queued"],
      ["c.png", "queued"],
      ["d.png", "queued"],
      ["a.png", "queued"],
    ]);
    await first.kill();

    second = await startServer({ dataDir, env: { STORE_TRANSFORM_WORKERS: "2" } });
    const again = await bearer(second);
    const jobs = await bucketSettled(second, again, "src", 5, 60_000);
    const byRule = jobs.filter((j) => j.rule === "t");
    assertEquals(byRule.map((j) => [j.key, j.state, j.output.key]), [
      ["a.png", "done", "t/a.webp"],
      ["b.png", "done", "t/b.webp"],
      ["c.png", "done", "t/c.webp"],
      ["d.png", "done", "t/d.webp"],
    ]);
    const s3b = s3Client(second);
    for (const key of ["t/a.webp", "t/d.webp"]) {
      const got = await s3b.send(new GetObjectCommand({ Bucket: "out", Key: key }));
      const meta = await metadataOf(await got.Body!.transformToByteArray());
      assertEquals([meta.format, meta.width], ["webp", 8]);
    }
    const failed = jobs.find((j) => j.id === doomed.json.id);
    assertEquals([failed.state, failed.attempts], ["failed", 4]);
    assertMatch(failed.error, /output bucket gone does not exist/);
    const logged = await adminApi(second, "GET", "/errors?source=transform");
    const codes = (logged.json!.errors as { code: string }[]).map((e) => e.code);
    assertEquals(codes.filter((c) => c === "TransformRetry").length, 3);
    assertEquals(codes.filter((c) => c === "TransformFailed").length, 1);
    assert(second.logs().includes("Transformation job failed"));
  } finally {
    if (second) await second.stop();
    else await first.stop().catch(() => {});
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
