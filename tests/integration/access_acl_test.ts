// ACLs (SPEC: ACL; DESIGN §7) checked by behaviour: every canned ACL through x-*-acl on PutObject,
// CreateBucket and PutBucketAcl, the five grant headers (by id, emailAddress and group uri), the
// AccessControlPolicy body, the Get*Acl document shape and the default private ACL; and that
// anonymous callers get in exactly where an ACL or policy lets them. Raw requests in both
// dialects, the AWS SDK for the amz dialect.
import { GetObjectAclCommand, PutObjectAclCommand } from "@aws-sdk/client-s3";
import {
  anonymousAs,
  as,
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
  headerName,
  NAMESPACE,
  objectPath,
  policyWords,
  putOk,
  type Requester,
  setBucketAccess,
  setPolicy,
  SPELL,
  type TestUser,
  userId,
} from "./access_helpers.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { ADMIN_USER, s3Client, withServer } from "./server.ts";
import { type DialectName, xmlValue } from "./signer.ts";

const XSI = "http://www.w3.org/2001/XMLSchema-instance";

interface ParsedGrant {
  type: string;
  /** ID for CanonicalUser, URI for Group. */
  who: string;
  permission: string;
}

interface ParsedAcl {
  ownerId: string;
  ownerName: string;
  grants: ParsedGrant[];
}

