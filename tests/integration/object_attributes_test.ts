// GetObjectAttributes through the JavaScript SDK (GetObjectAttributesCommand) and raw requests:
// each attribute, paged ObjectParts with per-part checksums, versions and delete markers, SSE-C,
// the exact XML shape and bad requests.
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectAttributesCommand,
  type ObjectAttributes,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { expectError, expectStatus } from "./access_helpers.ts";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { randomBytes, s3Client, withServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";

const ALL: ObjectAttributes[] = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"];
const MiB = 1024 * 1024;

function attributes(s3: S3Client, Key: string, extra: Record<string, unknown> = {}) {
  return s3.send(
    new GetObjectAttributesCommand({ Bucket: "attrs", Key, ObjectAttributes: ALL, ...extra }),
  );
}

/** A multipart object from parts of the given sizes, optionally with a checksum algorithm. */
async function multipart(s3: S3Client, Key: string, sizes: number[], algorithm?: "SHA256") {
  const { UploadId } = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: "attrs", Key, ChecksumAlgorithm: algorithm }),
  );
  const parts = [];
  for (const [i, size] of sizes.entries()) {
    const out = await s3.send(
      new UploadPartCommand({
        Bucket: "attrs",
        Key,
        UploadId,
        PartNumber: i + 1,
        Body: randomBytes(size),
        ChecksumAlgorithm: algorithm,
      }),
    );
    parts.push({ PartNumber: i + 1, ETag: out.ETag, ChecksumSHA256: out.ChecksumSHA256 });
  }
  const done = await s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: "attrs",
      Key,
      UploadId,
      MultipartUpload: { Parts: parts },
    }),
  );
  return { parts, done };
}

