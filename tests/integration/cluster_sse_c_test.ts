// SSE-C objects replicate between three nodes on loopback (each with its own master key): they
// travel as stored, sealed with the customer's key, which never leaves the client. The right key
// reads them on every node, a wrong or missing one is refused on every node as on the writer, and
// the writer reports COMPLETED. A single PUT and a multipart upload.
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { assert, assertEquals } from "./assert.ts";
import {
  bucketExists,
  type ClusterNodeProcess,
  eventually,
  seenBy,
  startNode,
  stopAll,
} from "./cluster_helpers.ts";
import { randomBytes, s3Client } from "./server.ts";

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** The SSE-C request fields of a customer key. */
function customer(key: Uint8Array) {
  return {
    SSECustomerAlgorithm: "AES256",
    SSECustomerKey: Buffer.from(key).toString("base64"),
    SSECustomerKeyMD5: createHash("md5").update(key).digest("base64"),
  };
}

/** A GET's outcome: the bytes' SHA-256 with what the answer says, or the error's status and code. */
async function get(
  s3: S3Client,
  key: string,
  extra: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: "ssec", Key: key, ...extra }));
    const bytes = await out.Body!.transformToByteArray();
    return {
      sha: sha(bytes),
      etag: out.ETag,
      md5: out.SSECustomerKeyMD5,
      algorithm: out.SSECustomerAlgorithm,
      status: out.ReplicationStatus,
    };
  } catch (err) {
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    return { error: `${e.$metadata?.httpStatusCode} ${e.name}` };
  }
}

Deno.test("cluster: SSE-C objects replicate as stored and read with the key on every node", async (t) => {
  // SSE-C keys over plain HTTP; 64 KiB chunks, so objects span several sealed chunks.
  const env = { STORE_ALLOW_INSECURE_SSE_C: "true", STORE_CHUNK_SIZE: "65536" };
  const nodes: ClusterNodeProcess[] = [];
  try {
    nodes.push(await startNode("node-a", { env }));
    nodes.push(await startNode("node-b", { seeds: [nodes[0].url], env }));
    nodes.push(await startNode("node-c", { seeds: [nodes[0].url], env }));
    for (const n of nodes) {
      await eventually(`${n.id} sees the others`, () => seenBy(n), (s) =>
        s.length === 2 &&
        s.every((x) => x.endsWith(":alive")));
    }
    const [a, b, c] = nodes.map((n) => s3Client(n.server));
    await a.send(new CreateBucketCommand({ Bucket: "ssec" }));
    for (const s of [b, c]) {
      await eventually("bucket replicated", () => bucketExists(s, "ssec"), (x) => x);
    }
    const key = randomBytes(32);
    const wrong = randomBytes(32);

    await t.step(
      "a single PUT: COMPLETED on the writer, readable with the key on all",
      async () => {
        const body = randomBytes(300_000);
        const put = await a.send(
          new PutObjectCommand({ Bucket: "ssec", Key: "single.bin", Body: body, ...customer(key) }),
        );
        const head = await eventually(
          "single.bin COMPLETED on a",
          () =>
            a.send(new HeadObjectCommand({ Bucket: "ssec", Key: "single.bin", ...customer(key) })),
          (h) => h.ReplicationStatus !== "PENDING",
        );
        assertEquals(head.ReplicationStatus, "COMPLETED");
        const md5 = customer(key).SSECustomerKeyMD5;
        for (const [s, status] of [[a, "COMPLETED"], [b, "REPLICA"], [c, "REPLICA"]] as const) {
          assertEquals(await get(s, "single.bin", customer(key)), {
            sha: sha(body),
            etag: put.ETag,
            md5,
            algorithm: "AES256",
            status,
          });
          // A range inside the third chunk: only its segments are opened.
          const range = await s.send(
            new GetObjectCommand({
              Bucket: "ssec",
              Key: "single.bin",
              Range: "bytes=140000-140099",
              ...customer(key),
            }),
          );
          assertEquals(
            sha(await range.Body!.transformToByteArray()),
            sha(body.subarray(140_000, 140_100)),
          );
          const h = await s.send(
            new HeadObjectCommand({ Bucket: "ssec", Key: "single.bin", ...customer(key) }),
          );
          assertEquals([h.ContentLength, h.SSECustomerKeyMD5], [body.length, md5]);
        }
        // Refused on every node as on the writer: a wrong key 403, none 400.
        for (const s of [a, b, c]) {
          assertEquals(await get(s, "single.bin", customer(wrong)), { error: "403 AccessDenied" });
          assertEquals(await get(s, "single.bin"), { error: "400 InvalidRequest" });
        }
      },
    );

    await t.step("a multipart upload: parts, ETag and bytes the same on all", async () => {
      const parts = [randomBytes(5 * 1024 * 1024), randomBytes(70_000)];
      const up = await b.send(
        new CreateMultipartUploadCommand({ Bucket: "ssec", Key: "multi.bin", ...customer(key) }),
      );
      const etags = [];
      for (const [i, part] of parts.entries()) {
        const out = await b.send(
          new UploadPartCommand({
            Bucket: "ssec",
            Key: "multi.bin",
            UploadId: up.UploadId,
            PartNumber: i + 1,
            Body: part,
            ...customer(key),
          }),
        );
        etags.push({ PartNumber: i + 1, ETag: out.ETag });
      }
      const done = await b.send(
        new CompleteMultipartUploadCommand({
          Bucket: "ssec",
          Key: "multi.bin",
          UploadId: up.UploadId,
          MultipartUpload: { Parts: etags },
        }),
      );
      const head = await eventually(
        "multi.bin COMPLETED on b",
        () => b.send(new HeadObjectCommand({ Bucket: "ssec", Key: "multi.bin", ...customer(key) })),
        (h) => h.ReplicationStatus !== "PENDING",
        60_000,
      );
      assertEquals(head.ReplicationStatus, "COMPLETED");
      const whole = new Uint8Array(Buffer.concat(parts));
      for (const s of [a, b, c]) {
        const got = await get(s, "multi.bin", customer(key));
        assertEquals([got.sha, got.etag], [sha(whole), done.ETag]);
        const second = await get(s, "multi.bin", { PartNumber: 2, ...customer(key) });
        assertEquals(second.sha, sha(parts[1]));
        assertEquals(await get(s, "multi.bin", customer(wrong)), { error: "403 AccessDenied" });
        assertEquals(await get(s, "multi.bin"), { error: "400 InvalidRequest" });
      }
    });

    await t.step("the customer key is in no node's data directory", async () => {
      const needle = Buffer.from(key);
      for (const n of nodes) {
        for await (const path of files(n.dataDir)) {
          const bytes = await Deno.readFile(path);
          assert(Buffer.from(bytes).indexOf(needle) < 0, `${path} holds the key`);
        }
      }
    });
  } finally {
    await stopAll(nodes);
  }
});

/** Every file under `dir`. */
async function* files(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* files(path);
    else if (entry.isFile) yield path;
  }
}
