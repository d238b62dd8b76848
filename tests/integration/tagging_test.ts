// Object and bucket tagging through the AWS SDK and raw requests in both dialects: round trips,
// versions, the x-*-tagging header on PutObject, CopyObject (both directives) and multipart
// uploads, x-*-tagging-count, every validation error leaving the stored tags as they were, bucket
// tags and NoSuchTagSet, and who may read or change tags.
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketTaggingCommand,
  DeleteObjectCommand,
  DeleteObjectTaggingCommand,
  GetBucketTaggingCommand,
  GetObjectCommand,
  GetObjectTaggingCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutBucketTaggingCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectTaggingCommand,
  type S3Client,
  type Tag,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { as, createUser, expectError, expectStatus } from "./access_helpers.ts";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { s3Client, withServer } from "./server.ts";
import { objectPath, signedFetch, xmlValues } from "./signer.ts";

async function tagsOf(s3: S3Client, Bucket: string, Key: string, VersionId?: string) {
  const out = await s3.send(new GetObjectTaggingCommand({ Bucket, Key, VersionId }));
  return (out.TagSet ?? []).map((t) => `${t.Key}=${t.Value}`);
}

const putTags = (s3: S3Client, Bucket: string, Key: string, TagSet: Tag[], VersionId?: string) =>
  s3.send(new PutObjectTaggingCommand({ Bucket, Key, VersionId, Tagging: { TagSet } }));

const tagList = (n: number, prefix = "k"): Tag[] =>
  Array.from({ length: n }, (_, i) => ({ Key: `${prefix}${i}`, Value: `v${i}` }));

