// SSE-KMS with local keys: the admin API (/admin/kms/keys), objects encrypted under named keys
// and the default key (SDK and raw requests in both dialects), keys disabled, rotated and
// re-enabled around reads, bucket defaults naming a key, multipart uploads and copies, the
// protocol's errors for invalid header combinations, SSE-S3 objects unaffected, and a restart.
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutBucketEncryptionCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import {
  assert,
  assertBytesEqual,
  assertEquals,
  assertRejectsCode,
  assertRejectsStatus,
} from "./assert.ts";
import { adminApi, DIALECTS, expectError, expectStatus } from "./access_helpers.ts";
import { randomBytes, s3Client, startServer, type TestServer } from "./server.ts";
import { headerName, objectPath, signedFetch } from "./signer.ts";

/** The stored SSE record of the latest version of `key`. */
function sseOf(dataDir: string, bucket: string, key: string): Record<string, unknown> {
  const db = new DatabaseSync(join(dataDir, "meta.db"), { readOnly: true });
  try {
    const row = db.prepare(
      "SELECT sse FROM versions WHERE bucket = ? AND key = ? AND is_latest = 1",
    ).get(bucket, key) as { sse: string | null };
    return row.sse === null ? {} : JSON.parse(row.sse);
  } finally {
    db.close();
  }
}

async function read(s3: S3Client, Bucket: string, Key: string): Promise<Uint8Array> {
  const got = await s3.send(new GetObjectCommand({ Bucket, Key }));
  return await got.Body!.transformToByteArray();
}

const CONTEXT = btoa(JSON.stringify({ project: "alpha" }));

