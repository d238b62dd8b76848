// Object operations through the real AWS SDK (amz dialect).
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import {
  assertBytesEqual,
  assertEquals,
  assertRejectsCode,
  assertRejectsStatus,
} from "./assert.ts";
import { randomBytes, reclaimed, s3Client, withServer } from "./server.ts";
import { objectPath, signedFetch, xmlValue } from "./signer.ts";

function md5(data: Uint8Array): { hex: string; base64: string } {
  const h = createHash("md5").update(data).digest();
  return { hex: h.toString("hex"), base64: h.toString("base64") };
}

Deno.test("object operations with the AWS SDK", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "objects";
    await s3.send(new CreateBucketCommand({ Bucket }));
    const small = new TextEncoder().encode("hello, world\n");
    const large = randomBytes(3 * 1024 * 1024 + 17);

    await t.step("PutObject and GetObject, inline and file-backed", async () => {
      for (const [Key, body] of [["small.txt", small], ["dir/large.bin", large]] as const) {
        const put = await s3.send(new PutObjectCommand({ Bucket, Key, Body: body }));
        assertEquals(put.ETag, `"${md5(body).hex}"`);
        const got = await s3.send(new GetObjectCommand({ Bucket, Key }));
        assertEquals(got.ContentLength, body.byteLength);
        assertEquals(got.ETag, `"${md5(body).hex}"`);
        assertEquals(got.AcceptRanges, "bytes");
        assertBytesEqual(await got.Body!.transformToByteArray(), body);
      }
    });

    await t.step("Content-Type detection, metadata and stored headers", async () => {
      await s3.send(
        new PutObjectCommand({
          Bucket,
          Key: "photos/cat.JPG",
          Body: small,
          Metadata: { owner: "alice", "x-note": "ünïcödé" },
          CacheControl: "max-age=60",
          ContentDisposition: "inline",
          ContentLanguage: "en",
        }),
      );
      const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "photos/cat.JPG" }));
      assertEquals(head.Metadata, { owner: "alice", "x-note": "ünïcödé" });
      assertEquals(head.CacheControl, "max-age=60");
      assertEquals(head.ContentDisposition, "inline");
      assertEquals(head.ContentLanguage, "en");
      assertEquals(head.ContentLength, small.byteLength);
      // The SDK always names a type; a raw request without Content-Type gets one from the key.
      const raw = await signedFetch(server, {
        method: "PUT",
        path: objectPath(Bucket, "raw/page.html"),
        body: small,
      });
      assertEquals(raw.status, 200);
      const detected = await s3.send(new HeadObjectCommand({ Bucket, Key: "raw/page.html" }));
      assertEquals(detected.ContentType, "text/html");
      await s3.send(new PutObjectCommand({ Bucket, Key: "noext", Body: small }));
      const plain = await s3.send(new HeadObjectCommand({ Bucket, Key: "noext" }));
      assertEquals(plain.ContentType, "application/octet-stream");
      await s3.send(
        new PutObjectCommand({ Bucket, Key: "typed", Body: small, ContentType: "text/x-custom" }),
      );
      const typed = await s3.send(new HeadObjectCommand({ Bucket, Key: "typed" }));
      assertEquals(typed.ContentType, "text/x-custom");
    });

    await t.step("Content-MD5 is verified", async () => {
      await s3.send(
        new PutObjectCommand({ Bucket, Key: "md5ok", Body: small, ContentMD5: md5(small).base64 }),
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectCommand({
              Bucket,
              Key: "md5bad",
              Body: small,
              ContentMD5: md5(large).base64,
            }),
          ),
        "BadDigest",
        400,
      );
      await assertRejectsCode(
        () => s3.send(new HeadObjectCommand({ Bucket, Key: "md5bad" })),
        "NotFound",
        404,
      );
    });

    await t.step("Range reads", async () => {
      const cases: [string, number, number][] = [
        ["bytes=0-9", 0, 10],
        ["bytes=100-", 100, large.byteLength - 100],
        ["bytes=-500", large.byteLength - 500, 500],
        ["bytes=1048570-2097160", 1048570, 1048591],
        [`bytes=10-${large.byteLength + 1000}`, 10, large.byteLength - 10],
      ];
      for (const [Range, offset, length] of cases) {
        const got = await s3.send(new GetObjectCommand({ Bucket, Key: "dir/large.bin", Range }));
        assertEquals(got.$metadata.httpStatusCode, 206, Range);
        assertEquals(got.ContentLength, length, Range);
        assertEquals(
          got.ContentRange,
          `bytes ${offset}-${offset + length - 1}/${large.byteLength}`,
        );
        assertBytesEqual(
          await got.Body!.transformToByteArray(),
          large.subarray(offset, offset + length),
          Range,
        );
      }
      const inline = await s3.send(
        new GetObjectCommand({ Bucket, Key: "small.txt", Range: "bytes=7-" }),
      );
      assertEquals(await inline.Body!.transformToString(), "world\n");
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket, Key: "small.txt", Range: "bytes=100-200" })),
        "InvalidRange",
        416,
      );
    });

    await t.step("conditional GET and HEAD", async () => {
      const etag = `"${md5(small).hex}"`;
      const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "small.txt" }));
      const lastModified = head.LastModified!;
      const later = new Date(lastModified.getTime() + 3600_000);
      const earlier = new Date(lastModified.getTime() - 3600_000);
      const ok = await s3.send(new GetObjectCommand({ Bucket, Key: "small.txt", IfMatch: etag }));
      assertEquals(ok.$metadata.httpStatusCode, 200);
      await ok.Body!.transformToByteArray();
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket, Key: "small.txt", IfMatch: '"nope"' })),
        "PreconditionFailed",
        412,
      );
      await assertRejectsCode(
        () =>
          s3.send(new GetObjectCommand({ Bucket, Key: "small.txt", IfUnmodifiedSince: earlier })),
        "PreconditionFailed",
        412,
      );
      await assertRejectsStatus(
        () => s3.send(new HeadObjectCommand({ Bucket, Key: "small.txt", IfNoneMatch: etag })),
        304,
      );
      await assertRejectsStatus(
        () => s3.send(new GetObjectCommand({ Bucket, Key: "small.txt", IfModifiedSince: later })),
        304,
      );
      const modified = await s3.send(
        new GetObjectCommand({ Bucket, Key: "small.txt", IfModifiedSince: earlier }),
      );
      assertEquals(modified.$metadata.httpStatusCode, 200);
      await modified.Body!.transformToByteArray();
      // If-Match true wins over If-Unmodified-Since false.
      const both = await s3.send(
        new GetObjectCommand({
          Bucket,
          Key: "small.txt",
          IfMatch: etag,
          IfUnmodifiedSince: earlier,
        }),
      );
      assertEquals(both.$metadata.httpStatusCode, 200);
      await both.Body!.transformToByteArray();
    });

    await t.step("response-* overrides", async () => {
      const got = await s3.send(
        new GetObjectCommand({
          Bucket,
          Key: "small.txt",
          ResponseContentType: "application/x-override",
          ResponseContentDisposition: 'attachment; filename="a.txt"',
          ResponseCacheControl: "no-cache",
          ResponseContentLanguage: "de",
          ResponseContentEncoding: "identity",
          ResponseExpires: new Date("2030-01-01T00:00:00Z"),
        }),
      );
      assertEquals(got.ContentType, "application/x-override");
      assertEquals(got.ContentDisposition, 'attachment; filename="a.txt"');
      assertEquals(got.CacheControl, "no-cache");
      assertEquals(got.ContentLanguage, "de");
      assertEquals(got.ContentEncoding, "identity");
      assertEquals(got.Expires?.toISOString(), "2030-01-01T00:00:00.000Z");
      await got.Body!.transformToByteArray();
    });

    await t.step("missing keys and buckets", async () => {
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket, Key: "nope" })),
        "NoSuchKey",
        404,
      );
      await assertRejectsCode(
        () => s3.send(new HeadObjectCommand({ Bucket, Key: "nope" })),
        "NotFound",
        404,
      );
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket: "no-bucket", Key: "x" })),
        "NoSuchBucket",
        404,
      );
      await assertRejectsCode(
        () => s3.send(new PutObjectCommand({ Bucket: "no-bucket", Key: "x", Body: "x" })),
        "NoSuchBucket",
        404,
      );
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket, Key: "small.txt", VersionId: "v1" })),
        "NoSuchVersion",
        404,
      );
      const res = await signedFetch(server, {
        method: "GET",
        path: objectPath(Bucket, "nope"),
        dialect: "amz",
      });
      const body = await res.text();
      assertEquals(xmlValue(body, "Key"), "nope");
      assertEquals(xmlValue(body, "Resource"), `/${Bucket}/nope`);
    });

    await t.step("GET by versionId null reads the unversioned object", async () => {
      const got = await s3.send(
        new GetObjectCommand({ Bucket, Key: "small.txt", VersionId: "null" }),
      );
      assertBytesEqual(await got.Body!.transformToByteArray(), small);
    });

    await t.step("overwrite replaces data and frees the old file", async () => {
      const shardsBefore = await countFiles(`${server.dataDir}/chunks`);
      const next = randomBytes(200_000);
      await s3.send(new PutObjectCommand({ Bucket, Key: "dir/large.bin", Body: next }));
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "dir/large.bin" }));
      assertBytesEqual(await got.Body!.transformToByteArray(), next);
      await reclaimed(server);
      assertEquals(await countFiles(`${server.dataDir}/chunks`), shardsBefore);
      await s3.send(new PutObjectCommand({ Bucket, Key: "dir/large.bin", Body: small }));
      await reclaimed(server); // the file goes just after the answer
      assertEquals(
        await countFiles(`${server.dataDir}/chunks`),
        shardsBefore - 1,
        "inline overwrite frees the file",
      );
    });

    await t.step("DeleteObject is 204, also for a missing key", async () => {
      const del = await s3.send(new DeleteObjectCommand({ Bucket, Key: "small.txt" }));
      assertEquals(del.$metadata.httpStatusCode, 204);
      const again = await s3.send(new DeleteObjectCommand({ Bucket, Key: "small.txt" }));
      assertEquals(again.$metadata.httpStatusCode, 204);
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket, Key: "small.txt" })),
        "NoSuchKey",
        404,
      );
    });

    await t.step("keys with special characters round-trip", async () => {
      const keys = [
        "a b/c+d=e&f?g#h",
        "ünïcödé/日本語/🙂.txt",
        "../../etc/passwd",
        "a/./b//c/",
        "percent%2Fencoded",
        "k".repeat(1024),
      ];
      for (const Key of keys) {
        await s3.send(new PutObjectCommand({ Bucket, Key, Body: Key }));
        const got = await s3.send(new GetObjectCommand({ Bucket, Key }));
        assertEquals(await got.Body!.transformToString(), Key);
      }
      await assertRejectsCode(
        () => s3.send(new PutObjectCommand({ Bucket, Key: "k".repeat(1025), Body: "x" })),
        "KeyTooLongError",
        400,
      );
    });

    await t.step("limits: metadata size and storage class", async () => {
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectCommand({
              Bucket,
              Key: "m",
              Body: "x",
              Metadata: { big: "v".repeat(2100) },
            }),
          ),
        "MetadataTooLarge",
        400,
      );
      await s3.send(
        new PutObjectCommand({ Bucket, Key: "std", Body: "x", StorageClass: "STANDARD" }),
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectCommand({ Bucket, Key: "glacier", Body: "x", StorageClass: "GLACIER" }),
          ),
        "InvalidStorageClass",
        400,
      );
    });

    await t.step("an empty object", async () => {
      const put = await s3.send(
        new PutObjectCommand({ Bucket, Key: "empty", Body: new Uint8Array(0) }),
      );
      assertEquals(put.ETag, '"d41d8cd98f00b204e9800998ecf8427e"');
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "empty" }));
      assertEquals(got.ContentLength, 0);
      assertEquals((await got.Body!.transformToByteArray()).byteLength, 0);
    });
  });
});

async function countFiles(dir: string): Promise<number> {
  let n = 0;
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isDirectory) n += await countFiles(`${dir}/${entry.name}`);
    else n++;
  }
  return n;
}
