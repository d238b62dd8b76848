// XML text is never trimmed: keys made of or ending in white space reach the object layer as sent.
import {
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectTaggingCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  PutObjectTaggingCommand,
} from "@aws-sdk/client-s3";
import { assertEquals } from "./assert.ts";
import { s3Client, withServer } from "./server.ts";

Deno.test("XML text keeps its white space", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "wsp" }));
    const keys = [" ", "_", "_ ", "  x  "];
    for (const key of keys) {
      await s3.send(new PutObjectCommand({ Bucket: "wsp", Key: key, Body: key }));
    }

    await t.step("DeleteObjects deletes exactly the keys ' ' and '_ '", async () => {
      const out = await s3.send(
        new DeleteObjectsCommand({
          Bucket: "wsp",
          Delete: { Objects: [{ Key: " " }, { Key: "_ " }] },
        }),
      );
      assertEquals(out.Deleted?.map((d) => d.Key).sort(), [" ", "_ "]);
      const left = await s3.send(new ListObjectsV2Command({ Bucket: "wsp" }));
      assertEquals(left.Contents?.map((c) => c.Key), ["  x  ", "_"]);
    });

    await t.step("tag values keep leading and trailing spaces", async () => {
      await s3.send(
        new PutObjectTaggingCommand({
          Bucket: "wsp",
          Key: "_",
          Tagging: { TagSet: [{ Key: " k ", Value: "  v " }] },
        }),
      );
      const got = await s3.send(new GetObjectTaggingCommand({ Bucket: "wsp", Key: "_" }));
      assertEquals(got.TagSet, [{ Key: " k ", Value: "  v " }]);
    });
  });
});
