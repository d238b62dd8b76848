// CopyObject and DeleteObjects through the AWS SDK, plus raw requests for their edge cases.
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutBucketVersioningCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { assert, assertBytesEqual, assertEquals, assertRejectsCode } from "./assert.ts";
import { randomBytes, s3Client, withServer } from "./server.ts";
import { signedFetch, xmlValue, xmlValues } from "./signer.ts";

Deno.test("CopyObject", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "src" }));
    await s3.send(new CreateBucketCommand({ Bucket: "dst" }));
    const big = randomBytes(1024 * 1024);
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: "src",
        Key: "dir/big file+.bin",
        Body: big,
        ContentType: "application/x-big",
        Metadata: { color: "blue" },
      }),
    );
    await s3.send(
      new PutObjectCommand({ Bucket: "src", Key: "small", Body: "tiny", Metadata: { a: "1" } }),
    );

    await t.step("across buckets with the COPY directive", async () => {
      const out = await s3.send(
        new CopyObjectCommand({
          Bucket: "dst",
          Key: "copy.bin",
          CopySource: "src/dir/big%20file%2B.bin",
        }),
      );
      assertEquals(out.CopyObjectResult?.ETag, put.ETag);
      assert(out.CopyObjectResult?.LastModified instanceof Date, "LastModified");
      const got = await s3.send(new GetObjectCommand({ Bucket: "dst", Key: "copy.bin" }));
      assertEquals(got.ContentType, "application/x-big");
      assertEquals(got.Metadata, { color: "blue" });
      assertBytesEqual(await got.Body!.transformToByteArray(), big);
    });

    await t.step("the copy is independent of its source", async () => {
      await s3.send(
        new PutObjectCommand({ Bucket: "src", Key: "dir/big file+.bin", Body: "replaced" }),
      );
      const got = await s3.send(new GetObjectCommand({ Bucket: "dst", Key: "copy.bin" }));
      assertBytesEqual(await got.Body!.transformToByteArray(), big);
    });

    await t.step("REPLACE directive takes new metadata", async () => {
      await s3.send(
        new CopyObjectCommand({
          Bucket: "dst",
          Key: "small-copy",
          CopySource: "/src/small",
          MetadataDirective: "REPLACE",
          Metadata: { b: "2" },
          ContentType: "text/x-new",
        }),
      );
      const head = await s3.send(new HeadObjectCommand({ Bucket: "dst", Key: "small-copy" }));
      assertEquals(head.Metadata, { b: "2" });
      assertEquals(head.ContentType, "text/x-new");
    });

    await t.step("copying onto itself needs REPLACE", async () => {
      await assertRejectsCode(
        () =>
          s3.send(new CopyObjectCommand({ Bucket: "src", Key: "small", CopySource: "src/small" })),
        "InvalidRequest",
        400,
      );
      await s3.send(
        new CopyObjectCommand({
          Bucket: "src",
          Key: "small",
          CopySource: "src/small",
          MetadataDirective: "REPLACE",
          Metadata: { a: "changed" },
        }),
      );
      const head = await s3.send(new HeadObjectCommand({ Bucket: "src", Key: "small" }));
      assertEquals(head.Metadata, { a: "changed" });
      const body = await (await s3.send(new GetObjectCommand({ Bucket: "src", Key: "small" })))
        .Body!
        .transformToString();
      assertEquals(body, "tiny");
    });

    await t.step(
      "an older version copied over its own key restores it; the current one does not",
      async () => {
        await s3.send(new CreateBucketCommand({ Bucket: "versioned" }));
        await s3.send(
          new PutBucketVersioningCommand({
            Bucket: "versioned",
            VersioningConfiguration: { Status: "Enabled" },
          }),
        );
        const first = await s3.send(
          new PutObjectCommand({ Bucket: "versioned", Key: "doc", Body: "first" }),
        );
        const second = await s3.send(
          new PutObjectCommand({ Bucket: "versioned", Key: "doc", Body: "second" }),
        );
        await assertRejectsCode(
          () =>
            s3.send(
              new CopyObjectCommand({
                Bucket: "versioned",
                Key: "doc",
                CopySource: `versioned/doc?versionId=${second.VersionId}`,
              }),
            ),
          "InvalidRequest",
          400,
        );
        const restored = await s3.send(
          new CopyObjectCommand({
            Bucket: "versioned",
            Key: "doc",
            CopySource: `versioned/doc?versionId=${first.VersionId}`,
          }),
        );
        assertEquals(restored.CopySourceVersionId, first.VersionId);
        const body =
          await (await s3.send(new GetObjectCommand({ Bucket: "versioned", Key: "doc" })))
            .Body!.transformToString();
        assertEquals(body, "first");
      },
    );

    await t.step("copy-source conditions", async () => {
      const head = await s3.send(new HeadObjectCommand({ Bucket: "src", Key: "small" }));
      await s3.send(
        new CopyObjectCommand({
          Bucket: "dst",
          Key: "c1",
          CopySource: "src/small",
          CopySourceIfMatch: head.ETag,
        }),
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new CopyObjectCommand({
              Bucket: "dst",
              Key: "c2",
              CopySource: "src/small",
              CopySourceIfMatch: '"x"',
            }),
          ),
        "PreconditionFailed",
        412,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new CopyObjectCommand({
              Bucket: "dst",
              Key: "c3",
              CopySource: "src/small",
              CopySourceIfNoneMatch: head.ETag,
            }),
          ),
        "PreconditionFailed",
        412,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new CopyObjectCommand({
              Bucket: "dst",
              Key: "c4",
              CopySource: "src/small",
              CopySourceIfModifiedSince: new Date(Date.now() + 3600_000),
            }),
          ),
        "PreconditionFailed",
        412,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new CopyObjectCommand({
              Bucket: "dst",
              Key: "c5",
              CopySource: "src/small",
              CopySourceIfUnmodifiedSince: new Date(Date.now() - 3600_000),
            }),
          ),
        "PreconditionFailed",
        412,
      );
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: "dst", Prefix: "c" }));
      assertEquals(listed.Contents?.map((c) => c.Key), ["c1", "copy.bin"]);
    });

    await t.step("copy errors", async () => {
      await assertRejectsCode(
        () =>
          s3.send(new CopyObjectCommand({ Bucket: "dst", Key: "x", CopySource: "src/missing" })),
        "NoSuchKey",
        404,
      );
      await assertRejectsCode(
        () => s3.send(new CopyObjectCommand({ Bucket: "dst", Key: "x", CopySource: "nobucket/k" })),
        "NoSuchBucket",
        404,
      );
      await assertRejectsCode(
        () =>
          s3.send(new CopyObjectCommand({ Bucket: "nobucket", Key: "x", CopySource: "src/small" })),
        "NoSuchBucket",
        404,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new CopyObjectCommand({
              Bucket: "dst",
              Key: "x",
              CopySource: "src/small",
              MetadataDirective: "MOVE" as "COPY",
            }),
          ),
        "InvalidArgument",
        400,
      );
    });
  });
});

