// Streaming (chunked) uploads: raw requests in the store dialect with signed chunks, signed and
// unsigned trailers, and broken bodies that must leave nothing stored; then the amz dialect
// through the real SDK, which frames streams as aws-chunked with a trailing CRC32.
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { assert, assertBytesEqual, assertEquals } from "./assert.ts";
import { checksum, composite, sendChunked } from "./chunked_helpers.ts";
import { chunkCount, randomBytes, s3Client, type TestServer, withServer } from "./server.ts";
import { objectPath, signedFetch, xmlValue } from "./signer.ts";

const BUCKET = "streams";
const MiB = 1024 * 1024;

function md5Hex(data: Uint8Array): string {
  return createHash("md5").update(data).digest("hex");
}

async function get(server: TestServer, key: string, headers: Record<string, string> = {}) {
  const res = await signedFetch(server, { method: "GET", path: objectPath(BUCKET, key), headers });
  return { res, body: new Uint8Array(await res.arrayBuffer()) };
}

async function expectError(res: Response, status: number, code: string): Promise<void> {
  const text = await res.text();
  assertEquals(res.status, status, text);
  assertEquals(xmlValue(text, "Code"), code, text);
}

/** The key must not exist: nothing was stored by the failed request. */
async function assertAbsent(server: TestServer, key: string): Promise<void> {
  const { res } = await get(server, key);
  assertEquals(res.status, 404, `${key} must not exist`);
}

