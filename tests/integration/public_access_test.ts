// Public access block (Get/Put/DeletePublicAccessBlock and its four switches in the access
// decision, PutBucketPolicy, ACL writes and GetBucketPolicyStatus) and object ownership controls
// (Get/Put/DeleteBucketOwnershipControls, CreateBucket's x-*-object-ownership, ACLs disabled by
// BucketOwnerEnforced). Raw requests in both dialects, the AWS SDK for the amz dialect.
import {
  CreateBucketCommand,
  DeleteBucketOwnershipControlsCommand,
  DeletePublicAccessBlockCommand,
  GetBucketAclCommand,
  GetBucketOwnershipControlsCommand,
  GetBucketPolicyStatusCommand,
  GetObjectAclCommand,
  GetPublicAccessBlockCommand,
  PutBucketAclCommand,
  PutBucketOwnershipControlsCommand,
  PutObjectCommand,
  PutPublicAccessBlockCommand,
} from "@aws-sdk/client-s3";
import {
  anonymous,
  as,
  createUser,
  DIALECTS,
  expectDenied,
  expectError,
  expectStatus,
  getPolicy,
  headerName,
  objectPath,
  policyWords,
  putPolicy,
  type Requester,
  setPolicy,
  SPELL,
  userId,
} from "./access_helpers.ts";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { s3Client, type TestServer, withServer } from "./server.ts";
import type { DialectName } from "./signer.ts";

function blockDoc(flags: Partial<Record<string, boolean | string>>): string {
  const inner = Object.entries(flags).map(([k, v]) => `<${k}>${v}</${k}>`).join("");
  return `<PublicAccessBlockConfiguration>${inner}</PublicAccessBlockConfiguration>`;
}

function putBlock(req: Requester, bucket: string, body: string): Promise<Response> {
  return req({ method: "PUT", path: objectPath(bucket), query: [["publicAccessBlock", ""]], body });
}

async function policyStatus(req: Requester, bucket: string): Promise<string> {
  const xml = await expectStatus(
    await req({ method: "GET", path: objectPath(bucket), query: [["policyStatus", ""]] }),
    200,
    "GetBucketPolicyStatus",
  );
  return /<IsPublic>(\w+)<\/IsPublic>/.exec(xml)?.[1] ?? xml;
}