Deno.test("GetObjectAttributes", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "attrs" }));

    await t.step("a plain object: ETag without quotes, size, storage class", async () => {
      const put = await s3.send(
        new PutObjectCommand({ Bucket: "attrs", Key: "plain", Body: "hello" }),
      );
      const out = await attributes(s3, "plain");
      assertEquals(out.ETag, put.ETag!.replaceAll('"', ""));
      assertEquals(out.ObjectSize, 5);
      assertEquals(out.StorageClass, "STANDARD");
      // The SDK sends a CRC32 of the body unless told otherwise: the object keeps it.
      assertEquals(out.Checksum?.ChecksumCRC32, put.ChecksumCRC32);
      assertEquals(out.ObjectParts, undefined);
      assert(out.LastModified instanceof Date, "Last-Modified");
      const some = await s3.send(
        new GetObjectAttributesCommand({
          Bucket: "attrs",
          Key: "plain",
          ObjectAttributes: ["ObjectSize"],
        }),
      );
      assertEquals([some.ETag, some.ObjectSize, some.StorageClass], [undefined, 5, undefined]);
    });

    await t.step("the exact XML of the answer", async () => {
      const res = await signedFetch(server, {
        method: "GET",
        path: objectPath("attrs", "plain"),
        query: [["attributes", ""]],
        headers: { "x-store-object-attributes": "ETag,StorageClass,ObjectSize" },
      });
      const md5 = createHash("md5").update("hello").digest("hex");
      assertEquals(
        await expectStatus(res, 200),
        '<?xml version="1.0" encoding="UTF-8"?>\n' +
          '<GetObjectAttributesResponse xmlns="http://store.local/doc/2006-03-01/">' +
          `<ETag>${md5}</ETag><StorageClass>STANDARD</StorageClass><ObjectSize>5</ObjectSize>` +
          "</GetObjectAttributesResponse>",
      );
    });

    await t.step("an object's additional checksum", async () => {
      const put = await s3.send(
        new PutObjectCommand({
          Bucket: "attrs",
          Key: "crc",
          Body: "data",
          ChecksumAlgorithm: "CRC32",
        }),
      );
      const out = await attributes(s3, "crc");
      assertEquals(out.Checksum?.ChecksumCRC32, put.ChecksumCRC32);
      assertEquals(out.Checksum?.ChecksumType, "FULL_OBJECT");
    });

    await t.step("ObjectParts pages through parts with their checksums", async () => {
      const { parts } = await multipart(s3, "mp", [5 * MiB, 5 * MiB, 1000], "SHA256");
      const all = await attributes(s3, "mp");
      assertEquals(all.ObjectSize, 10 * MiB + 1000);
      assertEquals(all.ObjectParts?.TotalPartsCount, 3);
      assertEquals(all.ObjectParts?.Parts?.map((p) => [p.PartNumber, p.Size, p.ChecksumSHA256]), [
        [1, 5 * MiB, parts[0].ChecksumSHA256],
        [2, 5 * MiB, parts[1].ChecksumSHA256],
        [3, 1000, parts[2].ChecksumSHA256],
      ]);
      assert(all.Checksum?.ChecksumSHA256, "composite checksum");
      assertEquals(all.Checksum?.ChecksumType, "COMPOSITE");
      const first = await attributes(s3, "mp", { MaxParts: 2 });
      assertEquals(first.ObjectParts?.IsTruncated, true);
      assertEquals(first.ObjectParts?.MaxParts, 2);
      assertEquals(first.ObjectParts?.Parts?.map((p) => p.PartNumber), [1, 2]);
      assertEquals(first.ObjectParts?.NextPartNumberMarker, "2");
      const rest = await attributes(s3, "mp", { MaxParts: 2, PartNumberMarker: "2" });
      assertEquals(rest.ObjectParts?.IsTruncated, false);
      assertEquals(rest.ObjectParts?.PartNumberMarker, "2");
      assertEquals(rest.ObjectParts?.Parts?.map((p) => p.PartNumber), [3]);
      assertEquals(rest.ObjectParts?.TotalPartsCount, 3);
    });

    await t.step("a multipart object without checksums gives only its parts count", async () => {
      await multipart(s3, "mp-plain", [5 * MiB, 10]);
      const out = await attributes(s3, "mp-plain");
      assertEquals(out.ObjectParts?.TotalPartsCount, 2);
      assertEquals(out.ObjectParts?.Parts, undefined);
      assert(out.ETag?.endsWith("-2"), `multipart ETag ${out.ETag}`);
    });

    await t.step("versions and delete markers", async () => {
      await s3.send(
        new PutBucketVersioningCommand({
          Bucket: "attrs",
          VersioningConfiguration: { Status: "Enabled" },
        }),
      );
      const v1 = await s3.send(new PutObjectCommand({ Bucket: "attrs", Key: "v", Body: "one" }));
      await s3.send(new PutObjectCommand({ Bucket: "attrs", Key: "v", Body: "three" }));
      const old = await attributes(s3, "v", { VersionId: v1.VersionId });
      assertEquals([old.ObjectSize, old.VersionId], [3, v1.VersionId]);
      assertEquals((await attributes(s3, "v")).ObjectSize, 5);
      const marker = await s3.send(new DeleteObjectCommand({ Bucket: "attrs", Key: "v" }));
      await assertRejectsCode(() => attributes(s3, "v"), "NoSuchKey", 404);
      const raw = await signedFetch(server, {
        method: "GET",
        path: objectPath("attrs", "v"),
        query: [["attributes", ""]],
        headers: { "x-store-object-attributes": "ETag" },
      });
      await expectError(raw, "NoSuchKey", 404);
      assertEquals(raw.headers.get("x-store-delete-marker"), "true");
      await assertRejectsCode(
        () => attributes(s3, "v", { VersionId: marker.VersionId }),
        "MethodNotAllowed",
        405,
      );
    });

    await t.step("an SSE-C object needs its key", async () => {
      const key = randomBytes(32);
      const sseC = {
        SSECustomerAlgorithm: "AES256",
        SSECustomerKey: btoa(String.fromCharCode(...key)),
        SSECustomerKeyMD5: createHash("md5").update(key).digest("base64"),
      };
      await s3.send(
        new PutObjectCommand({ Bucket: "attrs", Key: "ssec", Body: "secret", ...sseC }),
      );
      await assertRejectsCode(() => attributes(s3, "ssec"), "InvalidRequest", 400);
      assertEquals((await attributes(s3, "ssec", sseC)).ObjectSize, 6);
    });

    await t.step("bad requests", async () => {
      const get = (headers: Record<string, string>, dialect?: "amz") =>
        signedFetch(server, {
          method: "GET",
          path: objectPath("attrs", "plain"),
          query: [["attributes", ""]],
          headers,
          dialect,
        });
      await expectError(await get({}), "InvalidArgument", 400);
      await expectError(
        await get({ "x-store-object-attributes": "ETag,Color" }),
        "InvalidArgument",
        400,
      );
      await expectError(
        await get({ "x-amz-object-attributes": "ObjectParts", "x-amz-max-parts": "-1" }, "amz"),
        "InvalidArgument",
        400,
      );
      const anonymous = await fetch(`${server.url}/attrs/plain?attributes`, {
        headers: { "x-amz-object-attributes": "ETag" },
      });
      await expectError(anonymous, "AccessDenied", 403);
      await assertRejectsCode(() => attributes(s3, "missing"), "NoSuchKey", 404);
    });
  }, { env: { STORE_ALLOW_INSECURE_SSE_C: "true" } }); // SSE-C over plain HTTP
});
