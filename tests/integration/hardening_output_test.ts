// Output built from user input stays valid (issue 9 items 9 and 10): response-* overrides and
// form metadata that cannot be header values are InvalidArgument, never a 500; keys with control
// characters either are refused on write (those XML 1.0 cannot carry) or list as well-formed XML
// that fast-xml-parser and the AWS SDK read back exactly.
import {
  ListMultipartUploadsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
} from "@aws-sdk/client-s3";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { assert, assertEquals } from "./assert.ts";
import {
  anonymous,
  as,
  createBucket,
  expectError,
  expectStatus,
  objectPath,
  policyWords,
  putOk,
  setPolicy,
} from "./access_helpers.ts";
import { s3Client, withServer } from "./server.ts";

/** Control characters XML 1.0 cannot carry, not even as character references. */
const NOT_XML = [...Array(32).keys()].filter((c) => c !== 9 && c !== 10 && c !== 13);
/** Control characters XML 1.0 can carry (tab, newline, carriage return, DEL). */
const XML_CONTROLS = [9, 10, 13, 127];

/** Strict XML 1.0 character check of a document: raw characters and character references. */
function assertXml10(doc: string, what: string): void {
  assertEquals(XMLValidator.validate(doc), true, `${what}: ${doc}`);
  // deno-lint-ignore no-control-regex -- control characters are exactly what it finds
  assert(!/[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/.test(doc), `${what}: raw character`);
  for (const m of doc.matchAll(/&#(x[0-9a-fA-F]+|[0-9]+);/g)) {
    const code = m[1][0] === "x" ? parseInt(m[1].slice(1), 16) : Number(m[1]);
    assert(code >= 32 || [9, 10, 13].includes(code), `${what}: reference ${m[0]}`);
  }
}

const parser = new XMLParser({ htmlEntities: true, parseTagValue: false, trimValues: false });

Deno.test("hardening: output built from user input", async (t) => {
  await withServer(async (server) => {
    const admin = as(server, undefined, "amz");
    await createBucket(admin, "out");
    await putOk(admin, "out", "obj");

    await t.step("response-* overrides that are no header value: InvalidArgument", async () => {
      const bad = ["a\r\nx-evil: 1", "a\nb", "a\0b", "a\x01b", "price \u20ac", "\u{1F600}"];
      for (const param of ["response-content-type", "response-content-disposition"]) {
        for (const value of bad) {
          for (const method of ["GET", "HEAD"]) {
            const res = await admin({
              method,
              path: objectPath("out", "obj"),
              query: [[param, value]],
            });
            await expectError(
              res,
              "InvalidArgument",
              400,
              `${method} ${param}=${JSON.stringify(value)}`,
            );
          }
        }
      }
      // Latin-1 text is a valid header value and is kept.
      const res = await admin({
        method: "GET",
        path: objectPath("out", "obj"),
        query: [["response-content-disposition", "attachment; filename=caf\u00e9.txt"]],
      });
      await expectStatus(res, 200);
      assertEquals(res.headers.get("content-disposition"), "attachment; filename=caf\u00e9.txt");
    });

    await t.step(
      "form metadata that is no header value: InvalidArgument, nothing stored",
      async () => {
        const w = policyWords("amz", "out");
        await setPolicy(admin, "out", w.doc(w.allow("*", w.act("PutObject"), w.objArn("form/*"))));
        for (const value of ["a\x01b", "a\rb", "price \u20ac"]) {
          const form = new FormData();
          form.append("key", "form/x");
          form.append("x-amz-meta-note", value);
          form.append("file", new Blob(["data"]), "f.txt");
          const res = await fetch(`${server.url}/out`, { method: "POST", body: form });
          await expectError(res, "InvalidArgument", 400, `form meta ${JSON.stringify(value)}`);
        }
        const form = new FormData();
        form.append("key", "form/\x01");
        form.append("file", new Blob(["data"]), "f.txt");
        await expectError(
          await fetch(`${server.url}/out`, { method: "POST", body: form }),
          "InvalidArgument",
          400,
          "form key with 0x1",
        );
        const head = await admin({ method: "HEAD", path: objectPath("out", "form/x") });
        assertEquals(head.status, 404, "nothing stored");
        await head.body?.cancel();
      },
    );

    await t.step("keys XML 1.0 cannot carry are refused on every write path", async () => {
      for (const c of NOT_XML) {
        const key = `bad/${String.fromCharCode(c)}/k`;
        const what = `key with 0x${c.toString(16)}`;
        await expectError(
          await admin({ method: "PUT", path: objectPath("out", key), body: "x" }),
          "InvalidArgument",
          400,
          `PUT ${what}`,
        );
        await expectError(
          await admin({
            method: "PUT",
            path: objectPath("out", key),
            headers: { "x-amz-copy-source": "/out/obj" },
          }),
          "InvalidArgument",
          400,
          `CopyObject ${what}`,
        );
        await expectError(
          await admin({ method: "POST", path: objectPath("out", key), query: [["uploads", ""]] }),
          "InvalidArgument",
          400,
          `CreateMultipartUpload ${what}`,
        );
      }
      // The error documents naming such keys are well-formed too.
      const res = await anonymous(server, { method: "GET", path: objectPath("out", "a\x01b") });
      assertXml10(await res.text(), "error document");
    });

    await t.step("keys with tab, newline, CR and DEL list as well-formed XML", async () => {
      const keys = XML_CONTROLS.map((c) => `ctl/${String.fromCharCode(c)}/k`);
      for (const key of keys) await putOk(admin, "out", key);
      await expectStatus(
        await admin({ method: "POST", path: objectPath("out", keys[2]), query: [["uploads", ""]] }),
        200,
      );
      const listings: [string, [string, string][], string][] = [
        ["ListObjects", [["prefix", "ctl/"]], "Key"],
        ["ListObjectsV2", [["list-type", "2"], ["prefix", "ctl/"]], "Key"],
        ["ListObjectVersions", [["versions", ""], ["prefix", "ctl/"]], "Key"],
        ["ListMultipartUploads", [["uploads", ""], ["prefix", "ctl/"]], "Key"],
        // A delimiter folds the keys into common prefixes.
        ["ListObjectsV2 by delimiter", [["list-type", "2"], ["prefix", "ctl/"], [
          "delimiter",
          "/k",
        ]], "Prefix"],
      ];
      for (const [what, query, field] of listings) {
        const body = await expectStatus(
          await admin({ method: "GET", path: objectPath("out"), query }),
          200,
          what,
        );
        assertXml10(body, what);
        const found = JSON.stringify(parser.parse(body));
        const expected = field === "Key"
          ? (what === "ListMultipartUploads" ? [keys[2]] : keys)
          : keys.map((k) => k.slice(0, -1));
        for (const k of expected) {
          assert(found.includes(JSON.stringify(k).slice(1, -1)), `${what}: ${JSON.stringify(k)}`);
        }
      }
      const s3 = s3Client(server);
      const v2 = await s3.send(new ListObjectsV2Command({ Bucket: "out", Prefix: "ctl/" }));
      assertEquals(v2.Contents?.map((o) => o.Key).sort(), [...keys].sort(), "SDK ListObjectsV2");
      const versions = await s3.send(
        new ListObjectVersionsCommand({ Bucket: "out", Prefix: "ctl/" }),
      );
      assertEquals(versions.Versions?.map((o) => o.Key).sort(), [...keys].sort(), "SDK versions");
      const v1 = await s3.send(new ListObjectsCommand({ Bucket: "out", Prefix: "ctl/" }));
      assertEquals(v1.Contents?.map((o) => o.Key).sort(), [...keys].sort(), "SDK ListObjects");
      const uploads = await s3.send(
        new ListMultipartUploadsCommand({ Bucket: "out", Prefix: "ctl/" }),
      );
      assertEquals(uploads.Uploads?.map((u) => u.Key), [keys[2]], "SDK ListMultipartUploads");
    });
  });
});