async function publicAccessBlockSteps(
  t: Deno.TestContext,
  server: TestServer,
  dialect: DialectName,
): Promise<void> {
  const admin = as(server, undefined, dialect);
  const bucket = `pab-${dialect}`;
  const w = policyWords(dialect, bucket);
  const anon = (key: string) =>
    anonymous(server, { method: "GET", path: objectPath(bucket, key) }, dialect);
  const acl = headerName(dialect, "acl");

  await t.step(`${dialect}: public ACLs and a public policy, then each switch`, async () => {
    await expectStatus(
      await admin({ method: "PUT", path: objectPath(bucket), headers: { [acl]: "public-read" } }),
      200,
    );
    await expectStatus(
      await admin({
        method: "PUT",
        path: objectPath(bucket, "acl/obj"),
        body: "by acl",
        headers: { [acl]: "public-read" },
      }),
      200,
    );
    await expectStatus(
      await admin({ method: "PUT", path: objectPath(bucket, "pol/obj"), body: "by policy" }),
      200,
    );
    await setPolicy(admin, bucket, w.doc(w.allow("*", w.act("GetObject"), w.objArn("pol/*"))));
    await expectStatus(await anon("acl/obj"), 200, "public object ACL");
    await expectStatus(await anon("pol/obj"), 200, "public policy");
    await expectStatus(
      await anonymous(server, { method: "GET", path: objectPath(bucket) }, dialect),
      200,
      "public bucket ACL lists",
    );
    assertEquals(await policyStatus(admin, bucket), "true");

    // IgnorePublicAcls: object and bucket ACL grants to everyone stop counting.
    await expectStatus(await putBlock(admin, bucket, blockDoc({ IgnorePublicAcls: true })), 200);
    await expectDenied(await anon("acl/obj"), "ignored object ACL");
    await expectDenied(
      await anonymous(server, { method: "GET", path: objectPath(bucket) }, dialect),
      "ignored bucket ACL",
    );
    await expectStatus(await anon("pol/obj"), 200, "the policy still counts");
    assertEquals(await policyStatus(admin, bucket), "true", "policy still public");

    // RestrictPublicBuckets: the public policy grants nobody outside the owner's account.
    await expectStatus(
      await putBlock(
        admin,
        bucket,
        blockDoc({ IgnorePublicAcls: true, RestrictPublicBuckets: true }),
      ),
      200,
    );
    await expectDenied(await anon("pol/obj"), "restricted policy");
    assertEquals(await policyStatus(admin, bucket), "false", "nothing public any more");
    await expectStatus(
      await admin({ method: "GET", path: objectPath(bucket, "pol/obj") }),
      200,
      "the owner still reads",
    );

    // Deleting the block brings everything back.
    await expectStatus(
      await admin({
        method: "DELETE",
        path: objectPath(bucket),
        query: [["publicAccessBlock", ""]],
      }),
      204,
    );
    await expectStatus(await anon("acl/obj"), 200, "block deleted");
    await expectStatus(await anon("pol/obj"), 200, "block deleted");
  });

  await t.step(`${dialect}: BlockPublicPolicy and BlockPublicAcls refuse writes`, async () => {
    await expectStatus(
      await putBlock(admin, bucket, blockDoc({ BlockPublicPolicy: true, BlockPublicAcls: true })),
      200,
    );
    const before = await expectStatus(await getPolicy(admin, bucket), 200);
    await expectDenied(
      await putPolicy(admin, bucket, w.doc(w.allow("*", w.act("PutObject"), w.objArn("*")))),
      "public policy",
    );
    assertEquals(await expectStatus(await getPolicy(admin, bucket), 200), before, "unchanged");
    const bob = await createUser(server, `pab-bob-${dialect}`);
    await setPolicy(admin, bucket, w.doc(w.allow(w.user(bob), w.act("GetObject"), w.objArn("*"))));

    await expectDenied(
      await admin({
        method: "PUT",
        path: objectPath(bucket, "new"),
        body: "x",
        headers: { [acl]: "public-read" },
      }),
      "PutObject with a public ACL",
    );
    const head = await admin({ method: "HEAD", path: objectPath(bucket, "new") });
    assertEquals(head.status, 404, "nothing stored");
    await expectDenied(
      await admin({
        method: "PUT",
        path: objectPath(bucket, "acl/obj"),
        query: [["acl", ""]],
        headers: { [acl]: "authenticated-read" },
      }),
      "PutObjectAcl authenticated-read",
    );
    await expectDenied(
      await admin({
        method: "PUT",
        path: objectPath(bucket),
        query: [["acl", ""]],
        headers: {
          [headerName(dialect, "grant-read")]: `uri="${SPELL[dialect].groups}global/AllUsers"`,
        },
      }),
      "PutBucketAcl granting AllUsers",
    );
    await expectStatus(
      await admin({
        method: "PUT",
        path: objectPath(bucket, "new"),
        body: "x",
        headers: { [acl]: "private" },
      }),
      200,
      "a private ACL is fine",
    );
  });

  await t.step(`${dialect}: bad documents and who may use them`, async () => {
    for (
      const body of ["<Nope/>", blockDoc({ BlockPublicAcls: "yes" }), blockDoc({ Other: true })]
    ) {
      await expectError(await putBlock(admin, bucket, body), "MalformedXML", 400, body);
    }
    const eve = await createUser(server, `pab-eve-${dialect}`, [{
      bucket,
      permission: "readwrite",
    }]);
    const theirs = as(server, eve, dialect);
    await expectDenied(await putBlock(theirs, bucket, blockDoc({})), "non-owner PUT");
    await expectDenied(
      await theirs({ method: "GET", path: objectPath(bucket), query: [["publicAccessBlock", ""]] }),
      "non-owner GET",
    );
  });
}

