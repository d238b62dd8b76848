// Conditional writes through the JavaScript SDK: If-None-Match: * and If-Match on PutObject and
// CompleteMultipartUpload (412, 404, 409), delete markers, and concurrent conditional writers
// of one key, of which exactly one may win.
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { expectError } from "./access_helpers.ts";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { randomBytes, s3Client, withServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";

async function body(s3: S3Client, bucket: string, key: string): Promise<string> {
  const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return await got.Body!.transformToString();
}

/** The error code of a failed send, or "ok". */
function outcome(p: Promise<unknown>): Promise<string> {
  return p.then(() => "ok", (err) => (err as { name: string }).name);
}

async function onePartUpload(s3: S3Client, bucket: string, key: string, data: Uint8Array) {
  const { UploadId } = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }),
  );
  const part = await s3.send(
    new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: 1, Body: data }),
  );
  return { UploadId: UploadId!, Parts: [{ PartNumber: 1, ETag: part.ETag }] };
}

Deno.test("conditional writes", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "cond" }));

    await t.step("If-None-Match: * creates once, then 412 and nothing changes", async () => {
      await s3.send(
        new PutObjectCommand({ Bucket: "cond", Key: "a", Body: "one", IfNoneMatch: "*" }),
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectCommand({ Bucket: "cond", Key: "a", Body: "two", IfNoneMatch: "*" }),
          ),
        "PreconditionFailed",
        412,
      );
      assertEquals(await body(s3, "cond", "a"), "one");
    });

    await t.step(
      "If-Match: the current ETag writes, another is 412, a missing key 404",
      async () => {
        const first = await s3.send(new PutObjectCommand({ Bucket: "cond", Key: "m", Body: "v1" }));
        const second = await s3.send(
          new PutObjectCommand({ Bucket: "cond", Key: "m", Body: "v2", IfMatch: first.ETag }),
        );
        await assertRejectsCode(
          () =>
            s3.send(
              new PutObjectCommand({ Bucket: "cond", Key: "m", Body: "v3", IfMatch: first.ETag }),
            ),
          "PreconditionFailed",
          412,
        );
        assertEquals(await body(s3, "cond", "m"), "v2");
        // Unquoted ETags match too.
        await s3.send(
          new PutObjectCommand({
            Bucket: "cond",
            Key: "m",
            Body: "v4",
            IfMatch: second.ETag!.replaceAll('"', ""),
          }),
        );
        await assertRejectsCode(
          () =>
            s3.send(
              new PutObjectCommand({ Bucket: "cond", Key: "none", Body: "x", IfMatch: first.ETag }),
            ),
          "NoSuchKey",
          404,
        );
      },
    );

    await t.step("If-None-Match other than * is not implemented", async () => {
      const res = await signedFetch(server, {
        method: "PUT",
        path: objectPath("cond", "n"),
        headers: { "if-none-match": '"abc"' },
        body: "x",
      });
      await expectError(res, "NotImplemented", 501);
    });

    await t.step("a delete marker counts as no object", async () => {
      await s3.send(new CreateBucketCommand({ Bucket: "condv" }));
      await s3.send(
        new PutBucketVersioningCommand({
          Bucket: "condv",
          VersioningConfiguration: { Status: "Enabled" },
        }),
      );
      const put = await s3.send(new PutObjectCommand({ Bucket: "condv", Key: "k", Body: "1" }));
      await s3.send(new DeleteObjectCommand({ Bucket: "condv", Key: "k" }));
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectCommand({ Bucket: "condv", Key: "k", Body: "x", IfMatch: put.ETag }),
          ),
        "NoSuchKey",
        404,
      );
      await s3.send(
        new PutObjectCommand({ Bucket: "condv", Key: "k", Body: "2", IfNoneMatch: "*" }),
      );
      assertEquals(await body(s3, "condv", "k"), "2");
    });

    await t.step("concurrent If-None-Match: * writers of one key: exactly one wins", async () => {
      const bodies = Array.from({ length: 6 }, () => randomBytes(512 * 1024));
      const results = await Promise.all(
        bodies.map((data) =>
          outcome(
            s3.send(
              new PutObjectCommand({ Bucket: "cond", Key: "race", Body: data, IfNoneMatch: "*" }),
            ),
          )
        ),
      );
      assertEquals(results.filter((r) => r === "ok").length, 1, results.join(","));
      for (const r of results) {
        assert(["ok", "PreconditionFailed", "ConditionalRequestConflict"].includes(r), r);
      }
      const stored = await s3.send(new GetObjectCommand({ Bucket: "cond", Key: "race" }));
      const bytes = await stored.Body!.transformToByteArray();
      const winner = bodies[results.indexOf("ok")];
      assertEquals(bytes.byteLength, winner.byteLength);
      assert(bytes.every((b, i) => b === winner[i]), "the winner's bytes are stored");
    });

    await t.step("concurrent If-Match writers with the same ETag: exactly one wins", async () => {
      const base = await s3.send(new PutObjectCommand({ Bucket: "cond", Key: "cas", Body: "0" }));
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) =>
        outcome(s3.send(
          new PutObjectCommand({
            Bucket: "cond",
            Key: "cas",
            Body: randomBytes(256 * 1024 + i),
            IfMatch: base.ETag,
          }),
        ))));
      assertEquals(results.filter((r) => r === "ok").length, 1, results.join(","));
      // Losers that started before the winner committed lose at the commit (409), later ones
      // at the start (412).
      for (const r of results) {
        assert(["ok", "PreconditionFailed", "ConditionalRequestConflict"].includes(r), r);
      }
    });

    await t.step("CompleteMultipartUpload honours If-None-Match and If-Match", async () => {
      const data = randomBytes(1024);
      const up = await onePartUpload(s3, "cond", "a", data);
      await assertRejectsCode(
        () =>
          s3.send(
            new CompleteMultipartUploadCommand({
              Bucket: "cond",
              Key: "a",
              UploadId: up.UploadId,
              MultipartUpload: { Parts: up.Parts },
              IfNoneMatch: "*",
            }),
          ),
        "PreconditionFailed",
        412,
      );
      assertEquals(await body(s3, "cond", "a"), "one");
      const missing = await onePartUpload(s3, "cond", "mp-missing", data);
      await assertRejectsCode(
        () =>
          s3.send(
            new CompleteMultipartUploadCommand({
              Bucket: "cond",
              Key: "mp-missing",
              UploadId: missing.UploadId,
              MultipartUpload: { Parts: missing.Parts },
              IfMatch: '"0123456789abcdef0123456789abcdef"',
            }),
          ),
        "NoSuchKey",
        404,
      );
      // A refused completion leaves the upload in place: it completes without the condition.
      const done = await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: "cond",
          Key: "a",
          UploadId: up.UploadId,
          MultipartUpload: { Parts: up.Parts },
          IfMatch: (await s3.send(new GetObjectCommand({ Bucket: "cond", Key: "a" }))).ETag,
        }),
      );
      assert(done.ETag?.endsWith('-1"'), `multipart ETag ${done.ETag}`);
    });

    await t.step("concurrent completions with If-None-Match: * of one key: one wins", async () => {
      const uploads = await Promise.all(
        [1, 2, 3].map(() => onePartUpload(s3, "cond", "mp-race", randomBytes(2048))),
      );
      const results = await Promise.all(uploads.map((up) =>
        outcome(s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: "cond",
            Key: "mp-race",
            UploadId: up.UploadId,
            MultipartUpload: { Parts: up.Parts },
            IfNoneMatch: "*",
          }),
        ))
      ));
      assertEquals(results.filter((r) => r === "ok").length, 1, results.join(","));
    });
  });
});
