// Bucket-level compatibility: re-creating one's own bucket, ListBuckets paging, the
// expected-bucket-owner headers, anonymous requests to missing buckets and `?torrent`.
import {
  CopyObjectCommand,
  CreateBucketCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import {
  anonymous,
  as,
  createUser,
  DIALECTS,
  expectDenied,
  expectError,
  expectStatus,
  headerName,
  objectPath,
} from "./access_helpers.ts";
import { assert, assertEquals, assertRejectsCode, assertRejectsStatus } from "./assert.ts";
import { s3Client, withServer } from "./server.ts";
import { signedFetch, xmlValue } from "./signer.ts";

Deno.test("buckets: compatibility details", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);

    await t.step("re-creating one's own bucket in us-east-1 answers 200", async () => {
      await s3.send(new CreateBucketCommand({ Bucket: "again" }));
      await s3.send(new PutObjectCommand({ Bucket: "again", Key: "k", Body: "kept" }));
      const res = await s3.send(new CreateBucketCommand({ Bucket: "again" }));
      assertEquals(res.$metadata.httpStatusCode, 200);
      const list = await s3.send(new ListBucketsCommand({ Prefix: "again" }));
      assertEquals(list.Buckets?.map((b) => b.Name), ["again"], "still one bucket");
      const bob = await createUser(server, "bob");
      const theirs = s3Client(server, { user: bob.accessKey, password: bob.secret });
      await assertRejectsCode(
        () => theirs.send(new CreateBucketCommand({ Bucket: "again" })),
        "BucketAlreadyExists",
        409,
      );
    });

    await t.step("ListBuckets pages with max-buckets, continuation-token and prefix", async () => {
      const names = ["page-a", "page-b", "page-c", "page-d", "page-e", "other-x"];
      for (const Bucket of names) await s3.send(new CreateBucketCommand({ Bucket }));
      const seen: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const page = await s3.send(
          new ListBucketsCommand({ MaxBuckets: 2, Prefix: "page-", ContinuationToken: token }),
        );
        assertEquals(page.Prefix, "page-");
        assert((page.Buckets?.length ?? 0) <= 2, "at most max-buckets per page");
        seen.push(...(page.Buckets ?? []).map((b) => b.Name!));
        token = page.ContinuationToken;
        pages++;
      } while (token && pages < 10);
      assertEquals(seen, ["page-a", "page-b", "page-c", "page-d", "page-e"]);
      assertEquals(pages, 3);
      const all = await s3.send(new ListBucketsCommand({}));
      assertEquals(all.ContinuationToken, undefined, "no token without paging");
      assertEquals(all.Prefix, undefined);
      assert(all.Buckets!.some((b) => b.Name === "other-x"));
      const exact = await s3.send(new ListBucketsCommand({ MaxBuckets: 5, Prefix: "page-" }));
      assertEquals(exact.Buckets?.length, 5);
      assertEquals(exact.ContinuationToken, undefined, "no token when nothing follows");
    });

    for (const dialect of DIALECTS) {
      const admin = as(server, undefined, dialect);
      await t.step(`${dialect}: bad ListBuckets paging parameters`, async () => {
        for (
          const [name, value] of [["max-buckets", "0"], ["max-buckets", "10001"], [
            "max-buckets",
            "x",
          ], ["continuation-token", "%%%"]]
        ) {
          await expectError(
            await admin({ method: "GET", path: "/", query: [[name, value]] }),
            "InvalidArgument",
            400,
            `${name}=${value}`,
          );
        }
      });

      await t.step(`${dialect}: x-*-expected-bucket-owner on every operation`, async () => {
        const bucket = `owned-${dialect}`;
        await expectStatus(await admin({ method: "PUT", path: objectPath(bucket) }), 200);
        const listing = await expectStatus(await admin({ method: "GET", path: "/" }), 200);
        const ownerId = xmlValue(/<Owner>(.*?)<\/Owner>/s.exec(listing)![1], "ID")!;
        const header = headerName(dialect, "expected-bucket-owner");
        const requests = [
          { method: "PUT", path: objectPath(bucket, "k"), body: "x" },
          { method: "GET", path: objectPath(bucket, "k") },
          {
            method: "GET",
            path: objectPath(bucket),
            query: [["list-type", "2"]] as [
              string,
              string,
            ][],
          },
          {
            method: "GET",
            path: objectPath(bucket),
            query: [["versioning", ""]] as [
              string,
              string,
            ][],
          },
          { method: "DELETE", path: objectPath(bucket, "k") },
        ];
        for (const r of requests) {
          await expectDenied(
            await admin({ ...r, headers: { [header]: "999999999999" } }),
            `${r.method} ${r.path} with another owner`,
          );
        }
        const head = await admin({ method: "HEAD", path: objectPath(bucket, "k") });
        assertEquals(head.status, 404, "refused PUT stored nothing");
        for (const r of requests) {
          const res = await admin({ ...r, headers: { [header]: ownerId } });
          await res.body?.cancel();
          assert(res.status < 300, `${r.method} ${r.path} with the owner: ${res.status}`);
        }
        // The copy source's owner is checked by x-*-source-expected-bucket-owner.
        await expectStatus(
          await admin({ method: "PUT", path: objectPath(bucket, "src"), body: "s" }),
          200,
        );
        const copy = (owner: string) =>
          admin({
            method: "PUT",
            path: objectPath(bucket, "dst"),
            headers: {
              [headerName(dialect, "copy-source")]: `/${bucket}/src`,
              [headerName(dialect, "source-expected-bucket-owner")]: owner,
            },
          });
        await expectDenied(await copy("999999999999"), "copy from another owner's bucket");
        await expectStatus(await copy(ownerId), 200, "copy with the right source owner");
      });

      await t.step(`${dialect}: anonymous requests to a missing bucket: NoSuchBucket`, async () => {
        for (
          const r of [{ method: "GET", path: "/no-such-bucket-anon" }, {
            method: "GET",
            path: "/no-such-bucket-anon/key",
          }, { method: "PUT", path: "/no-such-bucket-anon/key", body: "x" }]
        ) {
          await expectError(await anonymous(server, r, dialect), "NoSuchBucket", 404, r.path);
        }
        const head = await anonymous(server, { method: "HEAD", path: "/no-such-bucket-anon" });
        assertEquals(head.status, 404);
        // An existing private bucket stays AccessDenied.
        await expectDenied(
          await anonymous(server, { method: "GET", path: objectPath(`owned-${dialect}`) }, dialect),
        );
      });

      await t.step(`${dialect}: ?torrent answers NotImplemented`, async () => {
        await expectError(
          await admin({
            method: "GET",
            path: objectPath(`owned-${dialect}`, "src"),
            query: [[
              "torrent",
              "",
            ]],
          }),
          "NotImplemented",
          501,
        );
      });
    }

    await t.step("elsewhere than us-east-1: BucketAlreadyOwnedByYou", async () => {
      await withServer(async (other) => {
        for (const dialect of DIALECTS) {
          const put = () =>
            signedFetch(other, {
              method: "PUT",
              path: objectPath(`mine-${dialect}`),
              dialect,
              region: "eu-central-1",
            });
          await expectStatus(await put(), 200, "first create");
          await expectError(await put(), "BucketAlreadyOwnedByYou", 409, "second create");
        }
      }, { env: { STORE_REGION: "eu-central-1" } });
    });

    await t.step("the SDK's ExpectedBucketOwner", async () => {
      const owner = (await s3.send(new ListBucketsCommand({}))).Owner!.ID!;
      await s3.send(new HeadBucketCommand({ Bucket: "again", ExpectedBucketOwner: owner }));
      await assertRejectsStatus(
        () => s3.send(new HeadBucketCommand({ Bucket: "again", ExpectedBucketOwner: "000000" })),
        403,
      );
      await assertRejectsCode(
        () =>
          s3.send(
            new CopyObjectCommand({
              Bucket: "again",
              Key: "copy",
              CopySource: "again/k",
              ExpectedSourceBucketOwner: "000000",
            }),
          ),
        "AccessDenied",
        403,
      );
    });
  });
});
