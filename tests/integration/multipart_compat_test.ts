// Multipart behaviour old clients and test suites rely on, through the JavaScript SDK:
// DeleteBucket aborts uploads in progress, a repeated CompleteMultipartUpload answers as the
// first did, and UploadPartCopy names the upload's encryption.
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { chunkCount, randomBytes, s3Client, withServer } from "./server.ts";

async function startUpload(s3: S3Client, bucket: string, key: string, size: number) {
  const { UploadId } = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }),
  );
  const part = await s3.send(
    new UploadPartCommand({
      Bucket: bucket,
      Key: key,
      UploadId,
      PartNumber: 1,
      Body: randomBytes(size),
    }),
  );
  return { UploadId: UploadId!, Parts: [{ PartNumber: 1, ETag: part.ETag }] };
}

/** An upload in "mprep" with a 5 MiB part 1 and a short part 2: completable as [1] or [1, 2]. */
async function twoPartUpload(s3: S3Client, key: string) {
  const up = await startUpload(s3, "mprep", key, 5 * 1024 * 1024);
  const second = await s3.send(
    new UploadPartCommand({
      Bucket: "mprep",
      Key: key,
      UploadId: up.UploadId,
      PartNumber: 2,
      Body: randomBytes(1000),
    }),
  );
  return { up, both: { ...up, Parts: [...up.Parts, { PartNumber: 2, ETag: second.ETag }] } };
}

function complete(
  s3: S3Client,
  bucket: string,
  key: string,
  up: { UploadId: string; Parts: object[] },
) {
  return s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: bucket,
      Key: key,
      UploadId: up.UploadId,
      MultipartUpload: { Parts: up.Parts },
    }),
  );
}