Deno.test("object tagging: round trips, versions, write headers and the tag count", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "tags";
    await s3.send(new CreateBucketCommand({ Bucket }));
    await s3.send(new PutObjectCommand({ Bucket, Key: "doc", Body: "hello" }));

    await t.step("Put, Get and Delete; the set answers in key order", async () => {
      assertEquals(await tagsOf(s3, Bucket, "doc"), []);
      const put = await putTags(s3, Bucket, "doc", [
        { Key: "b", Value: "2" },
        { Key: "a", Value: "one two" },
        { Key: "empty", Value: "" },
      ]);
      assertEquals(put.VersionId, undefined, "no version id in an unversioned bucket");
      assertEquals(await tagsOf(s3, Bucket, "doc"), ["a=one two", "b=2", "empty="]);
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "doc" }));
      assertEquals(got.TagCount, 3);
      assertEquals(await got.Body!.transformToString(), "hello");
      // A second Put replaces the whole set.
      await putTags(s3, Bucket, "doc", [{ Key: "only", Value: "1" }]);
      assertEquals(await tagsOf(s3, Bucket, "doc"), ["only=1"]);
      const del = await s3.send(new DeleteObjectTaggingCommand({ Bucket, Key: "doc" }));
      assertEquals(del.$metadata.httpStatusCode, 204);
      assertEquals(await tagsOf(s3, Bucket, "doc"), []);
      const untagged = await s3.send(new GetObjectCommand({ Bucket, Key: "doc" }));
      assertEquals(untagged.TagCount, undefined);
      await untagged.Body!.transformToString();
      // An empty TagSet removes the tags too.
      await putTags(s3, Bucket, "doc", [{ Key: "x", Value: "y" }]);
      await putTags(s3, Bucket, "doc", []);
      assertEquals(await tagsOf(s3, Bucket, "doc"), []);
    });

    await t.step(
      "HEAD answers x-*-tagging-count in both dialects; a new write drops tags",
      async () => {
        await putTags(s3, Bucket, "doc", tagList(4));
        for (const dialect of ["store", "amz"] as const) {
          const head = await signedFetch(server, {
            method: "HEAD",
            path: objectPath(Bucket, "doc"),
            dialect,
          });
          await head.body?.cancel();
          assertEquals(head.status, 200);
          assertEquals(head.headers.get(`x-${dialect}-tagging-count`), "4");
        }
        await s3.send(new PutObjectCommand({ Bucket, Key: "doc", Body: "rewritten" }));
        assertEquals(await tagsOf(s3, Bucket, "doc"), []);
        const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "doc" }));
        assertEquals(head.$metadata.httpStatusCode, 200);
      },
    );

    await t.step("missing objects and buckets", async () => {
      await assertRejectsCode(() => tagsOf(s3, Bucket, "nope"), "NoSuchKey", 404);
      await assertRejectsCode(() => putTags(s3, Bucket, "nope", tagList(1)), "NoSuchKey", 404);
      await assertRejectsCode(
        () => s3.send(new DeleteObjectTaggingCommand({ Bucket, Key: "nope" })),
        "NoSuchKey",
        404,
      );
      await assertRejectsCode(() => tagsOf(s3, "no-such-bucket", "doc"), "NoSuchBucket", 404);
      await assertRejectsCode(() => tagsOf(s3, Bucket, "doc", "nope"), "NoSuchVersion", 404);
    });

    await t.step("versionId: each version has its own tags; delete markers have none", async () => {
      const V = "tags-versioned";
      await s3.send(new CreateBucketCommand({ Bucket: V }));
      await s3.send(
        new PutBucketVersioningCommand({
          Bucket: V,
          VersioningConfiguration: { Status: "Enabled" },
        }),
      );
      const v1 = (await s3.send(
        new PutObjectCommand({ Bucket: V, Key: "k", Body: "1", Tagging: "gen=1" }),
      )).VersionId!;
      const v2 = (await s3.send(new PutObjectCommand({ Bucket: V, Key: "k", Body: "2" })))
        .VersionId!;
      assertEquals(await tagsOf(s3, V, "k"), []);
      assertEquals(await tagsOf(s3, V, "k", v1), ["gen=1"]);
      const put = await putTags(s3, V, "k", [{ Key: "gen", Value: "one" }], v1);
      assertEquals(put.VersionId, v1);
      const current = await putTags(s3, V, "k", [{ Key: "gen", Value: "two" }]);
      assertEquals(current.VersionId, v2, "the current version's id is answered");
      const got = await s3.send(
        new GetObjectTaggingCommand({ Bucket: V, Key: "k", VersionId: v1 }),
      );
      assertEquals(got.VersionId, v1);
      assertEquals(got.TagSet, [{ Key: "gen", Value: "one" }]);
      assertEquals(await tagsOf(s3, V, "k"), ["gen=two"]);
      const old = await s3.send(new GetObjectCommand({ Bucket: V, Key: "k", VersionId: v1 }));
      assertEquals(old.TagCount, 1);
      await old.Body!.transformToString();
      const del = await s3.send(
        new DeleteObjectTaggingCommand({ Bucket: V, Key: "k", VersionId: v1 }),
      );
      assertEquals(del.VersionId, v1);
      assertEquals(await tagsOf(s3, V, "k", v1), []);
      assertEquals(await tagsOf(s3, V, "k", v2), ["gen=two"]);
      // A delete marker on top: the key answers NoSuchKey, the marker by id 405.
      const marker = (await s3.send(new DeleteObjectCommand({ Bucket: V, Key: "k" }))).VersionId!;
      await assertRejectsCode(() => tagsOf(s3, V, "k"), "NoSuchKey", 404);
      await assertRejectsCode(() => tagsOf(s3, V, "k", marker), "MethodNotAllowed", 405);
      await assertRejectsCode(
        () => putTags(s3, V, "k", tagList(1), marker),
        "MethodNotAllowed",
        405,
      );
      assertEquals(await tagsOf(s3, V, "k", v2), ["gen=two"]);
    });

    await t.step("x-*-tagging on PutObject, URL-encoded", async () => {
      await s3.send(
        new PutObjectCommand({
          Bucket,
          Key: "tagged",
          Body: "t",
          Tagging: "team=a%20b&flag&path=%2Fx%2Fy&plus=1+2",
        }),
      );
      assertEquals(await tagsOf(s3, Bucket, "tagged"), [
        "flag=",
        "path=/x/y",
        "plus=1 2",
        "team=a b",
      ]);
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "tagged" }));
      assertEquals(got.TagCount, 4);
      await got.Body!.transformToString();
      // The store dialect's header in a raw request.
      const res = await signedFetch(server, {
        method: "PUT",
        path: objectPath(Bucket, "raw"),
        headers: { "x-store-tagging": "dialect=store" },
        body: "r",
      });
      await expectStatus(res, 200, "PUT with x-store-tagging");
      const xml = await expectStatus(
        await signedFetch(server, {
          method: "GET",
          path: objectPath(Bucket, "raw"),
          query: [["tagging", ""]],
        }),
        200,
      );
      assert(xml.includes('<Tagging xmlns="http://store.local/doc/2006-03-01/">'), xml);
      assertEquals(xmlValues(xml, "Key"), ["dialect"]);
      assertEquals(xmlValues(xml, "Value"), ["store"]);
    });

    await t.step("CopyObject: COPY keeps the source's tags, REPLACE takes the header", async () => {
      const copy = (Key: string, extra: Record<string, string> = {}) =>
        s3.send(new CopyObjectCommand({ Bucket, Key, CopySource: `${Bucket}/tagged`, ...extra }));
      await copy("copied");
      assertEquals(await tagsOf(s3, Bucket, "copied"), [
        "flag=",
        "path=/x/y",
        "plus=1 2",
        "team=a b",
      ]);
      // COPY with a header: the header is not looked at.
      await copy("copied-ignoring", { TaggingDirective: "COPY", Tagging: "ignored=1" });
      assertEquals((await tagsOf(s3, Bucket, "copied-ignoring")).length, 4);
      await copy("replaced", { TaggingDirective: "REPLACE", Tagging: "fresh=1" });
      assertEquals(await tagsOf(s3, Bucket, "replaced"), ["fresh=1"]);
      await copy("cleared", { TaggingDirective: "REPLACE" });
      assertEquals(await tagsOf(s3, Bucket, "cleared"), []);
      // Metadata REPLACE alone keeps the tags.
      await copy("meta-replaced", { MetadataDirective: "REPLACE", ContentType: "text/x" });
      assertEquals((await tagsOf(s3, Bucket, "meta-replaced")).length, 4);
      // A copy onto itself that replaces metadata and tags.
      await s3.send(
        new CopyObjectCommand({
          Bucket,
          Key: "tagged",
          CopySource: `${Bucket}/tagged`,
          MetadataDirective: "REPLACE",
          TaggingDirective: "REPLACE",
          Tagging: "self=1",
        }),
      );
      assertEquals(await tagsOf(s3, Bucket, "tagged"), ["self=1"]);
    });

    await t.step("multipart: the tags of CreateMultipartUpload go to the object", async () => {
      const { UploadId } = await s3.send(
        new CreateMultipartUploadCommand({ Bucket, Key: "mp", Tagging: "upload=yes&n=2" }),
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
      assertEquals(await tagsOf(s3, Bucket, "mp"), ["n=2", "upload=yes"]);
      const got = await s3.send(new GetObjectCommand({ Bucket, Key: "mp" }));
      assertEquals(got.TagCount, 2);
      assertEquals(await got.Body!.transformToString(), "part");
    });
  });
});

