// Hardening of access decisions (issue 9): a batch decides every key with that key (governance
// bypass in DeleteObjects), deep XML nesting, anonymous DeleteObjects before any body is read.
import { assert, assertEquals } from "./assert.ts";
import {
  anonymous,
  as,
  createBucket,
  createUser,
  deleteOutcome,
  exists,
  expectDenied,
  expectError,
  expectStatus,
  md5Base64,
  objectPath,
  policyWords,
  putOk,
  setPolicy,
} from "./access_helpers.ts";
import { withServer } from "./server.ts";
import { type RawRequest, xmlValue } from "./signer.ts";

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
    await t.step(
      "DeleteObjects decides governance bypass per key, as DeleteObject does",
      async () => {
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
      },
    );

    await t.step(
      "deeply nested XML is MalformedXML (400) in every XML request reader",
      async () => {
        const admin = as(server, undefined, "amz");
        const bucket = "deep-xml";
        await expectStatus(
          await admin({
            method: "PUT",
            path: objectPath(bucket),
            headers: { "x-amz-bucket-object-lock-enabled": "true" },
          }),
          200,
          "create lock bucket",
        );
        await putOk(admin, bucket, "k");
        const upload = await expectStatus(
          await admin({ method: "POST", path: objectPath(bucket, "mp"), query: [["uploads", ""]] }),
          200,
          "CreateMultipartUpload",
        );
        const uploadId = xmlValue(upload, "UploadId")!;
        // ACL documents answer MalformedACLError, as every malformed ACL body does.
        const readers: [string, string, [string, string][], string][] = [
          ["POST", "", [["delete", ""]], "Delete"],
          ["PUT", "", [["tagging", ""]], "Tagging"],
          ["PUT", "", [["versioning", ""]], "VersioningConfiguration"],
          ["PUT", "", [["lifecycle", ""]], "LifecycleConfiguration"],
          ["PUT", "", [["object-lock", ""]], "ObjectLockConfiguration"],
          ["PUT", "", [["acl", ""]], "AccessControlPolicy"],
          ["PUT", "k", [["acl", ""]], "AccessControlPolicy"],
          ["PUT", "k", [["tagging", ""]], "Tagging"],
          ["PUT", "k", [["retention", ""]], "Retention"],
          ["PUT", "k", [["legal-hold", ""]], "LegalHold"],
          ["POST", "mp", [["uploadId", uploadId]], "CompleteMultipartUpload"],
        ];
        for (const [method, key, query, root] of readers) {
          // Readers limited to 64 KiB get 8,000 levels (56 KB), the others 10,000 (70 KB).
          const levels = ["Delete", "Tagging", "LifecycleConfiguration", "CompleteMultipartUpload"]
              .includes(root)
            ? 10_000
            : 8_000;
          const body = `<${root}>${"<a>".repeat(levels)}${"</a>".repeat(levels)}</${root}>`;
          const res = await admin({
            method,
            path: objectPath(bucket, key),
            query,
            headers: { "content-md5": md5Base64(body), "content-type": "application/xml" },
            body,
          });
          const code = root === "AccessControlPolicy" ? "MalformedACLError" : "MalformedXML";
          await expectError(res, code, 400, `${method} ${key}?${query[0][0]}`);
        }
        // CreateBucket reads a configuration document too.
        const body = `<CreateBucketConfiguration>${"<a>".repeat(8_000)}${
          "</a>".repeat(8_000)
        }</CreateBucketConfiguration>`;
        await expectError(
          await admin({ method: "PUT", path: objectPath("deep-new"), body }),
          "MalformedXML",
          400,
          "CreateBucket",
        );
      },
    );

    await t.step("anonymous DeleteObjects on a private bucket: 403 before the body", async () => {
      const admin = as(server, undefined, "amz");
      const bucket = "anon-private";
      await createBucket(admin, bucket);
      await putOk(admin, bucket, "a.txt");
      // Headers promise 10 MB; only the start of the body is sent. An answer that waited for
      // the body would never come.
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
      try {
        const head = [
          `POST ${objectPath(bucket)}?delete HTTP/1.1`,
          `host: 127.0.0.1:${server.port}`,
          "content-type: application/xml",
          "content-length: 10000000",
          "content-md5: AAAAAAAAAAAAAAAAAAAAAA==",
          "x-amz-content-sha256: UNSIGNED-PAYLOAD",
          "",
          `<Delete>${"<a>".repeat(1000)}`,
        ].join("\r\n");
        await conn.write(new TextEncoder().encode(head));
        const answer = await readHead(conn, 5000);
        assert(answer.startsWith("HTTP/1.1 403"), `anonymous DeleteObjects: ${answer}`);
        assert(answer.includes("AccessDenied") || /content-length: \d+/i.test(answer), answer);
      } finally {
        conn.close();
      }
      assert(await exists(server, bucket, "a.txt"), "nothing deleted");
      // Where anonymous callers may delete (a public-write policy), the body is parsed: a deep
      // document is MalformedXML, not a 500.
      const w = policyWords("amz", bucket);
      await setPolicy(admin, bucket, w.doc(w.allow("*", w.act("DeleteObject"), w.objArn("*"))));
      const body = `<Delete>${"<a>".repeat(10_000)}${"</a>".repeat(10_000)}</Delete>`;
      await expectError(
        await anonymous(server, {
          method: "POST",
          path: objectPath(bucket),
          query: "delete",
          headers: {
            "content-md5": md5Base64(body),
            "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
          },
          body,
        }),
        "MalformedXML",
        400,
        "anonymous deep DeleteObjects",
      );
    });
  });
});

/** The response head (and what else arrived) within `ms`, or a failure naming the wait. */
async function readHead(conn: Deno.Conn, ms: number): Promise<string> {
  const buf = new Uint8Array(4096);
  let text = "";
  const deadline = Date.now() + ms;
  while (!text.includes("\r\n\r\n")) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`no answer within ${ms} ms: ${text}`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const n = await Promise.race([
      conn.read(buf),
      new Promise<"timeout">((r) => timer = setTimeout(() => r("timeout"), left)),
    ]);
    clearTimeout(timer);
    if (n === "timeout") throw new Error(`no answer within ${ms} ms: ${text}`);
    if (n === null) break;
    text += new TextDecoder().decode(buf.subarray(0, n));
  }
  return text;
}