Deno.test("multipart compatibility", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);

    await t.step("DeleteBucket aborts the uploads in progress and frees their parts", async () => {
      await s3.send(new CreateBucketCommand({ Bucket: "mpdel" }));
      const before = await chunkCount(server);
      await startUpload(s3, "mpdel", "a", 300 * 1024);
      await startUpload(s3, "mpdel", "b/c", 200 * 1024);
      assert((await chunkCount(server)) > before, "the parts hold chunks");
      const res = await s3.send(new DeleteBucketCommand({ Bucket: "mpdel" }));
      assertEquals(res.$metadata.httpStatusCode, 204);
      assertEquals(await chunkCount(server), before, "the parts' chunks are freed");
      await s3.send(new CreateBucketCommand({ Bucket: "mpdel" }));
      const listed = await s3.send(new ListMultipartUploadsCommand({ Bucket: "mpdel" }));
      assertEquals(listed.Uploads ?? [], []);
    });

    await t.step("a bucket with objects is still not deleted, nor its uploads", async () => {
      await s3.send(new PutObjectCommand({ Bucket: "mpdel", Key: "obj", Body: "x" }));
      await startUpload(s3, "mpdel", "kept", 1024);
      await assertRejectsCode(
        () => s3.send(new DeleteBucketCommand({ Bucket: "mpdel" })),
        "BucketNotEmpty",
        409,
      );
      const listed = await s3.send(new ListMultipartUploadsCommand({ Bucket: "mpdel" }));
      assertEquals(listed.Uploads?.map((u) => u.Key), ["kept"]);
    });

    await t.step("a repeated CompleteMultipartUpload answers 200 with the same ETag", async () => {
      await s3.send(new CreateBucketCommand({ Bucket: "mprep" }));
      const up = await startUpload(s3, "mprep", "k", 1000);
      const first = await complete(s3, "mprep", "k", up);
      const again = await complete(s3, "mprep", "k", up);
      assertEquals(again.$metadata.httpStatusCode, 200);
      assertEquals(again.ETag, first.ETag);
      assertEquals(again.Key, "k");
      // The record belongs to its bucket and key.
      await s3.send(new PutObjectCommand({ Bucket: "mprep", Key: "other", Body: "x" }));
      await assertRejectsCode(() => complete(s3, "mprep", "other", up), "NoSuchUpload", 404);
    });

    await t.step("concurrent completions of one upload both answer the same", async () => {
      const up = await startUpload(s3, "mprep", "twice", 1000);
      const [a, b] = await Promise.all([
        complete(s3, "mprep", "twice", up),
        complete(s3, "mprep", "twice", up),
      ]);
      assertEquals(a.ETag, b.ETag);
    });

    await t.step(
      "a completion naming another part list after the upload completed: NoSuchUpload",
      async () => {
        const { up, both } = await twoPartUpload(s3, "relisted");
        const first = await complete(s3, "mprep", "relisted", both);
        await assertRejectsCode(() => complete(s3, "mprep", "relisted", up), "NoSuchUpload", 404);
        // The same list, with the ETags unquoted, is still the same completion.
        const unquoted = both.Parts.map((p) => ({ ...p, ETag: p.ETag!.replaceAll('"', "") }));
        const again = await complete(s3, "mprep", "relisted", { ...both, Parts: unquoted });
        assertEquals(again.ETag, first.ETag);
      },
    );

    await t.step(
      "concurrent completions with different part lists: one wins, the other fails",
      async () => {
        const { up, both } = await twoPartUpload(s3, "raced");
        const results = await Promise.allSettled([
          complete(s3, "mprep", "raced", up),
          complete(s3, "mprep", "raced", both),
        ]);
        const won = results.filter((r) => r.status === "fulfilled");
        const lost = results.filter((r) => r.status === "rejected");
        assertEquals([won.length, lost.length], [1, 1]);
        assertEquals((lost[0] as PromiseRejectedResult).reason.name, "NoSuchUpload");
        const head = await s3.send(new HeadObjectCommand({ Bucket: "mprep", Key: "raced" }));
        assertEquals(head.ETag, (won[0] as PromiseFulfilledResult<{ ETag?: string }>).value.ETag);
        const winnerSize = results[0].status === "fulfilled"
          ? 5 * 1024 * 1024
          : 5 * 1024 * 1024 + 1000;
        assertEquals(head.ContentLength, winnerSize);
      },
    );

    await t.step("an aborted upload is not completed later", async () => {
      const up = await startUpload(s3, "mprep", "aborted", 1000);
      await s3.send(
        new AbortMultipartUploadCommand({ Bucket: "mprep", Key: "aborted", UploadId: up.UploadId }),
      );
      await assertRejectsCode(() => complete(s3, "mprep", "aborted", up), "NoSuchUpload", 404);
    });

    await t.step("UploadPartCopy echoes the upload's encryption", async () => {
      await s3.send(new CreateBucketCommand({ Bucket: "mpsse" }));
      await s3.send(new PutObjectCommand({ Bucket: "mpsse", Key: "src", Body: randomBytes(4096) }));
      const s3up = await s3.send(
        new CreateMultipartUploadCommand({
          Bucket: "mpsse",
          Key: "sse-s3",
          ServerSideEncryption: "AES256",
        }),
      );
      const copied = await s3.send(
        new UploadPartCopyCommand({
          Bucket: "mpsse",
          Key: "sse-s3",
          UploadId: s3up.UploadId,
          PartNumber: 1,
          CopySource: "mpsse/src",
        }),
      );
      assertEquals(copied.ServerSideEncryption, "AES256");
      const key = randomBytes(32);
      const sseC = {
        SSECustomerAlgorithm: "AES256",
        SSECustomerKey: btoa(String.fromCharCode(...key)),
        SSECustomerKeyMD5: createHash("md5").update(key).digest("base64"),
      };
      const cUp = await s3.send(
        new CreateMultipartUploadCommand({ Bucket: "mpsse", Key: "sse-c", ...sseC }),
      );
      const cCopy = await s3.send(
        new UploadPartCopyCommand({
          Bucket: "mpsse",
          Key: "sse-c",
          UploadId: cUp.UploadId,
          PartNumber: 1,
          CopySource: "mpsse/src",
          ...sseC,
        }),
      );
      assertEquals(cCopy.SSECustomerAlgorithm, "AES256");
      assertEquals(cCopy.SSECustomerKeyMD5, sseC.SSECustomerKeyMD5);
    });
  }, { env: { STORE_ALLOW_INSECURE_SSE_C: "true" } }); // SSE-C over plain HTTP
});
