// Bucket versioning through the AWS SDK: the state table, delete markers, null versions, listing.
import {
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketVersioningCommand,
  GetObjectAclCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  type ListObjectVersionsCommandOutput,
  PutBucketVersioningCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { assert, assertEquals, assertRejectsCode, assertRejectsStatus } from "./assert.ts";
import { chunkCount, randomBytes, s3Client, withServer } from "./server.ts";
import { objectPath, signedFetch, xmlValue } from "./signer.ts";

Deno.test("versioning", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "versions";
    await s3.send(new CreateBucketCommand({ Bucket }));
    const text = async (Key: string, VersionId?: string) =>
      await (await s3.send(new GetObjectCommand({ Bucket, Key, VersionId }))).Body!
        .transformToString();

    await t.step("a bucket starts unversioned; objects there are the null version", async () => {
      const state = await s3.send(new GetBucketVersioningCommand({ Bucket }));
      assertEquals(state.Status, undefined);
      const put = await s3.send(new PutObjectCommand({ Bucket, Key: "doc", Body: "v0" }));
      assertEquals(put.VersionId, undefined);
      assertEquals(await text("doc", "null"), "v0");
    });

    const ids: string[] = [];
    await t.step("Enabled: every write is a new version, the null version stays", async () => {
      await s3.send(
        new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status: "Enabled" } }),
      );
      assertEquals((await s3.send(new GetBucketVersioningCommand({ Bucket }))).Status, "Enabled");
      for (const body of ["v1", "v2"]) {
        const put = await s3.send(new PutObjectCommand({ Bucket, Key: "doc", Body: body }));
        assert(put.VersionId && put.VersionId !== "null", "a version id");
        ids.push(put.VersionId!);
      }
      assert(ids[0] !== ids[1], "distinct ids");
      assertEquals(await text("doc"), "v2");
      assertEquals(await text("doc", ids[0]), "v1");
      assertEquals(await text("doc", "null"), "v0");
      const head = await s3.send(new HeadObjectCommand({ Bucket, Key: "doc", VersionId: ids[0] }));
      assertEquals(head.VersionId, ids[0]);
    });

    await t.step("DeleteObject without versionId creates a delete marker", async () => {
      const del = await s3.send(new DeleteObjectCommand({ Bucket, Key: "doc" }));
      assertEquals(del.DeleteMarker, true);
      assert(del.VersionId && del.VersionId !== "null", "marker version id");
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket, Key: "doc" })),
        "NoSuchKey",
        404,
      );
      const raw = await signedFetch(server, {
        method: "GET",
        path: objectPath(Bucket, "doc"),
        dialect: "amz",
      });
      assertEquals(raw.status, 404);
      assertEquals(raw.headers.get("x-amz-delete-marker"), "true");
      assertEquals(raw.headers.get("x-amz-version-id"), del.VersionId);
      await raw.body?.cancel();
      const byId = await signedFetch(server, {
        method: "GET",
        path: objectPath(Bucket, "doc"),
        query: [["versionId", del.VersionId!]],
        dialect: "amz",
      });
      assertEquals(byId.status, 405);
      assertEquals(xmlValue(await byId.text(), "Code"), "MethodNotAllowed");
      assertEquals(await text("doc", ids[1]), "v2", "versions are kept");
      const listed = await s3.send(new ListObjectsV2Command({ Bucket }));
      assertEquals(listed.Contents, undefined, "a deleted key is not listed");
      // Removing the marker by id brings the object back.
      const undo = await s3.send(
        new DeleteObjectCommand({ Bucket, Key: "doc", VersionId: del.VersionId }),
      );
      assertEquals(undo.DeleteMarker, true);
      assertEquals(await text("doc"), "v2");
    });

    await t.step(
      "DeleteObject with versionId removes that version and frees its data",
      async () => {
        const big = randomBytes(200_000);
        const put = await s3.send(new PutObjectCommand({ Bucket, Key: "big", Body: big }));
        const before = await chunkCount(server);
        const del = await s3.send(
          new DeleteObjectCommand({ Bucket, Key: "big", VersionId: put.VersionId }),
        );
        assertEquals(del.VersionId, put.VersionId);
        assertEquals(await chunkCount(server), before - 1);
        await assertRejectsCode(
          () => s3.send(new GetObjectCommand({ Bucket, Key: "big", VersionId: put.VersionId })),
          "NoSuchVersion",
          404,
        );
        await assertRejectsCode(
          () => s3.send(new GetObjectCommand({ Bucket, Key: "big" })),
          "NoSuchKey",
          404,
        );
      },
    );

    await t.step("Suspended: writes and deletes use the null version", async () => {
      await s3.send(
        new PutBucketVersioningCommand({
          Bucket,
          VersioningConfiguration: { Status: "Suspended" },
        }),
      );
      assertEquals((await s3.send(new GetBucketVersioningCommand({ Bucket }))).Status, "Suspended");
      await s3.send(new PutObjectCommand({ Bucket, Key: "doc", Body: "s1" }));
      assertEquals(await text("doc", "null"), "s1", "the old null version was replaced");
      assertEquals(await text("doc", ids[0]), "v1");
      const del = await s3.send(new DeleteObjectCommand({ Bucket, Key: "doc" }));
      assertEquals(del.DeleteMarker, true);
      assertEquals(del.VersionId, "null");
      await assertRejectsStatus(() => s3.send(new HeadObjectCommand({ Bucket, Key: "doc" })), 404);
      await s3.send(
        new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status: "Enabled" } }),
      );
      const again = await s3.send(new PutObjectCommand({ Bucket, Key: "doc", Body: "v3" }));
      assert(again.VersionId !== "null", "enabled again");
    });

    await t.step("copy, ACL and batch delete by version", async () => {
      const copy = await s3.send(
        new CopyObjectCommand({
          Bucket,
          Key: "copy",
          CopySource: `${Bucket}/doc?versionId=${ids[0]}`,
        }),
      );
      assertEquals(copy.CopySourceVersionId, ids[0]);
      assertEquals(await text("copy"), "v1");
      const acl = await s3.send(new GetObjectAclCommand({ Bucket, Key: "doc", VersionId: ids[0] }));
      assertEquals(acl.Grants?.[0].Permission, "FULL_CONTROL");
      const batch = await s3.send(
        new DeleteObjectsCommand({
          Bucket,
          Delete: { Objects: [{ Key: "copy" }, { Key: "doc", VersionId: ids[1] }] },
        }),
      );
      const marker = batch.Deleted?.find((d) => d.Key === "copy");
      assertEquals(marker?.DeleteMarker, true);
      assert(marker?.DeleteMarkerVersionId, "marker id reported");
      assertEquals(batch.Deleted?.find((d) => d.Key === "doc")?.VersionId, ids[1]);
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket, Key: "doc", VersionId: ids[1] })),
        "NoSuchVersion",
        404,
      );
    });

    await t.step("malformed versioning bodies change nothing", async () => {
      for (
        const body of [
          "<VersioningConfiguration><Status>On</Status></VersioningConfiguration>",
          "<Nope/>",
          "garbage",
        ]
      ) {
        const res = await signedFetch(server, {
          method: "PUT",
          path: `/${Bucket}`,
          query: [["versioning", ""]],
          body,
        });
        assertEquals(res.status, 400);
        assertEquals(xmlValue(await res.text(), "Code"), "MalformedXML");
      }
      assertEquals((await s3.send(new GetBucketVersioningCommand({ Bucket }))).Status, "Enabled");
    });
  });
});

