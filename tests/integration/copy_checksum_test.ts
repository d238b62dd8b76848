// CopyObject with `x-*-checksum-algorithm`: the copy gets a new FULL_OBJECT checksum computed
// over its bytes (plain, SSE-S3 and multipart sources), returned in CopyObjectResult and on reads
// with checksum mode; and MFA delete (`x-*-mfa`, MfaDelete Enabled) answering NotImplemented.
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { assertEquals, assertRejectsCode } from "./assert.ts";
import { DIALECTS, expectError, expectStatus, md5Base64 } from "./access_helpers.ts";
import { randomBytes, s3Client, withServer } from "./server.ts";
import { headerName, objectPath, signedFetch, xmlValue } from "./signer.ts";

const sha = (alg: string, data: Uint8Array) => createHash(alg).update(data).digest("base64");

Deno.test("CopyObject computes the requested checksum for the copy", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "copysum";
    await s3.send(new CreateBucketCommand({ Bucket }));
    const data = randomBytes(200_000);
    // The SDK computes CRC32C itself for this reference upload; the server verifies it.
    const ref = await s3.send(
      new PutObjectCommand({ Bucket, Key: "ref", Body: data, ChecksumAlgorithm: "CRC32C" }),
    );
    await s3.send(new PutObjectCommand({ Bucket, Key: "plain", Body: data }));
    await s3.send(
      new PutObjectCommand({ Bucket, Key: "sse", Body: data, ServerSideEncryption: "AES256" }),
    );

    for (const source of ["plain", "sse", "ref"]) {
      const copy = await s3.send(
        new CopyObjectCommand({
          Bucket,
          Key: `c32c-${source}`,
          CopySource: `${Bucket}/${source}`,
          ChecksumAlgorithm: "CRC32C",
        }),
      );
      assertEquals(copy.CopyObjectResult!.ChecksumCRC32C, ref.ChecksumCRC32C, source);
      const head = await s3.send(
        new HeadObjectCommand({ Bucket, Key: `c32c-${source}`, ChecksumMode: "ENABLED" }),
      );
      assertEquals(head.ChecksumCRC32C, ref.ChecksumCRC32C, source);
      assertEquals(head.ChecksumType, "FULL_OBJECT");
    }

    // A SHA-256 for a copy of an object that has a CRC32C: a new one, the old one dropped.
    const copy = await s3.send(
      new CopyObjectCommand({
        Bucket,
        Key: "sha-of-ref",
        CopySource: `${Bucket}/ref`,
        ChecksumAlgorithm: "SHA256",
      }),
    );
    assertEquals(copy.CopyObjectResult!.ChecksumSHA256, sha("sha256", data));
    const head = await s3.send(
      new HeadObjectCommand({ Bucket, Key: "sha-of-ref", ChecksumMode: "ENABLED" }),
    );
    assertEquals(head.ChecksumSHA256, sha("sha256", data));
    assertEquals(head.ChecksumCRC32C, undefined);

    // A multipart source (composite checksum dropped by a copy) gets a full-object SHA-1.
    const parts = [randomBytes(5 * 1024 * 1024), randomBytes(1000)];
    const mp = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key: "mp" }));
    const etags = [];
    for (let i = 0; i < parts.length; i++) {
      const up = await s3.send(
        new UploadPartCommand({
          Bucket,
          Key: "mp",
          UploadId: mp.UploadId,
          PartNumber: i + 1,
          Body: parts[i],
        }),
      );
      etags.push({ ETag: up.ETag, PartNumber: i + 1 });
    }
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket,
        Key: "mp",
        UploadId: mp.UploadId,
        MultipartUpload: { Parts: etags },
      }),
    );
    const whole = new Uint8Array([...parts[0], ...parts[1]]);
    const mpCopy = await s3.send(
      new CopyObjectCommand({
        Bucket,
        Key: "mp-copy",
        CopySource: `${Bucket}/mp`,
        ChecksumAlgorithm: "SHA1",
      }),
    );
    assertEquals(mpCopy.CopyObjectResult!.ChecksumSHA1, sha("sha1", whole));
    assertEquals(mpCopy.CopyObjectResult!.ChecksumType, "FULL_OBJECT");
  });
});

Deno.test("CopyObject checksum algorithm and MFA delete: raw requests in both dialects", async () => {
  await withServer(async (server) => {
    for (const dialect of DIALECTS) {
      const bucket = `copysum-${dialect}`;
      const req = (r: Parameters<typeof signedFetch>[1]) => signedFetch(server, { dialect, ...r });
      await expectStatus(await req({ method: "PUT", path: `/${bucket}` }), 200);
      const body = new TextEncoder().encode("copy me");
      await expectStatus(
        await req({ method: "PUT", path: objectPath(bucket, "src"), body }),
        200,
      );
      const copy = (algorithm: string) =>
        req({
          method: "PUT",
          path: objectPath(bucket, "dst"),
          headers: {
            [headerName(dialect, "copy-source")]: `/${bucket}/src`,
            [headerName(dialect, "checksum-algorithm")]: algorithm,
          },
        });
      const doc = await expectStatus(await copy("sha256"), 200);
      assertEquals(xmlValue(doc, "ChecksumSHA256"), sha("sha256", body));
      assertEquals(xmlValue(doc, "ChecksumType"), "FULL_OBJECT");
      const get = await req({
        method: "GET",
        path: objectPath(bucket, "dst"),
        headers: { [headerName(dialect, "checksum-mode")]: "ENABLED" },
      });
      assertEquals(await expectStatus(get, 200), "copy me");
      assertEquals(get.headers.get(headerName(dialect, "checksum-sha256")), sha("sha256", body));
      await expectError(await copy("MD5"), "InvalidRequest", 400, "unknown algorithm");

      // MFA delete: the header on deletes and versioning changes, and MfaDelete Enabled.
      const mfa = { [headerName(dialect, "mfa")]: "arn:device 123456" };
      const refused = await expectError(
        await req({ method: "DELETE", path: objectPath(bucket, "dst"), headers: mfa }),
        "NotImplemented",
        501,
      );
      assertEquals(/MFA delete is not supported/.test(xmlValue(refused, "Message")!), true);
      const batch = "<Delete><Object><Key>dst</Key></Object></Delete>";
      await expectError(
        await req({
          method: "POST",
          path: `/${bucket}`,
          query: [["delete", ""]],
          headers: { ...mfa, "content-md5": md5Base64(batch) },
          body: batch,
        }),
        "NotImplemented",
        501,
      );
      const versioning = (xml: string, headers: Record<string, string> = {}) =>
        req({ method: "PUT", path: `/${bucket}`, query: [["versioning", ""]], headers, body: xml });
      await expectError(
        await versioning(
          "<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>",
        ),
        "NotImplemented",
        501,
      );
      await expectError(
        await versioning(
          "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>",
          mfa,
        ),
        "NotImplemented",
        501,
      );
      // The object is still there.
      await expectStatus(await req({ method: "GET", path: objectPath(bucket, "dst") }), 200);
    }
    const s3 = s3Client(server);
    await assertRejectsCode(
      () =>
        s3.send(
          new PutBucketVersioningCommand({
            Bucket: "copysum-amz",
            VersioningConfiguration: { Status: "Enabled", MFADelete: "Enabled" },
            MFA: "arn:device 123456",
          }),
        ),
      "NotImplemented",
    );
  });
});
