// PostObject (browser form uploads) end to end: raw multipart/form-data bodies built here and
// signed with a Signature V4 POST policy in both dialects (WebCrypto, independent of the
// server's code); success answers (204, 200, 201 with PostResponse, 303 redirect), each policy
// condition kind accepted and violated, expiry, bad signatures, field coverage, the streamed
// content-length-range, metadata, ACL and SSE fields, and anonymous forms.
import { createHash } from "node:crypto";
import {
  anonymous,
  as,
  createBucket,
  createUser,
  expectDenied,
  expectError,
  expectStatus,
  policyWords,
  setPolicy,
  type TestUser,
} from "./access_helpers.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  chunkCount,
  REGION,
  shardFileCount,
  type TestServer,
  withServer,
} from "./server.ts";
import { type DialectName, headerName, objectPath, signedFetch, xmlValue } from "./signer.ts";

const SPELLING = {
  store: { alg: "STORE4-HMAC-SHA256", term: "store4_request", seed: "STORE4", service: "store" },
  amz: { alg: "AWS4-HMAC-SHA256", term: "aws4_request", seed: "AWS4", service: "s3" },
};
const DIALECTS: DialectName[] = ["store", "amz"];
const enc = new TextEncoder();
const KiB = 1024;

async function hmac(key: Uint8Array | ArrayBuffer, data: string): Promise<ArrayBuffer> {
  const k = await crypto.subtle.importKey(
    "raw",
    key as ArrayBuffer,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return crypto.subtle.sign("HMAC", k, enc.encode(data));
}

function hex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

function amzDate(d: Date): string {
  return d.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

function md5Hex(data: Uint8Array | string): string {
  return createHash("md5").update(data).digest("hex");
}

interface FormSpec {
  dialect: DialectName;
  bucket: string;
  /** Fields before the file (the key among them), besides the signature fields. */
  fields: [string, string][];
  file: Uint8Array | string;
  filename?: string;
  /**
   * Conditions of the policy (exact matches for the signature fields are added); by default an
   * exact match for every field and the bucket.
   */
  conditions?: unknown[];
  /** Extra conditions added to the default ones. */
  extraConditions?: unknown[];
  /** Fields added after signing (not covered by the default conditions). */
  unsignedFields?: [string, string][];
  expiration?: Date;
  user?: TestUser;
  /** Sign with this secret instead of the user's. */
  secret?: string;
  /** No policy and no signature: an anonymous form. */
  anonymous?: boolean;
}

const BOUNDARY = "----postObjectTestBoundary9f8e7d";

/** A multipart/form-data body: fields in order, the file last. */
function formBody(
  fields: [string, string][],
  file: Uint8Array | string,
  filename = "upload.bin",
): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [name, value] of fields) {
    parts.push(enc.encode(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
    ));
  }
  parts.push(enc.encode(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
      "Content-Type: application/octet-stream\r\n\r\n",
  ));
  parts.push(typeof file === "string" ? enc.encode(file) : file);
  parts.push(enc.encode(`\r\n--${BOUNDARY}--\r\n`));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The signed form's fields: the spec's, the signature fields, policy and signature. */
async function signedFields(spec: FormSpec): Promise<[string, string][]> {
  if (spec.anonymous) return [...spec.fields, ...(spec.unsignedFields ?? [])];
  const s = SPELLING[spec.dialect];
  const hdr = (suffix: string) => headerName(spec.dialect, suffix);
  const now = new Date();
  const date = amzDate(now);
  const day = date.slice(0, 8);
  const accessKey = spec.user?.accessKey ?? ADMIN_USER;
  const secret = spec.secret ?? spec.user?.secret ?? ADMIN_PASSWORD;
  const signing: [string, string][] = [
    [hdr("algorithm"), s.alg],
    [hdr("credential"), `${accessKey}/${day}/${REGION}/${s.service}/${s.term}`],
    [hdr("date"), date],
  ];
  const fields: [string, string][] = [...spec.fields, ...signing];
  const conditions = spec.conditions
    ? [...spec.conditions, ...signing.map(([name, value]) => ({ [name]: value }))]
    : [
      { bucket: spec.bucket },
      ...fields.map(([name, value]) => ({ [name]: value })),
      ...(spec.extraConditions ?? []),
    ];
  const expiration = spec.expiration ?? new Date(now.getTime() + 10 * 60 * 1000);
  const policy = btoa(String.fromCharCode(
    ...enc.encode(JSON.stringify({ expiration: expiration.toISOString(), conditions })),
  ));
  let key: ArrayBuffer = await hmac(enc.encode(s.seed + secret), day);
  for (const part of [REGION, s.service, s.term]) key = await hmac(key, part);
  const signature = hex(await hmac(key, policy));
  return [
    ...fields,
    ["policy", policy],
    [hdr("signature"), signature],
    ...(spec.unsignedFields ?? []),
  ];
}

function postForm(server: TestServer, path: string, body: Uint8Array): Promise<Response> {
  return fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
    body: body as Uint8Array<ArrayBuffer>,
    redirect: "manual",
  });
}

