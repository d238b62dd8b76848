// Object Lock through the AWS SDK: configuration, retention modes, legal hold, and each refusal.
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectLegalHoldCommand,
  GetObjectLockConfigurationCommand,
  GetObjectRetentionCommand,
  HeadObjectCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  PutObjectLockConfigurationCommand,
  PutObjectRetentionCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER, s3Client, withServer } from "./server.ts";

const HOUR = 3600_000;

Deno.test("object lock", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "locked";
    const plain = "plain";
    await s3.send(new CreateBucketCommand({ Bucket, ObjectLockEnabledForBucket: true }));
    await s3.send(new CreateBucketCommand({ Bucket: plain }));

    await t.step("a bucket created with Object Lock is versioned and configured", async () => {
      const config = await s3.send(new GetObjectLockConfigurationCommand({ Bucket }));
      assertEquals(config.ObjectLockConfiguration?.ObjectLockEnabled, "Enabled");
      await assertRejectsCode(
        () =>
          s3.send(
            new PutBucketVersioningCommand({
              Bucket,
              VersioningConfiguration: { Status: "Suspended" },
            }),
          ),
        "InvalidBucketState",
        409,
      );
    });

    await t.step("buckets without Object Lock refuse lock operations", async () => {
      await assertRejectsCode(
        () => s3.send(new GetObjectLockConfigurationCommand({ Bucket: plain })),
        "ObjectLockConfigurationNotFoundError",
        404,
      );
      await s3.send(new PutObjectCommand({ Bucket: plain, Key: "k", Body: "x" }));
      await assertRejectsCode(
        () => s3.send(new GetObjectRetentionCommand({ Bucket: plain, Key: "k" })),
        "InvalidRequest",
        400,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectCommand({
              Bucket: plain,
              Key: "k2",
              Body: "x",
              ObjectLockMode: "GOVERNANCE",
              ObjectLockRetainUntilDate: new Date(Date.now() + HOUR),
            }),
          ),
        "InvalidRequest",
        400,
      );
      // Enabling Object Lock later needs versioning first.
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectLockConfigurationCommand({
              Bucket: plain,
              ObjectLockConfiguration: { ObjectLockEnabled: "Enabled" },
            }),
          ),
        "InvalidBucketState",
        409,
      );
    });

    await t.step("compliance retention: only extended, never shortened or removed", async () => {
      const until = new Date(Date.now() + HOUR);
      const put = await s3.send(
        new PutObjectCommand({
          Bucket,
          Key: "c",
          Body: "c",
          ObjectLockMode: "COMPLIANCE",
          ObjectLockRetainUntilDate: until,
        }),
      );
      const VersionId = put.VersionId;
      const got = await s3.send(new GetObjectRetentionCommand({ Bucket, Key: "c", VersionId }));
      assertEquals(got.Retention?.Mode, "COMPLIANCE");
      assertEquals(
        Math.round(got.Retention!.RetainUntilDate!.getTime() / 1000),
        Math.round(until.getTime() / 1000),
      );
      const retain = (Mode: "COMPLIANCE" | "GOVERNANCE", ms: number, bypass = false) =>
        s3.send(
          new PutObjectRetentionCommand({
            Bucket,
            Key: "c",
            VersionId,
            Retention: { Mode, RetainUntilDate: new Date(Date.now() + ms) },
            BypassGovernanceRetention: bypass,
          }),
        );
      await assertRejectsCode(() => retain("COMPLIANCE", HOUR / 2, true), "AccessDenied", 403);
      await assertRejectsCode(() => retain("GOVERNANCE", 2 * HOUR, true), "AccessDenied", 403);
      await retain("COMPLIANCE", 2 * HOUR);
      await assertRejectsCode(
        () =>
          s3.send(
            new DeleteObjectCommand({
              Bucket,
              Key: "c",
              VersionId,
              BypassGovernanceRetention: true,
            }),
          ),
        "AccessDenied",
        403,
      );
      const marker = await s3.send(new DeleteObjectCommand({ Bucket, Key: "c" }));
      assertEquals(marker.DeleteMarker, true, "a delete marker is still allowed");
      const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "c", VersionId }));
      assertEquals(head.ObjectLockMode, "COMPLIANCE");
    });

    await t.step("governance retention yields to the bypass header (with permission)", async () => {
      const put = await s3.send(
        new PutObjectCommand({
          Bucket,
          Key: "g",
          Body: "g",
          ObjectLockMode: "GOVERNANCE",
          ObjectLockRetainUntilDate: new Date(Date.now() + HOUR),
        }),
      );
      const VersionId = put.VersionId;
      const shorten = (bypass: boolean) =>
        s3.send(
          new PutObjectRetentionCommand({
            Bucket,
            Key: "g",
            VersionId,
            Retention: { Mode: "GOVERNANCE", RetainUntilDate: new Date(Date.now() + HOUR / 2) },
            BypassGovernanceRetention: bypass,
          }),
        );
      await assertRejectsCode(() => shorten(false), "AccessDenied", 403);
      await shorten(true);
      await assertRejectsCode(
        () => s3.send(new DeleteObjectCommand({ Bucket, Key: "g", VersionId })),
        "AccessDenied",
        403,
      );
      // A user allowed to write but not to bypass governance retention cannot delete either.
      const res = await fetch(`${server.url}/admin/users`, {
        method: "POST",
        headers: {
          authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`),
          "content-type": "application/json",
        },
        body: JSON.stringify({
          name: "writer",
          bucket_access: [{ bucket: Bucket, permission: "readwrite" }],
        }),
      });
      const user = await res.json();
      const writer = s3Client(server, { user: user.access_key, password: user.secret_key });
      await assertRejectsCode(
        () =>
          writer.send(
            new DeleteObjectCommand({
              Bucket,
              Key: "g",
              VersionId,
              BypassGovernanceRetention: true,
            }),
          ),
        "AccessDenied",
        403,
      );
      const del = await s3.send(
        new DeleteObjectCommand({ Bucket, Key: "g", VersionId, BypassGovernanceRetention: true }),
      );
      assertEquals(del.VersionId, VersionId);
    });

    await t.step("legal hold: OFF when never set, ON blocks deletion", async () => {
      const put = await s3.send(new PutObjectCommand({ Bucket, Key: "h", Body: "h" }));
      const VersionId = put.VersionId;
      const off = await s3.send(new GetObjectLegalHoldCommand({ Bucket, Key: "h", VersionId }));
      assertEquals(off.LegalHold?.Status, "OFF");
      await s3.send(
        new PutObjectLegalHoldCommand({ Bucket, Key: "h", VersionId, LegalHold: { Status: "ON" } }),
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new DeleteObjectCommand({
              Bucket,
              Key: "h",
              VersionId,
              BypassGovernanceRetention: true,
            }),
          ),
        "AccessDenied",
        403,
      );
      const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "h", VersionId }));
      assertEquals(head.ObjectLockLegalHoldStatus, "ON");
      await s3.send(
        new PutObjectLegalHoldCommand({
          Bucket,
          Key: "h",
          VersionId,
          LegalHold: { Status: "OFF" },
        }),
      );
      await s3.send(new DeleteObjectCommand({ Bucket, Key: "h", VersionId }));
    });

    await t.step("default retention applies to new versions, multipart and copies", async () => {
      await s3.send(
        new PutObjectLockConfigurationCommand({
          Bucket,
          ObjectLockConfiguration: {
            ObjectLockEnabled: "Enabled",
            Rule: { DefaultRetention: { Mode: "GOVERNANCE", Days: 1 } },
          },
        }),
      );
      const config = await s3.send(new GetObjectLockConfigurationCommand({ Bucket }));
      assertEquals(config.ObjectLockConfiguration?.Rule?.DefaultRetention, {
        Mode: "GOVERNANCE",
        Days: 1,
      });
      await s3.send(new PutObjectCommand({ Bucket, Key: "d", Body: "d" }));
      const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "d" }));
      assertEquals(head.ObjectLockMode, "GOVERNANCE");
      const day = head.ObjectLockRetainUntilDate!.getTime() - Date.now();
      assert(day > 23 * HOUR && day <= 24 * HOUR, "one day of retention");
      const { UploadId } = await s3.send(
        new CreateMultipartUploadCommand({
          Bucket,
          Key: "mp",
          ObjectLockMode: "COMPLIANCE",
          ObjectLockRetainUntilDate: new Date(Date.now() + HOUR),
          ObjectLockLegalHoldStatus: "ON",
        }),
      );
      const part = await s3.send(
        new UploadPartCommand({ Bucket, Key: "mp", UploadId, PartNumber: 1, Body: "part" }),
      );
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket,
          Key: "mp",
          UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
        }),
      );
      const mp = await s3.send(new HeadObjectCommand({ Bucket, Key: "mp" }));
      assertEquals([mp.ObjectLockMode, mp.ObjectLockLegalHoldStatus], ["COMPLIANCE", "ON"]);
      await s3.send(
        new CopyObjectCommand({
          Bucket,
          Key: "copy",
          CopySource: `${Bucket}/d`,
          ObjectLockLegalHoldStatus: "ON",
        }),
      );
      const copy = await s3.send(new HeadObjectCommand({ Bucket, Key: "copy" }));
      assertEquals([copy.ObjectLockMode, copy.ObjectLockLegalHoldStatus], ["GOVERNANCE", "ON"]);
    });

    await t.step("malformed lock input is refused", async () => {
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectCommand({ Bucket, Key: "x", Body: "x", ObjectLockMode: "GOVERNANCE" }),
          ),
        "InvalidArgument",
        400,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectCommand({
              Bucket,
              Key: "x",
              Body: "x",
              ObjectLockMode: "GOVERNANCE",
              ObjectLockRetainUntilDate: new Date(Date.now() - HOUR),
            }),
          ),
        "InvalidArgument",
        400,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectRetentionCommand({
              Bucket,
              Key: "d",
              Retention: { Mode: "GOVERNANCE", RetainUntilDate: new Date(Date.now() - HOUR) },
            }),
          ),
        "InvalidArgument",
        400,
      );
      await assertRejectsCode(
        () => s3.send(new GetObjectRetentionCommand({ Bucket, Key: "missing" })),
        "NoSuchKey",
        404,
      );
    });

    await t.step(
      "zero, negative and too long default periods: InvalidRetentionPeriod",
      async () => {
        const before = await s3.send(new GetObjectLockConfigurationCommand({ Bucket }));
        for (
          const period of [{ Days: 0 }, { Years: 0 }, { Days: -1 }, { Years: -1 }, { Years: 101 }]
        ) {
          await assertRejectsCode(
            () =>
              s3.send(
                new PutObjectLockConfigurationCommand({
                  Bucket,
                  ObjectLockConfiguration: {
                    ObjectLockEnabled: "Enabled",
                    Rule: { DefaultRetention: { Mode: "GOVERNANCE", ...period } },
                  },
                }),
              ),
            "InvalidRetentionPeriod",
            400,
          );
        }
        const after = await s3.send(new GetObjectLockConfigurationCommand({ Bucket }));
        assertEquals(after.ObjectLockConfiguration, before.ObjectLockConfiguration, "unchanged");
      },
    );

    await t.step("governance to compliance needs the bypass header", async () => {
      const key = "gov-to-comp";
      const put = await s3.send(new PutObjectCommand({ Bucket, Key: key, Body: "x" }));
      const VersionId = put.VersionId;
      const until = new Date(Date.now() + 48 * HOUR); // beyond the default retention
      await s3.send(
        new PutObjectRetentionCommand({
          Bucket,
          Key: key,
          VersionId,
          Retention: { Mode: "GOVERNANCE", RetainUntilDate: until },
        }),
      );
      const later = new Date(Date.now() + 72 * HOUR);
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectRetentionCommand({
              Bucket,
              Key: key,
              VersionId,
              Retention: { Mode: "COMPLIANCE", RetainUntilDate: later },
            }),
          ),
        "AccessDenied",
        403,
      );
      const kept = await s3.send(new GetObjectRetentionCommand({ Bucket, Key: key, VersionId }));
      assertEquals(kept.Retention?.Mode, "GOVERNANCE", "refused change leaves governance");
      // Extending governance itself needs no bypass.
      await s3.send(
        new PutObjectRetentionCommand({
          Bucket,
          Key: key,
          VersionId,
          Retention: { Mode: "GOVERNANCE", RetainUntilDate: later },
        }),
      );
      await s3.send(
        new PutObjectRetentionCommand({
          Bucket,
          Key: key,
          VersionId,
          BypassGovernanceRetention: true,
          Retention: { Mode: "COMPLIANCE", RetainUntilDate: later },
        }),
      );
      const now = await s3.send(new GetObjectRetentionCommand({ Bucket, Key: key, VersionId }));
      assertEquals(now.Retention?.Mode, "COMPLIANCE");
    });
  });
});