Deno.test("streaming uploads, store dialect (raw requests)", async (t) => {
  await withServer(async (server) => {
    const made = await signedFetch(server, { method: "PUT", path: objectPath(BUCKET) });
    assertEquals(made.status, 200);
    const data = randomBytes(300 * 1024 + 17);

    await t.step("signed chunks, sent whole and as a stream of small pieces", async () => {
      for (const pieces of [undefined, 1000]) {
        const key = `signed-${pieces ?? "whole"}`;
        const res = await sendChunked(server, {
          path: objectPath(BUCKET, key),
          data,
          chunkSize: 64 * 1024,
          mode: "signed",
          pieces,
        });
        assertEquals(res.status, 200, await res.text());
        assertEquals(res.headers.get("etag"), `"${md5Hex(data)}"`);
        const back = await get(server, key);
        assertBytesEqual(back.body, data);
        assertEquals(back.res.headers.get("content-encoding"), null, "store-chunked is stripped");
      }
    });

    await t.step("other content codings are kept, the chunked coding is not", async () => {
      const res = await sendChunked(server, {
        path: objectPath(BUCKET, "coded"),
        data: data.subarray(0, 1000),
        chunkSize: 300,
        mode: "signed",
        headers: { "content-encoding": "store-chunked, x-custom" },
      });
      assertEquals(res.status, 200, await res.text());
      const back = await get(server, "coded");
      assertEquals(back.res.headers.get("content-encoding"), "x-custom");
      assertBytesEqual(back.body, data.subarray(0, 1000));
    });

    await t.step("an empty object", async () => {
      const res = await sendChunked(server, {
        path: objectPath(BUCKET, "empty"),
        data: new Uint8Array(0),
        chunkSize: 1024,
        mode: "signed",
      });
      assertEquals(res.status, 200, await res.text());
      assertEquals((await get(server, "empty")).body.byteLength, 0);
    });

    await t.step("a corrupted chunk signature stores nothing", async () => {
      const big = randomBytes(9 * MiB);
      const before = await chunkCount(server);
      for (
        const [name, tamper] of [
          // The second chunk's signature is changed.
          ["signature", (b: string) => {
            const sigs = [...b.matchAll(/chunk-signature=([0-9a-f]{64})/g)].map((m) => m[1]);
            return b.replace(sigs[1], sigs[1].slice(0, 63) + (sigs[1].endsWith("0") ? "1" : "0"));
          }],
          // A data byte in the last data chunk is changed (its signature no longer holds).
          ["data", (b: string) => b.slice(0, b.length - 200) + "\u00ff" + b.slice(b.length - 199)],
        ] as const
      ) {
        const res = await sendChunked(server, {
          path: objectPath(BUCKET, `bad-${name}`),
          data: big,
          chunkSize: MiB,
          mode: "signed",
          tamper,
        });
        await expectError(res, 403, "SignatureDoesNotMatch");
        await assertAbsent(server, `bad-${name}`);
      }
      // An existing object is not replaced by a failed upload either.
      const res = await sendChunked(server, {
        path: objectPath(BUCKET, "signed-whole"),
        data: big.subarray(0, 100_000),
        chunkSize: 8192,
        mode: "signed",
        tamper: (b) =>
          b.replace(/chunk-signature=[0-9a-f]{64}/, `chunk-signature=${"f".repeat(64)}`),
      });
      await expectError(res, 403, "SignatureDoesNotMatch");
      assertBytesEqual((await get(server, "signed-whole")).body, data);
      assertEquals(await chunkCount(server), before, "no chunk was recorded");
    });

    await t.step("signed chunks with a signed trailing checksum", async () => {
      const value = checksum("CRC32C", data);
      const res = await sendChunked(server, {
        path: objectPath(BUCKET, "trailed"),
        data,
        chunkSize: 100_000,
        mode: "signed-trailer",
        trailer: { name: "x-store-checksum-crc32c", value },
      });
      assertEquals(res.status, 200, await res.text());
      assertEquals(res.headers.get("x-store-checksum-crc32c"), value);
      const back = await get(server, "trailed", { "x-store-checksum-mode": "ENABLED" });
      assertBytesEqual(back.body, data);
      assertEquals(back.res.headers.get("x-store-checksum-crc32c"), value);
      assertEquals(back.res.headers.get("x-store-checksum-type"), "FULL_OBJECT");
    });

    await t.step("a wrong trailing checksum, correctly signed, is BadDigest", async () => {
      const res = await sendChunked(server, {
        path: objectPath(BUCKET, "wrong-trailer"),
        data,
        chunkSize: 100_000,
        mode: "signed-trailer",
        trailer: { name: "x-store-checksum-crc32c", value: checksum("CRC32C", data.subarray(1)) },
      });
      await expectError(res, 400, "BadDigest");
      await assertAbsent(server, "wrong-trailer");
    });

    await t.step("a trailer changed after signing is SignatureDoesNotMatch", async () => {
      const value = checksum("SHA256", data);
      const res = await sendChunked(server, {
        path: objectPath(BUCKET, "changed-trailer"),
        data,
        chunkSize: 100_000,
        mode: "signed-trailer",
        trailer: { name: "x-store-checksum-sha256", value },
        tamper: (b) => b.replace(value, checksum("SHA256", data.subarray(2))),
      });
      await expectError(res, 403, "SignatureDoesNotMatch");
      await assertAbsent(server, "changed-trailer");
    });

    await t.step("unsigned chunks with a trailing checksum", async () => {
      const value = checksum("CRC64NVME", data);
      const res = await sendChunked(server, {
        path: objectPath(BUCKET, "unsigned"),
        data,
        chunkSize: 50_000,
        mode: "unsigned-trailer",
        trailer: { name: "x-store-checksum-crc64nvme", value },
        pieces: 4096,
      });
      assertEquals(res.status, 200, await res.text());
      const back = await get(server, "unsigned", { "x-store-checksum-mode": "ENABLED" });
      assertBytesEqual(back.body, data);
      assertEquals(back.res.headers.get("x-store-checksum-crc64nvme"), value);
      const wrong = await sendChunked(server, {
        path: objectPath(BUCKET, "unsigned-wrong"),
        data,
        chunkSize: 50_000,
        mode: "unsigned-trailer",
        trailer: { name: "x-store-checksum-crc64nvme", value },
        // One data byte changed: only the trailing checksum can tell.
        tamper: (b) => {
          const at = b.indexOf("\r\n") + 2;
          return b.slice(0, at) + (b[at] === "x" ? "y" : "x") + b.slice(at + 1);
        },
      });
      await expectError(wrong, 400, "BadDigest");
      await assertAbsent(server, "unsigned-wrong");
    });

    await t.step("the decoded length is held to", async () => {
      for (const decodedLength of [data.byteLength - 1, data.byteLength + 1]) {
        const res = await sendChunked(server, {
          path: objectPath(BUCKET, "short"),
          data,
          chunkSize: 64 * 1024,
          mode: "signed",
          decodedLength,
        });
        await expectError(res, 400, "IncompleteBody");
      }
      await assertAbsent(server, "short");
    });

    await t.step("broken framing is refused", async () => {
      const cases: [string, (b: string) => string, number, string][] = [
        ["truncated", (b) => b.slice(0, 5000), 400, "IncompleteBody"],
        ["bad CRLF", (b) => b.replace("\r\n", "\n"), 400, "InvalidRequest"],
        [
          "size line too long",
          (b) => b.replace(";", ";x=" + "y".repeat(5000) + ";"),
          400,
          "InvalidRequest",
        ],
      ];
      for (const [name, tamper, status, code] of cases) {
        const res = await sendChunked(server, {
          path: objectPath(BUCKET, "broken"),
          data,
          chunkSize: 64 * 1024,
          mode: "signed",
          tamper,
        });
        await expectError(res, status, code).catch((err) => {
          throw new Error(`${name}: ${err.message}`);
        });
      }
      await assertAbsent(server, "broken");
    });

    await t.step("UploadPart with signed chunks", async () => {
      const create = await signedFetch(server, {
        method: "POST",
        path: objectPath(BUCKET, "parts"),
        query: [["uploads", ""]],
      });
      const uploadId = xmlValue(await create.text(), "UploadId")!;
      const parts = [randomBytes(5 * MiB), randomBytes(1234)];
      const etags: string[] = [];
      for (let i = 0; i < parts.length; i++) {
        const res = await sendChunked(server, {
          path: objectPath(BUCKET, "parts"),
          query: [["partNumber", String(i + 1)], ["uploadId", uploadId]],
          data: parts[i],
          chunkSize: MiB,
          mode: "signed-trailer",
          trailer: { name: "x-store-checksum-crc32", value: checksum("CRC32", parts[i]) },
        });
        assertEquals(res.status, 200, await res.text());
        assertEquals(res.headers.get("etag"), `"${md5Hex(parts[i])}"`);
        assertEquals(res.headers.get("x-store-checksum-crc32"), checksum("CRC32", parts[i]));
        etags.push(res.headers.get("etag")!);
      }
      const xml = `<CompleteMultipartUpload>${
        etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`)
          .join("")
      }</CompleteMultipartUpload>`;
      const done = await signedFetch(server, {
        method: "POST",
        path: objectPath(BUCKET, "parts"),
        query: [["uploadId", uploadId]],
        body: xml,
      });
      assertEquals(done.status, 200, await done.text());
      const back = await get(server, "parts");
      assertBytesEqual(back.body, new Uint8Array([...parts[0], ...parts[1]]));
    });
  });
});

Deno.test("streaming uploads, amz dialect (the SDK)", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const sent: Record<string, string>[] = [];
    s3.middlewareStack.add((next) => (args) => {
      sent.push({ ...(args.request as { headers: Record<string, string> }).headers });
      return next(args);
    }, { step: "finalizeRequest", name: "recordHeaders", priority: "low" });
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const data = randomBytes(2 * MiB + 333);

    await t.step(
      "PutObject of a stream of known length: aws-chunked with a CRC32 trailer",
      async () => {
        sent.length = 0;
        const out = await s3.send(
          new PutObjectCommand({
            Bucket: BUCKET,
            Key: "sdk-stream",
            Body: Readable.from([data.subarray(0, MiB), data.subarray(MiB)]),
            ContentLength: data.byteLength,
            ContentEncoding: "identity",
          }),
        );
        const headers = sent.at(-1)!;
        assertEquals(headers["content-encoding"], "identity,aws-chunked");
        assertEquals(headers["x-amz-content-sha256"], "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
        assertEquals(headers["x-amz-trailer"], "x-amz-checksum-crc32");
        assertEquals(headers["x-amz-decoded-content-length"], String(data.byteLength));
        assertEquals(out.ETag, `"${md5Hex(data)}"`);
        assertEquals(out.ChecksumCRC32, checksum("CRC32", data));
        const got = await s3.send(
          new GetObjectCommand({ Bucket: BUCKET, Key: "sdk-stream", ChecksumMode: "ENABLED" }),
        );
        assertEquals(got.ChecksumCRC32, checksum("CRC32", data));
        assertEquals(got.ChecksumType, "FULL_OBJECT");
        assertEquals(got.ContentEncoding, "identity");
        assertBytesEqual(await got.Body!.transformToByteArray(), data);
      },
    );

    await t.step("PutObject of a stream with another algorithm", async () => {
      const out = await s3.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: "sdk-crc64",
          Body: Readable.from([data]),
          ContentLength: data.byteLength,
          ChecksumAlgorithm: "CRC64NVME",
        }),
      );
      assertEquals(out.ChecksumCRC64NVME, checksum("CRC64NVME", data));
      const head = await s3.send(
        new HeadObjectCommand({ Bucket: BUCKET, Key: "sdk-crc64", ChecksumMode: "ENABLED" }),
      );
      assertEquals(head.ChecksumCRC64NVME, checksum("CRC64NVME", data));
    });

    await t.step("a web ReadableStream body, handed over as a Node stream", async () => {
      // The SDK's Node HTTP handler cannot send a web ReadableStream as it is (it fails
      // client-side, before anything is sent); wrapped as a Node stream it goes aws-chunked.
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(data.subarray(0, 1000));
          c.enqueue(data.subarray(1000));
          c.close();
        },
      });
      const out = await s3.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: "sdk-web",
          Body: Readable.fromWeb(stream as import("node:stream/web").ReadableStream),
          ContentLength: data.byteLength,
          ChecksumAlgorithm: "SHA256",
        }),
      );
      assertEquals(sent.at(-1)!["x-amz-trailer"], "x-amz-checksum-sha256");
      assertEquals(out.ChecksumSHA256, checksum("SHA256", data));
      const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "sdk-web" }));
      assertBytesEqual(await got.Body!.transformToByteArray(), data);
    });

    await t.step("UploadPart of streams, then Complete with the part checksums", async () => {
      const { UploadId } = await s3.send(
        new CreateMultipartUploadCommand({
          Bucket: BUCKET,
          Key: "sdk-parts",
          ChecksumAlgorithm: "CRC32",
        }),
      );
      const parts = [randomBytes(5 * MiB), randomBytes(4321)];
      const done = [];
      for (let i = 0; i < parts.length; i++) {
        const res = await s3.send(
          new UploadPartCommand({
            Bucket: BUCKET,
            Key: "sdk-parts",
            UploadId,
            PartNumber: i + 1,
            Body: Readable.from([parts[i]]),
            ContentLength: parts[i].byteLength,
          }),
        );
        assertEquals(sent.at(-1)!["content-encoding"], "aws-chunked");
        assertEquals(res.ChecksumCRC32, checksum("CRC32", parts[i]));
        done.push({ PartNumber: i + 1, ETag: res.ETag, ChecksumCRC32: res.ChecksumCRC32 });
      }
      const out = await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: BUCKET,
          Key: "sdk-parts",
          UploadId,
          MultipartUpload: { Parts: done },
        }),
      );
      assertEquals(out.ChecksumCRC32, composite("CRC32", parts));
      assertEquals(out.ChecksumType, "COMPOSITE");
    });

    await t.step("lib-storage Upload of a stream, in parts and in one piece", async () => {
      const big = randomBytes(12 * MiB + 5);
      const upload = new Upload({
        client: s3,
        params: { Bucket: BUCKET, Key: "helper", Body: Readable.from([big]) },
        partSize: 5 * MiB,
        queueSize: 2,
      });
      const out = await upload.done();
      assert(out.ETag?.endsWith('-3"'), `multipart ETag ${out.ETag}`);
      const parts = [
        big.subarray(0, 5 * MiB),
        big.subarray(5 * MiB, 10 * MiB),
        big.subarray(10 * MiB),
      ];
      const head = await s3.send(
        new HeadObjectCommand({ Bucket: BUCKET, Key: "helper", ChecksumMode: "ENABLED" }),
      );
      assertEquals(head.ChecksumCRC32, composite("CRC32", parts));
      assertEquals(head.ChecksumType, "COMPOSITE");
      const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "helper" }));
      assertBytesEqual(await got.Body!.transformToByteArray(), big);

      const small = new Upload({
        client: s3,
        params: { Bucket: BUCKET, Key: "helper-small", Body: Readable.from([data]) },
      });
      await small.done();
      const back = await s3.send(
        new GetObjectCommand({ Bucket: BUCKET, Key: "helper-small", ChecksumMode: "ENABLED" }),
      );
      assertEquals(back.ChecksumCRC32, checksum("CRC32", data));
      assertBytesEqual(await back.Body!.transformToByteArray(), data);
    });
  });
});