Deno.test("object tagging: validation errors change nothing", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "tags-bad";
    await s3.send(new CreateBucketCommand({ Bucket }));
    await s3.send(new PutObjectCommand({ Bucket, Key: "k", Body: "x", Tagging: "keep=1" }));
    const unchanged = async () => assertEquals(await tagsOf(s3, Bucket, "k"), ["keep=1"]);

    await t.step("PutObjectTagging: InvalidTag", async () => {
      const cases: [Tag[], string][] = [
        [tagList(11), "InvalidTag"],
        [[{ Key: "a", Value: "1" }, { Key: "a", Value: "2" }], "InvalidTag"],
        [[{ Key: "k".repeat(129), Value: "v" }], "InvalidTag"],
        [[{ Key: "k", Value: "v".repeat(257) }], "InvalidTag"],
        [[{ Key: "", Value: "v" }], "InvalidTag"],
        [[{ Key: "bad[key]", Value: "v" }], "InvalidTag"],
        [[{ Key: "k", Value: "semi;colon" }], "InvalidTag"],
        [[{ Key: "aws:reserved", Value: "v" }], "InvalidTag"],
      ];
      for (const [TagSet, code] of cases) {
        await assertRejectsCode(() => putTags(s3, Bucket, "k", TagSet), code, 400);
        await unchanged();
      }
      // The limits themselves are accepted.
      await putTags(s3, Bucket, "k", [
        ...tagList(9),
        { Key: "k".repeat(128), Value: "v".repeat(256) },
      ]);
      assertEquals((await tagsOf(s3, Bucket, "k")).length, 10);
      await putTags(s3, Bucket, "k", [{ Key: "keep", Value: "1" }]);
    });

    await t.step("PutObjectTagging: documents that break the schema are MalformedXML", async () => {
      for (
        const body of [
          "<Tagging>",
          "<Tagging/>",
          "<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>",
          "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value><Extra/></Tag></TagSet></Tagging>",
          "<NotTagging><TagSet/></NotTagging>",
        ]
      ) {
        for (const dialect of ["store", "amz"] as const) {
          await expectError(
            await signedFetch(server, {
              method: "PUT",
              path: objectPath(Bucket, "k"),
              query: [["tagging", ""]],
              body,
              dialect,
            }),
            "MalformedXML",
            400,
            body,
          );
        }
        await unchanged();
      }
      const md5 = btoa(String.fromCharCode(...new Uint8Array(16)));
      await expectError(
        await signedFetch(server, {
          method: "PUT",
          path: objectPath(Bucket, "k"),
          query: [["tagging", ""]],
          headers: { "content-md5": md5 },
          body: "<Tagging><TagSet/></Tagging>",
        }),
        "BadDigest",
        400,
        "wrong Content-MD5",
      );
      await unchanged();
    });

    await t.step("x-*-tagging on writes: nothing is stored", async () => {
      const put = (Key: string, Tagging: string) =>
        s3.send(new PutObjectCommand({ Bucket, Key, Body: "x", Tagging }));
      const header: [string, string][] = [
        ["a=1&a=2", "InvalidArgument"],
        ["a=1=2", "InvalidArgument"],
        ["a=%zz", "InvalidArgument"],
        [tagList(11).map((t) => `${t.Key}=${t.Value}`).join("&"), "InvalidTag"],
        ["a%5B%5D=1", "InvalidTag"],
        [`${"k".repeat(129)}=v`, "InvalidTag"],
        ["=v", "InvalidTag"],
      ];
      for (const [value, code] of header) {
        await assertRejectsCode(() => put("new", value), code, 400);
        await assertRejectsCode(
          () => s3.send(new HeadObjectCommand({ Bucket, Key: "new" })),
          "NotFound",
          404,
        );
        await assertRejectsCode(
          () =>
            s3.send(
              new CopyObjectCommand({
                Bucket,
                Key: "new",
                CopySource: `${Bucket}/k`,
                TaggingDirective: "REPLACE",
                Tagging: value,
              }),
            ),
          code,
          400,
        );
        await assertRejectsCode(
          () => s3.send(new CreateMultipartUploadCommand({ Bucket, Key: "new", Tagging: value })),
          code,
          400,
        );
      }
      // A replacing write with a bad header keeps the old object and its tags.
      await assertRejectsCode(() => put("k", "a=1&a=1"), "InvalidArgument");
      await unchanged();
      await assertRejectsCode(
        () =>
          s3.send(
            new CopyObjectCommand({
              Bucket,
              Key: "new",
              CopySource: `${Bucket}/k`,
              TaggingDirective: "MERGE" as "COPY",
            }),
          ),
        "InvalidArgument",
        400,
      );
      const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket }));
      assertEquals(uploads.Uploads ?? [], []);
      await assertRejectsCode(
        () => s3.send(new HeadObjectCommand({ Bucket, Key: "new" })),
        "NotFound",
      );
    });
  });
});