Deno.test("KMS keys: admin API, SSE-KMS objects, disable/rotate/enable, defaults, restart", async (t) => {
  let server: TestServer = await startServer();
  const dataDir = server.dataDir;
  try {
    let s3 = s3Client(server);
    const Bucket = "kms";
    await s3.send(new CreateBucketCommand({ Bucket }));
    const data = randomBytes(150_000);
    const early = randomBytes(10_000);
    await s3.send(
      new PutObjectCommand({ Bucket, Key: "sse-s3", Body: early, ServerSideEncryption: "AES256" }),
    );

    await t.step("admin API: create, list, get, refusals", async () => {
      const made = await adminApi(server, "POST", "/kms/keys", { id: "k1", description: "one" });
      assertEquals(made.status, 201, JSON.stringify(made.json));
      assertEquals([made.json!.id, made.json!.state, made.json!.current_version], [
        "k1",
        "enabled",
        1,
      ]);
      assertEquals((await adminApi(server, "POST", "/kms/keys", { id: "k2" })).status, 201);
      const dup = await adminApi(server, "POST", "/kms/keys", { id: "k1" });
      assertEquals([dup.status, (dup.json!.error as { code: string }).code], [409, "key_exists"]);
      for (const bad of [{ id: "" }, { id: "a b" }, { id: 5 }, { id: "ok", extra: 1 }]) {
        assertEquals((await adminApi(server, "POST", "/kms/keys", bad)).status, 400);
      }
      const list = await adminApi(server, "GET", "/kms/keys");
      assertEquals((list.json!.keys as { id: string }[]).map((k) => k.id), ["k1", "k2"]);
      assertEquals((await adminApi(server, "GET", "/kms/keys/k1")).json!.description, "one");
      assertEquals((await adminApi(server, "GET", "/kms/keys/nope")).status, 404);
      assertEquals((await adminApi(server, "POST", "/kms/keys/nope/rotate")).status, 404);
      assertEquals((await adminApi(server, "DELETE", "/kms/keys/k1")).status, 405);
      const anonymous = await fetch(`${server.url}/admin/kms/keys`);
      assertEquals(anonymous.status, 401);
      await anonymous.body?.cancel();
    });

    await t.step("SDK: SSE-KMS under a named key, echoed with its context", async () => {
      const put = await s3.send(
        new PutObjectCommand({
          Bucket,
          Key: "a",
          Body: data,
          ServerSideEncryption: "aws:kms",
          SSEKMSKeyId: "k1",
          SSEKMSEncryptionContext: CONTEXT,
        }),
      );
      assertEquals(
        [put.ServerSideEncryption, put.SSEKMSKeyId, put.SSEKMSEncryptionContext],
        ["aws:kms", "k1", CONTEXT],
      );
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "a" }));
      assertEquals([got.ServerSideEncryption, got.SSEKMSKeyId], ["aws:kms", "k1"]);
      assertBytesEqual(await got.Body!.transformToByteArray(), data);
      const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "a" }));
      assertEquals(head.SSEKMSKeyId, "k1");
      const sse = sseOf(dataDir, Bucket, "a");
      assertEquals([sse.kind, sse.keyId, sse.keyVersion, sse.context], ["kms", "k1", 1, CONTEXT]);
      // A key ARN names the key too.
      const arn = await s3.send(
        new PutObjectCommand({
          Bucket,
          Key: "arn",
          Body: data,
          ServerSideEncryption: "aws:kms",
          SSEKMSKeyId: "arn:aws:kms:us-east-1:000000000000:key/k2",
        }),
      );
      assertEquals(arn.SSEKMSKeyId, "k2");
    });

    await t.step("without a key id the default key is used (created on first use)", async () => {
      const put = await s3.send(
        new PutObjectCommand({ Bucket, Key: "d", Body: data, ServerSideEncryption: "aws:kms" }),
      );
      assertEquals(put.SSEKMSKeyId, "default");
      assertBytesEqual(await read(s3, Bucket, "d"), data);
      const key = await adminApi(server, "GET", "/kms/keys/default");
      assertEquals([key.status, key.json!.state], [200, "enabled"]);
    });

    await t.step("a disabled key makes its objects unreadable until enabled again", async () => {
      const off = await adminApi(server, "POST", "/kms/keys/k1/disable");
      assertEquals([off.status, off.json!.state], [200, "disabled"]);
      await assertRejectsCode(() => read(s3, Bucket, "a"), "KMS.DisabledException");
      await assertRejectsStatus(() => s3.send(new HeadObjectCommand({ Bucket, Key: "a" })), 400);
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectCommand({
              Bucket,
              Key: "b",
              Body: data,
              ServerSideEncryption: "aws:kms",
              SSEKMSKeyId: "k1",
            }),
          ),
        "KMS.DisabledException",
      );
      // Other keys' objects and SSE-S3 objects are unaffected.
      assertBytesEqual(await read(s3, Bucket, "d"), data);
      assertBytesEqual(await read(s3, Bucket, "sse-s3"), early);
      const on = await adminApi(server, "POST", "/kms/keys/k1/enable");
      assertEquals([on.status, on.json!.state], [200, "enabled"]);
      assertBytesEqual(await read(s3, Bucket, "a"), data);
    });

    await t.step("rotation: new objects use the new version, older ones still read", async () => {
      const rotated = await adminApi(server, "POST", "/kms/keys/k1/rotate");
      assertEquals(rotated.json!.current_version, 2);
      await s3.send(
        new PutObjectCommand({
          Bucket,
          Key: "after-rotate",
          Body: data,
          ServerSideEncryption: "aws:kms",
          SSEKMSKeyId: "k1",
        }),
      );
      assertEquals(sseOf(dataDir, Bucket, "after-rotate").keyVersion, 2);
      assertBytesEqual(await read(s3, Bucket, "a"), data);
      assertBytesEqual(await read(s3, Bucket, "after-rotate"), data);
      // Disabled after rotation: both versions' objects refused; enabled: both read.
      await adminApi(server, "POST", "/kms/keys/k1/disable");
      await assertRejectsCode(() => read(s3, Bucket, "a"), "KMS.DisabledException");
      await assertRejectsCode(() => read(s3, Bucket, "after-rotate"), "KMS.DisabledException");
      await adminApi(server, "POST", "/kms/keys/k1/enable");
      assertBytesEqual(await read(s3, Bucket, "after-rotate"), data);
    });

    await t.step("unknown keys, multipart uploads and copies", async () => {
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectCommand({
              Bucket,
              Key: "x",
              Body: data,
              ServerSideEncryption: "aws:kms",
              SSEKMSKeyId: "missing",
            }),
          ),
        "KMS.NotFoundException",
      );
      const mp = await s3.send(
        new CreateMultipartUploadCommand({
          Bucket,
          Key: "mp",
          ServerSideEncryption: "aws:kms",
          SSEKMSKeyId: "k2",
        }),
      );
      assertEquals(mp.SSEKMSKeyId, "k2");
      const parts = [randomBytes(5 * 1024 * 1024), randomBytes(2000)];
      const done = [];
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
        assertEquals(up.SSEKMSKeyId, "k2");
        done.push({ ETag: up.ETag, PartNumber: i + 1 });
      }
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket,
          Key: "mp",
          UploadId: mp.UploadId,
          MultipartUpload: { Parts: done },
        }),
      );
      assertBytesEqual(await read(s3, Bucket, "mp"), new Uint8Array([...parts[0], ...parts[1]]));
      assertEquals(sseOf(dataDir, Bucket, "mp").keyId, "k2");

      const toK2 = await s3.send(
        new CopyObjectCommand({
          Bucket,
          Key: "a-k2",
          CopySource: `${Bucket}/a`,
          ServerSideEncryption: "aws:kms",
          SSEKMSKeyId: "k2",
        }),
      );
      assertEquals(toK2.SSEKMSKeyId, "k2");
      assertBytesEqual(await read(s3, Bucket, "a-k2"), data);
      const plain = await s3.send(
        new CopyObjectCommand({ Bucket, Key: "a-plain", CopySource: `${Bucket}/a` }),
      );
      assertEquals(plain.ServerSideEncryption, undefined);
      assertBytesEqual(await read(s3, Bucket, "a-plain"), data);
      // The copy under k2 stays readable while k1 is disabled.
      await adminApi(server, "POST", "/kms/keys/k1/disable");
      assertBytesEqual(await read(s3, Bucket, "a-k2"), data);
      await adminApi(server, "POST", "/kms/keys/k1/enable");
    });

    await t.step("bucket default encryption naming a key", async () => {
      await s3.send(new CreateBucketCommand({ Bucket: "kms-default" }));
      await assertRejectsCode(
        () =>
          s3.send(
            new PutBucketEncryptionCommand({
              Bucket: "kms-default",
              ServerSideEncryptionConfiguration: {
                Rules: [{
                  ApplyServerSideEncryptionByDefault: {
                    SSEAlgorithm: "aws:kms",
                    KMSMasterKeyID: "missing",
                  },
                }],
              },
            }),
          ),
        "KMS.NotFoundException",
      );
      await s3.send(
        new PutBucketEncryptionCommand({
          Bucket: "kms-default",
          ServerSideEncryptionConfiguration: {
            Rules: [{
              ApplyServerSideEncryptionByDefault: { SSEAlgorithm: "aws:kms", KMSMasterKeyID: "k2" },
            }],
          },
        }),
      );
      const put = await s3.send(
        new PutObjectCommand({ Bucket: "kms-default", Key: "o", Body: data }),
      );
      assertEquals([put.ServerSideEncryption, put.SSEKMSKeyId], ["aws:kms", "k2"]);
      assertBytesEqual(await read(s3, "kms-default", "o"), data);
    });

    await t.step("after a restart every key and object still reads", async () => {
      await server.stop();
      server = await startServer({ dataDir });
      s3 = s3Client(server);
      for (const key of ["a", "after-rotate", "d", "mp", "a-k2"]) {
        assert((await read(s3, Bucket, key)).byteLength > 0, key);
      }
      assertBytesEqual(await read(s3, Bucket, "sse-s3"), early);
      const list = await adminApi(server, "GET", "/kms/keys");
      assertEquals(list.json!.total, 3);
    });
  } finally {
    await server.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("SSE-KMS: raw requests and header errors in both dialects", async () => {
  const server = await startServer();
  try {
    assertEquals((await adminApi(server, "POST", "/kms/keys", { id: "raw" })).status, 201);
    for (const dialect of DIALECTS) {
      const bucket = `kms-raw-${dialect}`;
      const req = (r: Parameters<typeof signedFetch>[1]) => signedFetch(server, { dialect, ...r });
      await expectStatus(await req({ method: "PUT", path: `/${bucket}` }), 200);
      const sse = headerName(dialect, "server-side-encryption");
      const vendor = dialect === "amz" ? "aws" : "store";
      const keyId = headerName(dialect, `server-side-encryption-${vendor}-kms-key-id`);
      const context = headerName(dialect, "server-side-encryption-context");
      const algorithm = `${vendor}:kms`;
      const put = (headers: Record<string, string>) =>
        req({ method: "PUT", path: objectPath(bucket, "o"), headers, body: "secret text" });

      const ok = await put({ [sse]: algorithm, [keyId]: "raw", [context]: CONTEXT });
      await expectStatus(ok, 200);
      assertEquals(
        [ok.headers.get(sse), ok.headers.get(keyId), ok.headers.get(context)],
        [algorithm, "raw", CONTEXT],
      );
      const get = await req({ method: "GET", path: objectPath(bucket, "o") });
      assertEquals(await expectStatus(get, 200), "secret text");
      assertEquals([get.headers.get(sse), get.headers.get(keyId)], [algorithm, "raw"]);

      const refused: [Record<string, string>, string][] = [
        [{ [keyId]: "raw" }, "InvalidArgument"],
        [{ [sse]: "AES256", [keyId]: "raw" }, "InvalidArgument"],
        [{ [context]: CONTEXT }, "InvalidArgument"],
        [{ [sse]: algorithm, [context]: "%%%" }, "InvalidArgument"],
        [{ [sse]: algorithm, [context]: btoa('{"n":1}') }, "InvalidArgument"],
        [{ [sse]: algorithm, [keyId]: "nope" }, "KMS.NotFoundException"],
        [{ [sse]: algorithm, [keyId]: "bad id!" }, "KMS.NotFoundException"],
      ];
      for (const [headers, code] of refused) {
        await expectError(await put(headers), code, 400, JSON.stringify(headers));
      }
      await adminApi(server, "POST", "/kms/keys/raw/disable");
      const disabled = await expectError(
        await req({ method: "GET", path: objectPath(bucket, "o") }),
        "KMS.DisabledException",
        400,
      );
      assert(disabled.includes("raw is disabled"), disabled);
      await adminApi(server, "POST", "/kms/keys/raw/enable");
      await expectStatus(await req({ method: "GET", path: objectPath(bucket, "o") }), 200);
    }
  } finally {
    await server.stop();
    await Deno.remove(server.dataDir, { recursive: true }).catch(() => {});
  }
});
