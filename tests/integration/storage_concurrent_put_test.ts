// Concurrent PUTs of varied sizes read back byte-identical: the write path reuses its chunk
// buffers (shared with the CPU workers, which read them in place for the MD5 and the SHA-256),
// so a buffer taken for the next chunk before every reader of the last one is done would show
// here as wrong bytes or a wrong ETag. Small chunks make many buffers go round.
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { assertBytesEqual, assertEquals } from "./assert.ts";
import { randomBytes, s3Client, withServer } from "./server.ts";

const KiB = 1024;
const SIZES = [0, 1, 70 * KiB, 256 * KiB, 256 * KiB + 1, 1000 * KiB + 3, 3 * 1024 * KiB + 17];

for (const compression of ["off", "on"]) {
  Deno.test(`concurrent PUTs of varied sizes read back byte-identical (compression ${compression})`, async () => {
    await withServer(async (server) => {
      const s3 = s3Client(server);
      await s3.send(new CreateBucketCommand({ Bucket: "conc" }));
      // Three rounds, each object written by two writers at once (dedup meets itself), half of
      // the contents compressible.
      for (let round = 0; round < 3; round++) {
        const bodies = SIZES.map((size, i) => {
          const body = randomBytes(size);
          if (i % 2 === 1) body.fill(i, 0, Math.floor(size / 2));
          return body;
        });
        await Promise.all(
          bodies.flatMap((body, i) =>
            [0, 1].map(async (copy) => {
              const put = await s3.send(
                new PutObjectCommand({ Bucket: "conc", Key: `o${i}-${copy}`, Body: body }),
              );
              assertEquals(put.ETag, `"${createHash("md5").update(body).digest("hex")}"`);
            })
          ),
        );
        await Promise.all(bodies.flatMap((body, i) =>
          [0, 1].map(async (copy) => {
            const got = await s3.send(
              new GetObjectCommand({ Bucket: "conc", Key: `o${i}-${copy}` }),
            );
            assertBytesEqual(new Uint8Array(await got.Body!.transformToByteArray()), body);
          })
        ));
      }
      s3.destroy();
    }, {
      env: {
        STORE_CHUNK_SIZE: String(256 * KiB),
        STORE_COMPRESSION: compression,
        STORE_CPU_WORKERS: "2",
      },
    });
  });
}