async function post(server: TestServer, spec: FormSpec): Promise<Response> {
  const body = formBody(await signedFields(spec), spec.file, spec.filename);
  return postForm(server, objectPath(spec.bucket), body);
}

function getObject(server: TestServer, bucket: string, key: string): Promise<Response> {
  return signedFetch(server, { method: "GET", path: objectPath(bucket, key) });
}

async function objectExists(server: TestServer, bucket: string, key: string): Promise<boolean> {
  const res = await signedFetch(server, { method: "HEAD", path: objectPath(bucket, key) });
  await res.body?.cancel();
  return res.status === 200;
}

const BUCKET = "forms";

Deno.test("PostObject: signed form uploads in both dialects", async (t) => {
  await withServer(async (server) => {
    const admin = as(server, undefined, "store");
    await createBucket(admin, BUCKET);
    const poster = await createUser(server, "poster", [{ bucket: BUCKET, permission: "write" }]);
    const reader = await createUser(server, "reader", [{ bucket: BUCKET, permission: "read" }]);

    for (const dialect of DIALECTS) {
      const meta = (name: string) => headerName(dialect, `meta-${name}`);

      await t.step(`${dialect}: 204 by default, metadata and content type kept`, async () => {
        const key = `${dialect}/photo.jpg`;
        const res = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [
            ["key", key],
            ["Content-Type", "image/jpeg"],
            ["Cache-Control", "max-age=60"],
            ["Content-Disposition", 'inline; filename="photo.jpg"'],
            [meta("camera"), "pinhole"],
          ],
          file: "jpeg bytes",
        });
        await expectStatus(res, 204, "POST");
        assertEquals(res.headers.get("etag"), `"${md5Hex("jpeg bytes")}"`);
        assertEquals(
          res.headers.get("location"),
          `${server.url}/${BUCKET}/${dialect}/photo.jpg`,
        );
        const got = await getObject(server, BUCKET, key);
        assertEquals(await expectStatus(got, 200, "GET"), "jpeg bytes");
        assertEquals(got.headers.get("content-type"), "image/jpeg");
        assertEquals(got.headers.get("cache-control"), "max-age=60");
        assertEquals(got.headers.get("content-disposition"), 'inline; filename="photo.jpg"');
        assertEquals(got.headers.get(headerName("store", "meta-camera")), "pinhole");
      });

      await t.step(`${dialect}: success_action_status 201 answers a PostResponse`, async () => {
        const key = `${dialect}/a b+c.txt`;
        const res = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [["key", key], ["success_action_status", "201"]],
          file: "created",
        });
        const xml = await expectStatus(res, 201, "POST 201");
        assertMatch(xml, /^<\?xml version="1.0" encoding="UTF-8"\?>\s*<PostResponse>/);
        assertEquals(xmlValue(xml, "Bucket"), BUCKET);
        assertEquals(xmlValue(xml, "Key"), key);
        assertEquals(xmlValue(xml, "ETag"), `&quot;${md5Hex("created")}&quot;`);
        assertEquals(
          xmlValue(xml, "Location"),
          `${server.url}/${BUCKET}/${dialect}/a%20b%2Bc.txt`,
        );
        assertEquals(res.headers.get("content-type"), "application/xml");
      });

      await t.step(`${dialect}: success_action_status 200 and unknown values`, async () => {
        const ok = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [["key", `${dialect}/two-hundred`], ["success_action_status", "200"]],
          file: "x",
        });
        assertEquals(await expectStatus(ok, 200, "POST 200"), "");
        const other = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [["key", `${dialect}/other-status`], ["success_action_status", "302"]],
          file: "x",
        });
        await expectStatus(other, 204, "an invalid status falls back to 204");
      });

      await t.step(`${dialect}: success_action_redirect answers 303`, async () => {
        const res = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [
            ["key", `${dialect}/redirected.txt`],
            ["success_action_redirect", "https://app.example/done?from=form"],
            ["success_action_status", "201"],
          ],
          file: "redirect me",
        });
        await expectStatus(res, 303, "POST redirect");
        const location = new URL(res.headers.get("location")!);
        assertEquals(location.origin + location.pathname, "https://app.example/done");
        assertEquals(location.searchParams.get("from"), "form");
        assertEquals(location.searchParams.get("bucket"), BUCKET);
        assertEquals(location.searchParams.get("key"), `${dialect}/redirected.txt`);
        assertEquals(location.searchParams.get("etag"), `"${md5Hex("redirect me")}"`);
        const bad = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [["key", `${dialect}/not-redirected`], ["success_action_redirect", "not a url"]],
          file: "x",
        });
        await expectStatus(bad, 204, "a redirect that is no URL is ignored");
      });

      await t.step(`${dialect}: \${filename} in the key, with starts-with`, async () => {
        const fields: [string, string][] = [["key", `${dialect}/uploads/\${filename}`]];
        const res = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields,
          filename: "cat.txt",
          file: "meow",
          conditions: [{ bucket: BUCKET }, ["starts-with", "$key", `${dialect}/uploads/`]],
        });
        await expectStatus(res, 204, "POST with ${filename}");
        assertEquals(
          await expectStatus(await getObject(server, BUCKET, `${dialect}/uploads/cat.txt`), 200),
          "meow",
        );
        // An exact condition on the key is checked against the substituted key.
        const exact = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields,
          filename: "dog.txt",
          file: "woof",
        });
        await expectError(exact, "AccessDenied", 403, "exact key with ${filename}");
      });

      await t.step(`${dialect}: each condition kind accepted and violated`, async () => {
        const cases: {
          what: string;
          fields: [string, string][];
          conditions: unknown[];
          ok: boolean;
        }[] = [
          {
            what: "exact object form",
            fields: [["key", `${dialect}/c1`], ["acl", "private"]],
            conditions: [{ bucket: BUCKET }, { key: `${dialect}/c1` }, { acl: "private" }],
            ok: true,
          },
          {
            what: "exact object form violated",
            fields: [["key", `${dialect}/c2`], ["acl", "public-read"]],
            conditions: [{ bucket: BUCKET }, { key: `${dialect}/c2` }, { acl: "private" }],
            ok: false,
          },
          {
            what: "eq",
            fields: [["key", `${dialect}/c3`]],
            conditions: [["eq", "$bucket", BUCKET], ["eq", "$key", `${dialect}/c3`]],
            ok: true,
          },
          {
            what: "eq violated",
            fields: [["key", `${dialect}/c4`]],
            conditions: [["eq", "$bucket", BUCKET], ["eq", "$key", `${dialect}/other`]],
            ok: false,
          },
          {
            what: "bucket violated",
            fields: [["key", `${dialect}/c5`]],
            conditions: [{ bucket: "another-bucket" }, ["starts-with", "$key", ""]],
            ok: false,
          },
          {
            what: "starts-with on the key",
            fields: [["key", `${dialect}/user/eric/c6`]],
            conditions: [["starts-with", "$key", `${dialect}/user/eric/`]],
            ok: true,
          },
          {
            what: "starts-with on the key violated",
            fields: [["key", `${dialect}/user/bob/c7`]],
            conditions: [["starts-with", "$key", `${dialect}/user/eric/`]],
            ok: false,
          },
          {
            what: "starts-with on Content-Type",
            fields: [["key", `${dialect}/c8`], ["Content-Type", "image/png"]],
            conditions: [["starts-with", "$key", ""], ["starts-with", "$Content-Type", "image/"]],
            ok: true,
          },
          {
            what: "starts-with on Content-Type violated",
            fields: [["key", `${dialect}/c9`], ["Content-Type", "text/html"]],
            conditions: [["starts-with", "$key", ""], ["starts-with", "$Content-Type", "image/"]],
            ok: false,
          },
          {
            what: "starts-with on metadata",
            fields: [["key", `${dialect}/c10`], [meta("tag"), "team-a:blue"]],
            conditions: [["starts-with", "$key", ""], [
              "starts-with",
              `$${meta("tag")}`,
              "team-a:",
            ]],
            ok: true,
          },
          {
            what: "starts-with on metadata violated",
            fields: [["key", `${dialect}/c11`], [meta("tag"), "team-b:blue"]],
            conditions: [["starts-with", "$key", ""], [
              "starts-with",
              `$${meta("tag")}`,
              "team-a:",
            ]],
            ok: false,
          },
          {
            what: "starts-with an empty prefix matches anything",
            fields: [["key", `${dialect}/c12`], ["success_action_redirect", "http://x.test/"]],
            conditions: [["starts-with", "$key", ""], [
              "starts-with",
              "$success_action_redirect",
              "",
            ]],
            ok: true,
          },
        ];
        for (const c of cases) {
          const res = await post(server, {
            dialect,
            bucket: BUCKET,
            user: poster,
            fields: c.fields,
            file: c.what,
            conditions: c.conditions,
          });
          const key = c.fields[0][1];
          if (c.ok) {
            const text = await res.text();
            assert([204, 303].includes(res.status), `${c.what}: ${res.status} ${text}`);
            assert(await objectExists(server, BUCKET, key), `${c.what}: stored`);
          } else {
            const body = await expectError(res, "AccessDenied", 403, c.what);
            assertMatch(body, /Invalid according to Policy: Policy Condition failed: \[/);
            assert(!(await objectExists(server, BUCKET, key)), `${c.what}: nothing stored`);
          }
        }
      });

      await t.step(`${dialect}: content-length-range`, async () => {
        const range = (min: number, max: number) => ({
          dialect,
          bucket: BUCKET,
          user: poster,
          extraConditions: [["content-length-range", min, max]],
        });
        await expectStatus(
          await post(server, {
            ...range(1, 10),
            fields: [["key", `${dialect}/r1`]],
            file: "0123456789",
          }),
          204,
          "within the range (inclusive)",
        );
        const small = await post(server, {
          ...range(5, 10),
          fields: [["key", `${dialect}/r2`]],
          file: "0123",
        });
        await expectError(small, "EntityTooSmall", 400, "too small");
        const large = await post(server, {
          ...range(1, 10),
          fields: [["key", `${dialect}/r3`]],
          file: "0123456789A",
        });
        await expectError(large, "EntityTooLarge", 400, "too large");
        assert(!(await objectExists(server, BUCKET, `${dialect}/r2`)), "r2 not stored");
        assert(!(await objectExists(server, BUCKET, `${dialect}/r3`)), "r3 not stored");
      });

      await t.step(`${dialect}: expired policy`, async () => {
        const res = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [["key", `${dialect}/expired`]],
          file: "late",
          expiration: new Date(Date.now() - 1000),
        });
        const body = await expectError(res, "AccessDenied", 403, "expired");
        assertEquals(xmlValue(body, "Message"), "Invalid according to Policy: Policy expired.");
      });

      await t.step(`${dialect}: bad signatures`, async () => {
        const wrong = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          secret: "not-the-secret-key-0123456789abcdefghijk",
          fields: [["key", `${dialect}/bad-sig`]],
          file: "x",
        });
        await expectError(wrong, "SignatureDoesNotMatch", 403, "wrong secret");
        // A policy changed after signing (conditions loosened) fails the signature.
        const fields = await signedFields({
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [["key", `${dialect}/bad-sig`]],
          file: "x",
        });
        const tampered = fields.map(([n, v]): [string, string] =>
          n === "policy"
            ? [n, btoa(atob(v).replace(`"key":"${dialect}/bad-sig"`, `"key":"${dialect}/evil"`))]
            : n === "key"
            ? [n, `${dialect}/evil`]
            : [n, v]
        );
        await expectError(
          await postForm(server, objectPath(BUCKET), formBody(tampered, "x")),
          "SignatureDoesNotMatch",
          403,
          "tampered policy",
        );
        const unknown = await post(server, {
          dialect,
          bucket: BUCKET,
          user: { ...poster, accessKey: "STUSNOSUCHKEY0000000" },
          fields: [["key", `${dialect}/bad-sig`]],
          file: "x",
        });
        await expectError(unknown, "InvalidAccessKeyId", 403, "unknown access key");
        assert(!(await objectExists(server, BUCKET, `${dialect}/bad-sig`)), "nothing stored");
        assert(!(await objectExists(server, BUCKET, `${dialect}/evil`)), "nothing stored");
      });

      await t.step(`${dialect}: every field must be covered by the policy`, async () => {
        const res = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [["key", `${dialect}/extra`]],
          unsignedFields: [[meta("sneaky"), "1"]],
          file: "x",
        });
        const body = await expectError(res, "AccessDenied", 403, "uncovered field");
        assertEquals(
          xmlValue(body, "Message"),
          `Invalid according to Policy: Extra input fields: ${meta("sneaky")}`,
        );
        const ignored = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [["key", `${dialect}/ignored`]],
          unsignedFields: [["x-ignore-submit", "Upload"]],
          file: "x",
        });
        await expectStatus(ignored, 204, "x-ignore-* needs no condition");
      });

      await t.step(`${dialect}: acl and server-side encryption fields`, async () => {
        const key = `${dialect}/public-sse`;
        const res = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [
            ["key", key],
            ["acl", "public-read"],
            [headerName(dialect, "server-side-encryption"), "AES256"],
          ],
          file: "secret but public",
        });
        await expectStatus(res, 204, "POST with acl and SSE");
        assertEquals(res.headers.get(headerName(dialect, "server-side-encryption")), "AES256");
        const anon = await anonymous(server, { method: "GET", path: objectPath(BUCKET, key) });
        assertEquals(await expectStatus(anon, 200, "anonymous read"), "secret but public");
        assertEquals(
          anon.headers.get(headerName("store", "server-side-encryption")),
          "AES256",
        );
      });

      await t.step(`${dialect}: a user who may only read is denied`, async () => {
        const res = await post(server, {
          dialect,
          bucket: BUCKET,
          user: reader,
          fields: [["key", `${dialect}/by-reader`]],
          file: "x",
        });
        await expectDenied(res, "read-only user");
        assert(!(await objectExists(server, BUCKET, `${dialect}/by-reader`)), "not stored");
      });
    }

    await t.step("a versioned bucket answers the new version id", async () => {
      await createBucket(admin, "versioned-forms");
      await expectStatus(
        await admin({
          method: "PUT",
          path: objectPath("versioned-forms"),
          query: [["versioning", ""]],
          body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>",
        }),
        200,
        "enable versioning",
      );
      const ids = [];
      for (const content of ["one", "two"]) {
        const res = await post(server, {
          dialect: "amz",
          bucket: "versioned-forms",
          fields: [["key", "doc"]],
          file: content,
        });
        await expectStatus(res, 204, `POST ${content}`);
        ids.push(res.headers.get(headerName("amz", "version-id")));
      }
      assert(ids[0] && ids[1] && ids[0] !== ids[1], `two version ids: ${ids}`);
      const first = await signedFetch(server, {
        method: "GET",
        path: objectPath("versioned-forms", "doc"),
        query: [["versionId", ids[0]!]],
      });
      assertEquals(await expectStatus(first, 200), "one");
    });

    await t.step("the tagging field (a Tagging document) tags the object", async () => {
      const tagging = (...tags: [string, string][]) =>
        `<Tagging><TagSet>${
          tags.map(([k, v]) => `<Tag><Key>${k}</Key><Value>${v}</Value></Tag>`).join("")
        }</TagSet></Tagging>`;
      const tagsOf = async (key: string) => {
        const xml = await expectStatus(
          await signedFetch(server, {
            method: "GET",
            path: objectPath(BUCKET, key),
            query: [["tagging", ""]],
          }),
          200,
          `tags of ${key}`,
        );
        return [...xml.matchAll(/<Key>([^<]*)<\/Key><Value>([^<]*)<\/Value>/g)]
          .map((m) => `${m[1]}=${m[2]}`);
      };
      for (const dialect of DIALECTS) {
        const key = `${dialect}/tagged`;
        const res = await post(server, {
          dialect,
          bucket: BUCKET,
          user: poster,
          fields: [["key", key], ["tagging", tagging(["b", "2"], ["a", "one two"])]],
          file: "tagged",
        });
        await expectStatus(res, 204, `${dialect} POST with tagging`);
        assertEquals(await tagsOf(key), ["a=one two", "b=2"]);
        const head = await signedFetch(server, { method: "HEAD", path: objectPath(BUCKET, key) });
        await head.body?.cancel();
        assertEquals(head.headers.get(headerName("store", "tagging-count")), "2");
      }
      // The header's URL-encoded form as a field.
      const res = await post(server, {
        dialect: "amz",
        bucket: BUCKET,
        user: poster,
        fields: [["key", "header-tagged"], [headerName("amz", "tagging"), "x=1&y=a%20b"]],
        file: "tagged",
      });
      await expectStatus(res, 204, "POST with x-amz-tagging");
      assertEquals(await tagsOf("header-tagged"), ["x=1", "y=a b"]);
      // Refusals store nothing.
      const refusals: [[string, string][], string][] = [
        [[["tagging", tagging(["a", "1"], ["a", "2"])]], "InvalidTag"],
        [[[
          "tagging",
          tagging(...Array.from({ length: 11 }, (_, i) => [`k${i}`, "v"] as [string, string])),
        ]], "InvalidTag"],
        [
          [["tagging", "<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>"]],
          "MalformedXML",
        ],
        [[["tagging", "not xml"]], "MalformedXML"],
        [
          [["tagging", tagging(["a", "1"])], [headerName("amz", "tagging"), "b=2"]],
          "InvalidArgument",
        ],
      ];
      for (const [fields, code] of refusals) {
        const refused = await post(server, {
          dialect: "amz",
          bucket: BUCKET,
          user: poster,
          fields: [["key", "bad-tags"], ...fields],
          file: "x",
        });
        await expectError(refused, code, 400, `tagging ${code}`);
        assert(!(await objectExists(server, BUCKET, "bad-tags")), "nothing stored");
      }
    });

    await t.step("malformed requests", async () => {
      const form = (fields: [string, string][]) =>
        signedFields({ dialect: "amz", bucket: BUCKET, user: poster, fields, file: "x" });
      await expectError(
        await postForm(server, "/", formBody(await form([["key", "k"]]), "x")),
        "MethodNotAllowed",
        405,
        "POST /",
      );
      await expectError(
        await fetch(`${server.url}/${BUCKET}`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "key=k",
        }),
        "PreconditionFailed",
        412,
        "not multipart",
      );
      const noFile = enc.encode(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="key"\r\n\r\nk\r\n--${BOUNDARY}--\r\n`,
      );
      await expectError(
        await postForm(server, objectPath(BUCKET), noFile),
        "IncorrectNumberOfFilesInPostRequest",
        400,
        "no file",
      );
      await expectError(
        await postForm(server, objectPath(BUCKET), formBody(await form([]), "x")),
        "InvalidArgument",
        400,
        "no key",
      );
      await expectError(
        await post(server, {
          dialect: "store",
          bucket: "no-such-bucket",
          fields: [["key", "k"]],
          file: "x",
        }),
        "NoSuchBucket",
        404,
        "missing bucket",
      );
      await expectError(
        await postForm(
          server,
          objectPath(BUCKET),
          formBody([["key", "k"], ["x-ignore-big", "v".repeat(21 * KiB)]], "x"),
        ),
        "MaxPostPreDataLengthExceeded",
        400,
        "a field too large",
      );
      const truncated = formBody(await form([["key", "truncated"]]), "abcdef");
      await expectError(
        await postForm(server, objectPath(BUCKET), truncated.slice(0, truncated.length - 30)),
        "MalformedPOSTRequest",
        400,
        "body cut inside the file",
      );
      assert(!(await objectExists(server, BUCKET, "truncated")), "nothing stored");
    });
  });
});

Deno.test("PostObject: content-length-range is enforced while streaming", async () => {
  await withServer(async (server) => {
    const admin = as(server, undefined, "amz");
    await createBucket(admin, BUCKET);
    const chunksBefore = await chunkCount(server);
    const filesBefore = await shardFileCount(server.dataDir);
    const big = new Uint8Array(3 * 1024 * KiB);
    for (let i = 0; i < big.length; i += 65536) crypto.getRandomValues(big.subarray(i, i + 65536));
    for (const dialect of DIALECTS) {
      const res = await post(server, {
        dialect,
        bucket: BUCKET,
        fields: [["key", `${dialect}/big`]],
        extraConditions: [["content-length-range", 0, 1024 * KiB]],
        file: big,
      });
      const body = await expectError(res, "EntityTooLarge", 400, "beyond the range");
      assertEquals(xmlValue(body, "MaxSizeAllowed"), String(1024 * KiB));
      assert(!(await objectExists(server, BUCKET, `${dialect}/big`)), "nothing stored");
    }
    assertEquals(await chunkCount(server), chunksBefore, "no chunk rows");
    assertEquals(await shardFileCount(server.dataDir), filesBefore, "no shard files left");
    // Within the range the same file is stored in chunks.
    const ok = await post(server, {
      dialect: "amz",
      bucket: BUCKET,
      fields: [["key", "big-ok"]],
      extraConditions: [["content-length-range", 0, 4 * 1024 * KiB]],
      file: big,
    });
    await expectStatus(ok, 204, "within the range");
    assertEquals(ok.headers.get("etag"), `"${md5Hex(big)}"`);
    assert((await chunkCount(server)) > chunksBefore, "stored as chunks");
  }, { env: { STORE_CHUNK_SIZE: String(256 * KiB) } });
});

Deno.test("PostObject: anonymous forms only where the bucket allows anonymous writes", async () => {
  await withServer(async (server) => {
    const admin = as(server, undefined, "store");
    for (const bucket of ["closed", "open-acl", "open-policy"]) await createBucket(admin, bucket);
    await expectStatus(
      await admin({
        method: "PUT",
        path: objectPath("open-acl"),
        query: [["acl", ""]],
        headers: { [headerName("store", "acl")]: "public-read-write" },
      }),
      200,
      "public-read-write ACL",
    );
    const words = policyWords("store", "open-policy");
    await setPolicy(
      admin,
      "open-policy",
      words.doc(words.allow("*", words.act("PutObject"), words.objArn("drop/*"))),
    );
    for (const dialect of DIALECTS) {
      const meta = headerName(dialect, "meta-origin");
      const anon = (bucket: string, key: string) =>
        post(server, {
          dialect,
          bucket,
          anonymous: true,
          fields: [["key", key], [meta, "anonymous"]],
          file: `anonymous upload to ${bucket}`,
        });
      await expectDenied(await anon("closed", `${dialect}/a`), "private bucket");
      assert(!(await objectExists(server, "closed", `${dialect}/a`)), "nothing stored");
      await expectStatus(await anon("open-acl", `${dialect}/a`), 204, "public-read-write bucket");
      const got = await getObject(server, "open-acl", `${dialect}/a`);
      assertEquals(await expectStatus(got, 200), "anonymous upload to open-acl");
      assertEquals(got.headers.get(headerName("store", "meta-origin")), "anonymous");
      await expectStatus(await anon("open-policy", `drop/${dialect}`), 204, "policy allows drop/*");
      await expectDenied(await anon("open-policy", `${dialect}/outside`), "policy: not drop/*");
      // A policy without a signature is refused, not treated as anonymous.
      const unsigned = await post(server, {
        dialect,
        bucket: "open-acl",
        anonymous: true,
        fields: [["key", `${dialect}/b`], ["policy", "e30="]],
        file: "x",
      });
      await expectError(unsigned, "InvalidArgument", 400, "policy without signature");
    }
  });
});

Deno.test("PostObject: Object Lock fields and the bucket's default retention apply", async () => {
  await withServer(async (server) => {
    const locked = await signedFetch(server, {
      method: "PUT",
      path: "/locked-forms",
      headers: { "x-store-bucket-object-lock-enabled": "true" },
    });
    assertEquals(locked.status, 200);
    const config = "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>" +
      "<Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>2</Days></DefaultRetention></Rule>" +
      "</ObjectLockConfiguration>";
    const put = await signedFetch(server, {
      method: "PUT",
      path: "/locked-forms",
      query: [["object-lock", ""]],
      body: config,
    });
    assertEquals(put.status, 200);
    const plain = await post(server, {
      dialect: "store",
      bucket: "locked-forms",
      fields: [["key", "default.txt"]],
      file: "kept two days",
    });
    assertEquals(plain.status, 204);
    const head = await signedFetch(server, {
      method: "HEAD",
      path: objectPath("locked-forms", "default.txt"),
    });
    assertEquals(head.headers.get("x-store-object-lock-mode"), "GOVERNANCE");
    const until = Date.parse(head.headers.get("x-store-object-lock-retain-until-date") ?? "");
    assert(until - Date.now() > 47 * 3600_000, "two days of retention");
    const held = await post(server, {
      dialect: "store",
      bucket: "locked-forms",
      fields: [["key", "held.txt"], ["x-store-object-lock-legal-hold", "ON"]],
      file: "on hold",
    });
    assertEquals(held.status, 204);
    const heldHead = await signedFetch(server, {
      method: "HEAD",
      path: objectPath("locked-forms", "held.txt"),
    });
    assertEquals(heldHead.headers.get("x-store-object-lock-legal-hold"), "ON");
  });
});

Deno.test("PostObject: a form signed with session keys needs the session token", async () => {
  await withServer(async (server) => {
    await createBucket(as(server, undefined, "store"), "session-forms");
    const user = await createUser(server, "former", [
      { bucket: "session-forms", permission: "write" },
    ]);
    // AssumeRole signed with the user's own keys (the token service's scope service is sts).
    const res = await signedFetch(server, {
      method: "POST",
      path: "/",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Astore%3Aiam%3A%3A1%3Arole%2Fx" +
        "&RoleSessionName=forms",
      accessKey: user.accessKey,
      secret: user.secret,
      service: "sts",
    });
    const xml = await res.text();
    assertEquals(res.status, 200, xml);
    const session: TestUser = {
      ...user,
      accessKey: xmlValue(xml, "AccessKeyId")!,
      secret: xmlValue(xml, "SecretAccessKey")!,
    };
    const token = xmlValue(xml, "SessionToken")!;
    const base = { dialect: "store" as const, bucket: "session-forms", file: "x", user: session };
    await expectError(
      await post(server, { ...base, fields: [["key", "no-token"]] }),
      "InvalidToken",
      400,
    );
    const ok = await post(server, {
      ...base,
      fields: [["key", "with-token"], [headerName("store", "security-token"), token]],
    });
    assertEquals(ok.status, 204, await ok.text());
  });
});