/** Parses an AccessControlPolicy answer, asserting its shape. */
function parseAcl(xml: string, dialect: DialectName): ParsedAcl {
  assertMatch(xml, /^<\?xml version="1.0" encoding="UTF-8"\?>\s*<AccessControlPolicy /, "root");
  assert(xml.includes(`xmlns="${NAMESPACE[dialect]}"`), `namespace of ${dialect}: ${xml}`);
  const owner = /<AccessControlPolicy[^>]*><Owner>(.*?)<\/Owner><AccessControlList>/s.exec(xml);
  assert(owner, `Owner before AccessControlList: ${xml}`);
  const list = /<AccessControlList>(.*)<\/AccessControlList><\/AccessControlPolicy>$/s.exec(xml);
  assert(list, `AccessControlList: ${xml}`);
  const grants: ParsedGrant[] = [];
  const re =
    /<Grant><Grantee xmlns:xsi="([^"]*)" xsi:type="([^"]*)">(.*?)<\/Grantee><Permission>([A-Z_]+)<\/Permission><\/Grant>/gs;
  let rest = list[1];
  for (const m of list[1].matchAll(re)) {
    assertEquals(m[1], XSI, "xsi namespace");
    const type = m[2];
    const who = type === "Group" ? xmlValue(m[3], "URI") : xmlValue(m[3], "ID");
    assert(who, `grantee of ${m[0]}`);
    if (type === "CanonicalUser") assert(xmlValue(m[3], "DisplayName"), `DisplayName: ${m[0]}`);
    grants.push({ type, who, permission: m[4] });
    rest = rest.replace(m[0], "");
  }
  assertEquals(rest, "", "only Grant elements in the list");
  return {
    ownerId: xmlValue(owner[1], "ID") ?? "",
    ownerName: xmlValue(owner[1], "DisplayName") ?? "",
    grants,
  };
}

function sortGrants(grants: ParsedGrant[]): string[] {
  return grants.map((g) => `${g.type}:${g.who}:${g.permission}`).sort();
}

Deno.test("access control: ACLs and anonymous access", async (t) => {
  await withServer(async (server) => {
    for (const dialect of DIALECTS) {
      const admin = as(server, undefined, dialect);
      const anon = anonymousAs(server, dialect);
      const hdr = (suffix: string) => headerName(dialect, suffix);
      const groups = SPELL[dialect].groups;
      const ALL = `${groups}global/AllUsers`;
      const AUTH = `${groups}global/AuthenticatedUsers`;
      const bucket = `acl-${dialect}`;
      const users = {} as Record<"alice" | "bob" | "carol" | "writer", TestUser>;
      const ids = {} as Record<keyof typeof users, string>;
      const get = (req: Requester, key: string, b = bucket) =>
        req({ method: "GET", path: objectPath(b, key) });
      const getAcl = (req: Requester, key?: string, b = bucket) =>
        req({ method: "GET", path: objectPath(b, key), query: [["acl", ""]] });
      const putAcl = (
        req: Requester,
        key: string | undefined,
        opts: { headers?: Record<string, string>; body?: string },
        b = bucket,
      ) => req({ method: "PUT", path: objectPath(b, key), query: [["acl", ""]], ...opts });
      const aclOf = async (req: Requester, key?: string, b = bucket) =>
        parseAcl(
          await expectStatus(await getAcl(req, key, b), 200, `Get ACL ${b}/${key}`),
          dialect,
        );
      const user = (name: keyof typeof users) => as(server, users[name], dialect);

      await t.step(`${dialect}: default private ACL and the document shape`, async () => {
        await createBucket(admin, bucket);
        for (const name of ["alice", "bob", "carol"] as const) {
          users[name] = await createUser(server, `${name}-${dialect}`);
        }
        users.writer = await createUser(server, `writer-${dialect}`, [
          { bucket, permission: "write" },
        ]);
        for (const name of Object.keys(users) as (keyof typeof users)[]) {
          ids[name] = await userId(server, users[name]);
        }
        const adminOnly = ["CanonicalUser:admin:FULL_CONTROL"];
        const bucketAcl = await aclOf(admin);
        assertEquals([bucketAcl.ownerId, bucketAcl.ownerName], ["admin", ADMIN_USER]);
        assertEquals(sortGrants(bucketAcl.grants), adminOnly);
        await putOk(admin, bucket, "plain.txt");
        const objectAcl = await aclOf(admin, "plain.txt");
        assertEquals([objectAcl.ownerId, objectAcl.ownerName], ["admin", ADMIN_USER]);
        assertEquals(sortGrants(objectAcl.grants), adminOnly);
        // An object a user uploads belongs to that user.
        await putOk(user("writer"), bucket, "w/plain.txt");
        const written = await aclOf(admin, "w/plain.txt");
        assertEquals([written.ownerId, written.ownerName], [ids.writer, users.writer.name]);
        assertEquals(sortGrants(written.grants), [`CanonicalUser:${ids.writer}:FULL_CONTROL`]);
        // The default private ACL admits nobody else.
        await expectDenied(await get(user("carol"), "plain.txt"), "carol GET private");
        await expectDenied(await get(anon, "plain.txt"), "anonymous GET private");
        await expectDenied(await getAcl(user("carol")), "carol GetBucketAcl");
        await expectDenied(await getAcl(anon), "anonymous GetBucketAcl");
        await expectDenied(await getAcl(user("carol"), "plain.txt"), "carol GetObjectAcl");
        await expectDenied(await getAcl(anon, "plain.txt"), "anonymous GetObjectAcl");
      });

      await t.step(`${dialect}: canned ACLs on PutObject`, async () => {
        const cases: [string, boolean, boolean, string[]][] = [
          ["private", false, false, []],
          ["public-read", true, true, [`Group:${ALL}:READ`]],
          ["public-read-write", true, true, [`Group:${ALL}:READ`, `Group:${ALL}:WRITE`]],
          ["authenticated-read", false, true, [`Group:${AUTH}:READ`]],
        ];
        for (const [canned, anonRead, authRead, extra] of cases) {
          const key = `canned/${canned}.txt`;
          await putOk(admin, bucket, key, canned, { [hdr("acl")]: canned });
          const acl = await aclOf(admin, key);
          assertEquals(
            sortGrants(acl.grants),
            ["CanonicalUser:admin:FULL_CONTROL", ...extra].sort(),
            canned,
          );
          const body = await expectAllowed(await get(anon, key), anonRead, 200, `anon ${canned}`);
          if (anonRead) assertEquals(body, canned);
          await expectAllowed(
            await anon({ method: "HEAD", path: objectPath(bucket, key) }),
            anonRead,
            200,
            `anon HEAD ${canned}`,
          );
          await expectAllowed(await get(user("carol"), key), authRead, 200, `carol ${canned}`);
          // An object ACL grants no write to the bucket, nor access to the ACL itself.
          await expectDenied(
            await anon({ method: "PUT", path: objectPath(bucket, key), body: "overwrite" }),
            `anon PUT over ${canned}`,
          );
          await expectDenied(await getAcl(user("carol"), key), `carol GetObjectAcl ${canned}`);
          await expectDenied(await getAcl(anon, key), `anon GetObjectAcl ${canned}`);
        }
        await expectError(
          await admin({
            method: "PUT",
            path: objectPath(bucket, "canned/bad.txt"),
            headers: { [hdr("acl")]: "everyone-please" },
            body: "x",
          }),
          "InvalidArgument",
          400,
        );
        assert(!(await exists(server, bucket, "canned/bad.txt")), "no object for a bad ACL");
      });

      await t.step(`${dialect}: bucket-owner-read and bucket-owner-full-control`, async () => {
        const w = user("writer");
        await putOk(w, bucket, "bo/read.txt", "r", { [hdr("acl")]: "bucket-owner-read" });
        await putOk(w, bucket, "bo/full.txt", "f", { [hdr("acl")]: "bucket-owner-full-control" });
        const read = await aclOf(w, "bo/read.txt");
        assertEquals(read.ownerId, ids.writer);
        assertEquals(
          sortGrants(read.grants),
          [`CanonicalUser:${ids.writer}:FULL_CONTROL`, "CanonicalUser:admin:READ"].sort(),
        );
        const full = await aclOf(admin, "bo/full.txt");
        assertEquals(
          sortGrants(full.grants),
          [`CanonicalUser:${ids.writer}:FULL_CONTROL`, "CanonicalUser:admin:FULL_CONTROL"].sort(),
        );
        for (const key of ["bo/read.txt", "bo/full.txt"]) {
          await expectStatus(await get(admin, key), 200, `bucket owner reads ${key}`);
          await expectStatus(await get(w, key), 200, `object owner reads ${key}`);
          await expectDenied(await get(user("carol"), key), `carol ${key}`);
          await expectDenied(await get(anon, key), `anon ${key}`);
        }
        // In a user's bucket the grant goes to that user; alone, the canned ACL is private.
        const aliceBucket = `alice-${dialect}`;
        await createBucket(user("alice"), aliceBucket);
        await setBucketAccess(server, users.writer, [
          { bucket, permission: "write" },
          { bucket: aliceBucket, permission: "write" },
        ]);
        await putOk(w, aliceBucket, "in.txt", "in", { [hdr("acl")]: "bucket-owner-full-control" });
        assertEquals(
          sortGrants((await aclOf(user("alice"), "in.txt", aliceBucket)).grants),
          [`CanonicalUser:${ids.writer}:FULL_CONTROL`, `CanonicalUser:${ids.alice}:FULL_CONTROL`]
            .sort(),
        );
        assertEquals(
          await expectStatus(await get(user("alice"), "in.txt", aliceBucket), 200),
          "in",
        );
        await expectDenied(await get(user("bob"), "in.txt", aliceBucket), "bob in alice's bucket");
        await putOk(admin, bucket, "bo/own.txt", "o", { [hdr("acl")]: "bucket-owner-read" });
        assertEquals(sortGrants((await aclOf(admin, "bo/own.txt")).grants), [
          "CanonicalUser:admin:FULL_CONTROL",
        ]);
      });

      await t.step(`${dialect}: canned ACLs on CreateBucket and PutBucketAcl`, async () => {
        const create = async (name: string, canned: string) => {
          await expectStatus(
            await admin({
              method: "PUT",
              path: objectPath(name),
              headers: { [hdr("acl")]: canned },
            }),
            200,
            `create ${name}`,
          );
          await putOk(admin, name, "inside.txt", "inside");
        };
        const [prw, pr, ar, pv] = ["prw", "pr", "ar", "pv"].map((p) => `${p}-${dialect}`);
        await create(prw, "public-read-write");
        await create(pr, "public-read");
        await create(ar, "authenticated-read");
        await create(pv, "private");
        assertEquals(
          sortGrants((await aclOf(admin, undefined, prw)).grants),
          ["CanonicalUser:admin:FULL_CONTROL", `Group:${ALL}:READ`, `Group:${ALL}:WRITE`].sort(),
        );

        // public-read-write: anyone lists, writes and deletes; the bucket itself stays the owner's.
        await expectStatus(
          await anon({ method: "PUT", path: objectPath(prw, "anon.txt"), body: "from anon" }),
          200,
          "anonymous PutObject",
        );
        assert(await exists(server, prw, "anon.txt"));
        const listing = await expectStatus(
          await anon({ method: "GET", path: objectPath(prw) }),
          200,
        );
        assert(listing.includes("<Key>anon.txt</Key>"), listing);
        await expectStatus(await anon({ method: "HEAD", path: objectPath(prw) }), 200);
        await expectStatus(
          await anon({ method: "DELETE", path: objectPath(prw, "anon.txt") }),
          204,
        );
        await expectDenied(await get(anon, "inside.txt", prw), "object ACL still private");
        await expectDenied(await anon({ method: "DELETE", path: objectPath(prw) }), "DeleteBucket");
        await expectDenied(await getAcl(anon, undefined, prw), "anonymous GetBucketAcl");
        await expectDenied(
          await putAcl(anon, undefined, { headers: { [hdr("acl")]: "private" } }, prw),
          "anonymous PutBucketAcl",
        );
        await expectDenied(
          await anon({ method: "GET", path: objectPath(prw), query: [["policy", ""]] }),
          "anonymous GetBucketPolicy",
        );

        // public-read: anyone lists, nobody else writes.
        await expectStatus(await anon({ method: "GET", path: objectPath(pr) }), 200);
        await expectStatus(
          await anon({ method: "GET", path: objectPath(pr), query: [["list-type", "2"]] }),
          200,
        );
        await expectDenied(
          await anon({ method: "PUT", path: objectPath(pr, "x.txt"), body: "x" }),
          "anonymous PUT into public-read",
        );
        await expectDenied(
          await user("carol")({ method: "PUT", path: objectPath(pr, "x.txt"), body: "x" }),
          "carol PUT into public-read",
        );
        await expectDenied(await get(anon, "inside.txt", pr), "objects keep their own ACL");

        // authenticated-read: signed-in users list, anonymous callers do not.
        await expectStatus(await user("carol")({ method: "GET", path: objectPath(ar) }), 200);
        await expectDenied(await anon({ method: "GET", path: objectPath(ar) }), "anon list ar");
        await expectDenied(
          await user("carol")({ method: "PUT", path: objectPath(ar, "x.txt"), body: "x" }),
          "carol PUT into authenticated-read",
        );

        // private: the owner only.
        await expectDenied(
          await user("carol")({ method: "GET", path: objectPath(pv) }),
          "carol pv",
        );
        await expectDenied(await anon({ method: "GET", path: objectPath(pv) }), "anon pv");

        // PutBucketAcl replaces the ACL.
        await expectStatus(
          await putAcl(admin, undefined, { headers: { [hdr("acl")]: "private" } }, pr),
          200,
        );
        await expectDenied(await anon({ method: "GET", path: objectPath(pr) }), "pr made private");
        await expectStatus(
          await putAcl(admin, undefined, { headers: { [hdr("acl")]: "public-read-write" } }, pv),
          200,
        );
        await expectStatus(
          await anon({ method: "PUT", path: objectPath(pv, "now.txt"), body: "now" }),
          200,
          "pv made public-read-write",
        );
        await expectStatus(
          await putAcl(admin, undefined, { headers: { [hdr("acl")]: "authenticated-read" } }, prw),
          200,
        );
        await expectDenied(
          await anon({ method: "PUT", path: objectPath(prw, "late.txt"), body: "x" }),
          "prw made authenticated-read",
        );
        await expectStatus(await user("bob")({ method: "GET", path: objectPath(prw) }), 200);

        // An unknown canned ACL creates no bucket.
        await expectError(
          await admin({
            method: "PUT",
            path: objectPath(`badacl-${dialect}`),
            headers: { [hdr("acl")]: "world-writable" },
          }),
          "InvalidArgument",
          400,
        );
        await expectError(
          await admin({ method: "HEAD", path: objectPath(`badacl-${dialect}`) }),
          "NoSuchBucket",
          404,
        );

        // A user's own bucket with a canned ACL.
        const carols = `carol-${dialect}`;
        await expectStatus(
          await user("carol")({
            method: "PUT",
            path: objectPath(carols),
            headers: { [hdr("acl")]: "public-read" },
          }),
          200,
        );
        const acl = await aclOf(user("carol"), undefined, carols);
        assertEquals([acl.ownerId, acl.ownerName], [ids.carol, users.carol.name]);
        assertEquals(
          sortGrants(acl.grants),
          [`CanonicalUser:${ids.carol}:FULL_CONTROL`, `Group:${ALL}:READ`].sort(),
        );
        await expectStatus(await anon({ method: "GET", path: objectPath(carols) }), 200);
        await expectDenied(await getAcl(user("bob"), undefined, carols), "bob GetBucketAcl");
      });

      await t.step(`${dialect}: grant headers`, async () => {
        const put = (key: string, headers: Record<string, string>) =>
          putOk(admin, bucket, key, key, headers);
        await put("g/read-id.txt", { [hdr("grant-read")]: `id="${ids.bob}"` });
        assertEquals(
          await expectStatus(await get(user("bob"), "g/read-id.txt"), 200),
          "g/read-id.txt",
        );
        await expectStatus(
          await user("bob")({ method: "HEAD", path: objectPath(bucket, "g/read-id.txt") }),
          200,
        );
        await expectDenied(await get(user("carol"), "g/read-id.txt"), "carol, not granted");
        await expectDenied(await get(anon, "g/read-id.txt"), "anonymous, not granted");
        await expectDenied(await getAcl(user("bob"), "g/read-id.txt"), "READ is not READ_ACP");
        await expectDenied(
          await putAcl(user("bob"), "g/read-id.txt", { headers: { [hdr("acl")]: "public-read" } }),
          "READ is not WRITE_ACP",
        );
        assertEquals(sortGrants((await aclOf(admin, "g/read-id.txt")).grants), [
          `CanonicalUser:${ids.bob}:READ`,
        ]);

        await put("g/read-email.txt", {
          [hdr("grant-read")]: `emailAddress="${users.alice.email}"`,
        });
        await expectStatus(await get(user("alice"), "g/read-email.txt"), 200);
        await expectDenied(await get(user("bob"), "g/read-email.txt"), "bob, email grant to alice");
        assertEquals(sortGrants((await aclOf(admin, "g/read-email.txt")).grants), [
          `CanonicalUser:${ids.alice}:READ`,
        ]);

        await put("g/read-all.txt", { [hdr("grant-read")]: `uri="${ALL}"` });
        await expectStatus(await get(anon, "g/read-all.txt"), 200);
        await put("g/read-auth.txt", { [hdr("grant-read")]: `uri="${AUTH}"` });
        await expectStatus(await get(user("carol"), "g/read-auth.txt"), 200);
        await expectDenied(await get(anon, "g/read-auth.txt"), "AuthenticatedUsers excludes anon");
        // Several grantees in one header.
        await put("g/read-many.txt", {
          [hdr("grant-read")]: `id="${ids.bob}", emailAddress="${users.carol.email}"`,
        });
        await expectStatus(await get(user("bob"), "g/read-many.txt"), 200);
        await expectStatus(await get(user("carol"), "g/read-many.txt"), 200);
        await expectDenied(await get(user("alice"), "g/read-many.txt"), "alice not listed");

        await put("g/read-acp.txt", { [hdr("grant-read-acp")]: `id="${ids.bob}"` });
        await expectStatus(await getAcl(user("bob"), "g/read-acp.txt"), 200);
        await expectDenied(await get(user("bob"), "g/read-acp.txt"), "READ_ACP is not READ");

        await put("g/write-acp.txt", { [hdr("grant-write-acp")]: `id="${ids.bob}"` });
        await expectDenied(await getAcl(user("bob"), "g/write-acp.txt"), "WRITE_ACP not READ_ACP");
        await expectDenied(await get(anon, "g/write-acp.txt"), "before bob's change");
        await expectStatus(
          await putAcl(user("bob"), "g/write-acp.txt", {
            headers: { [hdr("acl")]: "public-read" },
          }),
          200,
        );
        await expectStatus(await get(anon, "g/write-acp.txt"), 200, "bob made it public");
        assertEquals((await aclOf(admin, "g/write-acp.txt")).ownerId, "admin", "owner unchanged");

        await put("g/full.txt", { [hdr("grant-full-control")]: `id="${ids.bob}"` });
        const b = user("bob");
        await expectStatus(await get(b, "g/full.txt"), 200);
        await expectStatus(await getAcl(b, "g/full.txt"), 200);
        await expectStatus(
          await putAcl(b, "g/full.txt", { headers: { [hdr("grant-read")]: `id="${ids.carol}"` } }),
          200,
        );
        await expectStatus(await get(user("carol"), "g/full.txt"), 200, "granted by bob");
        await expectDenied(await get(b, "g/full.txt"), "bob replaced his own grant");

        // Bucket grants: WRITE lets a user upload and delete, READ list.
        const gb = `grants-${dialect}`;
        await createBucket(admin, gb);
        await putOk(admin, gb, "existing.txt");
        await expectStatus(
          await putAcl(admin, undefined, {
            headers: {
              [hdr("grant-write")]: `id="${ids.bob}"`,
              [hdr("grant-read")]: `emailAddress="${users.alice.email}"`,
              [hdr("grant-full-control")]: `id="admin"`,
            },
          }, gb),
          200,
        );
        await putOk(b, gb, "by-bob.txt");
        await expectStatus(
          await b({ method: "DELETE", path: objectPath(gb, "existing.txt") }),
          204,
        );
        await expectDenied(await b({ method: "GET", path: objectPath(gb) }), "bob cannot list");
        await expectStatus(await user("alice")({ method: "GET", path: objectPath(gb) }), 200);
        await expectDenied(
          await user("alice")({ method: "PUT", path: objectPath(gb, "a.txt"), body: "a" }),
          "alice cannot write",
        );
        await expectDenied(
          await user("carol")({ method: "GET", path: objectPath(gb) }),
          "carol gb",
        );
        assertEquals(
          sortGrants((await aclOf(admin, undefined, gb)).grants),
          [
            `CanonicalUser:${ids.bob}:WRITE`,
            `CanonicalUser:${ids.alice}:READ`,
            "CanonicalUser:admin:FULL_CONTROL",
          ].sort(),
        );
        // Grant headers on CreateBucket; READ_ACP and WRITE_ACP on a bucket.
        const gc = `gcreate-${dialect}`;
        await expectStatus(
          await admin({
            method: "PUT",
            path: objectPath(gc),
            headers: {
              [hdr("grant-read")]: `id="${ids.carol}"`,
              [hdr("grant-read-acp")]: `id="${ids.bob}"`,
              [hdr("grant-write-acp")]: `id="${ids.alice}"`,
            },
          }),
          200,
        );
        await expectStatus(await user("carol")({ method: "GET", path: objectPath(gc) }), 200);
        await expectStatus(await getAcl(b, undefined, gc), 200, "bucket READ_ACP");
        await expectDenied(await b({ method: "GET", path: objectPath(gc) }), "READ_ACP not READ");
        await expectDenied(await getAcl(user("alice"), undefined, gc), "WRITE_ACP not READ_ACP");
        await expectStatus(
          await putAcl(user("alice"), undefined, { headers: { [hdr("acl")]: "public-read" } }, gc),
          200,
          "bucket WRITE_ACP",
        );
        await expectStatus(await anon({ method: "GET", path: objectPath(gc) }), 200);

        // Bad grants change nothing.
        const bad: [Record<string, string>, string][] = [
          [
            { [hdr("grant-read")]: `emailAddress="nobody@nowhere.test"` },
            "UnresolvableGrantByEmailAddress",
          ],
          [{ [hdr("grant-read")]: `id="no-such-user-id"` }, "InvalidArgument"],
          [{ [hdr("grant-read")]: `uri="${groups}global/Nobody"` }, "InvalidArgument"],
          [{ [hdr("grant-read")]: ids.bob }, "InvalidArgument"],
          [{ [hdr("grant-read")]: `id="${ids.bob}"`, [hdr("acl")]: "private" }, "InvalidRequest"],
        ];
        for (const [headers, code] of bad) {
          await expectError(
            await admin({
              method: "PUT",
              path: objectPath(bucket, "g/bad.txt"),
              headers,
              body: "x",
            }),
            code,
            400,
            JSON.stringify(headers),
          );
          await expectError(await putAcl(admin, "g/read-id.txt", { headers }), code, 400);
        }
        assert(!(await exists(server, bucket, "g/bad.txt")));
        assertEquals(sortGrants((await aclOf(admin, "g/read-id.txt")).grants), [
          `CanonicalUser:${ids.bob}:READ`,
        ]);
      });

      await t.step(`${dialect}: AccessControlPolicy body`, async () => {
        const doc = (ownerId: string, grants: string) =>
          `<AccessControlPolicy xmlns="${NAMESPACE[dialect]}"><Owner><ID>${ownerId}</ID></Owner>` +
          `<AccessControlList>${grants}</AccessControlList></AccessControlPolicy>`;
        const grant = (type: string, inner: string, permission: string) =>
          `<Grant><Grantee xmlns:xsi="${XSI}" xsi:type="${type}">${inner}</Grantee>` +
          `<Permission>${permission}</Permission></Grant>`;
        await putOk(admin, bucket, "x/doc.txt", "doc");
        await expectStatus(
          await putAcl(admin, "x/doc.txt", {
            body: doc(
              "admin",
              grant("CanonicalUser", "<ID>admin</ID>", "FULL_CONTROL") +
                grant("CanonicalUser", `<ID>${ids.bob}</ID>`, "READ") +
                grant("Group", `<URI>${ALL}</URI>`, "READ") +
                grant(
                  "AmazonCustomerByEmail",
                  `<EmailAddress>${users.alice.email}</EmailAddress>`,
                  "READ_ACP",
                ),
            ),
            headers: { "content-type": "application/xml" },
          }),
          200,
        );
        await expectStatus(await get(user("bob"), "x/doc.txt"), 200);
        await expectStatus(await get(anon, "x/doc.txt"), 200);
        const acl = await aclOf(user("alice"), "x/doc.txt");
        assertEquals([acl.ownerId, acl.ownerName], ["admin", ADMIN_USER]);
        // The e-mail grantee is stored as the user it names.
        assertEquals(
          sortGrants(acl.grants),
          [
            "CanonicalUser:admin:FULL_CONTROL",
            `CanonicalUser:${ids.bob}:READ`,
            `Group:${ALL}:READ`,
            `CanonicalUser:${ids.alice}:READ_ACP`,
          ].sort(),
        );
        // The other dialect's group URI names the same group; answers use the request's.
        const otherGroups = SPELL[dialect === "store" ? "amz" : "store"].groups;
        await putOk(admin, bucket, "x/other.txt", "other");
        await expectStatus(
          await putAcl(admin, "x/other.txt", {
            body: doc("admin", grant("Group", `<URI>${otherGroups}global/AllUsers</URI>`, "READ")),
          }),
          200,
        );
        await expectStatus(await get(anon, "x/other.txt"), 200);
        assertEquals(sortGrants((await aclOf(admin, "x/other.txt")).grants), [`Group:${ALL}:READ`]);

        const xb = `xmlacl-${dialect}`;
        await createBucket(admin, xb);
        await expectStatus(
          await putAcl(admin, undefined, {
            body: doc("admin", grant("CanonicalUser", `<ID>${ids.carol}</ID>`, "WRITE")),
          }, xb),
          200,
        );
        await putOk(user("carol"), xb, "carol.txt");
        await expectDenied(await user("carol")({ method: "GET", path: objectPath(xb) }), "no READ");

        const bad: [string, string][] = [
          ["<AccessControlPolicy><Owner><ID>admin</ID></Owner>", "MalformedACLError"],
          ["<Nope/>", "MalformedACLError"],
          [
            doc("admin", grant("CanonicalUser", `<ID>${ids.bob}</ID>`, "EVERYTHING")),
            "MalformedACLError",
          ],
          [doc("admin", grant("Robot", "<ID>x</ID>", "READ")), "MalformedACLError"],
          [`<AccessControlPolicy><AccessControlList/></AccessControlPolicy>`, "MalformedACLError"],
        ];
        for (const [body, code] of bad) {
          await expectError(await putAcl(admin, "x/doc.txt", { body }), code, 400, body);
        }
        await expectStatus(await get(anon, "x/doc.txt"), 200, "ACL unchanged");

        if (dialect === "amz") {
          const sdk = s3Client(server);
          await putOk(admin, bucket, "x/sdk.txt");
          await sdk.send(
            new PutObjectAclCommand({
              Bucket: bucket,
              Key: "x/sdk.txt",
              AccessControlPolicy: {
                Owner: { ID: "admin" },
                Grants: [
                  { Grantee: { Type: "CanonicalUser", ID: ids.carol }, Permission: "READ" },
                  { Grantee: { Type: "Group", URI: AUTH }, Permission: "READ_ACP" },
                ],
              },
            }),
          );
          await expectStatus(await get(user("carol"), "x/sdk.txt"), 200);
          const got = await sdk.send(new GetObjectAclCommand({ Bucket: bucket, Key: "x/sdk.txt" }));
          assertEquals(got.Owner?.ID, "admin");
          assertEquals(
            got.Grants?.map((g) =>
              `${g.Grantee?.Type}:${g.Grantee?.ID ?? g.Grantee?.URI}:${g.Permission}`
            )
              .sort(),
            [`CanonicalUser:${ids.carol}:READ`, `Group:${AUTH}:READ_ACP`].sort(),
          );
          const bob = s3Client(server, { user: users.bob.accessKey, password: users.bob.secret });
          const seen = await bob.send(
            new GetObjectAclCommand({ Bucket: bucket, Key: "x/sdk.txt" }),
          );
          assertEquals(seen.Grants?.length, 2, "AuthenticatedUsers READ_ACP");
          await sdk.send(
            new PutObjectAclCommand({ Bucket: bucket, Key: "x/sdk.txt", ACL: "public-read" }),
          );
          await expectStatus(await get(anon, "x/sdk.txt"), 200);
        }
      });

      await t.step(`${dialect}: listings name object owners like the ACL does`, async () => {
        // The Owner in a V1 listing (and in V2 with fetch-owner=true) is the owner GetObjectAcl
        // shows: the user's ID and its DisplayName (the user name).
        const owners: string[] = [];
        const queries: [string, string][][] = [[], [["list-type", "2"], ["fetch-owner", "true"]]];
        for (const query of queries) {
          const xml = await expectStatus(
            await admin({
              method: "GET",
              path: objectPath(bucket),
              query: [...query, ["prefix", "w/plain"]],
            }),
            200,
          );
          const owner = /<Contents>.*?<Owner>(.*?)<\/Owner>.*?<\/Contents>/s.exec(xml)?.[1] ?? "";
          owners.push(`${xmlValue(owner, "ID")}/${xmlValue(owner, "DisplayName")}`);
        }
        const expected = `${ids.writer}/${users.writer.name}`;
        assertEquals(owners, [expected, expected], "V1 and V2 Owner ID/DisplayName");
      });

      await t.step(`${dialect}: anonymous access only where granted`, async () => {
        const ab = `anon-${dialect}`;
        await createBucket(admin, ab);
        for (const k of ["a.txt", "acl/open.txt", "pub/p.txt", "pub/q.txt"]) {
          await putOk(admin, ab, k);
        }
        const denied = async () => {
          const checks: [string, Response][] = [
            ["ListBuckets", await anon({ method: "GET", path: "/" })],
            ["ListObjects", await anon({ method: "GET", path: objectPath(ab) })],
            [
              "ListObjectsV2",
              await anon({ method: "GET", path: objectPath(ab), query: [["list-type", "2"]] }),
            ],
            ["HeadBucket", await anon({ method: "HEAD", path: objectPath(ab) })],
            ["GetObject", await get(anon, "a.txt", ab)],
            ["HeadObject", await anon({ method: "HEAD", path: objectPath(ab, "a.txt") })],
            [
              "PutObject",
              await anon({ method: "PUT", path: objectPath(ab, "new.txt"), body: "x" }),
            ],
            ["DeleteObject", await anon({ method: "DELETE", path: objectPath(ab, "a.txt") })],
            ["GetBucketAcl", await getAcl(anon, undefined, ab)],
            ["GetObjectAcl", await getAcl(anon, "a.txt", ab)],
            [
              "PutObjectAcl",
              await putAcl(anon, "a.txt", { headers: { [hdr("acl")]: "public-read" } }, ab),
            ],
            [
              "GetBucketPolicy",
              await anon({ method: "GET", path: objectPath(ab), query: [["policy", ""]] }),
            ],
            [
              "CreateBucket",
              await anon({ method: "PUT", path: objectPath(`anon-new-${dialect}`) }),
            ],
            ["DeleteBucket", await anon({ method: "DELETE", path: objectPath(ab) })],
          ];
          for (const [what, res] of checks) {
            await expectDenied(res, `anonymous ${what}`);
            assert(res.headers.get(hdr("request-id")), `${what} answered in ${dialect}`);
          }
          const batch = await anon(deleteObjectsRequest(ab, ["a.txt"]));
          if (batch.status === 200) {
            assertEquals(deleteOutcome(await batch.text()), { "a.txt": "AccessDenied" });
          } else {
            await expectDenied(batch, "anonymous DeleteObjects");
          }
          assert(await exists(server, ab, "a.txt"), "nothing deleted");
        };
        await denied();
        // An AllUsers grant opens exactly that object.
        await expectStatus(
          await putAcl(
            admin,
            "acl/open.txt",
            { headers: { [hdr("grant-read")]: `uri="${ALL}"` } },
            ab,
          ),
          200,
        );
        await expectStatus(await get(anon, "acl/open.txt", ab), 200);
        await denied();
        // A Principal "*" policy opens exactly its resource and action.
        const w = policyWords(dialect, ab);
        await setPolicy(admin, ab, w.doc(w.allow("*", w.act("GetObject"), w.objArn("pub/*"))));
        await expectStatus(await get(anon, "pub/p.txt", ab), 200);
        await expectStatus(await get(anon, "pub/q.txt", ab), 200);
        await expectStatus(await get(anon, "acl/open.txt", ab), 200);
        await denied();
        // A policy naming a user does not reach anonymous callers.
        await setPolicy(
          admin,
          ab,
          w.doc(w.allow(w.user(users.carol), w.act("*"), [w.bucketArn, w.objArn("*")])),
        );
        await expectDenied(await get(anon, "pub/p.txt", ab), "user principal only");
        await expectStatus(await get(user("carol"), "pub/p.txt", ab), 200);
        await denied();
      });
    }
  });
});