Deno.test("bucket tagging: round trip, limits, NoSuchTagSet", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "tags-bucket";
    await s3.send(new CreateBucketCommand({ Bucket }));
    const bucketTags = async () =>
      ((await s3.send(new GetBucketTaggingCommand({ Bucket }))).TagSet ?? []).map((t) =>
        `${t.Key}=${t.Value}`
      );
    const put = (TagSet: Tag[]) =>
      s3.send(new PutBucketTaggingCommand({ Bucket, Tagging: { TagSet } }));

    await t.step("no tags: NoSuchTagSet (404)", async () => {
      await assertRejectsCode(
        () => s3.send(new GetBucketTaggingCommand({ Bucket })),
        "NoSuchTagSet",
        404,
      );
      await assertRejectsCode(
        () => s3.send(new GetBucketTaggingCommand({ Bucket: "no-such-bucket" })),
        "NoSuchBucket",
        404,
      );
    });

    await t.step("Put, Get, replace, Delete", async () => {
      await put([{ Key: "project", Value: "x" }, { Key: "cost-center", Value: "42" }]);
      assertEquals(await bucketTags(), ["cost-center=42", "project=x"]);
      await put([{ Key: "only", Value: "1" }]);
      assertEquals(await bucketTags(), ["only=1"]);
      // Bucket tags are not object tags.
      await s3.send(new PutObjectCommand({ Bucket, Key: "o", Body: "o" }));
      assertEquals(await tagsOf(s3, Bucket, "o"), []);
      const del = await s3.send(new DeleteBucketTaggingCommand({ Bucket }));
      assertEquals(del.$metadata.httpStatusCode, 204);
      await assertRejectsCode(() => bucketTags(), "NoSuchTagSet", 404);
      // An empty tag set leaves the bucket without tags.
      await put([{ Key: "a", Value: "1" }]);
      await put([]);
      await assertRejectsCode(() => bucketTags(), "NoSuchTagSet", 404);
    });

    await t.step("50 tags at most; refusals change nothing", async () => {
      await put(tagList(50));
      assertEquals((await bucketTags()).length, 50);
      await put([{ Key: "keep", Value: "1" }]);
      const cases: [Tag[], string][] = [
        [tagList(51), "InvalidTag"],
        [[{ Key: "a", Value: "1" }, { Key: "a", Value: "1" }], "InvalidTag"],
        [[{ Key: "aws:cloudformation", Value: "1" }], "InvalidTag"],
        [[{ Key: "k".repeat(129), Value: "1" }], "InvalidTag"],
        [[{ Key: "k", Value: "v".repeat(257) }], "InvalidTag"],
        [[{ Key: "k", Value: "<b>" }], "InvalidTag"],
      ];
      for (const [TagSet, code] of cases) {
        await assertRejectsCode(() => put(TagSet), code, 400);
        assertEquals(await bucketTags(), ["keep=1"]);
      }
      await expectError(
        await signedFetch(server, {
          method: "PUT",
          path: objectPath(Bucket),
          query: [["tagging", ""]],
          body: "<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>",
        }),
        "MalformedXML",
        400,
      );
      assertEquals(await bucketTags(), ["keep=1"]);
    });
  });
});

