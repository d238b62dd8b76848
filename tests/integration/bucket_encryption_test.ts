// Default bucket encryption (?encryption) over HTTP: the SDK's Get/Put/DeleteBucketEncryption,
// raw requests in both dialects with their errors, and the default applied to new objects
// (PutObject, multipart, copies) while objects written before keep their form.
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketEncryptionCommand,
  GetBucketEncryptionCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutBucketEncryptionCommand,
  PutObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { assert, assertBytesEqual, assertEquals, assertRejectsCode } from "./assert.ts";
import { DIALECTS, expectError, expectStatus, md5Base64, NAMESPACE } from "./access_helpers.ts";
import { randomBytes, s3Client, withServer } from "./server.ts";
import { headerName, objectPath, signedFetch, xmlValue } from "./signer.ts";

/** Whether the latest version of `key` has a stored SSE record. */
function storedEncrypted(dataDir: string, bucket: string, key: string): boolean {
  const db = new DatabaseSync(join(dataDir, "meta.db"), { readOnly: true });
  try {
    const row = db.prepare(
      "SELECT sse FROM versions WHERE bucket = ? AND key = ? AND is_latest = 1",
    ).get(bucket, key) as { sse: string | null } | undefined;
    return row?.sse !== null && row?.sse !== undefined;
  } finally {
    db.close();
  }
}

const AES = `<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>` +
  `<SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>` +
  `</ServerSideEncryptionConfiguration>`;

Deno.test("default encryption: SDK round trip and the default applied to new objects", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "enc-sdk";
    await s3.send(new CreateBucketCommand({ Bucket }));
    await s3.send(new CreateBucketCommand({ Bucket: "plain-src" }));
    await assertRejectsCode(
      () => s3.send(new GetBucketEncryptionCommand({ Bucket })),
      "ServerSideEncryptionConfigurationNotFoundError",
    );
    const before = new TextEncoder().encode("written before the default");
    await s3.send(new PutObjectCommand({ Bucket, Key: "before.txt", Body: before }));

    await s3.send(
      new PutBucketEncryptionCommand({
        Bucket,
        ServerSideEncryptionConfiguration: {
          Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }],
        },
      }),
    );
    const got = await s3.send(new GetBucketEncryptionCommand({ Bucket }));
    const rule = got.ServerSideEncryptionConfiguration!.Rules![0];
    assertEquals(rule.ApplyServerSideEncryptionByDefault!.SSEAlgorithm, "AES256");
    assertEquals(rule.BucketKeyEnabled, false);

    // A plain PutObject is encrypted and says so.
    const body = randomBytes(300_000);
    const put = await s3.send(new PutObjectCommand({ Bucket, Key: "new.bin", Body: body }));
    assertEquals(put.ServerSideEncryption, "AES256");
    const read = await s3.send(new GetObjectCommand({ Bucket, Key: "new.bin" }));
    assertEquals(read.ServerSideEncryption, "AES256");
    assertBytesEqual(await read.Body!.transformToByteArray(), body);
    assertEquals(storedEncrypted(server.dataDir, Bucket, "new.bin"), true);

    // The object written before stays as it was.
    const old = await s3.send(new GetObjectCommand({ Bucket, Key: "before.txt" }));
    assertEquals(old.ServerSideEncryption, undefined);
    assertBytesEqual(await old.Body!.transformToByteArray(), before);

    // Multipart uploads take the default at creation.
    const mp = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key: "mp.bin" }));
    assertEquals(mp.ServerSideEncryption, "AES256");
    const part = randomBytes(5 * 1024 * 1024);
    const up = await s3.send(
      new UploadPartCommand({
        Bucket,
        Key: "mp.bin",
        UploadId: mp.UploadId,
        PartNumber: 1,
        Body: part,
      }),
    );
    assertEquals(up.ServerSideEncryption, "AES256");
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket,
        Key: "mp.bin",
        UploadId: mp.UploadId,
        MultipartUpload: { Parts: [{ ETag: up.ETag, PartNumber: 1 }] },
      }),
    );
    const mpHead = await s3.send(new HeadObjectCommand({ Bucket, Key: "mp.bin" }));
    assertEquals(mpHead.ServerSideEncryption, "AES256");
    assertEquals(storedEncrypted(server.dataDir, Bucket, "mp.bin"), true);

    // A copy of a plain object into the bucket is encrypted; so is a copy out of it only when
    // the destination asks.
    await s3.send(new PutObjectCommand({ Bucket: "plain-src", Key: "p.txt", Body: before }));
    const copy = await s3.send(
      new CopyObjectCommand({ Bucket, Key: "copied.txt", CopySource: "plain-src/p.txt" }),
    );
    assertEquals(copy.ServerSideEncryption, "AES256");
    assertEquals(storedEncrypted(server.dataDir, Bucket, "copied.txt"), true);
    const copied = await s3.send(new GetObjectCommand({ Bucket, Key: "copied.txt" }));
    assertBytesEqual(await copied.Body!.transformToByteArray(), before);
    const out = await s3.send(
      new CopyObjectCommand({
        Bucket: "plain-src",
        Key: "out.txt",
        CopySource: `${Bucket}/new.bin`,
      }),
    );
    assertEquals(out.ServerSideEncryption, undefined);
    assertEquals(storedEncrypted(server.dataDir, "plain-src", "out.txt"), false);

    // Explicit SSE-C on the request wins over the default.
    const customerKey = randomBytes(32);
    const keyB64 = btoa(String.fromCharCode(...customerKey));
    const c = await s3.send(
      new PutObjectCommand({
        Bucket,
        Key: "c.bin",
        Body: before,
        SSECustomerAlgorithm: "AES256",
        SSECustomerKey: keyB64,
      }),
    );
    assertEquals(c.ServerSideEncryption, undefined);
    assertEquals(c.SSECustomerAlgorithm, "AES256");

    await s3.send(new DeleteBucketEncryptionCommand({ Bucket }));
    await assertRejectsCode(
      () => s3.send(new GetBucketEncryptionCommand({ Bucket })),
      "ServerSideEncryptionConfigurationNotFoundError",
    );
    const after = await s3.send(new PutObjectCommand({ Bucket, Key: "after.txt", Body: before }));
    assertEquals(after.ServerSideEncryption, undefined);
    // Objects written under the default stay readable.
    const still = await s3.send(new GetObjectCommand({ Bucket, Key: "new.bin" }));
    assertBytesEqual(await still.Body!.transformToByteArray(), body);
  }, { env: { STORE_ALLOW_INSECURE_SSE_C: "true" } });
});

