// Bucket policy condition keys through real requests in both dialects: object tags (existing and
// requested), vendor headers, versionid, delimiter; account-root principals; HEAD of a missing key
// under a prefix the caller may list.
import { GetObjectCommand, PutObjectTaggingCommand } from "@aws-sdk/client-s3";
import {
  anonymous,
  as,
  createBucket,
  createUser,
  DIALECTS,
  type Doc,
  expectDenied,
  expectError,
  expectStatus,
  headerName,
  objectPath,
  policyWords,
  putOk,
  setPolicy,
  SPELL,
  userId,
} from "./access_helpers.ts";
import { assertEquals, assertRejectsCode } from "./assert.ts";
import { s3Client, withServer } from "./server.ts";

Deno.test("bucket policy condition keys and account principals", async (t) => {
  await withServer(async (server) => {
    for (const dialect of DIALECTS) {
      const admin = as(server, undefined, dialect);
      const alice = await createUser(server, `keys-alice-${dialect}`);
      const aliceReq = as(server, alice, dialect);
      const bucket = `keys-${dialect}`;
      await createBucket(admin, bucket);
      const w = policyWords(dialect, bucket);
      const sk = (name: string) => `${SPELL[dialect].action}${name}`;
      const hk = (name: string) => `${SPELL[dialect].action}${headerName(dialect, name)}`;
      const cond = (statement: Doc, condition: Doc): Doc => ({
        ...statement,
        Condition: condition,
      });

      await t.step(`${dialect}: ExistingObjectTag decides reads`, async () => {
        await putOk(admin, bucket, "open", "o", { [headerName(dialect, "tagging")]: "public=yes" });
        await putOk(admin, bucket, "closed", "c", {
          [headerName(dialect, "tagging")]: "public=no",
        });
        await setPolicy(
          admin,
          bucket,
          w.doc(cond(w.allow("*", w.act("GetObject"), w.objArn("*")), {
            StringEquals: { [sk("ExistingObjectTag/public")]: "yes" },
          })),
        );
        const get = (key: string) =>
          anonymous(server, { method: "GET", path: objectPath(bucket, key) }, dialect);
        await expectStatus(await get("open"), 200, "tagged public=yes");
        await expectDenied(await get("closed"), "tagged public=no");
      });

      await t.step(`${dialect}: vendor headers (acl, encryption) as conditions`, async () => {
        await setPolicy(
          admin,
          bucket,
          w.doc(
            cond(w.allow(w.user(alice), w.act("PutObject"), w.objArn("*")), {
              StringEquals: { [hk("acl")]: "bucket-owner-full-control" },
            }),
            cond(w.deny("*", w.act("PutObject"), w.objArn("*")), {
              Null: { [hk("server-side-encryption")]: "true" },
            }),
          ),
        );
        const acl = headerName(dialect, "acl");
        const sse = headerName(dialect, "server-side-encryption");
        const put = (headers: Record<string, string>) =>
          aliceReq({ method: "PUT", path: objectPath(bucket, "hdr"), body: "x", headers });
        await expectDenied(await put({ [sse]: "AES256" }), "no acl header");
        await expectDenied(
          await put({ [acl]: "bucket-owner-full-control" }),
          "unencrypted, denied for everyone",
        );
        await expectStatus(await put({ [acl]: "bucket-owner-full-control", [sse]: "AES256" }), 200);
        const writer = await createUser(server, `keys-writer-${dialect}`, [{
          bucket,
          permission: "readwrite",
        }]);
        await expectDenied(
          await as(server, writer, dialect)({
            method: "PUT",
            path: objectPath(bucket, "w"),
            body: "x",
          }),
          "the Deny reaches a readwrite user too",
        );
      });

      await t.step(`${dialect}: x-*-copy-source limits what may be copied`, async () => {
        await putOk(admin, bucket, "src/a", "a");
        await putOk(admin, bucket, "secret", "s");
        await setPolicy(
          admin,
          bucket,
          w.doc(
            w.allow(w.user(alice), w.act("GetObject"), w.objArn("*")),
            cond(w.allow(w.user(alice), w.act("PutObject"), w.objArn("copies/*")), {
              StringLike: { [hk("copy-source")]: [`/${bucket}/src/*`, `${bucket}/src/*`] },
            }),
          ),
        );
        const copy = (source: string) =>
          aliceReq({
            method: "PUT",
            path: objectPath(bucket, "copies/x"),
            headers: { [headerName(dialect, "copy-source")]: source },
          });
        await expectStatus(await copy(`/${bucket}/src/a`), 200, "allowed source");
        await expectDenied(await copy(`/${bucket}/secret`), "other source");
        await expectDenied(
          await aliceReq({ method: "PUT", path: objectPath(bucket, "copies/y"), body: "x" }),
          "a plain PUT has no copy source",
        );
      });

      await t.step(`${dialect}: RequestObjectTag and RequestObjectTagKeys`, async () => {
        await putOk(admin, bucket, "tagme", "t");
        await setPolicy(
          admin,
          bucket,
          w.doc(
            cond(w.allow(w.user(alice), w.act("PutObjectTagging"), w.objArn("*")), {
              StringEquals: { [sk("RequestObjectTag/team")]: "blue" },
            }),
            cond(w.allow(w.user(alice), w.act("PutObject"), w.objArn("*")), {
              "ForAllValues:StringEquals": { [sk("RequestObjectTagKeys")]: ["team", "env"] },
            }),
          ),
        );
        const tagging = (team: string) =>
          aliceReq({
            method: "PUT",
            path: objectPath(bucket, "tagme"),
            query: [["tagging", ""]],
            body:
              `<Tagging><TagSet><Tag><Key>team</Key><Value>${team}</Value></Tag></TagSet></Tagging>`,
          });
        await expectDenied(await tagging("red"), "team=red");
        const before = await expectStatus(
          await admin({
            method: "GET",
            path: objectPath(bucket, "tagme"),
            query: [["tagging", ""]],
          }),
          200,
        );
        assertEquals(before.includes("<Key>team</Key>"), false, "refused tags were not stored");
        await expectStatus(await tagging("blue"), 200, "team=blue");
        const put = (tags: string) =>
          aliceReq({
            method: "PUT",
            path: objectPath(bucket, "tagged-put"),
            body: "x",
            headers: { [headerName(dialect, "tagging")]: tags },
          });
        await expectStatus(await put("team=a&env=b"), 200, "known tag keys");
        await expectDenied(await put("team=a&owner=b"), "an unlisted tag key");
      });

      await t.step(`${dialect}: versionid and delimiter`, async () => {
        await setPolicy(
          admin,
          bucket,
          w.doc(
            // A read that names a version is decided by the version action.
            cond(w.allow(w.user(alice), w.act("GetObjectVersion"), w.objArn("*")), {
              StringEquals: { [sk("versionid")]: "null" },
            }),
            cond(w.allow(w.user(alice), w.act("ListBucket"), w.bucketArn), {
              StringEquals: { [sk("delimiter")]: "/" },
            }),
          ),
        );
        const get = (query: [string, string][]) =>
          aliceReq({ method: "GET", path: objectPath(bucket, "src/a"), query });
        await expectStatus(await get([["versionId", "null"]]), 200, "versionId=null");
        await expectDenied(await get([]), "no versionId");
        const list = (query: [string, string][]) =>
          aliceReq({ method: "GET", path: objectPath(bucket), query });
        await expectStatus(await list([["delimiter", "/"]]), 200, "delimiter /");
        await expectDenied(await list([]), "no delimiter");
      });

      await t.step(`${dialect}: account-root principals match the user`, async () => {
        const id = await userId(server, alice);
        const root = SPELL[dialect].userArn.replace("user/", `${id}:root`);
        await setPolicy(
          admin,
          bucket,
          w.doc(
            w.allow({ [SPELL[dialect].principalKey]: root }, w.act("GetObject"), w.objArn("*")),
          ),
        );
        await expectStatus(
          await aliceReq({ method: "GET", path: objectPath(bucket, "src/a") }),
          200,
          "root of alice's account",
        );
        const bob = await createUser(server, `keys-bob-${dialect}`);
        await expectDenied(
          await as(server, bob, dialect)({ method: "GET", path: objectPath(bucket, "src/a") }),
          "another account",
        );
      });

      await t.step(`${dialect}: HEAD of a missing key under a listable prefix`, async () => {
        await setPolicy(
          admin,
          bucket,
          w.doc(
            w.allow(w.user(alice), w.act("GetObject"), w.objArn("home/alice/*")),
            cond(w.allow(w.user(alice), w.act("ListBucket"), w.bucketArn), {
              StringLike: { [sk("prefix")]: "home/alice/*" },
            }),
          ),
        );
        const head = await aliceReq({
          method: "HEAD",
          path: objectPath(bucket, "home/alice/none"),
        });
        await head.body?.cancel();
        assertEquals(head.status, 404, "HEAD under the listable prefix");
        await expectError(
          await aliceReq({ method: "GET", path: objectPath(bucket, "home/alice/none") }),
          "NoSuchKey",
          404,
        );
        const elsewhere = await aliceReq({
          method: "HEAD",
          path: objectPath(bucket, "home/bob/x"),
        });
        await elsewhere.body?.cancel();
        assertEquals(elsewhere.status, 403, "outside the prefix");
      });
    }

    await t.step("SDK: ExistingObjectTag and RequestObjectTag with the amz spelling", async () => {
      const admin = as(server, undefined, "amz");
      const carol = await createUser(server, "keys-carol");
      const bucket = "keys-sdk";
      await createBucket(admin, bucket);
      const w = policyWords("amz", bucket);
      await putOk(admin, bucket, "doc", "d", { "x-amz-tagging": "level=low" });
      await setPolicy(
        admin,
        bucket,
        w.doc(
          {
            ...w.allow(w.user(carol), "s3:GetObject", w.objArn("*")),
            Condition: { StringEquals: { "s3:ExistingObjectTag/level": "low" } },
          },
          {
            ...w.allow(w.user(carol), "s3:PutObjectTagging", w.objArn("*")),
            Condition: { StringEquals: { "s3:RequestObjectTag/level": ["low", "mid"] } },
          },
        ),
      );
      const s3 = s3Client(server, { user: carol.accessKey, password: carol.secret });
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "doc" }));
      assertEquals(await got.Body?.transformToString(), "d");
      await assertRejectsCode(
        () =>
          s3.send(
            new PutObjectTaggingCommand({
              Bucket: bucket,
              Key: "doc",
              Tagging: { TagSet: [{ Key: "level", Value: "high" }] },
            }),
          ),
        "AccessDenied",
        403,
      );
      await s3.send(
        new PutObjectTaggingCommand({
          Bucket: bucket,
          Key: "doc",
          Tagging: { TagSet: [{ Key: "level", Value: "mid" }] },
        }),
      );
      // Now tagged mid: the ExistingObjectTag condition no longer lets carol read.
      await assertRejectsCode(
        () => s3.send(new GetObjectCommand({ Bucket: bucket, Key: "doc" })),
        "AccessDenied",
        403,
      );
    });
  });
});
