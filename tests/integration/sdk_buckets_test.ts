// Bucket operations through the real AWS SDK (amz dialect).
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  GetBucketLocationCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { assert, assertEquals, assertMatch, assertRejectsCode } from "./assert.ts";
import { REGION, s3Client, startServer, withServer } from "./server.ts";
import { signedFetch, xmlValue } from "./signer.ts";

Deno.test("bucket operations with the AWS SDK", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);

    await t.step("CreateBucket, HeadBucket, ListBuckets", async () => {
      const created = await s3.send(new CreateBucketCommand({ Bucket: "alpha" }));
      assertEquals(created.Location, "/alpha");
      await s3.send(
        new CreateBucketCommand({
          Bucket: "beta.bucket-1",
          CreateBucketConfiguration: { LocationConstraint: REGION as "us-east-2" },
        }),
      );
      const head = await s3.send(new HeadBucketCommand({ Bucket: "alpha" }));
      assertEquals(head.$metadata.httpStatusCode, 200);
      assertEquals(head.BucketRegion, REGION);
      const list = await s3.send(new ListBucketsCommand({}));
      assertEquals(list.Buckets?.map((b) => b.Name), ["alpha", "beta.bucket-1"]);
      assertEquals(list.Owner?.ID, "admin");
      const created0 = list.Buckets![0].CreationDate!;
      assert(Math.abs(created0.getTime() - Date.now()) < 60_000, "creation date is recent");
    });

    await t.step("GetBucketLocation returns the region", async () => {
      const loc = await s3.send(new GetBucketLocationCommand({ Bucket: "alpha" }));
      assertEquals(loc.LocationConstraint as string, REGION);
    });

    await t.step("CreateBucket errors", async () => {
      // Re-creating one's own bucket in us-east-1 is the protocol's legacy 200 (see
      // compat_buckets_test.ts for BucketAlreadyOwnedByYou in other regions).
      await s3.send(new CreateBucketCommand({ Bucket: "alpha" }));
      await assertRejectsCode(
        () =>
          s3.send(
            new CreateBucketCommand({
              Bucket: "gamma",
              CreateBucketConfiguration: { LocationConstraint: "eu-west-1" },
            }),
          ),
        "IllegalLocationConstraintException",
        400,
      );
      for (
        const bad of ["ab", "UPPER", "a".repeat(64), "192.168.1.1", "a..b", "-abc", "abc-", "a_b"]
      ) {
        const res = await signedFetch(server, { method: "PUT", path: `/${bad}`, dialect: "amz" });
        assertEquals(res.status, 400, `status for ${bad}`);
        assertEquals(xmlValue(await res.text(), "Code"), "InvalidBucketName", `code for ${bad}`);
      }
    });

    await t.step("HeadBucket and DeleteBucket on a missing bucket", async () => {
      await assertRejectsCode(
        () => s3.send(new HeadBucketCommand({ Bucket: "missing" })),
        "NotFound",
        404,
      );
      await assertRejectsCode(
        () => s3.send(new DeleteBucketCommand({ Bucket: "missing" })),
        "NoSuchBucket",
        404,
      );
      await assertRejectsCode(
        () => s3.send(new GetBucketLocationCommand({ Bucket: "missing" })),
        "NoSuchBucket",
        404,
      );
    });

    await t.step("DeleteBucket refuses a bucket with objects", async () => {
      await s3.send(new PutObjectCommand({ Bucket: "alpha", Key: "k", Body: "x" }));
      await assertRejectsCode(
        () => s3.send(new DeleteBucketCommand({ Bucket: "alpha" })),
        "BucketNotEmpty",
        409,
      );
      const res = await s3.send(new DeleteBucketCommand({ Bucket: "beta.bucket-1" }));
      assertEquals(res.$metadata.httpStatusCode, 204);
      const list = await s3.send(new ListBucketsCommand({}));
      assertEquals(list.Buckets?.map((b) => b.Name), ["alpha"]);
    });

    await t.step("error responses carry the protocol's XML", async () => {
      const res = await signedFetch(server, { method: "DELETE", path: "/missing", dialect: "amz" });
      const body = await res.text();
      assertEquals(res.status, 404);
      assertEquals(xmlValue(body, "Code"), "NoSuchBucket");
      assertEquals(xmlValue(body, "Resource"), "/missing");
      assertEquals(xmlValue(body, "RequestId"), res.headers.get("x-amz-request-id") ?? "");
      assertMatch(body, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<Error>/);
    });
  });
});

Deno.test("BucketAlreadyExists when another owner holds the name", async () => {
  const first = await startServer();
  const dataDir = first.dataDir;
  try {
    const s3 = s3Client(first);
    await s3.send(new CreateBucketCommand({ Bucket: "taken" }));
    await first.stop();
    // Until users exist, another owner is simulated by changing the recorded owner.
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(`${first.dataDir}/meta.db`);
    db.prepare("UPDATE buckets SET owner = 'someone-else' WHERE name = 'taken'").run();
    db.close();
    const second = await startServer({ dataDir });
    try {
      const s3b = s3Client(second);
      await assertRejectsCode(
        () => s3b.send(new CreateBucketCommand({ Bucket: "taken" })),
        "BucketAlreadyExists",
        409,
      );
      const list = await s3b.send(new ListBucketsCommand({}));
      assertEquals(list.Buckets ?? [], [], "another owner's bucket is not listed");
    } finally {
      await second.stop();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