Deno.test("default encryption: raw requests and errors in both dialects", async () => {
  await withServer(async (server) => {
    for (const dialect of DIALECTS) {
      const bucket = `enc-raw-${dialect}`;
      const req = (r: Parameters<typeof signedFetch>[1]) => signedFetch(server, { dialect, ...r });
      await expectStatus(await req({ method: "PUT", path: `/${bucket}` }), 200);
      const putEnc = (xml: string, md5 = true) =>
        req({
          method: "PUT",
          path: `/${bucket}`,
          query: [["encryption", ""]],
          headers: md5 ? { "content-md5": md5Base64(xml) } : {},
          body: xml,
        });
      const getEnc = () => req({ method: "GET", path: `/${bucket}`, query: [["encryption", ""]] });

      const missing = await expectError(
        await getEnc(),
        "ServerSideEncryptionConfigurationNotFoundError",
        404,
      );
      assertEquals(xmlValue(missing, "BucketName"), bucket);
      await expectError(await putEnc(AES, false), "InvalidRequest", 400, "no Content-MD5");
      const kms = headerName(dialect, "server-side-encryption");
      const bad: [string, string][] = [
        [AES.replace("AES256", "AES128"), "MalformedXML"],
        ["<ServerSideEncryptionConfiguration></ServerSideEncryptionConfiguration>", "MalformedXML"],
        [AES.replace("<Rule>", "<Rule><Other>x</Other>"), "MalformedXML"],
        [AES.replace("</Rule>", "</Rule><Rule></Rule>"), "MalformedXML"],
        [
          AES.replace("</SSEAlgorithm>", "</SSEAlgorithm><KMSMasterKeyID>k</KMSMasterKeyID>"),
          "InvalidArgument",
        ],
        [
          AES.replace(
            "</Rule>",
            "<BucketKeyEnabled>maybe</BucketKeyEnabled></Rule>",
          ),
          "MalformedXML",
        ],
      ];
      for (const [xml, code] of bad) await expectError(await putEnc(xml), code, 400, xml);
      await expectError(await getEnc(), "ServerSideEncryptionConfigurationNotFoundError", 404);

      await expectStatus(await putEnc(AES), 200);
      const doc = await expectStatus(await getEnc(), 200);
      assert(doc.includes(`xmlns="${NAMESPACE[dialect]}"`), doc);
      assertEquals(xmlValue(doc, "SSEAlgorithm"), "AES256");
      assertEquals(xmlValue(doc, "BucketKeyEnabled"), "false");

      const put = await req({ method: "PUT", path: objectPath(bucket, "k"), body: "hello" });
      await expectStatus(put, 200);
      assertEquals(put.headers.get(kms), "AES256");
      const get = await req({ method: "GET", path: objectPath(bucket, "k") });
      assertEquals(await expectStatus(get, 200), "hello");
      assertEquals(get.headers.get(kms), "AES256");

      await expectStatus(
        await req({ method: "DELETE", path: `/${bucket}`, query: [["encryption", ""]] }),
        204,
      );
      await expectError(await getEnc(), "ServerSideEncryptionConfigurationNotFoundError", 404);
      await expectError(
        await req({ method: "GET", path: "/no-such-enc", query: [["encryption", ""]] }),
        "NoSuchBucket",
        404,
      );
    }
  });
});
