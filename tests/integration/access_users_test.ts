// Who may do what (SPEC: User, Bucket-access entry, Authentication; DESIGN §7): the bucket_access
// permission table, bucket ownership and ListBuckets, disabled / re-enabled / rotated / deleted
// users, and that AccessDenied answers leak nothing. Raw requests in both dialects, the AWS SDK
// for the amz dialect. Bucket policies: access_policy_test.ts; ACLs: access_acl_test.ts.
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import {
  type Access,
  adminApi,
  anonymous,
  as,
  bucketNames,
  createBucket,
  createUser,
  deleteObjectsRequest,
  deleteOutcome,
  DIALECTS,
  exists,
  expectAllowed,
  expectDenied,
  expectError,
  expectStatus,
  getPolicy,
  headerName,
  objectPath,
  policyWords,
  putOk,
  putPolicy,
  type Requester,
  setPolicy,
  type TestUser,
  userId,
} from "./access_helpers.ts";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { s3Client, withServer } from "./server.ts";
import { type DialectName, presign, xmlValue } from "./signer.ts";

const PERMISSIONS: Access[] = ["read", "write", "readwrite", "none"];

Deno.test("access control: permission table, ownership, users", async (t) => {
  await withServer(async (server) => {
    for (const dialect of DIALECTS) {
      const admin = as(server, undefined, dialect);
      const other: DialectName = dialect === "store" ? "amz" : "store";
      const perm = `perm-${dialect}`;

      await t.step(`${dialect}: bucket_access read / write / readwrite / none`, async () => {
        await createBucket(admin, perm);
        await putOk(admin, perm, "seed.txt", "seed");
        const users = {} as Record<Access, TestUser>;
        for (const p of PERMISSIONS) {
          users[p] = await createUser(server, `${p}-${dialect}`, [{ bucket: perm, permission: p }]);
        }
        // A policy allowing everything to the "none" user (and to a control user without any
        // bucket_access): the explicit "none" still wins.
        const control = await createUser(server, `ctl-${dialect}`);
        const w = policyWords(dialect, perm);
        await setPolicy(
          admin,
          perm,
          w.doc(
            w.allow(w.user(users.none), w.act("*"), [w.bucketArn, w.objArn("*")]),
            w.allow(w.user(control), w.act("*"), [w.bucketArn, w.objArn("*")]),
          ),
        );
        await expectStatus(
          await as(server, control, dialect)({ method: "GET", path: objectPath(perm, "seed.txt") }),
          200,
          "control user allowed by the policy",
        );

        for (const p of PERMISSIONS) {
          const req = as(server, users[p], dialect);
          const read = p === "read" || p === "readwrite";
          const write = p === "write" || p === "readwrite";
          const what = (op: string) => `${p} ${op}`;
          const seed = objectPath(perm, "seed.txt");
          const got = await expectAllowed(
            await req({ method: "GET", path: seed }),
            read,
            200,
            what("GetObject"),
          );
          if (read) assertEquals(got, "seed");
          await expectAllowed(
            await req({ method: "HEAD", path: seed }),
            read,
            200,
            what("HeadObject"),
          );
          const v1 = await expectAllowed(
            await req({ method: "GET", path: objectPath(perm) }),
            read,
            200,
            what("ListObjects"),
          );
          const v2 = await expectAllowed(
            await req({ method: "GET", path: objectPath(perm), query: [["list-type", "2"]] }),
            read,
            200,
            what("ListObjectsV2"),
          );
          if (read) {
            assert(v1.includes("<Key>seed.txt</Key>") && v2.includes("<Key>seed.txt</Key>"));
          }
          await expectAllowed(
            await req({ method: "HEAD", path: objectPath(perm) }),
            read,
            200,
            what("HeadBucket"),
          );

          await expectAllowed(
            await req({ method: "PUT", path: objectPath(perm, `${p}/new.txt`), body: "x" }),
            write,
            200,
            what("PutObject"),
          );
          assertEquals(await exists(server, perm, `${p}/new.txt`), write, what("object stored"));

          await putOk(admin, perm, `${p}/victim.txt`);
          await expectAllowed(
            await req({ method: "DELETE", path: objectPath(perm, `${p}/victim.txt`) }),
            write,
            204,
            what("DeleteObject"),
          );
          assertEquals(await exists(server, perm, `${p}/victim.txt`), !write, what("after delete"));

          const keys = [`${p}/batch-1.txt`, `${p}/batch-2.txt`];
          for (const k of keys) await putOk(admin, perm, k);
          const result = await expectStatus(
            await req(deleteObjectsRequest(perm, keys)),
            200,
            what("DeleteObjects"),
          );
          const outcome = write ? "Deleted" : "AccessDenied";
          assertEquals(deleteOutcome(result), { [keys[0]]: outcome, [keys[1]]: outcome });
          for (const k of keys) assertEquals(await exists(server, perm, k), !write, what(k));

          // CopyObject needs read on the source and write on the destination.
          await expectAllowed(
            await req({
              method: "PUT",
              path: objectPath(perm, `${p}/copy.txt`),
              headers: { [headerName(dialect, "copy-source")]: `/${perm}/seed.txt` },
            }),
            read && write,
            200,
            what("CopyObject"),
          );
          assertEquals(await exists(server, perm, `${p}/copy.txt`), read && write, what("copy"));

          // Bucket-level operations beyond the table belong to the owner.
          await expectDenied(
            await req({ method: "GET", path: objectPath(perm), query: [["acl", ""]] }),
            what("GetBucketAcl"),
          );
          await expectDenied(
            await req({ method: "DELETE", path: objectPath(perm) }),
            what("DeleteBucket"),
          );
        }
      });

      if (dialect === "amz") {
        await t.step("amz: the permission table through the AWS SDK", async () => {
          const reader = await createUser(server, "sdk-reader", [{
            bucket: perm,
            permission: "read",
          }]);
          const writer = await createUser(server, "sdk-writer", [{
            bucket: perm,
            permission: "write",
          }]);
          const r = s3Client(server, { user: reader.accessKey, password: reader.secret });
          const wr = s3Client(server, { user: writer.accessKey, password: writer.secret });
          const got = await r.send(new GetObjectCommand({ Bucket: perm, Key: "seed.txt" }));
          assertEquals(await got.Body!.transformToString(), "seed");
          const list = await r.send(new ListObjectsV2Command({ Bucket: perm, Prefix: "seed" }));
          assertEquals(list.Contents?.map((c) => c.Key), ["seed.txt"]);
          await r.send(new HeadBucketCommand({ Bucket: perm }));
          await assertRejectsCode(
            () => r.send(new PutObjectCommand({ Bucket: perm, Key: "sdk/r.txt", Body: "x" })),
            "AccessDenied",
            403,
          );
          await wr.send(new PutObjectCommand({ Bucket: perm, Key: "sdk/w.txt", Body: "x" }));
          await assertRejectsCode(
            () => wr.send(new GetObjectCommand({ Bucket: perm, Key: "seed.txt" })),
            "AccessDenied",
            403,
          );
          await assertRejectsCode(
            () => wr.send(new ListObjectsV2Command({ Bucket: perm })),
            "AccessDenied",
            403,
          );
          const del = await wr.send(
            new DeleteObjectsCommand({ Bucket: perm, Delete: { Objects: [{ Key: "sdk/w.txt" }] } }),
          );
          assertEquals(del.Deleted?.map((d) => d.Key), ["sdk/w.txt"]);
          const denied = await r.send(
            new DeleteObjectsCommand({ Bucket: perm, Delete: { Objects: [{ Key: "seed.txt" }] } }),
          );
          assertEquals(denied.Errors?.map((e) => e.Code), ["AccessDenied"]);
        });
      }

      await t.step(`${dialect}: owners have full access, others none; ListBuckets`, async () => {
        const owner = await createUser(server, `owner-${dialect}`);
        const stranger = await createUser(server, `stranger-${dialect}`, [
          { bucket: perm, permission: "readwrite" },
        ]);
        const mine = as(server, owner, dialect);
        const theirs = as(server, stranger, dialect);
        const bucket = `owned-${dialect}`;
        await createBucket(mine, bucket);
        await createBucket(mine, `hidden-${dialect}-zz`);
        await putOk(mine, bucket, "private/secret-1.txt", "owner data");
        assertEquals(
          await expectStatus(
            await mine({ method: "GET", path: objectPath(bucket, "private/secret-1.txt") }),
            200,
          ),
          "owner data",
        );
        await expectStatus(await mine({ method: "HEAD", path: objectPath(bucket) }), 200);
        const list = await expectStatus(
          await mine({ method: "GET", path: objectPath(bucket), query: [["list-type", "2"]] }),
          200,
        );
        assert(list.includes("<Key>private/secret-1.txt</Key>"));
        const acl = await expectStatus(
          await mine({ method: "GET", path: objectPath(bucket), query: [["acl", ""]] }),
          200,
        );
        assert(acl.includes(`<ID>${await userId(server, owner)}</ID>`), acl);
        await expectError(await getPolicy(mine, bucket), "NoSuchBucketPolicy", 404);
        await putOk(mine, bucket, "tmp.txt");
        await expectStatus(
          await mine({ method: "DELETE", path: objectPath(bucket, "tmp.txt") }),
          204,
        );

        const target = objectPath(bucket, "private/secret-1.txt");
        await expectDenied(await theirs({ method: "GET", path: target }), "stranger GET");
        await expectDenied(await theirs({ method: "HEAD", path: target }), "stranger HEAD");
        await expectDenied(
          await theirs({ method: "GET", path: objectPath(bucket) }),
          "stranger list",
        );
        await expectDenied(
          await theirs({ method: "GET", path: objectPath(bucket), query: [["list-type", "2"]] }),
          "stranger list v2",
        );
        await expectDenied(
          await theirs({ method: "HEAD", path: objectPath(bucket) }),
          "stranger HeadBucket",
        );
        await expectDenied(
          await theirs({ method: "PUT", path: objectPath(bucket, "intruder.txt"), body: "x" }),
          "stranger PUT",
        );
        await expectDenied(await theirs({ method: "DELETE", path: target }), "stranger DELETE");
        const batch = await expectStatus(
          await theirs(deleteObjectsRequest(bucket, ["private/secret-1.txt"])),
          200,
        );
        assertEquals(deleteOutcome(batch), { "private/secret-1.txt": "AccessDenied" });
        assert(await exists(server, bucket, "private/secret-1.txt"));
        await expectDenied(
          await theirs({
            method: "PUT",
            path: objectPath(perm, "stolen.txt"),
            headers: { [headerName(dialect, "copy-source")]: `/${bucket}/private/secret-1.txt` },
          }),
          "stranger copies out of the owner's bucket",
        );
        assert(!(await exists(server, perm, "stolen.txt")), "nothing copied");
        for (const sub of ["acl", "policy"]) {
          await expectDenied(
            await theirs({ method: "GET", path: objectPath(bucket), query: [[sub, ""]] }),
            `stranger GET ?${sub}`,
          );
        }
        await expectDenied(
          await putPolicy(theirs, bucket, { Version: "2012-10-17", Statement: [] }),
          "stranger PutBucketPolicy",
        );
        await expectDenied(
          await theirs({
            method: "PUT",
            path: objectPath(bucket),
            query: [["acl", ""]],
            headers: { [headerName(dialect, "acl")]: "public-read" },
          }),
          "stranger PutBucketAcl",
        );
        await expectDenied(
          await theirs({ method: "DELETE", path: objectPath(bucket) }),
          "DeleteBucket",
        );
        await expectError(
          await theirs({ method: "PUT", path: objectPath(bucket) }),
          "BucketAlreadyExists",
          409,
        );
        // The administrator has all access.
        await expectStatus(await admin({ method: "GET", path: target }), 200);

        const listOf = async (req: Requester) =>
          bucketNames(await expectStatus(await req({ method: "GET", path: "/" }), 200));
        assertEquals(await listOf(mine), [`hidden-${dialect}-zz`, bucket]);
        assertEquals(await listOf(theirs), [], "a user with bucket_access owns no bucket");
        const adminList = await listOf(admin);
        assert(adminList.includes(perm), "admin lists its own buckets");
        assert(
          !adminList.some((b) => b.startsWith("owned-") || b.startsWith("hidden-")),
          "admin list",
        );
        if (dialect === "amz") {
          const sdk = s3Client(server, { user: owner.accessKey, password: owner.secret });
          const res = await sdk.send(new ListBucketsCommand({}));
          assertEquals(res.Buckets?.map((b) => b.Name), [`hidden-${dialect}-zz`, bucket]);
          assertEquals(res.Owner?.ID, await userId(server, owner));
        }
      });

      await t.step(`${dialect}: AccessDenied answers leak no other names`, async () => {
        const stranger = await createUser(server, `peek-${dialect}`);
        const owner = `owner-${dialect}`;
        const theirs = as(server, stranger, dialect);
        const bucket = `owned-${dialect}`;
        const acl = await expectStatus(
          await admin({ method: "GET", path: objectPath(bucket), query: [["acl", ""]] }),
          200,
        );
        const ownerId = xmlValue(acl, "ID");
        assert(ownerId && ownerId !== "admin", acl);
        const secrets = [`hidden-${dialect}-zz`, "secret-1", owner, ownerId];
        const checks: [string, Response, string][] = [
          [
            "GET missing key",
            await theirs({ method: "GET", path: objectPath(bucket, "guess/probe.txt") }),
            `/${bucket}/guess/probe.txt`,
          ],
          [
            "GET existing key",
            await theirs({ method: "GET", path: objectPath(bucket, "private/other.txt") }),
            `/${bucket}/private/other.txt`,
          ],
          ["list", await theirs({ method: "GET", path: objectPath(bucket) }), `/${bucket}`],
          [
            "list with prefix",
            await theirs({
              method: "GET",
              path: objectPath(bucket),
              query: [["prefix", "private/"]],
            }),
            `/${bucket}`,
          ],
          [
            "GetBucketAcl",
            await theirs({ method: "GET", path: objectPath(bucket), query: [["acl", ""]] }),
            `/${bucket}`,
          ],
          [
            "anonymous GET",
            await anonymous(server, { method: "GET", path: objectPath(bucket, "private/x") }),
            `/${bucket}/private/x`,
          ],
          ["anonymous ListBuckets", await anonymous(server, { method: "GET", path: "/" }), "/"],
        ];
        for (const [what, res, resource] of checks) {
          // A missing key answers like an existing one: no existence oracle.
          const body = await expectDenied(res, what);
          assertEquals(/<Resource>([^<]*)<\/Resource>/.exec(body)?.[1], resource, what);
          for (const s of secrets) assert(!body.includes(s), `${what} leaks "${s}": ${body}`);
        }
        const head = await theirs({
          method: "HEAD",
          path: objectPath(bucket, "private/secret-1.txt"),
        });
        assertEquals(await expectDenied(head, "HEAD"), "", "HEAD errors have no body");
        const batch = await expectStatus(
          await theirs(deleteObjectsRequest(bucket, ["a.txt"])),
          200,
        );
        assertEquals(deleteOutcome(batch), { "a.txt": "AccessDenied" });
        for (const s of secrets) assert(!batch.includes(s), `DeleteObjects leaks "${s}": ${batch}`);
        // A missing bucket is NoSuchBucket to anonymous callers too, as the protocol answers.
        await expectError(
          await anonymous(server, { method: "GET", path: objectPath("no-such-bucket-here") }),
          "NoSuchBucket",
          404,
          "anonymous list of a missing bucket",
        );
      });

      await t.step(`${dialect}: disabled, re-enabled, rotated and deleted users`, async () => {
        const user = await createUser(server, `life-${dialect}`, [{
          bucket: perm,
          permission: "readwrite",
        }]);
        let req = as(server, user, dialect);
        const own = `life-${dialect}-b`;
        await createBucket(req, own);
        await putOk(req, own, "mine.txt");
        const seed = objectPath(perm, "seed.txt");
        const url = await presign(server, {
          method: "GET",
          path: seed,
          dialect,
          accessKey: user.accessKey,
          secret: user.secret,
          expires: 600,
        });
        await expectStatus(await fetch(url), 200, "presigned GET");

        assertEquals(
          (await adminApi(server, "POST", `/users/${user.accessKey}/disable`)).status,
          200,
        );
        await expectDenied(await req({ method: "GET", path: "/" }), "disabled ListBuckets");
        await expectDenied(await req({ method: "GET", path: seed }), "disabled GET");
        await expectDenied(await req({ method: "HEAD", path: seed }), "disabled HEAD");
        await expectDenied(await fetch(url), "disabled presigned GET");
        await expectDenied(
          await req({ method: "GET", path: objectPath(own, "mine.txt") }),
          "own GET",
        );
        await expectDenied(await req({ method: "GET", path: objectPath(own) }), "own list");
        await expectDenied(
          await req({ method: "PUT", path: objectPath(own, "more.txt"), body: "x" }),
          "disabled PUT",
        );
        await expectDenied(
          await req({ method: "DELETE", path: objectPath(own, "mine.txt") }),
          "DELETE",
        );
        await expectDenied(
          await req({ method: "PUT", path: objectPath(`${own}-2`) }),
          "CreateBucket",
        );
        await expectDenied(await req(deleteObjectsRequest(own, ["mine.txt"])), "DeleteObjects");
        await expectDenied(
          await req({ method: "GET", path: objectPath(own), query: [["policy", ""]] }),
          "GetBucketPolicy",
        );
        if (dialect === "amz") {
          const sdk = s3Client(server, { user: user.accessKey, password: user.secret });
          await assertRejectsCode(() => sdk.send(new ListBucketsCommand({})), "AccessDenied", 403);
        }
        assert(await exists(server, own, "mine.txt"), "nothing was deleted while disabled");

        assertEquals(
          (await adminApi(server, "POST", `/users/${user.accessKey}/enable`)).status,
          200,
        );
        assertEquals(
          bucketNames(await expectStatus(await req({ method: "GET", path: "/" }), 200)),
          [own],
        );
        assertEquals(await expectStatus(await req({ method: "GET", path: seed }), 200), "seed");
        await expectStatus(await fetch(url), 200, "presigned GET after enable");

        const rotated = await adminApi(server, "POST", `/users/${user.accessKey}/keys`);
        assertEquals(rotated.status, 200);
        const fresh: TestUser = {
          ...user,
          accessKey: String(rotated.json!.access_key),
          secret: String(rotated.json!.secret_key),
        };
        assert(fresh.accessKey !== user.accessKey && fresh.secret !== user.secret);
        for (const d of [dialect, other]) {
          const old = as(server, user, d);
          await expectError(
            await old({ method: "GET", path: "/" }),
            "InvalidAccessKeyId",
            403,
            "old key",
          );
          await expectError(await old({ method: "GET", path: seed }), "InvalidAccessKeyId", 403);
        }
        await expectError(await fetch(url), "InvalidAccessKeyId", 403, "presigned, old key");
        req = as(server, fresh, dialect);
        assertEquals(
          bucketNames(await expectStatus(await req({ method: "GET", path: "/" }), 200)),
          [own],
        );
        assertEquals(await expectStatus(await req({ method: "GET", path: seed }), 200), "seed");
        // The old secret with the new key is a signature mismatch, not access.
        const mixed = as(server, { ...fresh, secret: user.secret }, dialect);
        await expectError(await mixed({ method: "GET", path: "/" }), "SignatureDoesNotMatch", 403);

        assertEquals((await adminApi(server, "DELETE", `/users/${fresh.accessKey}`)).status, 204);
        await expectError(
          await req({ method: "GET", path: "/" }),
          "InvalidAccessKeyId",
          403,
          "deleted",
        );
        await expectError(await req({ method: "GET", path: seed }), "InvalidAccessKeyId", 403);
        if (dialect === "amz") {
          const sdk = s3Client(server, { user: fresh.accessKey, password: fresh.secret });
          await assertRejectsCode(
            () => sdk.send(new ListBucketsCommand({})),
            "InvalidAccessKeyId",
            403,
          );
        }
      });
    }
  });
});