Deno.test("ListObjectVersions pages across many versions of many keys", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "many";
    await s3.send(new CreateBucketCommand({ Bucket }));
    await s3.send(
      new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status: "Enabled" } }),
    );
    const expected: string[] = [];
    for (const key of ["a", "b/1", "b/2", "c"]) {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(
          (await s3.send(new PutObjectCommand({ Bucket, Key: key, Body: `${key}${i}` })))
            .VersionId!,
        );
      }
      ids.push((await s3.send(new DeleteObjectCommand({ Bucket, Key: key }))).VersionId!);
      expected.push(...ids.reverse().map((id) => `${key}@${id}`));
    }
    const seen: string[] = [];
    const latest: string[] = [];
    let keyMarker: string | undefined;
    let idMarker: string | undefined;
    let pages = 0;
    do {
      const page: ListObjectVersionsCommandOutput = await s3.send(
        new ListObjectVersionsCommand({
          Bucket,
          MaxKeys: 4,
          KeyMarker: keyMarker,
          VersionIdMarker: idMarker,
        }),
      );
      pages++;
      const entries = [
        ...(page.Versions ?? []).map((v) => ({ ...v, marker: false })),
        ...(page.DeleteMarkers ?? []).map((v) => ({ ...v, marker: true })),
      ].sort((x, y) =>
        expected.indexOf(`${x.Key}@${x.VersionId}`) - expected.indexOf(`${y.Key}@${y.VersionId}`)
      );
      for (const e of entries) {
        seen.push(`${e.Key}@${e.VersionId}`);
        if (e.IsLatest) latest.push(`${e.Key}:${e.marker}`);
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      idMarker = page.IsTruncated ? page.NextVersionIdMarker : undefined;
    } while (keyMarker);
    assertEquals(seen, expected);
    assertEquals(pages, 6);
    assertEquals(latest, ["a:true", "b/1:true", "b/2:true", "c:true"]);
    const rolled = await s3.send(new ListObjectVersionsCommand({ Bucket, Delimiter: "/" }));
    assertEquals(rolled.CommonPrefixes?.map((p) => p.Prefix), ["b/"]);
    assertEquals([...new Set(rolled.Versions?.map((v) => v.Key))].sort(), ["a", "c"]);
    const prefixed = await s3.send(new ListObjectVersionsCommand({ Bucket, Prefix: "b/2" }));
    assertEquals(prefixed.Versions?.length, 5);
    assertEquals(prefixed.DeleteMarkers?.length, 1);
  });
});
