// Multipart uploads with the AWS SDK (and its Upload helper), and raw checks of the edge cases.
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  type ListMultipartUploadsCommandOutput,
  ListPartsCommand,
  type ListPartsCommandOutput,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { createHash } from "node:crypto";
import { assert, assertBytesEqual, assertEquals, assertRejectsCode } from "./assert.ts";
import { chunkCount, randomBytes, s3Client, withServer } from "./server.ts";

const MiB = 1024 * 1024;

function md5(data: Uint8Array): Buffer {
  return createHash("md5").update(data).digest();
}

async function upload(s3: S3Client, Bucket: string, Key: string, parts: Uint8Array[]) {
  const { UploadId } = await s3.send(
    new CreateMultipartUploadCommand({
      Bucket,
      Key,
      ContentType: "application/x-parts",
      Metadata: { kind: "mp" },
    }),
  );
  const done = [];
  for (let i = 0; i < parts.length; i++) {
    const res = await s3.send(
      new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: i + 1, Body: parts[i] }),
    );
    assertEquals(res.ETag, `"${md5(parts[i]).toString("hex")}"`);
    done.push({ PartNumber: i + 1, ETag: res.ETag });
  }
  return { UploadId: UploadId!, done };
}

Deno.test("multipart uploads", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "parts";
    await s3.send(new CreateBucketCommand({ Bucket }));
    const parts = [randomBytes(5 * MiB), randomBytes(5 * MiB + 3), randomBytes(1000)];
    const whole = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
    parts.reduce((at, p) => (whole.set(p, at), at + p.byteLength), 0);

    await t.step("create, upload, list parts in pages, complete", async () => {
      const { UploadId, done } = await upload(s3, Bucket, "big.bin", parts);
      const seen: number[] = [];
      let marker: string | undefined;
      let pages = 0;
      do {
        const page: ListPartsCommandOutput = await s3.send(
          new ListPartsCommand({
            Bucket,
            Key: "big.bin",
            UploadId,
            MaxParts: 2,
            PartNumberMarker: marker,
          }),
        );
        pages++;
        seen.push(...(page.Parts ?? []).map((p) => p.PartNumber!));
        marker = page.IsTruncated ? page.NextPartNumberMarker : undefined;
      } while (marker);
      assertEquals(seen, [1, 2, 3]);
      assertEquals(pages, 2);
      const out = await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket,
          Key: "big.bin",
          UploadId,
          MultipartUpload: { Parts: done },
        }),
      );
      const expected = createHash("md5").update(Buffer.concat(parts.map(md5))).digest("hex");
      assertEquals(out.ETag, `"${expected}-3"`);
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "big.bin" }));
      assertEquals(got.ContentType, "application/x-parts");
      assertEquals(got.Metadata, { kind: "mp" });
      assertBytesEqual(await got.Body!.transformToByteArray(), whole);
      await assertRejectsCode(
        () => s3.send(new ListPartsCommand({ Bucket, Key: "big.bin", UploadId })),
        "NoSuchUpload",
        404,
      );
    });

    await t.step("partNumber reads", async () => {
      const second = await s3.send(new GetObjectCommand({ Bucket, Key: "big.bin", PartNumber: 2 }));
      assertEquals(second.PartsCount, 3);
      assertEquals(second.ContentRange, `bytes ${5 * MiB}-${10 * MiB + 2}/${whole.byteLength}`);
      assertBytesEqual(await second.Body!.transformToByteArray(), parts[1]);
      const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "big.bin", PartNumber: 3 }));
      assertEquals(head.ContentLength, 1000);
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket, Key: "big.bin", PartNumber: 4 })),
        "InvalidPartNumber",
        416,
      );
    });

    await t.step("a re-uploaded part replaces the earlier one", async () => {
      const { UploadId } = await s3.send(
        new CreateMultipartUploadCommand({ Bucket, Key: "redo.bin" }),
      );
      await s3.send(
        new UploadPartCommand({
          Bucket,
          Key: "redo.bin",
          UploadId,
          PartNumber: 1,
          Body: randomBytes(1000),
        }),
      );
      const before = await chunkCount(server);
      const final = randomBytes(2000);
      const res = await s3.send(
        new UploadPartCommand({ Bucket, Key: "redo.bin", UploadId, PartNumber: 1, Body: final }),
      );
      assertEquals(await chunkCount(server), before, "the replaced part's chunk was freed");
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket,
          Key: "redo.bin",
          UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: res.ETag }] },
        }),
      );
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "redo.bin" }));
      assertBytesEqual(await got.Body!.transformToByteArray(), final);
    });

    await t.step("completion errors change nothing", async () => {
      const { UploadId, done } = await upload(s3, Bucket, "bad.bin", [
        randomBytes(1000),
        randomBytes(1000),
      ]);
      const complete = (Parts: { PartNumber: number; ETag?: string }[]) =>
        s3.send(
          new CompleteMultipartUploadCommand({
            Bucket,
            Key: "bad.bin",
            UploadId,
            MultipartUpload: { Parts },
          }),
        );
      await assertRejectsCode(() => complete([done[1], done[0]]), "InvalidPartOrder", 400);
      await assertRejectsCode(
        () => complete([{ PartNumber: 1, ETag: '"00000000000000000000000000000000"' }]),
        "InvalidPart",
        400,
      );
      await assertRejectsCode(
        () => complete([done[0], { PartNumber: 7, ETag: done[1].ETag }]),
        "InvalidPart",
        400,
      );
      await assertRejectsCode(() => complete(done), "EntityTooSmall", 400);
      const listed = await s3.send(new ListPartsCommand({ Bucket, Key: "bad.bin", UploadId }));
      assertEquals(listed.Parts?.length, 2, "parts kept after failed completions");
      // A single small part is fine: only parts before the last have a minimum size.
      await complete([done[0]]);
      await assertRejectsCode(
        () => s3.send(new HeadObjectCommand({ Bucket, Key: "nothing" })),
        "NotFound",
        404,
      );
    });

    await t.step("part numbers, unknown uploads, abort", async () => {
      const { UploadId } = await s3.send(
        new CreateMultipartUploadCommand({ Bucket, Key: "abort.bin" }),
      );
      for (const PartNumber of [0, 10001]) {
        await assertRejectsCode(
          () =>
            s3.send(
              new UploadPartCommand({ Bucket, Key: "abort.bin", UploadId, PartNumber, Body: "x" }),
            ),
          "InvalidArgument",
          400,
        );
      }
      const before = await chunkCount(server);
      await s3.send(
        new UploadPartCommand({
          Bucket,
          Key: "abort.bin",
          UploadId,
          PartNumber: 1,
          Body: randomBytes(5000),
        }),
      );
      assertEquals(await chunkCount(server), before + 1);
      await assertRejectsCode(
        () => s3.send(new DeleteBucketCommand({ Bucket })),
        "BucketNotEmpty",
        409,
      );
      const aborted = await s3.send(
        new AbortMultipartUploadCommand({ Bucket, Key: "abort.bin", UploadId }),
      );
      assertEquals(aborted.$metadata.httpStatusCode, 204);
      assertEquals(await chunkCount(server), before, "abort frees the parts");
      await assertRejectsCode(
        () => s3.send(new AbortMultipartUploadCommand({ Bucket, Key: "abort.bin", UploadId })),
        "NoSuchUpload",
        404,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new UploadPartCommand({ Bucket, Key: "abort.bin", UploadId, PartNumber: 1, Body: "x" }),
          ),
        "NoSuchUpload",
        404,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new UploadPartCommand({
              Bucket,
              Key: "other.bin",
              UploadId: "nope",
              PartNumber: 1,
              Body: "x",
            }),
          ),
        "NoSuchUpload",
        404,
      );
    });

    await t.step("UploadPartCopy with a source range", async () => {
      const source = randomBytes(6 * MiB);
      await s3.send(new PutObjectCommand({ Bucket, Key: "source.bin", Body: source }));
      const { UploadId } = await s3.send(
        new CreateMultipartUploadCommand({ Bucket, Key: "copied.bin" }),
      );
      const first = await s3.send(
        new UploadPartCopyCommand({
          Bucket,
          Key: "copied.bin",
          UploadId,
          PartNumber: 1,
          CopySource: `${Bucket}/source.bin`,
          CopySourceRange: `bytes=0-${5 * MiB - 1}`,
        }),
      );
      const second = await s3.send(
        new UploadPartCopyCommand({
          Bucket,
          Key: "copied.bin",
          UploadId,
          PartNumber: 2,
          CopySource: `${Bucket}/source.bin`,
          CopySourceRange: `bytes=${5 * MiB}-${6 * MiB - 1}`,
        }),
      );
      assertEquals(
        first.CopyPartResult?.ETag,
        `"${md5(source.subarray(0, 5 * MiB)).toString("hex")}"`,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new UploadPartCopyCommand({
              Bucket,
              Key: "copied.bin",
              UploadId,
              PartNumber: 3,
              CopySource: `${Bucket}/source.bin`,
              CopySourceRange: `bytes=0-${7 * MiB}`,
            }),
          ),
        "InvalidRange",
        416,
      );
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket,
          Key: "copied.bin",
          UploadId,
          MultipartUpload: {
            Parts: [
              { PartNumber: 1, ETag: first.CopyPartResult!.ETag },
              { PartNumber: 2, ETag: second.CopyPartResult!.ETag },
            ],
          },
        }),
      );
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "copied.bin" }));
      assertBytesEqual(await got.Body!.transformToByteArray(), source);
    });

    await t.step("ListMultipartUploads pages with markers, prefix and delimiter", async () => {
      const keys = ["a/1", "a/2", "b", "c", "c", "d/e/f"];
      const ids: string[] = [];
      for (const Key of keys) {
        ids.push(
          (await s3.send(new CreateMultipartUploadCommand({ Bucket: "parts", Key }))).UploadId!,
        );
      }
      const seen: string[] = [];
      let keyMarker: string | undefined;
      let idMarker: string | undefined;
      let pages = 0;
      do {
        const page: ListMultipartUploadsCommandOutput = await s3.send(
          new ListMultipartUploadsCommand({
            Bucket,
            MaxUploads: 2,
            KeyMarker: keyMarker,
            UploadIdMarker: idMarker,
          }),
        );
        pages++;
        seen.push(...(page.Uploads ?? []).map((u) => `${u.Key}:${u.UploadId}`));
        keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
        idMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined;
      } while (keyMarker);
      assertEquals(seen, keys.map((k, i) => `${k}:${ids[i]}`));
      assertEquals(pages, 3);
      const rolled = await s3.send(new ListMultipartUploadsCommand({ Bucket, Delimiter: "/" }));
      assertEquals(rolled.CommonPrefixes?.map((p) => p.Prefix), ["a/", "d/"]);
      assertEquals(rolled.Uploads?.map((u) => u.Key), ["b", "c", "c"]);
      const prefixed = await s3.send(new ListMultipartUploadsCommand({ Bucket, Prefix: "a/" }));
      assertEquals(prefixed.Uploads?.map((u) => u.Key), ["a/1", "a/2"]);
      assert(prefixed.Uploads?.[0].Initiated instanceof Date, "Initiated");
      for (let i = 0; i < keys.length; i++) {
        await s3.send(new AbortMultipartUploadCommand({ Bucket, Key: keys[i], UploadId: ids[i] }));
      }
    });

    await t.step("the SDK's Upload helper with its default checksums", async () => {
      const body = randomBytes(12 * MiB + 5);
      const helper = new Upload({
        client: s3,
        params: { Bucket, Key: "helper.bin", Body: body },
        partSize: 5 * MiB,
        queueSize: 2,
      });
      const out = await helper.done();
      assert(out.ETag?.endsWith('-3"'), `multipart ETag ${out.ETag}`);
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "helper.bin" }));
      assertBytesEqual(await got.Body!.transformToByteArray(), body);
      const small = new Upload({
        client: s3,
        params: { Bucket, Key: "helper-small.txt", Body: "small body" },
      });
      await small.done();
      const back = await s3.send(new GetObjectCommand({ Bucket, Key: "helper-small.txt" }));
      assertEquals(await back.Body!.transformToString(), "small body");
    });
  });
});
