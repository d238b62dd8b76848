// Bucket policies (SPEC: Bucket policy document; DESIGN §3 and §7) in both spellings: Principal
// "*" and user ARNs, Deny over every Allow, action wildcards, each condition key allowed and
// denied, Get/Put/DeleteBucketPolicy, GetBucketPolicyStatus, MalformedPolicy, and who may manage a
// policy. Raw requests in both dialects, the AWS SDK for the amz dialect.
import {
  GetBucketPolicyCommand,
  GetBucketPolicyStatusCommand,
  PutBucketPolicyCommand,
} from "@aws-sdk/client-s3";
import {
  anonymous,
  anonymousAs,
  as,
  createBucket,
  createUser,
  DIALECTS,
  type Doc,
  expectAllowed,
  expectDenied,
  expectError,
  expectStatus,
  getPolicy,
  objectPath,
  policyWords,
  putOk,
  putPolicy,
  type Requester,
  setPolicy,
  SPELL,
} from "./access_helpers.ts";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { s3Client, withServer } from "./server.ts";
import { type DialectName } from "./signer.ts";

Deno.test("access control: bucket policies", async (t) => {
  await withServer(async (server) => {
    for (const dialect of DIALECTS) {
      const admin = as(server, undefined, dialect);
      const other: DialectName = dialect === "store" ? "amz" : "store";

      await t.step(`${dialect}: bucket policies`, async () => {
        const bucket = `pol-${dialect}`;
        const w = policyWords(dialect, bucket);
        await createBucket(admin, bucket);
        for (const k of ["public/a.txt", "secret/b.txt", "photos/1.jpg", "docs/readme.txt"]) {
          await putOk(admin, bucket, k, `body ${k}`);
        }
        const pu = await createUser(server, `pu-${dialect}`);
        const pv = await createUser(server, `pv-${dialect}`);
        const prw = await createUser(server, `prw-${dialect}`, [{
          bucket,
          permission: "readwrite",
        }]);
        const anon = (method: string, key?: string, query?: string, body?: string) =>
          anonymous(server, { method, path: objectPath(bucket, key), query, body }, dialect);

        // Principal "*": anonymous read of public/*, nothing else.
        const publicDoc = w.doc({
          Sid: "PublicRead",
          ...w.allow("*", w.act("GetObject"), w.objArn("public/*")),
        });
        await setPolicy(admin, bucket, publicDoc);
        const stored = await getPolicy(admin, bucket);
        assertEquals(await expectStatus(stored, 200), JSON.stringify(publicDoc));
        assertEquals(stored.headers.get("content-type"), "application/json");
        assertEquals(
          await expectStatus(await anon("GET", "public/a.txt"), 200),
          "body public/a.txt",
        );
        await expectStatus(await anon("HEAD", "public/a.txt"), 200);
        await expectDenied(await anon("GET", "secret/b.txt"), "anonymous outside the resource");
        await expectDenied(await anon("GET"), "anonymous list");
        await expectDenied(await anon("PUT", "public/new.txt", undefined, "x"), "anonymous PUT");
        await expectDenied(await anon("DELETE", "public/a.txt"), "anonymous DELETE");
        await expectDenied(await anon("GET", undefined, "policy"), "anonymous GetBucketPolicy");
        await expectDenied(
          await anonymous(server, { method: "GET", path: "/" }),
          "anonymous ListBuckets",
        );
        // The policy grants pv (a signed-in user without bucket_access) the same read.
        await expectStatus(
          await as(server, pv, dialect)({
            method: "GET",
            path: objectPath(bucket, "public/a.txt"),
          }),
          200,
        );

        // Deny beats Allow from the policy, from bucket_access and from ownership.
        await setPolicy(
          admin,
          bucket,
          w.doc(
            w.allow("*", w.act("GetObject"), w.objArn("*")),
            w.deny("*", w.act("GetObject"), w.objArn("secret/*")),
          ),
        );
        const rw = as(server, prw, dialect);
        await expectStatus(await anon("GET", "photos/1.jpg"), 200);
        await expectDenied(await anon("GET", "secret/b.txt"), "Deny over Allow");
        await expectDenied(
          await rw({ method: "GET", path: objectPath(bucket, "secret/b.txt") }),
          "rw",
        );
        await expectStatus(
          await rw({ method: "GET", path: objectPath(bucket, "docs/readme.txt") }),
          200,
        );
        await putOk(rw, bucket, "secret/by-rw.txt");
        await expectStatus(
          await admin({ method: "GET", path: objectPath(bucket, "secret/b.txt") }),
          200,
        );
        const owner = await createUser(server, `pown-${dialect}`);
        const mine = as(server, owner, dialect);
        const owned = `pown-${dialect}`;
        await createBucket(mine, owned);
        await putOk(mine, owned, "keep.txt");
        const ow = policyWords(dialect, owned);
        await setPolicy(mine, owned, ow.doc(ow.deny("*", ow.act("DeleteObject"), ow.objArn("*"))));
        await expectDenied(
          await mine({ method: "DELETE", path: objectPath(owned, "keep.txt") }),
          "owner",
        );
        await expectStatus(await mine({ method: "GET", path: objectPath(owned, "keep.txt") }), 200);
        await expectStatus(
          await mine({ method: "DELETE", path: objectPath(owned), query: [["policy", ""]] }),
          204,
        );
        await expectStatus(
          await mine({ method: "DELETE", path: objectPath(owned, "keep.txt") }),
          204,
        );

        // Action wildcards and user principals; the request dialect need not match the spelling.
        await setPolicy(
          admin,
          bucket,
          w.doc(
            w.allow(w.user(pu), w.act("Get*"), w.objArn("*")),
            w.allow(w.user(pu), w.act("*"), w.objArn("docs/*")),
            w.allow(w.user(pv), w.act("List*"), w.bucketArn),
          ),
        );
        for (const d of [dialect, other]) {
          const u = as(server, pu, d);
          const v = as(server, pv, d);
          await expectStatus(
            await u({ method: "GET", path: objectPath(bucket, "secret/b.txt") }),
            200,
          );
          await expectStatus(
            await u({ method: "HEAD", path: objectPath(bucket, "public/a.txt") }),
            200,
          );
          await expectDenied(await u({ method: "GET", path: objectPath(bucket) }), "pu list");
          await putOk(u, bucket, `docs/pu-${d}.txt`);
          await expectDenied(
            await u({ method: "PUT", path: objectPath(bucket, `public/pu-${d}.txt`), body: "x" }),
            "pu PUT outside docs/",
          );
          await expectStatus(
            await u({ method: "DELETE", path: objectPath(bucket, `docs/pu-${d}.txt`) }),
            204,
          );
          await expectStatus(await v({ method: "GET", path: objectPath(bucket) }), 200);
          await expectStatus(
            await v({ method: "GET", path: objectPath(bucket), query: [["list-type", "2"]] }),
            200,
          );
          await expectStatus(await v({ method: "HEAD", path: objectPath(bucket) }), 200);
          await expectDenied(
            await v({ method: "GET", path: objectPath(bucket, "public/a.txt") }),
            "pv GET",
          );
        }
        await expectDenied(await anon("GET", "public/a.txt"), "user principals exclude anonymous");

        // Each condition key, allowed and denied (anonymous GetObject of docs/readme.txt).
        const conditioned = async (condition: Doc, allowed: boolean, what: string) => {
          await setPolicy(
            admin,
            bucket,
            w.doc({
              ...w.allow("*", w.act("GetObject"), w.objArn("docs/*")),
              Condition: condition,
            }),
          );
          await expectAllowed(await anon("GET", "docs/readme.txt"), allowed, 200, what);
        };
        await conditioned(
          { IpAddress: { [w.key("SourceIp")]: "127.0.0.1/32" } },
          true,
          "SourceIp in",
        );
        await conditioned(
          { IpAddress: { [w.key("SourceIp")]: "10.0.0.0/8" } },
          false,
          "SourceIp out",
        );
        await conditioned(
          { DateGreaterThan: { [w.key("CurrentTime")]: "2000-01-01T00:00:00Z" } },
          true,
          "CurrentTime after a past date",
        );
        await conditioned(
          { DateGreaterThan: { [w.key("CurrentTime")]: "2999-01-01T00:00:00Z" } },
          false,
          "CurrentTime after a future date",
        );
        await conditioned({ Bool: { [w.key("SecureTransport")]: "false" } }, true, "plain http");
        await conditioned(
          { Bool: { [w.key("SecureTransport")]: "true" } },
          false,
          "https required",
        );

        await setPolicy(
          admin,
          bucket,
          w.doc({
            ...w.allow("*", w.act("ListBucket"), w.bucketArn),
            Condition: { StringEquals: { [w.serviceKey("prefix")]: "photos/" } },
          }),
        );
        const body = await expectStatus(
          await anon("GET", undefined, "list-type=2&prefix=photos%2F"),
          200,
        );
        assertEquals(/<Key>([^<]*)<\/Key>/.exec(body)?.[1], "photos/1.jpg");
        await expectStatus(await anon("GET", undefined, "prefix=photos%2F"), 200, "V1 with prefix");
        await expectDenied(
          await anon("GET", undefined, "list-type=2&prefix=secret%2F"),
          "other prefix",
        );
        await expectDenied(await anon("GET", undefined, "list-type=2"), "no prefix");

        await setPolicy(
          admin,
          bucket,
          w.doc({
            ...w.allow("*", w.act("ListBucket"), w.bucketArn),
            Condition: { NumericLessThanEquals: { [w.serviceKey("max-keys")]: "10" } },
          }),
        );
        await expectStatus(
          await anon("GET", undefined, "list-type=2&max-keys=5"),
          200,
          "max-keys=5",
        );
        await expectDenied(await anon("GET", undefined, "list-type=2&max-keys=50"), "max-keys=50");

        // A condition on a Deny statement decides whether the Deny applies.
        for (const [cidr, allowed] of [["127.0.0.1/32", false], ["10.0.0.0/8", true]] as const) {
          await setPolicy(
            admin,
            bucket,
            w.doc({
              ...w.deny(w.user(prw), w.act("GetObject"), w.objArn("*")),
              Condition: { IpAddress: { [w.key("SourceIp")]: cidr } },
            }),
          );
          await expectAllowed(
            await rw({ method: "GET", path: objectPath(bucket, "docs/readme.txt") }),
            allowed,
            200,
            `Deny when SourceIp in ${cidr}`,
          );
        }

        // GetBucketPolicyStatus, then DeleteBucketPolicy.
        const status = async () => {
          const xml = await expectStatus(
            await admin({ method: "GET", path: objectPath(bucket), query: [["policyStatus", ""]] }),
            200,
          );
          assert(xml.includes("<PolicyStatus"), xml);
          return /<IsPublic>([^<]*)<\/IsPublic>/.exec(xml)?.[1];
        };
        assertEquals(await status(), "false", "user principal: not public");
        await setPolicy(admin, bucket, publicDoc);
        assertEquals(await status(), "true", "Principal * : public");

        await expectStatus(
          await admin({ method: "DELETE", path: objectPath(bucket), query: [["policy", ""]] }),
          204,
        );
        await expectError(await getPolicy(admin, bucket), "NoSuchBucketPolicy", 404);
        // Without a policy the status answers IsPublic=false (the bucket's ACL is private).
        const noPolicy = await expectStatus(
          await admin({ method: "GET", path: objectPath(bucket), query: [["policyStatus", ""]] }),
          200,
        );
        assert(noPolicy.includes("<IsPublic>false</IsPublic>"), noPolicy);
        await expectDenied(await anon("GET", "public/a.txt"), "policy deleted");
      });

      await t.step(`${dialect}: a missing key without ListBucket is AccessDenied`, async () => {
        // The protocol's rule for GetObject: with ListBucket a missing key is NoSuchKey (404),
        // without it AccessDenied (403), so GetObject alone is no oracle for key names.
        const bucket = `oracle-${dialect}`;
        const w = policyWords(dialect, bucket);
        await createBucket(admin, bucket);
        await putOk(admin, bucket, "public/here.txt");
        const getter = await createUser(server, `getter-${dialect}`);
        const lister = await createUser(server, `lister-${dialect}`, [{
          bucket,
          permission: "read",
        }]);
        await setPolicy(
          admin,
          bucket,
          w.doc(
            w.allow("*", w.act("GetObject"), w.objArn("public/*")),
            w.allow(w.user(getter), w.act("GetObject"), w.objArn("*")),
          ),
        );
        const path = objectPath(bucket, "public/missing.txt");
        const anon = anonymousAs(server, dialect);
        await expectStatus(
          await anon({ method: "GET", path: objectPath(bucket, "public/here.txt") }),
          200,
        );
        const l = as(server, lister, dialect);
        await expectError(await l({ method: "GET", path }), "NoSuchKey", 404, "with ListBucket");
        await expectError(
          await l({ method: "HEAD", path }),
          "NoSuchKey",
          404,
          "HEAD with ListBucket",
        );
        const g = as(server, getter, dialect);
        await expectDenied(await g({ method: "GET", path }), "user, GetObject only");
        await expectDenied(await g({ method: "HEAD", path }), "user HEAD, GetObject only");
        await expectDenied(await anon({ method: "GET", path }), "anonymous, GetObject only");
        await expectDenied(await anon({ method: "HEAD", path }), "anonymous HEAD, GetObject only");
      });

      await t.step(`${dialect}: MalformedPolicy and who may manage a policy`, async () => {
        const bucket = `pol-${dialect}`;
        const w = policyWords(dialect, bucket);
        const good = w.doc(w.allow("*", w.act("GetObject"), w.objArn("public/*")));
        await setPolicy(admin, bucket, good);
        const stmt = w.allow("*", w.act("GetObject"), w.objArn("*"));
        const bad: [string, Doc | string][] = [
          ["zero statements", { Version: "2012-10-17", Statement: [] }],
          ["no Statement", { Version: "2012-10-17" }],
          ["not JSON", "{not json"],
          ["not an object", "[]"],
          ["Statement is text", { Version: "2012-10-17", Statement: "allow all" }],
          ["bad Effect", w.doc({ ...stmt, Effect: "Perhaps" })],
          ["missing Action", w.doc({ Effect: "Allow", Principal: "*", Resource: w.objArn("*") })],
          [
            "missing Resource",
            w.doc({ Effect: "Allow", Principal: "*", Action: w.act("GetObject") }),
          ],
          ["unknown field", w.doc({ ...stmt, Colour: "red" })],
          ["unknown action", w.doc({ ...stmt, Action: w.act("FlyToTheMoon") })],
          ["action without prefix", w.doc({ ...stmt, Action: "GetObject" })],
          ["another bucket", w.doc({ ...stmt, Resource: `${SPELL[dialect].arn}someone-else/*` })],
          ["bad principal", w.doc({ ...stmt, Principal: { Nobody: "x" } })],
          [
            "bad condition",
            w.doc({ ...stmt, Condition: { IpAddress: { [w.key("SourceIp")]: "nope" } } }),
          ],
          ["bad version", { Version: "2099-01-01", Statement: [stmt] }],
        ];
        for (const [what, doc] of bad) {
          await expectError(await putPolicy(admin, bucket, doc), "MalformedPolicy", 400, what);
        }
        assertEquals(await expectStatus(await getPolicy(admin, bucket), 200), JSON.stringify(good));

        const reader = await createUser(server, `pread-${dialect}`, [{
          bucket,
          permission: "readwrite",
        }]);
        const outsiders: [string, Requester][] = [
          ["readwrite user", as(server, reader, dialect)],
          ["anonymous", anonymousAs(server, dialect)],
        ];
        for (const [who, req] of outsiders) {
          await expectDenied(await getPolicy(req, bucket), `${who} GetBucketPolicy`);
          await expectDenied(await putPolicy(req, bucket, w.doc(stmt)), `${who} PutBucketPolicy`);
          await expectDenied(
            await req({ method: "DELETE", path: objectPath(bucket), query: [["policy", ""]] }),
            `${who} DeleteBucketPolicy`,
          );
          await expectDenied(
            await req({ method: "GET", path: objectPath(bucket), query: [["policyStatus", ""]] }),
            `${who} GetBucketPolicyStatus`,
          );
        }
        assertEquals(await expectStatus(await getPolicy(admin, bucket), 200), JSON.stringify(good));

        if (dialect === "amz") {
          const sdk = s3Client(server);
          const user = s3Client(server, { user: reader.accessKey, password: reader.secret });
          const doc = JSON.stringify(w.doc(w.allow(w.user(reader), w.act("*"), w.objArn("*"))));
          await sdk.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: doc }));
          assertEquals(
            (await sdk.send(new GetBucketPolicyCommand({ Bucket: bucket }))).Policy,
            doc,
          );
          const st = await sdk.send(new GetBucketPolicyStatusCommand({ Bucket: bucket }));
          assertEquals(st.PolicyStatus?.IsPublic, false);
          await assertRejectsCode(
            () => user.send(new GetBucketPolicyCommand({ Bucket: bucket })),
            "AccessDenied",
            403,
          );
          await assertRejectsCode(
            () =>
              sdk.send(new PutBucketPolicyCommand({ Bucket: bucket, Policy: '{"Statement":[]}' })),
            "MalformedPolicy",
            400,
          );
        }
      });
    }
  });
});
