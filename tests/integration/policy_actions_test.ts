// Every action name a bucket policy accepts changes a decision (issue 9 item 5): for each one a
// request that needs it is refused under a Deny of that action and not refused without it. The
// version actions apply exactly when a request names a version; names no request is checked
// against are MalformedPolicy.
import { OPERATION_RULES, POLICY_ACTIONS } from "../../src/auth/actions.ts";
import { HANDLERS } from "../../src/api/handlers.ts";
import { assert, assertEquals } from "./assert.ts";
import {
  as,
  createUser,
  expectDenied,
  expectError,
  expectStatus,
  md5Base64,
  objectPath,
  policyWords,
  putPolicy,
  type Requester,
  setPolicy,
} from "./access_helpers.ts";
import { withServer } from "./server.ts";
import { type RawRequest, xmlValue } from "./signer.ts";

const HOUR = 3600_000;
const BUCKET = "acts";

type Row = Omit<RawRequest, "path"> & { key?: string };

function xmlBody(body: string): Pick<RawRequest, "body" | "headers"> {
  return { body, headers: { "content-md5": md5Base64(body), "content-type": "application/xml" } };
}

/** One request per action that needs exactly that action (ids filled in once objects exist). */
function rows(ids: { v: string; gov: string; dv: string; upload: string }): [string, Row][] {
  const until = new Date(Date.now() + HOUR).toISOString();
  const v = (
    extra: [string, string][] = [],
  ): [string, string][] => [...extra, ["versionId", ids.v]];
  return [
    ["GetObject", { method: "GET", key: "k" }],
    ["GetObjectVersion", { method: "GET", key: "k", query: v() }],
    ["PutObject", { method: "PUT", key: "new", body: "x" }],
    ["DeleteObject", { method: "DELETE", key: "gone" }],
    ["DeleteObjectVersion", { method: "DELETE", key: "dv", query: [["versionId", ids.dv]] }],
    ["ListBucket", { method: "GET" }],
    ["ListBucketVersions", { method: "GET", query: [["versions", ""]] }],
    ["GetBucketLocation", { method: "GET", query: [["location", ""]] }],
    ["DeleteBucket", { method: "DELETE" }],
    ["GetBucketVersioning", { method: "GET", query: [["versioning", ""]] }],
    ["PutBucketVersioning", {
      method: "PUT",
      query: [["versioning", ""]],
      ...xmlBody("<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>"),
    }],
    ["GetBucketObjectLockConfiguration", { method: "GET", query: [["object-lock", ""]] }],
    ["PutBucketObjectLockConfiguration", {
      method: "PUT",
      query: [["object-lock", ""]],
      ...xmlBody(
        "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>",
      ),
    }],
    ["GetObjectRetention", { method: "GET", key: "k", query: [["retention", ""]] }],
    ["PutObjectRetention", {
      method: "PUT",
      key: "ret",
      query: [["retention", ""]],
      ...xmlBody(
        `<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>${until}</RetainUntilDate>` +
          "</Retention>",
      ),
    }],
    ["GetObjectLegalHold", { method: "GET", key: "k", query: [["legal-hold", ""]] }],
    ["PutObjectLegalHold", {
      method: "PUT",
      key: "k",
      query: [["legal-hold", ""]],
      ...xmlBody("<LegalHold><Status>OFF</Status></LegalHold>"),
    }],
    ["BypassGovernanceRetention", {
      method: "DELETE",
      key: "gov",
      query: [["versionId", ids.gov]],
      headers: { "x-amz-bypass-governance-retention": "true" },
    }],
    ["GetLifecycleConfiguration", { method: "GET", query: [["lifecycle", ""]] }],
    ["GetBucketNotification", { method: "GET", query: [["notification", ""]] }],
    [
      "PutBucketNotification",
      { method: "PUT", query: [["notification", ""]], body: "<NotificationConfiguration/>" },
    ],
    ["PutLifecycleConfiguration", { method: "DELETE", query: [["lifecycle", ""]] }],
    ["GetBucketTagging", { method: "GET", query: [["tagging", ""]] }],
    ["PutBucketTagging", { method: "DELETE", query: [["tagging", ""]] }],
    ["GetObjectTagging", { method: "GET", key: "k", query: [["tagging", ""]] }],
    ["PutObjectTagging", {
      method: "PUT",
      key: "k",
      query: [["tagging", ""]],
      ...xmlBody("<Tagging><TagSet></TagSet></Tagging>"),
    }],
    ["DeleteObjectTagging", { method: "DELETE", key: "k", query: [["tagging", ""]] }],
    ["GetObjectVersionTagging", { method: "GET", key: "k", query: v([["tagging", ""]]) }],
    ["PutObjectVersionTagging", {
      method: "PUT",
      key: "k",
      query: v([["tagging", ""]]),
      ...xmlBody("<Tagging><TagSet></TagSet></Tagging>"),
    }],
    ["DeleteObjectVersionTagging", { method: "DELETE", key: "k", query: v([["tagging", ""]]) }],
    ["GetBucketPolicy", { method: "GET", query: [["policy", ""]] }],
    ["PutBucketPolicy", {
      method: "PUT",
      query: [["policy", ""]],
      body: JSON.stringify({
        Version: "2012-10-17",
        Statement: [{
          Effect: "Allow",
          Principal: "*",
          Action: "s3:GetObject",
          Resource: `arn:aws:s3:::${BUCKET}/nothing`,
        }],
      }),
    }],
    ["DeleteBucketPolicy", { method: "DELETE", query: [["policy", ""]] }],
    ["GetBucketPolicyStatus", { method: "GET", query: [["policyStatus", ""]] }],
    ["GetBucketAcl", { method: "GET", query: [["acl", ""]] }],
    ["PutBucketAcl", { method: "PUT", query: [["acl", ""]], headers: { "x-amz-acl": "private" } }],
    ["GetObjectAcl", { method: "GET", key: "k", query: [["acl", ""]] }],
    ["PutObjectAcl", {
      method: "PUT",
      key: "k",
      query: [["acl", ""]],
      headers: { "x-amz-acl": "private" },
    }],
    ["GetObjectVersionAcl", { method: "GET", key: "k", query: v([["acl", ""]]) }],
    ["PutObjectVersionAcl", {
      method: "PUT",
      key: "k",
      query: v([["acl", ""]]),
      headers: { "x-amz-acl": "private" },
    }],
    ["GetObjectAttributes", {
      method: "GET",
      key: "k",
      query: [["attributes", ""]],
      headers: { "x-amz-object-attributes": "ETag" },
    }],
    ["GetObjectVersionAttributes", {
      method: "GET",
      key: "k",
      query: v([["attributes", ""]]),
      headers: { "x-amz-object-attributes": "ETag" },
    }],
    ["GetEncryptionConfiguration", { method: "GET", query: [["encryption", ""]] }],
    ["PutEncryptionConfiguration", { method: "DELETE", query: [["encryption", ""]] }],
    ["GetBucketLogging", { method: "GET", query: [["logging", ""]] }],
    ["GetReplicationConfiguration", { method: "GET", query: [["replication", ""]] }],
    ["PutReplicationConfiguration", { method: "DELETE", query: [["replication", ""]] }],
    ["PutBucketLogging", {
      method: "PUT",
      query: [["logging", ""]],
      ...xmlBody("<BucketLoggingStatus></BucketLoggingStatus>"),
    }],
    ["GetBucketWebsite", { method: "GET", query: [["website", ""]] }],
    ["DeleteBucketWebsite", { method: "DELETE", query: [["website", ""]] }],
    ["PutBucketWebsite", {
      method: "PUT",
      query: [["website", ""]],
      ...xmlBody(
        "<WebsiteConfiguration><IndexDocument><Suffix>index.html</Suffix></IndexDocument>" +
          "</WebsiteConfiguration>",
      ),
    }],
    ["GetBucketCORS", { method: "GET", query: [["cors", ""]] }],
    ["PutBucketCORS", { method: "DELETE", query: [["cors", ""]] }],
    ["GetBucketPublicAccessBlock", { method: "GET", query: [["publicAccessBlock", ""]] }],
    ["PutBucketPublicAccessBlock", { method: "DELETE", query: [["publicAccessBlock", ""]] }],
    ["GetBucketOwnershipControls", { method: "GET", query: [["ownershipControls", ""]] }],
    ["PutBucketOwnershipControls", { method: "DELETE", query: [["ownershipControls", ""]] }],
    ["ListBucketMultipartUploads", { method: "GET", query: [["uploads", ""]] }],
    ["ListMultipartUploadParts", { method: "GET", key: "mp", query: [["uploadId", ids.upload]] }],
    ["AbortMultipartUpload", { method: "DELETE", key: "mp", query: [["uploadId", ids.upload]] }],
  ];
}