Deno.test("public access block", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await t.step("SDK: NoSuchPublicAccessBlockConfiguration, round trip, delete", async () => {
      const Bucket = "pab-sdk";
      await s3.send(new CreateBucketCommand({ Bucket }));
      await assertRejectsCode(
        () => s3.send(new GetPublicAccessBlockCommand({ Bucket })),
        "NoSuchPublicAccessBlockConfiguration",
        404,
      );
      const config = {
        BlockPublicAcls: true,
        IgnorePublicAcls: false,
        BlockPublicPolicy: true,
        RestrictPublicBuckets: false,
      };
      await s3.send(
        new PutPublicAccessBlockCommand({ Bucket, PublicAccessBlockConfiguration: config }),
      );
      const got = await s3.send(new GetPublicAccessBlockCommand({ Bucket }));
      assertEquals(got.PublicAccessBlockConfiguration, config);
      const status = await s3.send(new GetBucketPolicyStatusCommand({ Bucket }));
      assertEquals(status.PolicyStatus?.IsPublic, false, "no policy: not public");
      await s3.send(new DeletePublicAccessBlockCommand({ Bucket }));
      await assertRejectsCode(
        () => s3.send(new GetPublicAccessBlockCommand({ Bucket })),
        "NoSuchPublicAccessBlockConfiguration",
        404,
      );
      await s3.send(new PutBucketAclCommand({ Bucket, ACL: "public-read" }));
      const publicAcl = await s3.send(new GetBucketPolicyStatusCommand({ Bucket }));
      assertEquals(publicAcl.PolicyStatus?.IsPublic, true, "a public bucket ACL");
    });
    for (const dialect of DIALECTS) await publicAccessBlockSteps(t, server, dialect);
  });
});