Deno.test("tagging access: readers get tags, writers change them, bucket tags are the owner's", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "tags-access";
    await s3.send(new CreateBucketCommand({ Bucket }));
    await s3.send(new PutObjectCommand({ Bucket, Key: "k", Body: "x", Tagging: "a=1" }));
    await s3.send(
      new PutBucketTaggingCommand({ Bucket, Tagging: { TagSet: [{ Key: "b", Value: "1" }] } }),
    );
    const reader = await createUser(server, "reader", [{ bucket: Bucket, permission: "read" }]);
    const writer = await createUser(server, "writer", [{ bucket: Bucket, permission: "write" }]);
    const outsider = await createUser(server, "outsider");
    const client = (u: { accessKey: string; secret: string }) =>
      s3Client(server, { user: u.accessKey, password: u.secret });

    const r = client(reader);
    assertEquals(await tagsOf(r, Bucket, "k"), ["a=1"]);
    await assertRejectsCode(() => putTags(r, Bucket, "k", tagList(1)), "AccessDenied", 403);
    await assertRejectsCode(
      () => r.send(new DeleteObjectTaggingCommand({ Bucket, Key: "k" })),
      "AccessDenied",
      403,
    );
    await assertRejectsCode(
      () => r.send(new GetBucketTaggingCommand({ Bucket })),
      "AccessDenied",
      403,
    );
    assertEquals(await tagsOf(s3, Bucket, "k"), ["a=1"]);

    const w = client(writer);
    await assertRejectsCode(() => tagsOf(w, Bucket, "k"), "AccessDenied", 403);
    await putTags(w, Bucket, "k", [{ Key: "by", Value: "writer" }]);
    assertEquals(await tagsOf(s3, Bucket, "k"), ["by=writer"]);
    await assertRejectsCode(
      () =>
        w.send(
          new PutBucketTaggingCommand({ Bucket, Tagging: { TagSet: [{ Key: "x", Value: "1" }] } }),
        ),
      "AccessDenied",
      403,
    );
    await w.send(new DeleteObjectTaggingCommand({ Bucket, Key: "k" }));
    assertEquals(await tagsOf(s3, Bucket, "k"), []);

    const o = client(outsider);
    await assertRejectsCode(() => tagsOf(o, Bucket, "k"), "AccessDenied", 403);
    await assertRejectsCode(() => tagsOf(o, Bucket, "missing"), "AccessDenied", 403);
    // Anonymous requests are denied as well.
    const anon = await fetch(`${server.url}/${Bucket}/k?tagging`);
    assertEquals(anon.status, 403);
    await anon.body?.cancel();
    // The raw store dialect for the reader.
    const xml = await expectStatus(
      await as(server, reader, "store")({
        method: "GET",
        path: objectPath(Bucket),
        query: [["tagging", ""]],
      }),
      403,
    );
    assert(xml.includes("AccessDenied"), xml);
  });
});