function md5Base64(text: string): string {
  return createHash("md5").update(text).digest("base64");
}

Deno.test("DeleteObjects", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "multi";
    await s3.send(new CreateBucketCommand({ Bucket }));
    const keys = Array.from({ length: 30 }, (_, i) => `k${String(i).padStart(2, "0")}`);
    await Promise.all(keys.map((Key) => s3.send(new PutObjectCommand({ Bucket, Key, Body: Key }))));

    await t.step("verbose result lists every deleted key", async () => {
      const out = await s3.send(
        new DeleteObjectsCommand({
          Bucket,
          Delete: { Objects: [{ Key: "k00" }, { Key: "k01" }, { Key: "not-there" }] },
        }),
      );
      assertEquals(out.Deleted?.map((d) => d.Key).sort(), ["k00", "k01", "not-there"]);
      assertEquals(out.Errors, undefined);
    });

    await t.step("quiet mode reports only errors", async () => {
      const out = await s3.send(
        new DeleteObjectsCommand({
          Bucket,
          Delete: { Quiet: true, Objects: keys.slice(2, 10).map((Key) => ({ Key })) },
        }),
      );
      assertEquals(out.Deleted, undefined);
      const listed = await s3.send(new ListObjectsV2Command({ Bucket }));
      assertEquals(listed.Contents?.map((c) => c.Key), keys.slice(10));
    });

    await t.step("keys with line breaks and tabs (sent as character references)", async () => {
      const odd = ["line\nbreak", "carriage\rreturn", "tab\there", "amp&#x41;literal"];
      await Promise.all(
        odd.map((Key) => s3.send(new PutObjectCommand({ Bucket, Key, Body: Key }))),
      );
      const out = await s3.send(
        new DeleteObjectsCommand({ Bucket, Delete: { Objects: odd.map((Key) => ({ Key })) } }),
      );
      assertEquals(out.Deleted?.map((d) => d.Key).sort(), [...odd].sort());
      const listed = await s3.send(new ListObjectsV2Command({ Bucket, Prefix: "" }));
      for (const key of odd) assert(!listed.Contents?.some((c) => c.Key === key), `${key} is gone`);
    });

    await t.step("per-key errors", async () => {
      const out = await s3.send(
        new DeleteObjectsCommand({
          Bucket,
          Delete: {
            Objects: [{ Key: "k10" }, { Key: "k11", VersionId: "no-such-version" }, {
              Key: "x".repeat(1025),
            }],
          },
        }),
      );
      assertEquals(out.Deleted?.map((d) => d.Key).sort(), ["k10", "k11"]);
      assertEquals(out.Errors?.map((e) => e.Code), ["InvalidArgument"]);
      const still = await s3.send(new GetObjectCommand({ Bucket, Key: "k11" }));
      assertEquals(await still.Body!.transformToString(), "k11");
    });

    await t.step("raw request with Content-MD5, and its failures", async () => {
      const xml =
        `<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>k12</Key></Object></Delete>`;
      const ok = await signedFetch(server, {
        method: "POST",
        path: `/${Bucket}`,
        query: [["delete", ""]],
        headers: { "content-md5": md5Base64(xml) },
        body: xml,
      });
      const okXml = await ok.text();
      assertEquals(ok.status, 200);
      assertEquals(xmlValues(okXml, "Key"), ["k12"]);
      const noMd5 = await signedFetch(server, {
        method: "POST",
        path: `/${Bucket}`,
        query: [["delete", ""]],
        body: xml,
      });
      assertEquals(noMd5.status, 400);
      assertEquals(xmlValue(await noMd5.text(), "Code"), "InvalidRequest");
      const badMd5 = await signedFetch(server, {
        method: "POST",
        path: `/${Bucket}`,
        query: [["delete", ""]],
        headers: { "content-md5": md5Base64("other") },
        body: xml.replace("k12", "k13"),
      });
      assertEquals(xmlValue(await badMd5.text(), "Code"), "BadDigest");
      const tooMany = `<Delete>${"<Object><Key>a</Key></Object>".repeat(1001)}</Delete>`;
      const many = await signedFetch(server, {
        method: "POST",
        path: `/${Bucket}`,
        query: [["delete", ""]],
        headers: { "content-md5": md5Base64(tooMany) },
        body: tooMany,
      });
      assertEquals(many.status, 400);
      assertEquals(xmlValue(await many.text(), "Code"), "MalformedXML");
      const still = await s3.send(new GetObjectCommand({ Bucket, Key: "k13" }));
      assertEquals(await still.Body!.transformToString(), "k13");
    });

    await t.step("DeleteObjects on a missing bucket", async () => {
      await assertRejectsCode(
        () =>
          s3.send(
            new DeleteObjectsCommand({ Bucket: "nope", Delete: { Objects: [{ Key: "a" }] } }),
          ),
        "NoSuchBucket",
        404,
      );
    });
  });
});