Deno.test("object ownership controls", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "own-default" }));

    await t.step("no controls: OwnershipControlsNotFoundError; put, get, delete", async () => {
      const Bucket = "own-default";
      await assertRejectsCode(
        () => s3.send(new GetBucketOwnershipControlsCommand({ Bucket })),
        "OwnershipControlsNotFoundError",
        404,
      );
      for (const ObjectOwnership of ["ObjectWriter", "BucketOwnerPreferred"] as const) {
        await s3.send(
          new PutBucketOwnershipControlsCommand({
            Bucket,
            OwnershipControls: { Rules: [{ ObjectOwnership }] },
          }),
        );
        const got = await s3.send(new GetBucketOwnershipControlsCommand({ Bucket }));
        assertEquals(got.OwnershipControls?.Rules, [{ ObjectOwnership }]);
      }
      await s3.send(new DeleteBucketOwnershipControlsCommand({ Bucket }));
      await assertRejectsCode(
        () => s3.send(new GetBucketOwnershipControlsCommand({ Bucket })),
        "OwnershipControlsNotFoundError",
        404,
      );
    });

    await t.step("CreateBucket's object ownership header", async () => {
      await s3.send(
        new CreateBucketCommand({ Bucket: "own-enforced", ObjectOwnership: "BucketOwnerEnforced" }),
      );
      const got = await s3.send(new GetBucketOwnershipControlsCommand({ Bucket: "own-enforced" }));
      assertEquals(got.OwnershipControls?.Rules?.[0].ObjectOwnership, "BucketOwnerEnforced");
      for (const dialect of DIALECTS) {
        const admin = as(server, undefined, dialect);
        await expectError(
          await admin({
            method: "PUT",
            path: objectPath(`own-bad-${dialect}`),
            headers: { [headerName(dialect, "object-ownership")]: "Nobody" },
          }),
          "InvalidArgument",
          400,
        );
        await expectError(
          await admin({
            method: "PUT",
            path: objectPath(`own-bad-${dialect}`),
            headers: {
              [headerName(dialect, "object-ownership")]: "BucketOwnerEnforced",
              [headerName(dialect, "acl")]: "public-read",
            },
          }),
          "InvalidBucketAclWithObjectOwnership",
          400,
        );
        const head = await admin({ method: "HEAD", path: objectPath(`own-bad-${dialect}`) });
        assertEquals(head.status, 404, "no bucket was created");
      }
    });

    await t.step("BucketOwnerEnforced: ACLs disabled", async () => {
      const Bucket = "own-enforced";
      await assertRejectsCode(
        () => s3.send(new PutObjectCommand({ Bucket, Key: "k", Body: "x", ACL: "public-read" })),
        "AccessControlListNotSupported",
        400,
      );
      await s3.send(
        new PutObjectCommand({ Bucket, Key: "k", Body: "x", ACL: "bucket-owner-full-control" }),
      );
      await s3.send(new PutObjectCommand({ Bucket, Key: "plain", Body: "x" }));
      await assertRejectsCode(
        () => s3.send(new PutBucketAclCommand({ Bucket, ACL: "public-read" })),
        "AccessControlListNotSupported",
        400,
      );
      const acl = await s3.send(new GetBucketAclCommand({ Bucket }));
      assertEquals(acl.Grants?.map((g) => g.Permission), ["FULL_CONTROL"]);
      assertEquals(acl.Grants?.[0].Grantee?.ID, acl.Owner?.ID);
      // A writer's object belongs to the bucket owner.
      const alice = await createUser(server, "own-alice", [{
        bucket: Bucket,
        permission: "write",
      }]);
      await expectStatus(
        await as(server, alice, "amz")({
          method: "PUT",
          path: objectPath(Bucket, "by-alice"),
          body: "x",
        }),
        200,
      );
      const objAcl = await s3.send(new GetObjectAclCommand({ Bucket, Key: "by-alice" }));
      assertEquals(objAcl.Owner?.ID, acl.Owner?.ID, "object owned by the bucket owner");
      assert(objAcl.Owner?.ID !== await userId(server, alice));
    });

    await t.step("existing public ACLs stop counting once ACLs are disabled", async () => {
      const Bucket = "own-later";
      await s3.send(new CreateBucketCommand({ Bucket }));
      await s3.send(new PutObjectCommand({ Bucket, Key: "pub", Body: "x", ACL: "public-read" }));
      const anon = () => anonymous(server, { method: "GET", path: objectPath(Bucket, "pub") });
      await expectStatus(await anon(), 200);
      await s3.send(
        new PutBucketOwnershipControlsCommand({
          Bucket,
          OwnershipControls: { Rules: [{ ObjectOwnership: "BucketOwnerEnforced" }] },
        }),
      );
      await expectDenied(await anon(), "ACL disabled");
      await s3.send(new DeleteBucketOwnershipControlsCommand({ Bucket }));
      await expectStatus(await anon(), 200, "ACLs back on");
      // A bucket ACL that grants others must go first.
      await s3.send(new PutBucketAclCommand({ Bucket, ACL: "public-read" }));
      await assertRejectsCode(
        () =>
          s3.send(
            new PutBucketOwnershipControlsCommand({
              Bucket,
              OwnershipControls: { Rules: [{ ObjectOwnership: "BucketOwnerEnforced" }] },
            }),
          ),
        "InvalidBucketAclWithObjectOwnership",
        400,
      );
    });

    await t.step("BucketOwnerPreferred: bucket-owner-full-control hands objects over", async () => {
      const Bucket = "own-preferred";
      await s3.send(
        new CreateBucketCommand({ Bucket, ObjectOwnership: "BucketOwnerPreferred" }),
      );
      const bob = await createUser(server, "own-bob", [{
        bucket: Bucket,
        permission: "readwrite",
      }]);
      const bobs = as(server, bob, "store");
      await expectStatus(
        await bobs({
          method: "PUT",
          path: objectPath(Bucket, "given"),
          body: "x",
          headers: { "x-store-acl": "bucket-owner-full-control" },
        }),
        200,
      );
      await expectStatus(
        await bobs({ method: "PUT", path: objectPath(Bucket, "kept"), body: "x" }),
        200,
      );
      const bucketOwner = (await s3.send(new GetBucketAclCommand({ Bucket }))).Owner?.ID;
      const given = await s3.send(new GetObjectAclCommand({ Bucket, Key: "given" }));
      const kept = await bobs({
        method: "GET",
        path: objectPath(Bucket, "kept"),
        query: [["acl", ""]],
      });
      const keptXml = await expectStatus(kept, 200);
      assertEquals(given.Owner?.ID, bucketOwner);
      assert(keptXml.includes(`<ID>${await userId(server, bob)}</ID>`), keptXml);
    });

    await t.step("malformed OwnershipControls", async () => {
      for (const dialect of DIALECTS) {
        const admin = as(server, undefined, dialect);
        for (
          const body of [
            "<OwnershipControls/>",
            "<OwnershipControls><Rule><ObjectOwnership>Mine</ObjectOwnership></Rule></OwnershipControls>",
            "<OwnershipControls><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>",
          ]
        ) {
          await expectError(
            await admin({
              method: "PUT",
              path: objectPath("own-default"),
              query: [["ownershipControls", ""]],
              body,
            }),
            "MalformedXML",
            400,
            body,
          );
        }
      }
    });
  });
});
