// Additional checksums end to end: every algorithm as a header and as a trailer, returned only
// with checksum mode, refused when wrong (nothing stored), and multipart composite and
// full-object checksums checked against values computed here.
import {
  type CompletedPart,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { assert, assertBytesEqual, assertEquals, assertRejectsCode } from "./assert.ts";
import {
  type Algorithm,
  ALGORITHMS,
  checksum,
  composite,
  concat,
  sendChunked,
} from "./chunked_helpers.ts";
import { randomBytes, s3Client, type TestServer, withServer } from "./server.ts";
import { objectPath, signedFetch, xmlValue } from "./signer.ts";

const BUCKET = "sums";
const MiB = 1024 * 1024;

function header(algorithm: Algorithm): string {
  return `x-store-checksum-${algorithm.toLowerCase()}`;
}

async function head(server: TestServer, key: string, headers: Record<string, string> = {}) {
  const res = await signedFetch(server, { method: "HEAD", path: objectPath(BUCKET, key), headers });
  await res.body?.cancel();
  return res;
}

Deno.test("checksums, store dialect (raw requests)", async (t) => {
  await withServer(async (server) => {
    await signedFetch(server, { method: "PUT", path: objectPath(BUCKET) });
    const data = randomBytes(200 * 1024 + 3);

    await t.step(
      "every algorithm as a header: verified, kept, returned with checksum mode",
      async () => {
        for (const algorithm of ALGORITHMS) {
          const key = `header-${algorithm}`;
          const value = checksum(algorithm, data);
          const res = await signedFetch(server, {
            method: "PUT",
            path: objectPath(BUCKET, key),
            body: data,
            headers: { [header(algorithm)]: value, "x-store-sdk-checksum-algorithm": algorithm },
          });
          assertEquals(res.status, 200, await res.text());
          assertEquals(res.headers.get(header(algorithm)), value);
          assertEquals(res.headers.get("x-store-checksum-type"), "FULL_OBJECT");
          const plain = await head(server, key);
          assertEquals(plain.headers.get(header(algorithm)), null, "not without checksum mode");
          const withMode = await head(server, key, { "x-store-checksum-mode": "ENABLED" });
          assertEquals(withMode.headers.get(header(algorithm)), value, algorithm);
          assertEquals(withMode.headers.get("x-store-checksum-type"), "FULL_OBJECT");
          const ranged = await signedFetch(server, {
            method: "GET",
            path: objectPath(BUCKET, key),
            headers: { "x-store-checksum-mode": "ENABLED", range: "bytes=0-9" },
          });
          assertEquals(ranged.status, 206);
          assertEquals(ranged.headers.get(header(algorithm)), null, "no checksum for a range");
          await ranged.body?.cancel();
        }
      },
    );

    await t.step("every algorithm as a trailer, signed and unsigned", async () => {
      for (const algorithm of ALGORITHMS) {
        for (const mode of ["signed-trailer", "unsigned-trailer"] as const) {
          const key = `trailer-${algorithm}-${mode}`;
          const value = checksum(algorithm, data);
          const res = await sendChunked(server, {
            path: objectPath(BUCKET, key),
            data,
            chunkSize: 64 * 1024,
            mode,
            trailer: { name: header(algorithm), value },
          });
          assertEquals(res.status, 200, await res.text());
          assertEquals(res.headers.get(header(algorithm)), value);
          const back = await head(server, key, { "x-store-checksum-mode": "ENABLED" });
          assertEquals(back.headers.get(header(algorithm)), value, `${algorithm} ${mode}`);
        }
      }
    });

    await t.step("a wrong checksum header or trailer stores nothing", async () => {
      for (const algorithm of ALGORITHMS) {
        const wrong = checksum(algorithm, data.subarray(1));
        const res = await signedFetch(server, {
          method: "PUT",
          path: objectPath(BUCKET, `header-${algorithm}`),
          body: randomBytes(1000),
          headers: { [header(algorithm)]: wrong },
        });
        assertEquals(res.status, 400);
        assertEquals(xmlValue(await res.text(), "Code"), "BadDigest");
        const kept = await signedFetch(server, {
          method: "GET",
          path: objectPath(BUCKET, `header-${algorithm}`),
        });
        assertBytesEqual(new Uint8Array(await kept.arrayBuffer()), data);
        const trailed = await sendChunked(server, {
          path: objectPath(BUCKET, `never-${algorithm}`),
          data,
          chunkSize: 64 * 1024,
          mode: "unsigned-trailer",
          trailer: { name: header(algorithm), value: wrong },
        });
        assertEquals(trailed.status, 400);
        assertEquals(xmlValue(await trailed.text(), "Code"), "BadDigest");
        assertEquals((await head(server, `never-${algorithm}`)).status, 404);
      }
    });

    await t.step("malformed or doubled checksum headers are InvalidRequest", async () => {
      const malformed: Record<string, string>[] = [
        { "x-store-checksum-crc32": "not-a-checksum" },
        { "x-store-checksum-crc32": checksum("CRC32", data), "x-store-checksum-sha1": "x" },
        { "x-store-sdk-checksum-algorithm": "CRC32C" },
        { "x-store-sdk-checksum-algorithm": "MD5", "x-store-checksum-crc32": "AAAAAA==" },
      ];
      for (const headers of malformed) {
        const res = await signedFetch(server, {
          method: "PUT",
          path: objectPath(BUCKET, "malformed"),
          body: data,
          headers,
        });
        assertEquals(res.status, 400);
        assertEquals(xmlValue(await res.text(), "Code"), "InvalidRequest", JSON.stringify(headers));
      }
      assertEquals((await head(server, "malformed")).status, 404);
    });

    await t.step("an object stored without a checksum returns none", async () => {
      await signedFetch(server, { method: "PUT", path: objectPath(BUCKET, "plain"), body: data });
      const res = await head(server, "plain", { "x-store-checksum-mode": "ENABLED" });
      assertEquals(res.status, 200);
      for (const algorithm of ALGORITHMS) assertEquals(res.headers.get(header(algorithm)), null);
    });

    await t.step("raw multipart: ListParts and Complete name the checksums", async () => {
      const create = await signedFetch(server, {
        method: "POST",
        path: objectPath(BUCKET, "raw-mp"),
        query: [["uploads", ""]],
        headers: { "x-store-checksum-algorithm": "CRC32C" },
      });
      assertEquals(create.headers.get("x-store-checksum-algorithm"), "CRC32C");
      assertEquals(create.headers.get("x-store-checksum-type"), "COMPOSITE");
      const uploadId = xmlValue(await create.text(), "UploadId")!;
      const parts = [randomBytes(5 * MiB), randomBytes(77)];
      const xmlParts: string[] = [];
      for (let i = 0; i < parts.length; i++) {
        // The first part carries its checksum; the second carries none and the server computes it.
        const headers: Record<string, string> = i === 0
          ? { "x-store-checksum-crc32c": checksum("CRC32C", parts[0]) }
          : {};
        const res = await signedFetch(server, {
          method: "PUT",
          path: objectPath(BUCKET, "raw-mp"),
          query: [["partNumber", String(i + 1)], ["uploadId", uploadId]],
          body: parts[i],
          headers,
        });
        assertEquals(res.status, 200, await res.text());
        assertEquals(res.headers.get("x-store-checksum-crc32c"), checksum("CRC32C", parts[i]));
        xmlParts.push(
          `<Part><PartNumber>${i + 1}</PartNumber><ETag>${res.headers.get("etag")}</ETag>` +
            `<ChecksumCRC32C>${checksum("CRC32C", parts[i])}</ChecksumCRC32C></Part>`,
        );
      }
      const list = await signedFetch(server, {
        method: "GET",
        path: objectPath(BUCKET, "raw-mp"),
        query: [["uploadId", uploadId]],
      });
      const listed = await list.text();
      assertEquals(xmlValue(listed, "ChecksumAlgorithm"), "CRC32C");
      assertEquals(xmlValue(listed, "ChecksumType"), "COMPOSITE");
      assertEquals(xmlValue(listed, "ChecksumCRC32C"), checksum("CRC32C", parts[0]));
      const done = await signedFetch(server, {
        method: "POST",
        path: objectPath(BUCKET, "raw-mp"),
        query: [["uploadId", uploadId]],
        body: `<CompleteMultipartUpload>${xmlParts.join("")}</CompleteMultipartUpload>`,
      });
      const result = await done.text();
      assertEquals(done.status, 200, result);
      assertEquals(xmlValue(result, "ChecksumCRC32C"), composite("CRC32C", parts));
      assertEquals(xmlValue(result, "ChecksumType"), "COMPOSITE");
    });
  });
});

async function multipart(
  s3: S3Client,
  key: string,
  parts: Uint8Array[],
  opts: {
    algorithm?: Algorithm;
    type?: "COMPOSITE" | "FULL_OBJECT";
    /** Leave the part checksums out of the Complete request. */
    bare?: boolean;
  },
) {
  const { UploadId, ChecksumAlgorithm, ChecksumType } = await s3.send(
    new CreateMultipartUploadCommand({
      Bucket: BUCKET,
      Key: key,
      ChecksumAlgorithm: opts.algorithm,
      ChecksumType: opts.type,
    }),
  );
  const done: CompletedPart[] = [];
  for (let i = 0; i < parts.length; i++) {
    const res = await s3.send(
      new UploadPartCommand({
        Bucket: BUCKET,
        Key: key,
        UploadId,
        PartNumber: i + 1,
        Body: parts[i],
        ChecksumAlgorithm: opts.algorithm,
      }),
    );
    const field = `Checksum${opts.algorithm ?? "CRC32"}` as keyof typeof res;
    assertEquals(res[field], checksum(opts.algorithm ?? "CRC32", parts[i]), `part ${i + 1}`);
    done.push({ PartNumber: i + 1, ETag: res.ETag, ...(opts.bare ? {} : { [field]: res[field] }) });
  }
  return { UploadId: UploadId!, ChecksumAlgorithm, ChecksumType, done };
}

Deno.test("checksums, amz dialect (the SDK)", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const data = randomBytes(3 * MiB + 11);
    const parts = [randomBytes(5 * MiB), randomBytes(5 * MiB + 1), randomBytes(123)];
    const whole = concat(...parts);

    await t.step("PutObject with each algorithm, read back with checksum mode", async () => {
      for (const algorithm of ALGORITHMS) {
        const key = `put-${algorithm}`;
        const out = await s3.send(
          new PutObjectCommand({
            Bucket: BUCKET,
            Key: key,
            Body: data,
            ChecksumAlgorithm: algorithm,
          }),
        );
        const field = `Checksum${algorithm}` as const;
        assertEquals(out[field], checksum(algorithm, data));
        const got = await s3.send(
          new GetObjectCommand({ Bucket: BUCKET, Key: key, ChecksumMode: "ENABLED" }),
        );
        assertEquals(got[field], checksum(algorithm, data));
        assertEquals(got.ChecksumType, "FULL_OBJECT");
        // The SDK validates the body against the returned checksum as it reads.
        assertBytesEqual(await got.Body!.transformToByteArray(), data);
      }
    });

    await t.step("a wrong checksum is BadDigest and nothing is stored", async () => {
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectCommand({
              Bucket: BUCKET,
              Key: "bad-sdk",
              Body: data,
              ChecksumSHA256: checksum("SHA256", data.subarray(5)),
            }),
          ),
        "BadDigest",
        400,
      );
      await assertRejectsCode(
        () => s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "bad-sdk" })),
        "NotFound",
      );
    });

    await t.step("composite multipart checksums for each composite algorithm", async () => {
      for (const algorithm of ["CRC32", "CRC32C", "SHA1", "SHA256"] as const) {
        const key = `mp-${algorithm}`;
        const up = await multipart(s3, key, parts, { algorithm });
        assertEquals(up.ChecksumAlgorithm, algorithm);
        assertEquals(up.ChecksumType, "COMPOSITE");
        const listed = await s3.send(
          new ListPartsCommand({ Bucket: BUCKET, Key: key, UploadId: up.UploadId }),
        );
        assertEquals(listed.ChecksumAlgorithm, algorithm);
        const field = `Checksum${algorithm}` as const;
        assertEquals(
          listed.Parts?.map((p) => p[field]),
          parts.map((p) => checksum(algorithm, p)),
        );
        const out = await s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: BUCKET,
            Key: key,
            UploadId: up.UploadId,
            MultipartUpload: { Parts: up.done },
          }),
        );
        const expected = composite(algorithm, parts);
        assertEquals(out[field], expected, algorithm);
        assertEquals(out.ChecksumType, "COMPOSITE");
        const headed = await s3.send(
          new HeadObjectCommand({ Bucket: BUCKET, Key: key, ChecksumMode: "ENABLED" }),
        );
        assertEquals(headed[field], expected);
        assertEquals(headed.ChecksumType, "COMPOSITE");
        const part2 = await s3.send(
          new GetObjectCommand({
            Bucket: BUCKET,
            Key: key,
            PartNumber: 2,
            ChecksumMode: "ENABLED",
          }),
        );
        assertEquals(part2[field], checksum(algorithm, parts[1]));
        assertBytesEqual(await part2.Body!.transformToByteArray(), parts[1]);
      }
    });

    await t.step("full-object multipart checksums: the CRC of the whole object", async () => {
      for (
        const [algorithm, type] of [
          ["CRC64NVME", undefined],
          ["CRC32", "FULL_OBJECT"],
          ["CRC32C", "FULL_OBJECT"],
        ] as const
      ) {
        const key = `full-${algorithm}`;
        const up = await multipart(s3, key, parts, { algorithm, type });
        assertEquals(up.ChecksumType, "FULL_OBJECT");
        const field = `Checksum${algorithm}` as const;
        const expected = checksum(algorithm, whole);
        // The request may assert the whole object's checksum: a wrong one is BadDigest.
        await assertRejectsCode(
          () =>
            s3.send(
              new CompleteMultipartUploadCommand({
                Bucket: BUCKET,
                Key: key,
                UploadId: up.UploadId,
                MultipartUpload: { Parts: up.done },
                [field]: checksum(algorithm, parts[0]),
              }),
            ),
          "BadDigest",
        );
        const out = await s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: BUCKET,
            Key: key,
            UploadId: up.UploadId,
            MultipartUpload: { Parts: up.done },
            [field]: expected,
            ChecksumType: "FULL_OBJECT",
            MpuObjectSize: whole.byteLength,
          }),
        );
        assertEquals(out[field], expected, algorithm);
        assertEquals(out.ChecksumType, "FULL_OBJECT");
        const got = await s3.send(
          new GetObjectCommand({ Bucket: BUCKET, Key: key, ChecksumMode: "ENABLED" }),
        );
        assertEquals(got[field], expected);
        assertEquals(got.ChecksumType, "FULL_OBJECT");
        assertBytesEqual(await got.Body!.transformToByteArray(), whole);
      }
    });

    await t.step("multipart checksum rules", async () => {
      // SHA has no full-object form; CRC64NVME has no composite one.
      for (
        const [algorithm, type] of [["SHA1", "FULL_OBJECT"], ["CRC64NVME", "COMPOSITE"]] as const
      ) {
        await assertRejectsCode(
          () =>
            s3.send(
              new CreateMultipartUploadCommand({
                Bucket: BUCKET,
                Key: "rules",
                ChecksumAlgorithm: algorithm,
                ChecksumType: type,
              }),
            ),
          "InvalidRequest",
        );
      }
      const small = [randomBytes(5 * MiB), randomBytes(10)];
      // A composite upload must list every part's checksum when it completes.
      const bare = await multipart(s3, "rules", small, { algorithm: "SHA256", bare: true });
      await assertRejectsCode(
        () =>
          s3.send(
            new CompleteMultipartUploadCommand({
              Bucket: BUCKET,
              Key: "rules",
              UploadId: bare.UploadId,
              MultipartUpload: { Parts: bare.done },
            }),
          ),
        "InvalidRequest",
      );
      // A listed checksum that is not the part's is InvalidPart.
      const wrongParts = bare.done.map((p, i) => ({
        ...p,
        ChecksumSHA256: checksum("SHA256", small[1 - i]),
      }));
      await assertRejectsCode(
        () =>
          s3.send(
            new CompleteMultipartUploadCommand({
              Bucket: BUCKET,
              Key: "rules",
              UploadId: bare.UploadId,
              MultipartUpload: { Parts: wrongParts },
            }),
          ),
        "InvalidPart",
      );
      // A part checksum of another algorithm than the upload's is refused.
      await assertRejectsCode(
        () =>
          s3.send(
            new UploadPartCommand({
              Bucket: BUCKET,
              Key: "rules",
              UploadId: bare.UploadId,
              PartNumber: 3,
              Body: small[1],
              ChecksumAlgorithm: "CRC32",
            }),
          ),
        "InvalidRequest",
      );
      // With the right checksums listed, the same upload completes.
      const ok = await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket: BUCKET,
          Key: "rules",
          UploadId: bare.UploadId,
          MultipartUpload: {
            Parts: bare.done.map((p, i) => ({
              ...p,
              ChecksumSHA256: checksum("SHA256", small[i]),
            })),
          },
        }),
      );
      assertEquals(ok.ChecksumSHA256, composite("SHA256", small));
    });

    await t.step(
      "an upload created without an algorithm completes without a checksum",
      async () => {
        const up = await multipart(s3, "no-algorithm", [randomBytes(5 * MiB), randomBytes(5)], {
          bare: true,
        });
        const out = await s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: BUCKET,
            Key: "no-algorithm",
            UploadId: up.UploadId,
            MultipartUpload: { Parts: up.done },
          }),
        );
        assertEquals(out.ChecksumCRC32, undefined);
        const headed = await s3.send(
          new HeadObjectCommand({ Bucket: BUCKET, Key: "no-algorithm", ChecksumMode: "ENABLED" }),
        );
        assert(headed.ChecksumCRC32 === undefined && headed.ChecksumType === undefined);
      },
    );
  });
});
