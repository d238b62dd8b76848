// Server-side encryption end to end: SSE-S3 and SSE-C, wrong and missing keys, tampering.
import {
  AbortMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { assert, assertBytesEqual, assertEquals, assertRejectsCode } from "./assert.ts";
import { randomBytes, s3Client, withServer } from "./server.ts";
import { objectPath, signedFetch, xmlValue } from "./signer.ts";

const CHUNK = 64 * 1024;

function chunkRows(dataDir: string): { id: string; encrypted: number; refcount: number }[] {
  const db = new DatabaseSync(join(dataDir, "meta.db"), { readOnly: true });
  try {
    return db.prepare("SELECT id, encrypted, refcount FROM chunks ORDER BY id").all() as {
      id: string;
      encrypted: number;
      refcount: number;
    }[];
  } finally {
    db.close();
  }
}

async function shardFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const sub of Deno.readDir(dir)) {
    if (!sub.isDirectory) continue;
    for await (const f of Deno.readDir(join(dir, sub.name))) out.push(join(dir, sub.name, f.name));
  }
  return out;
}

function includes(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

Deno.test("server-side encryption", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "secure";
    await s3.send(new CreateBucketCommand({ Bucket }));
    const text = new TextEncoder().encode("confidential line of text\n".repeat(20_000));
    const customerKey = randomBytes(32);
    const otherKey = randomBytes(32);

    await t.step("SSE-S3: stored encrypted, read back plain, header echoed", async () => {
      const put = await s3.send(
        new PutObjectCommand({ Bucket, Key: "s3.txt", Body: text, ServerSideEncryption: "AES256" }),
      );
      assertEquals(put.ServerSideEncryption, "AES256");
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "s3.txt" }));
      assertEquals(got.ServerSideEncryption, "AES256");
      assertBytesEqual(await got.Body!.transformToByteArray(), text);
      assertEquals(got.ETag, `"${createHash("md5").update(text).digest("hex")}"`);
      const rows = chunkRows(server.dataDir);
      assert(rows.length > 1 && rows.every((r) => r.encrypted === 1), "encrypted chunks");
      const needle = new TextEncoder().encode("confidential line");
      for (const f of await shardFiles(join(server.dataDir, "chunks"))) {
        assert(!includes(await Deno.readFile(f), needle), `plaintext in ${f}`);
      }
    });

    await t.step(
      "the kms value uses the default KMS key; small objects are encrypted too",
      async () => {
        const put = await signedFetch(server, {
          method: "PUT",
          path: objectPath(Bucket, "kms.txt"),
          headers: { "x-store-server-side-encryption": "store:kms" },
          body: "tiny",
        });
        assertEquals(put.status, 200);
        assertEquals(put.headers.get("x-store-server-side-encryption"), "store:kms");
        assertEquals(put.headers.get("x-store-server-side-encryption-store-kms-key-id"), "default");
        const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "kms.txt" }));
        assertEquals(head.ServerSideEncryption, "store:kms");
        const bad = await signedFetch(server, {
          method: "PUT",
          path: objectPath(Bucket, "bad.txt"),
          headers: { "x-store-server-side-encryption": "DES" },
          body: "x",
        });
        assertEquals(xmlValue(await bad.text(), "Code"), "InvalidArgument");
      },
    );

    await t.step("SSE-C: the key is required, checked and never stored", async () => {
      const key = {
        SSECustomerAlgorithm: "AES256",
        SSECustomerKey: btoa(String.fromCharCode(...customerKey)),
      };
      const put = await s3.send(new PutObjectCommand({ Bucket, Key: "c.txt", Body: text, ...key }));
      assertEquals(put.SSECustomerAlgorithm, "AES256");
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "c.txt", ...key }));
      assertBytesEqual(await got.Body!.transformToByteArray(), text);
      const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "c.txt", ...key }));
      assertEquals(head.ContentLength, text.byteLength);
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket, Key: "c.txt" })),
        "InvalidRequest",
        400,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new GetObjectCommand({
              Bucket,
              Key: "c.txt",
              SSECustomerAlgorithm: "AES256",
              SSECustomerKey: btoa(String.fromCharCode(...otherKey)),
            }),
          ),
        "AccessDenied",
        403,
      );
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket, Key: "s3.txt", ...key })),
        "InvalidRequest",
        400,
      );
      const db = await Deno.readFile(join(server.dataDir, "meta.db"));
      const wal = await Deno.readFile(join(server.dataDir, "meta.db-wal")).catch(() =>
        new Uint8Array()
      );
      for (const file of [db, wal]) assert(!includes(file, customerKey), "customer key stored");
    });

    await t.step("SSE-C multipart: a part with another key or none is InvalidRequest", async () => {
      const key = {
        SSECustomerAlgorithm: "AES256",
        SSECustomerKey: btoa(String.fromCharCode(...customerKey)),
      };
      const { UploadId } = await s3.send(
        new CreateMultipartUploadCommand({ Bucket, Key: "mp-c", ...key }),
      );
      const part = (extra: Record<string, string>) =>
        s3.send(
          new UploadPartCommand({
            Bucket,
            Key: "mp-c",
            UploadId,
            PartNumber: 1,
            Body: "p",
            ...extra,
          }),
        );
      await assertRejectsCode(
        () =>
          part({
            SSECustomerAlgorithm: "AES256",
            SSECustomerKey: btoa(String.fromCharCode(...otherKey)),
          }),
        "InvalidRequest",
        400,
      );
      await assertRejectsCode(() => part({}), "InvalidRequest", 400);
      const ok = await part(key);
      assertEquals(ok.SSECustomerAlgorithm, "AES256");
      await s3.send(new AbortMultipartUploadCommand({ Bucket, Key: "mp-c", UploadId }));
    });

    await t.step("SSE-C data is never deduplicated across keys", async () => {
      const before = chunkRows(server.dataDir).length;
      const body = randomBytes(CHUNK * 2);
      for (
        const [Key, k] of [["d1", customerKey], ["d2", otherKey], ["d3", customerKey]] as const
      ) {
        await s3.send(
          new PutObjectCommand({
            Bucket,
            Key,
            Body: body,
            SSECustomerAlgorithm: "AES256",
            SSECustomerKey: btoa(String.fromCharCode(...k)),
          }),
        );
      }
      // 64 KiB chunks (STORE_CHUNK_SIZE below): 2 chunks each, none shared.
      assertEquals(chunkRows(server.dataDir).length, before + 6);
    });

    await t.step("copy: SSE-C source to SSE-S3 destination, and range reads", async () => {
      const sourceKey = btoa(String.fromCharCode(...customerKey));
      await s3.send(
        new CopyObjectCommand({
          Bucket,
          Key: "copied.txt",
          CopySource: `${Bucket}/c.txt`,
          CopySourceSSECustomerAlgorithm: "AES256",
          CopySourceSSECustomerKey: sourceKey,
          ServerSideEncryption: "AES256",
        }),
      );
      const got = await s3.send(
        new GetObjectCommand({
          Bucket,
          Key: "copied.txt",
          Range: `bytes=${CHUNK - 5}-${CHUNK * 2 + 4}`,
        }),
      );
      assertEquals(got.ServerSideEncryption, "AES256");
      assertBytesEqual(
        await got.Body!.transformToByteArray(),
        text.subarray(CHUNK - 5, CHUNK * 2 + 5),
      );
      await assertRejectsCode(
        () => s3.send(new CopyObjectCommand({ Bucket, Key: "x", CopySource: `${Bucket}/c.txt` })),
        "InvalidRequest",
        400,
      );
    });

    await t.step("tampered ciphertext is detected, never served", async () => {
      const body = randomBytes(CHUNK + 100);
      await s3.send(
        new PutObjectCommand({
          Bucket,
          Key: "tamper.bin",
          Body: body,
          ServerSideEncryption: "AES256",
        }),
      );
      const after = new Set(chunkRows(server.dataDir).map((r) => r.id));
      const files = await shardFiles(join(server.dataDir, "chunks"));
      // Flip one byte in the payload of every shard of the first chunk of this object.
      const db = new DatabaseSync(join(server.dataDir, "meta.db"), { readOnly: true });
      const first = db.prepare(
        "SELECT vc.chunk_id AS id FROM versions v JOIN version_chunks vc ON vc.version_id = v.vid " +
          "WHERE v.key = 'tamper.bin' AND vc.idx = 0",
      ).get() as { id: string };
      db.close();
      assert(after.has(first.id), "chunk recorded");
      for (const f of files.filter((f) => f.includes(first.id))) {
        const bytes = await Deno.readFile(f);
        bytes[bytes.length - 20] ^= 0x01;
        // Keep the shard checksum valid so only the authentication can catch the change.
        const { crc32 } = await import("node:zlib") as unknown as {
          crc32: (d: Uint8Array) => number;
        };
        new DataView(bytes.buffer).setUint32(12, crc32(bytes.subarray(16)));
        await Deno.writeFile(f, bytes);
      }
      const res = await signedFetch(server, {
        method: "GET",
        path: objectPath(Bucket, "tamper.bin"),
        dialect: "amz",
      });
      assertEquals(res.status, 500);
      assertEquals(xmlValue(await res.text(), "Code"), "InternalError");
      const tail = await s3.send(
        new GetObjectCommand({ Bucket, Key: "tamper.bin", Range: `bytes=${CHUNK}-` }),
      );
      assertBytesEqual(
        await tail.Body!.transformToByteArray(),
        body.subarray(CHUNK),
        "the other chunk is intact",
      );
    });
  }, { env: { STORE_CHUNK_SIZE: String(CHUNK), STORE_ALLOW_INSECURE_SSE_C: "true" } });
});
