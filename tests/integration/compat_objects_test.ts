// Object-level compatibility details: `x-*-delete-marker: false` on a delete in an unversioned
// bucket, `x-*-expiration` from lifecycle rules, and the order of canned-ACL grants.
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutBucketLifecycleConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { as, DIALECTS, expectStatus, headerName, objectPath } from "./access_helpers.ts";
import { assert, assertEquals } from "./assert.ts";
import { s3Client, withServer } from "./server.ts";

const DAY = 86400_000;

/** The protocol's due date of an Expiration Days rule: the next midnight UTC after `days`. */
function dueDate(lastModified: string, days: number): string {
  const start = Date.parse(lastModified);
  return new Date(Math.ceil((start + days * DAY) / DAY) * DAY).toUTCString();
}

Deno.test("objects: compatibility details", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "compat-objects";
    await s3.send(new CreateBucketCommand({ Bucket }));

    for (const dialect of DIALECTS) {
      const admin = as(server, undefined, dialect);
      await t.step(
        `${dialect}: a delete in an unversioned bucket says delete-marker false`,
        async () => {
          await expectStatus(
            await admin({ method: "PUT", path: objectPath(Bucket, "gone"), body: "x" }),
            200,
          );
          for (const what of ["existing", "missing"]) {
            const res = await admin({ method: "DELETE", path: objectPath(Bucket, "gone") });
            await expectStatus(res, 204, what);
            assertEquals(res.headers.get(headerName(dialect, "delete-marker")), "false", what);
            assertEquals(res.headers.get(headerName(dialect, "version-id")), null, what);
          }
        },
      );
    }

    await t.step("the SDK reads DeleteMarker false; a versioned delete stays true", async () => {
      const out = await s3.send(new DeleteObjectCommand({ Bucket, Key: "nothing" }));
      assertEquals(out.DeleteMarker, false);
      await s3.send(new CreateBucketCommand({ Bucket: "compat-versioned" }));
      await s3.send(
        new PutBucketVersioningCommand({
          Bucket: "compat-versioned",
          VersioningConfiguration: { Status: "Enabled" },
        }),
      );
      const marker = await s3.send(
        new DeleteObjectCommand({ Bucket: "compat-versioned", Key: "k" }),
      );
      assertEquals(marker.DeleteMarker, true);
      assert(marker.VersionId, "a marker has a version id");
    });

    await t.step("x-*-expiration on PUT, HEAD and GET of objects a rule will expire", async () => {
      await s3.send(
        new PutBucketLifecycleConfigurationCommand({
          Bucket,
          LifecycleConfiguration: {
            Rules: [
              {
                ID: "logs rule",
                Status: "Enabled",
                Filter: { Prefix: "logs/" },
                Expiration: { Days: 3 },
              },
              {
                ID: "soon",
                Status: "Enabled",
                Filter: { Prefix: "logs/tmp/" },
                Expiration: { Days: 1 },
              },
              { ID: "off", Status: "Disabled", Filter: { Prefix: "" }, Expiration: { Days: 1 } },
              {
                ID: "tagged",
                Status: "Enabled",
                Filter: { Tag: { Key: "temp", Value: "yes" } },
                Expiration: { Date: new Date("2031-01-01T00:00:00Z") },
              },
            ],
          },
        }),
      );
      const put = await s3.send(new PutObjectCommand({ Bucket, Key: "logs/a", Body: "x" }));
      const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "logs/a" }));
      const expected = `expiry-date="${dueDate(head.LastModified!.toUTCString(), 3)}", ` +
        `rule-id="logs%20rule"`;
      assertEquals(put.Expiration, expected, "PutObject");
      assertEquals(head.Expiration, expected, "HeadObject");
      const get = await s3.send(new GetObjectCommand({ Bucket, Key: "logs/a" }));
      await get.Body?.transformToString();
      assertEquals(get.Expiration, expected, "GetObject");
      // The earliest of several matching rules wins.
      const tmp = await s3.send(new PutObjectCommand({ Bucket, Key: "logs/tmp/b", Body: "x" }));
      assert(tmp.Expiration?.endsWith(`rule-id="soon"`), `earliest rule: ${tmp.Expiration}`);
      // Tag filters count; disabled rules and other prefixes do not.
      const tagged = await s3.send(
        new PutObjectCommand({ Bucket, Key: "t", Body: "x", Tagging: "temp=yes" }),
      );
      assertEquals(
        tagged.Expiration,
        `expiry-date="Wed, 01 Jan 2031 00:00:00 GMT", rule-id="tagged"`,
      );
      const plain = await s3.send(new PutObjectCommand({ Bucket, Key: "plain", Body: "x" }));
      assertEquals(plain.Expiration, undefined, "no rule applies");
      const copy = await s3.send(
        new CopyObjectCommand({ Bucket, Key: "logs/copy", CopySource: `${Bucket}/plain` }),
      );
      assert(copy.Expiration?.endsWith(`rule-id="logs%20rule"`), `copy: ${copy.Expiration}`);
      const raw = await as(server, undefined, "store")({
        method: "HEAD",
        path: objectPath(Bucket, "logs/a"),
      });
      await raw.body?.cancel();
      assertEquals(raw.headers.get("x-store-expiration"), expected, "store spelling");
    });

    await t.step("canned ACLs list group grants before the owner's", async () => {
      await s3.send(
        new PutObjectCommand({ Bucket, Key: "public", Body: "x", ACL: "public-read" }),
      );
      const acl = await s3.send(new GetObjectAclCommand({ Bucket, Key: "public" }));
      const grants = acl.Grants!.map((g) => `${g.Grantee?.Type}:${g.Permission}`);
      assertEquals(grants, ["Group:READ", "CanonicalUser:FULL_CONTROL"]);
      assertEquals(acl.Grants![1].Grantee?.ID, acl.Owner?.ID);
    });
  });
});
