// ListObjects (V1) and ListObjectsV2 through the AWS SDK, plus raw checks of the XML.
import {
  CreateBucketCommand,
  ListObjectsCommand,
  type ListObjectsCommandOutput,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { s3Client, withServer } from "./server.ts";
import { signedFetch, xmlValue, xmlValues } from "./signer.ts";

const KEYS = [
  "a.txt",
  "b/1.txt",
  "b/2.txt",
  "b/c/3.txt",
  "b/c/4.txt",
  "c",
  "d/e/f/g.txt",
  "d/x.txt",
  "space key/é.txt",
  "z",
];

Deno.test("listing objects", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "listing";
    await s3.send(new CreateBucketCommand({ Bucket }));
    await Promise.all(KEYS.map((Key) => s3.send(new PutObjectCommand({ Bucket, Key, Body: Key }))));

    await t.step("V2 without delimiter lists every key in order", async () => {
      const out = await s3.send(new ListObjectsV2Command({ Bucket }));
      assertEquals(out.Contents?.map((c) => c.Key), KEYS);
      assertEquals(out.KeyCount, KEYS.length);
      assertEquals(out.IsTruncated, false);
      assertEquals(out.Contents?.[0].Size, 5);
      assertEquals(out.Contents?.[0].StorageClass, "STANDARD");
      assert(out.Contents?.[0].ETag?.startsWith('"'), "quoted ETag");
      assertEquals(out.Contents?.[0].Owner, undefined, "no owner without fetch-owner");
    });

    await t.step("V2 with delimiter rolls up common prefixes", async () => {
      const out = await s3.send(new ListObjectsV2Command({ Bucket, Delimiter: "/" }));
      assertEquals(out.Contents?.map((c) => c.Key), ["a.txt", "c", "z"]);
      assertEquals(out.CommonPrefixes?.map((p) => p.Prefix), ["b/", "d/", "space key/"]);
      assertEquals(out.KeyCount, 6);
      const sub = await s3.send(new ListObjectsV2Command({ Bucket, Delimiter: "/", Prefix: "b/" }));
      assertEquals(sub.Contents?.map((c) => c.Key), ["b/1.txt", "b/2.txt"]);
      assertEquals(sub.CommonPrefixes?.map((p) => p.Prefix), ["b/c/"]);
      assertEquals(sub.Prefix, "b/");
    });

    await t.step("V2 pages with continuation tokens across prefixes", async () => {
      const seen: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const out: ListObjectsV2CommandOutput = await s3.send(
          new ListObjectsV2Command({
            Bucket,
            Delimiter: "/",
            MaxKeys: 2,
            ContinuationToken: token,
          }),
        );
        pages++;
        seen.push(
          ...(out.Contents ?? []).map((c) => c.Key!),
          ...(out.CommonPrefixes ?? []).map((p) => p.Prefix!),
        );
        assert((out.KeyCount ?? 0) <= 2, "page size");
        token = out.IsTruncated ? out.NextContinuationToken : undefined;
        if (out.IsTruncated) assert(token, "token when truncated");
      } while (token);
      assertEquals(seen.sort(), ["a.txt", "b/", "c", "d/", "space key/", "z"]);
      assertEquals(pages, 3);
    });

    await t.step("V2 start-after, fetch-owner, max-keys 0", async () => {
      const out = await s3.send(
        new ListObjectsV2Command({ Bucket, StartAfter: "b/c/3.txt", FetchOwner: true }),
      );
      assertEquals(out.Contents?.[0].Key, "b/c/4.txt");
      assertEquals(out.StartAfter, "b/c/3.txt");
      assertEquals(out.Contents?.[0].Owner?.ID, "admin");
      const none = await s3.send(new ListObjectsV2Command({ Bucket, MaxKeys: 0 }));
      assertEquals(none.KeyCount, 0);
      assertEquals(none.Contents, undefined);
      const big = await s3.send(new ListObjectsV2Command({ Bucket, MaxKeys: 5000 }));
      assertEquals(big.MaxKeys, 1000);
    });

    await t.step("V1 with marker and NextMarker", async () => {
      const first: ListObjectsCommandOutput = await s3.send(
        new ListObjectsCommand({ Bucket, Delimiter: "/", MaxKeys: 3 }),
      );
      assertEquals(first.Contents?.map((c) => c.Key), ["a.txt", "c"]);
      assertEquals(first.CommonPrefixes?.map((p) => p.Prefix), ["b/"]);
      assertEquals(first.IsTruncated, true);
      assertEquals(first.NextMarker, "c");
      const second = await s3.send(
        new ListObjectsCommand({ Bucket, Delimiter: "/", MaxKeys: 3, Marker: first.NextMarker }),
      );
      assertEquals(second.Contents?.map((c) => c.Key), ["z"]);
      assertEquals(second.CommonPrefixes?.map((p) => p.Prefix), ["d/", "space key/"]);
      assertEquals(second.IsTruncated, false);
      // A marker that is itself a common prefix does not return that prefix again.
      const afterPrefix = await s3.send(
        new ListObjectsCommand({ Bucket, Delimiter: "/", Marker: "b/" }),
      );
      assertEquals(afterPrefix.CommonPrefixes?.map((p) => p.Prefix), ["d/", "space key/"]);
      const plain = await s3.send(new ListObjectsCommand({ Bucket, Marker: "d/x.txt" }));
      assertEquals(plain.Contents?.map((c) => c.Key), ["space key/é.txt", "z"]);
      assertEquals(plain.Contents?.[0].Owner?.ID, "admin");
    });

    await t.step("encoding-type=url encodes keys and prefixes", async () => {
      const res = await signedFetch(server, {
        method: "GET",
        path: `/${Bucket}`,
        query: [["list-type", "2"], ["encoding-type", "url"], ["prefix", "space"]],
        dialect: "amz",
      });
      const xml = await res.text();
      assertEquals(xmlValues(xml, "Key"), ["space%20key/%C3%A9.txt"]);
      assertEquals(xmlValue(xml, "EncodingType"), "url");
      const v1 = await signedFetch(server, {
        method: "GET",
        path: `/${Bucket}`,
        query: [["encoding-type", "url"], ["delimiter", "/"]],
        dialect: "amz",
      });
      assert(
        xmlValues(await v1.text(), "Prefix").includes("space%20key/"),
        "encoded common prefix",
      );
    });

    await t.step("list errors", async () => {
      await assertRejectsCode(
        () => s3.send(new ListObjectsV2Command({ Bucket: "nope" })),
        "NoSuchBucket",
        404,
      );
      const bad = await signedFetch(server, {
        method: "GET",
        path: `/${Bucket}`,
        query: [["list-type", "2"], ["max-keys", "-1"]],
        dialect: "amz",
      });
      assertEquals(bad.status, 400);
      assertEquals(xmlValue(await bad.text(), "Code"), "InvalidArgument");
    });
  });
});