async function setup(
  req: Requester,
): Promise<{ v: string; gov: string; dv: string; upload: string }> {
  await expectStatus(
    await req({
      method: "PUT",
      path: objectPath(BUCKET),
      headers: { "x-amz-bucket-object-lock-enabled": "true" },
    }),
    200,
    "create bucket",
  );
  const put = async (key: string, headers: Record<string, string> = {}) => {
    const res = await req({ method: "PUT", path: objectPath(BUCKET, key), body: key, headers });
    await expectStatus(res, 200, `PUT ${key}`);
    return res.headers.get("x-amz-version-id")!;
  };
  const v = await put("k");
  await put("gone");
  await put("ret");
  const dv = await put("dv");
  const gov = await put("gov", {
    "x-amz-object-lock-mode": "GOVERNANCE",
    "x-amz-object-lock-retain-until-date": new Date(Date.now() + HOUR).toISOString(),
  });
  const created = await expectStatus(
    await req({ method: "POST", path: objectPath(BUCKET, "mp"), query: [["uploads", ""]] }),
    200,
    "CreateMultipartUpload",
  );
  return { v, gov, dv, upload: xmlValue(created, "UploadId")! };
}

Deno.test("policy actions: every accepted action name changes a decision", async (t) => {
  await withServer(async (server) => {
    const admin = as(server, undefined, "amz");
    const owner = await createUser(server, "act-owner");
    const req = as(server, owner, "amz");
    const w = policyWords("amz", BUCKET);
    const ids = await setup(req);
    const table = rows(ids);

    await t.step("the table covers exactly the accepted action names", () => {
      assertEquals(table.map(([a]) => a).sort(), [...POLICY_ACTIONS].sort());
      // Accepted names come from the rules: each rule is an operation that is built (the
      // governance bypass is checked inside deletes and retention changes).
      const unbuilt = Object.keys(OPERATION_RULES)
        .filter((op) => !HANDLERS[op] && op !== "BypassGovernanceRetention");
      assertEquals(unbuilt, []);
    });

    for (const [action, row] of table) {
      await t.step(`${action}: denied under a Deny of it, not denied without`, async () => {
        const denyOnly = w.doc(
          w.deny(w.user(owner), w.act(action), [w.bucketArn, w.objArn("*")]),
        );
        await setPolicy(admin, BUCKET, denyOnly);
        const send = () => req({ ...row, path: objectPath(BUCKET, row.key) });
        await expectDenied(await send(), `${action} under Deny`);
        await expectStatus(
          await admin({ method: "DELETE", path: objectPath(BUCKET), query: [["policy", ""]] }),
          204,
          "DeleteBucketPolicy",
        );
        const res = await send();
        const body = await res.text();
        assert(res.status !== 403, `${action} without the Deny: ${res.status} ${body}`);
      });
    }

    await t.step("a version action applies only when the request names a version", async () => {
      const viewer = await createUser(server, "act-viewer");
      const view = as(server, viewer, "amz");
      const get = (versioned: boolean) =>
        view({
          method: "GET",
          path: objectPath(BUCKET, "k"),
          query: versioned ? [["versionId", ids.v]] : [],
        });
      await setPolicy(
        admin,
        BUCKET,
        w.doc(w.allow(w.user(viewer), w.act("GetObjectVersion"), w.objArn("k"))),
      );
      await expectStatus(await get(true), 200, "GET ?versionId with GetObjectVersion");
      await expectDenied(await get(false), "GET without GetObject");
      await setPolicy(
        admin,
        BUCKET,
        w.doc(w.allow(w.user(viewer), w.act("GetObject"), w.objArn("k"))),
      );
      await expectStatus(await get(false), 200, "GET with GetObject");
      await expectDenied(await get(true), "GET ?versionId without GetObjectVersion");
      // CopyObject reads a versioned source with GetObjectVersion too.
      const copy = (source: string) =>
        req({
          method: "PUT",
          path: objectPath(BUCKET, "copy"),
          headers: { "x-amz-copy-source": source },
        });
      await setPolicy(
        admin,
        BUCKET,
        w.doc(w.deny(w.user(owner), w.act("GetObjectVersion"), w.objArn("k"))),
      );
      await expectDenied(await copy(`/${BUCKET}/k?versionId=${ids.v}`), "copy of a version");
      await expectStatus(await copy(`/${BUCKET}/k`), 200, "copy of the current version");
    });

    await t.step("action names no request is checked against are MalformedPolicy", async () => {
      for (
        const name of [
          "GetAccelerateConfiguration",
          "ListAllMyBuckets",
          "CreateBucket",
          "GetAnalyticsConfiguration",
          "RestoreObject",
          "PutBucketRequestPayment",
        ]
      ) {
        await expectError(
          await putPolicy(admin, BUCKET, w.doc(w.allow("*", w.act(name), w.objArn("*")))),
          "MalformedPolicy",
          400,
          name,
        );
      }
    });
  });
});
