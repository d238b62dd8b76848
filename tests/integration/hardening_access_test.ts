// Hardening of access decisions (issue 9): a batch decides every key with that key (governance
// bypass in DeleteObjects), deep XML nesting, anonymous DeleteObjects before any body is read.
import { assertEquals } from "./assert.ts";
import {
  anonymous,
  as,
  createBucket,
  createUser,
  deleteOutcome,
  expectDenied,
  expectError,
  expectStatus,
  md5Base64,
  objectPath,
  policyWords,
  setPolicy,
} from "./access_helpers.ts";
import { withServer } from "./server.ts";
import type { RawRequest } from "./signer.ts";

const HOUR = 3600_000;

function deleteVersions(bucket: string, targets: { key: string; versionId: string }[]) {
  const body = `<Delete>${
    targets.map((t) => `<Object><Key>${t.key}</Key><VersionId>${t.versionId}</VersionId></Object>`)
      .join("")
  }</Delete>`;
  return {
    method: "POST",
    path: objectPath(bucket),
    query: [["delete", ""]] as [string, string][],
    headers: {
      "content-md5": md5Base64(body),
      "content-type": "application/xml",
      "x-amz-bypass-governance-retention": "true",
    },
    body,
  } satisfies RawRequest;
}

Deno.test("hardening: access decisions", async (t) => {
  await withServer(async (server) => {
    await t.step("DeleteObjects decides governance bypass per key, as DeleteObject does", async () => {
      const owner = await createUser(server, "lock-owner");
      const req = as(server, owner, "amz");
      const bucket = "gov-batch";
      await expectStatus(
        await req({
          method: "PUT",
          path: objectPath(bucket),
          headers: { "x-amz-bucket-object-lock-enabled": "true" },
        }),
        200,
        "create lock bucket",
      );
      const until = new Date(Date.now() + HOUR).toISOString();
      const versions: Record<string, string> = {};
      for (const key of ["locked/a", "locked/b", "open/c"]) {
        const res = await req({
          method: "PUT",
          path: objectPath(bucket, key),
          body: "x",
          headers: {
            "x-amz-object-lock-mode": "GOVERNANCE",
            "x-amz-object-lock-retain-until-date": until,
          },
        });
        await expectStatus(res, 200, `PUT ${key}`);
        versions[key] = res.headers.get("x-amz-version-id")!;
      }
      const w = policyWords("amz", bucket);
      await setPolicy(
        req,
        bucket,
        w.doc(w.deny(w.user(owner), w.act("BypassGovernanceRetention"), w.objArn("locked/*"))),
      );
      // The single-key operation: the Deny on locked/* keeps the bypass from applying.
      await expectDenied(
        await req({
          method: "DELETE",
          path: objectPath(bucket, "locked/a"),
          query: [["versionId", versions["locked/a"]]],
          headers: { "x-amz-bypass-governance-retention": "true" },
        }),
        "DeleteObject locked/a with bypass",
      );
      // The batch: the same decision for locked/b, the bypass still applies to open/c.
      const body = await expectStatus(
        await req(deleteVersions(bucket, [
          { key: "locked/b", versionId: versions["locked/b"] },
          { key: "open/c", versionId: versions["open/c"] },
        ])),
        200,
        "DeleteObjects",
      );
      const outcome = deleteOutcome(body);
      assertEquals([outcome["locked/b"], outcome["open/c"]], ["AccessDenied", "Deleted"]);
      for (const key of ["locked/a", "locked/b"]) {
        await expectStatus(
          await req({
            method: "HEAD",
            path: objectPath(bucket, key),
            query: [["versionId", versions[key]]],
          }),
          200,
          `${key} still there`,
        );
      }
    });
  });
});