Deno.test("listing skips large common prefixes without reading them", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "wide";
    await s3.send(new CreateBucketCommand({ Bucket }));
    // 3 folders of 400 keys each plus loose keys between them.
    const keys: string[] = [];
    for (const folder of ["f1", "f2", "f3"]) {
      for (let i = 0; i < 400; i++) keys.push(`${folder}/${String(i).padStart(4, "0")}`);
      keys.push(`${folder}.loose`);
    }
    for (let i = 0; i < keys.length; i += 50) {
      await Promise.all(
        keys.slice(i, i + 50).map((Key) =>
          s3.send(new PutObjectCommand({ Bucket, Key, Body: "x" }))
        ),
      );
    }
    const out = await s3.send(new ListObjectsV2Command({ Bucket, Delimiter: "/" }));
    assertEquals(out.CommonPrefixes?.map((p) => p.Prefix), ["f1/", "f2/", "f3/"]);
    assertEquals(out.Contents?.map((c) => c.Key), ["f1.loose", "f2.loose", "f3.loose"]);
    const paged: string[] = [];
    let token: string | undefined;
    do {
      const page: ListObjectsV2CommandOutput = await s3.send(
        new ListObjectsV2Command({ Bucket, Prefix: "f2/", MaxKeys: 150, ContinuationToken: token }),
      );
      paged.push(...(page.Contents ?? []).map((c) => c.Key!));
      token = page.NextContinuationToken;
    } while (token);
    assertEquals(paged.length, 400);
    assertEquals(paged[0], "f2/0000");
    assertEquals(paged[399], "f2/0399");
  });
});
