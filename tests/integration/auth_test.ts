// Authentication in both dialects with raw signed requests: header auth, presigned URLs, and the
// exact error code, status and body of every way a signature can be wrong.
import { createHash } from "node:crypto";
import { join } from "node:path";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { sha256Hex, withServer } from "./server.ts";
import {
  type DialectName,
  headerName,
  objectPath,
  presign,
  queryName,
  type RawRequest,
  signedFetch,
  type SignedRequest,
  signRequest,
  xmlValue,
} from "./signer.ts";

const DIALECTS: DialectName[] = ["store", "amz"];
const NAMESPACE: Record<DialectName, string> = {
  store: "http://store.local/doc/2006-03-01/",
  amz: "http://s3.amazonaws.com/doc/2006-03-01/",
};
const enc = new TextEncoder();

function other(dialect: DialectName): DialectName {
  return dialect === "store" ? "amz" : "store";
}

function md5Hex(data: string | Uint8Array): string {
  return createHash("md5").update(data).digest("hex");
}

/** Signed but not yet sent, so a test can tamper with it first. */
type Captured = SignedRequest;
const capture = signRequest;

function send(c: Captured): Promise<Response> {
  return fetch(c.url, {
    method: c.method,
    headers: c.headers,
    body: c.body as Uint8Array<ArrayBuffer> | undefined,
  });
}

/**
 * Asserts a protocol error response: status, dialect of the request-id header, and (except for
 * HEAD) the XML body with the exact code. Returns the body.
 */
async function expectError(
  res: Response,
  opts: { status: number; code: string; dialect: DialectName; head?: boolean },
): Promise<string> {
  const body = await res.text();
  const where = `${opts.code}: got ${res.status} ${body}`;
  assertEquals(res.status, opts.status, `status for ${where}`);
  assert(res.headers.get(headerName(opts.dialect, "request-id")), `request id for ${where}`);
  assertEquals(res.headers.get(headerName(other(opts.dialect), "request-id")), null, where);
  if (opts.head) {
    assertEquals(body, "", `HEAD error body for ${opts.code}`);
    return body;
  }
  assertMatch(
    body,
    /^<\?xml[^>]*\?>\s*<Error><Code>[^<]+<\/Code><Message>[^<]+<\/Message>.*<Resource>[^<]*<\/Resource><RequestId>[^<]+<\/RequestId><\/Error>$/s,
    "error body shape",
  );
  assertEquals(xmlValue(body, "Code"), opts.code, `code for ${where}`);
  return body;
}

async function expectOk(res: Response, status = 200): Promise<string> {
  const body = await res.text();
  assertEquals(res.status, status, `expected ${status}, body: ${body}`);
  return body;
}

async function fileCount(dir: string): Promise<number> {
  let n = 0;
  try {
    for await (const entry of Deno.readDir(dir)) {
      n += entry.isDirectory ? await fileCount(join(dir, entry.name)) : 1;
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return n;
}

function amzDate(d: Date): string {
  return d.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

Deno.test("authentication in both dialects", async (t) => {
  await withServer(async (server) => {
    let checkedRequestId = false;

    for (const dialect of DIALECTS) {
      const bucket = `auth-${dialect}`;
      const key = "dir/hello world.txt";
      const path = objectPath(bucket, key);
      const hdr = (suffix: string) => headerName(dialect, suffix);
      const req = (r: RawRequest) => signedFetch(server, { dialect, ...r });

      await t.step(`${dialect}: header auth round trip`, async () => {
        let res = await req({ method: "PUT", path: objectPath(bucket) });
        await expectOk(res);
        assert(res.headers.get(hdr("request-id")), "request id in the request's dialect");
        assertEquals(res.headers.get(headerName(other(dialect), "request-id")), null);

        const content = `hello from ${dialect}`;
        res = await req({
          method: "PUT",
          path,
          body: content,
          headers: { "content-type": "text/plain", [hdr("meta-color")]: "blue" },
        });
        await expectOk(res);
        assertEquals(res.headers.get("etag"), `"${md5Hex(content)}"`);

        res = await req({ method: "GET", path });
        assertEquals(await expectOk(res), content);
        assertEquals(res.headers.get("etag"), `"${md5Hex(content)}"`);
        assertEquals(res.headers.get(hdr("meta-color")), "blue");
        assertEquals(res.headers.get(headerName(other(dialect), "meta-color")), null);
        assert(res.headers.get(hdr("request-id")));

        res = await req({ method: "HEAD", path });
        assertEquals(await expectOk(res), "");
        assertEquals(res.headers.get("content-length"), String(content.length));
        assertEquals(res.headers.get("content-type"), "text/plain");

        res = await req({ method: "DELETE", path });
        await expectOk(res, 204);
        res = await req({ method: "GET", path });
        await expectError(res, { status: 404, code: "NoSuchKey", dialect });
        res = await req({ method: "HEAD", path });
        await expectError(res, { status: 404, code: "NoSuchKey", dialect, head: true });

        // Leave an object behind for the tests below.
        await expectOk(await req({ method: "PUT", path, body: "original" }));
      });

      await t.step(`${dialect}: ListBuckets uses the dialect's namespace`, async () => {
        const res = await req({ method: "GET", path: "/" });
        const body = await expectOk(res);
        assertMatch(body, /<ListAllMyBucketsResult xmlns="[^"]+">/);
        assert(body.includes(`<ListAllMyBucketsResult xmlns="${NAMESPACE[dialect]}">`), body);
        assert(body.includes(`<Name>${bucket}</Name>`), body);
        assert(res.headers.get(hdr("request-id")));
      });

      await t.step(`${dialect}: error body carries the request id`, async () => {
        if (checkedRequestId) return;
        checkedRequestId = true;
        const res = await req({ method: "GET", path: objectPath(bucket, "missing") });
        const body = await expectError(res, { status: 404, code: "NoSuchKey", dialect });
        assertEquals(xmlValue(body, "RequestId"), res.headers.get(hdr("request-id")));
        assertEquals(xmlValue(body, "Resource"), `/${bucket}/missing`);
        assert(xmlValue(body, "Message"), "message present");
      });

      await t.step(`${dialect}: unknown access key`, async () => {
        const res = await req({ method: "GET", path: "/", accessKey: "NOSUCHKEY1234567890" });
        await expectError(res, { status: 403, code: "InvalidAccessKeyId", dialect });
      });

      await t.step(`${dialect}: wrong secret`, async () => {
        let res = await req({ method: "GET", path, secret: "wrong-secret-0123456789" });
        await expectError(res, { status: 403, code: "SignatureDoesNotMatch", dialect });
        res = await req({ method: "HEAD", path, secret: "wrong-secret-0123456789" });
        await expectError(res, { status: 403, code: "SignatureDoesNotMatch", dialect, head: true });
        res = await req({ method: "PUT", path, body: "evil", secret: "wrong-secret-0123456789" });
        await expectError(res, { status: 403, code: "SignatureDoesNotMatch", dialect });
        assertEquals(await expectOk(await req({ method: "GET", path })), "original");
      });

      await t.step(`${dialect}: tampered query`, async () => {
        const c = await capture(server, {
          dialect,
          method: "GET",
          path: objectPath(bucket),
          query: [["list-type", "2"], ["prefix", "dir/"]],
        });
        assert(c.url.includes("prefix=dir%2F"), c.url);
        c.url = c.url.replace("prefix=dir%2F", "prefix=other%2F");
        await expectError(await send(c), { status: 403, code: "SignatureDoesNotMatch", dialect });
        // An added parameter breaks the signature too.
        const d = await capture(server, { dialect, method: "GET", path });
        d.url += "?response-content-type=text%2Fhtml";
        await expectError(await send(d), { status: 403, code: "SignatureDoesNotMatch", dialect });
      });

      await t.step(`${dialect}: tampered signed header`, async () => {
        const c = await capture(server, {
          dialect,
          method: "PUT",
          path,
          body: "tampered",
          headers: { [hdr("meta-color")]: "red" },
        });
        c.headers[hdr("meta-color")] = "green";
        await expectError(await send(c), { status: 403, code: "SignatureDoesNotMatch", dialect });
        const res = await req({ method: "GET", path });
        assertEquals(await expectOk(res), "original");
        assertEquals(res.headers.get(hdr("meta-color")), null);
      });

      await t.step(`${dialect}: clock skew`, async () => {
        for (const offset of [-20 * 60_000, 20 * 60_000]) {
          const res = await req({ method: "GET", path, date: new Date(Date.now() + offset) });
          await expectError(res, { status: 403, code: "RequestTimeTooSkewed", dialect });
        }
      });

      await t.step(`${dialect}: wrong region in the scope`, async () => {
        const res = await req({ method: "GET", path, region: "eu-west-3" });
        await expectError(res, { status: 400, code: "AuthorizationHeaderMalformed", dialect });
      });

      await t.step(`${dialect}: service name in the scope`, async () => {
        for (const service of ["s3", "store"]) {
          const res = await req({ method: "GET", path, service });
          assertEquals(await expectOk(res), "original", `service ${service}`);
        }
        const res = await req({ method: "GET", path, service: "ec2" });
        await expectError(res, { status: 400, code: "AuthorizationHeaderMalformed", dialect });
      });

      await t.step(`${dialect}: malformed Authorization headers`, async () => {
        const good = await capture(server, { dialect, method: "GET", path });
        const alg = good.headers.authorization.split(" ")[0];
        for (
          const value of [
            `${alg} garbage`,
            `${alg} Credential=${good.headers.authorization.split("Credential=")[1].split(",")[0]}`,
            good.headers.authorization.replace(/SignedHeaders=[^,]+/, "SignedHeaders=x-foo"),
            good.headers.authorization.replace(/Credential=[^/]+\/\d{8}/, "Credential=k/2024"),
          ]
        ) {
          const res = await send({ ...good, headers: { ...good.headers, authorization: value } });
          await expectError(res, { status: 400, code: "AuthorizationHeaderMalformed", dialect });
        }
        // A signature that is not hex does not crash the comparison.
        const res = await send({
          ...good,
          headers: {
            ...good.headers,
            authorization: good.headers.authorization.replace(/Signature=\w+/, "Signature=zz"),
          },
        });
        await expectError(res, { status: 403, code: "SignatureDoesNotMatch", dialect });
      });

      await t.step(`${dialect}: missing date and payload hash headers`, async () => {
        const c = await capture(server, { dialect, method: "GET", path });
        const noDate = { ...c.headers };
        delete noDate[hdr("date")];
        await expectError(await send({ ...c, headers: noDate }), {
          status: 403,
          code: "AccessDenied",
          dialect,
        });
        const noHash = { ...c.headers };
        delete noHash[hdr("content-sha256")];
        await expectError(await send({ ...c, headers: noHash }), {
          status: 400,
          code: "InvalidRequest",
          dialect,
        });
      });

      await t.step(`${dialect}: presigned credential errors`, async () => {
        let url = await presign(server, {
          dialect,
          method: "GET",
          path,
          expires: 300,
          accessKey: "NOSUCHKEY1234567890",
        });
        await expectError(await fetch(url), { status: 403, code: "InvalidAccessKeyId", dialect });
        url = await presign(server, { dialect, method: "GET", path, expires: 300, region: "xx-1" });
        await expectError(await fetch(url), {
          status: 400,
          code: "AuthorizationQueryParametersError",
          dialect,
        });
        url = await presign(server, {
          dialect,
          method: "GET",
          path,
          expires: 300,
          date: new Date(Date.now() + 3_600_000),
        });
        await expectError(await fetch(url), { status: 403, code: "AccessDenied", dialect });
      });

      await t.step(`${dialect}: anonymous requests are denied`, async () => {
        // An unsigned request is answered in the dialect its headers use.
        const marker = { [hdr("content-sha256")]: "UNSIGNED-PAYLOAD" };
        for (const url of ["/", `/${bucket}`, path]) {
          const res = await fetch(server.url + url, { headers: marker });
          await expectError(res, { status: 403, code: "AccessDenied", dialect });
        }
        let res = await fetch(server.url + path, { method: "HEAD", headers: marker });
        await expectError(res, { status: 403, code: "AccessDenied", dialect, head: true });
        res = await fetch(server.url + path, {
          method: "PUT",
          headers: marker,
          body: enc.encode("anonymous"),
        });
        await expectError(res, { status: 403, code: "AccessDenied", dialect });
        res = await fetch(server.url + path, { method: "DELETE", headers: marker });
        await expectError(res, { status: 403, code: "AccessDenied", dialect });
        assertEquals(await expectOk(await req({ method: "GET", path })), "original");
      });

      await t.step(`${dialect}: unsigned ${hdr("*")} header`, async () => {
        const c = await capture(server, { dialect, method: "PUT", path, body: "unsigned meta" });
        c.headers[hdr("meta-sneaky")] = "1";
        await expectError(await send(c), { status: 403, code: "AccessDenied", dialect });
        const d = await capture(server, { dialect, method: "GET", path });
        d.headers[hdr("server-side-encryption-customer-algorithm")] = "AES256";
        await expectError(await send(d), { status: 403, code: "AccessDenied", dialect });
        assertEquals(await expectOk(await req({ method: "GET", path })), "original");
      });

      await t.step(`${dialect}: payload hash mismatch`, async () => {
        const code = dialect === "store"
          ? "XStoreContentSHA256Mismatch"
          : "XAmzContentSHA256Mismatch";
        const wrong = await sha256Hex(enc.encode("something else"));
        // Overwriting an existing object leaves it as it was.
        let res = await req({ method: "PUT", path, body: "replacement", payloadHash: wrong });
        await expectError(res, { status: 400, code, dialect });
        assertEquals(await expectOk(await req({ method: "GET", path })), "original");
        // A new small (inline) object is not created.
        const small = objectPath(bucket, "mismatch-small");
        res = await req({ method: "PUT", path: small, body: "tiny", payloadHash: wrong });
        await expectError(res, { status: 400, code, dialect });
        res = await req({ method: "GET", path: small });
        await expectError(res, { status: 404, code: "NoSuchKey", dialect });
        // A new large (file-backed) object is not created and leaves no file behind.
        const large = objectPath(bucket, "mismatch-large");
        const body = new Uint8Array(300 * 1024).fill(7);
        res = await req({ method: "PUT", path: large, body, payloadHash: wrong });
        await expectError(res, { status: 400, code, dialect });
        res = await req({ method: "HEAD", path: large });
        await expectError(res, { status: 404, code: "NoSuchKey", dialect, head: true });
        assertEquals(await fileCount(join(server.dataDir, "tmp")), 0, "temp files left");
        assertEquals(await fileCount(join(server.dataDir, "chunks")), 0, "shard files left");
      });

      await t.step(`${dialect}: UNSIGNED-PAYLOAD`, async () => {
        const unsigned = objectPath(bucket, "unsigned");
        let res = await req({
          method: "PUT",
          path: unsigned,
          body: "not hashed",
          payloadHash: "UNSIGNED-PAYLOAD",
        });
        await expectOk(res);
        res = await req({ method: "GET", path: unsigned, payloadHash: "UNSIGNED-PAYLOAD" });
        assertEquals(await expectOk(res), "not hashed");
        assertEquals(res.headers.get("etag"), `"${md5Hex("not hashed")}"`);
      });

      await t.step(`${dialect}: presigned GET, HEAD, PUT, DELETE`, async () => {
        const target = objectPath(bucket, "presigned/file.bin");
        const data = enc.encode(`presigned ${dialect}`);
        let url = await presign(server, {
          dialect,
          method: "PUT",
          path: target,
          expires: 300,
          headers: { "content-type": "application/x-presigned" },
        });
        assert(url.includes(queryName(dialect, "Signature") + "="), url);
        let res = await fetch(url, {
          method: "PUT",
          headers: { "content-type": "application/x-presigned" },
          body: data,
        });
        await expectOk(res);
        assert(res.headers.get(hdr("request-id")), "presigned answered in its dialect");
        assertEquals(res.headers.get("etag"), `"${md5Hex(data)}"`);

        url = await presign(server, { dialect, method: "GET", path: target, expires: 300 });
        res = await fetch(url);
        assertEquals(await expectOk(res), `presigned ${dialect}`);
        assertEquals(res.headers.get("content-type"), "application/x-presigned");
        assertEquals(res.headers.get(headerName(other(dialect), "request-id")), null);

        url = await presign(server, { dialect, method: "HEAD", path: target, expires: 300 });
        res = await fetch(url, { method: "HEAD" });
        assertEquals(await expectOk(res), "");
        assertEquals(res.headers.get("content-length"), String(data.byteLength));

        url = await presign(server, {
          dialect,
          method: "GET",
          path: target,
          query: [["versionId", "null"]],
          expires: 300,
        });
        assertEquals(await expectOk(await fetch(url)), `presigned ${dialect}`);

        // A URL signed for GET does not work for another method.
        url = await presign(server, { dialect, method: "GET", path: target, expires: 300 });
        res = await fetch(url, { method: "DELETE" });
        await expectError(res, { status: 403, code: "SignatureDoesNotMatch", dialect });

        url = await presign(server, { dialect, method: "DELETE", path: target, expires: 300 });
        await expectOk(await fetch(url, { method: "DELETE" }), 204);
        res = await req({ method: "GET", path: target });
        await expectError(res, { status: 404, code: "NoSuchKey", dialect });
      });

      await t.step(`${dialect}: presigned expiry bounds`, async () => {
        for (const expires of [0, 604801]) {
          const url = await presign(server, { dialect, method: "GET", path, expires });
          await expectError(await fetch(url), {
            status: 400,
            code: "AuthorizationQueryParametersError",
            dialect,
          });
        }
        const longest = await presign(server, { dialect, method: "GET", path, expires: 604800 });
        assertEquals(await expectOk(await fetch(longest)), "original");
      });

      await t.step(`${dialect}: expired presigned URL`, async () => {
        const url = await presign(server, {
          dialect,
          method: "GET",
          path,
          expires: 60,
          date: new Date(Date.now() - 120_000),
        });
        const res = await fetch(url);
        await expectError(res, { status: 403, code: "ExpiredPresignedRequest", dialect });
      });

      await t.step(`${dialect}: presigned URL with a wrong signature`, async () => {
        const url = await presign(server, { dialect, method: "GET", path, expires: 300 });
        const sig = queryName(dialect, "Signature");
        const bad = url.replace(new RegExp(`${sig}=[0-9a-f]{64}`), `${sig}=${"0".repeat(64)}`);
        assert(bad !== url);
        await expectError(await fetch(bad), {
          status: 403,
          code: "SignatureDoesNotMatch",
          dialect,
        });
        const wrongSecret = await presign(server, {
          dialect,
          method: "GET",
          path,
          expires: 300,
          secret: "not-the-secret-0123456789",
        });
        await expectError(await fetch(wrongSecret), {
          status: 403,
          code: "SignatureDoesNotMatch",
          dialect,
        });
        const tampered = await presign(server, { dialect, method: "GET", path, expires: 300 });
        await expectError(await fetch(tampered + "&response-content-type=text%2Fhtml"), {
          status: 403,
          code: "SignatureDoesNotMatch",
          dialect,
        });
        const head = await presign(server, { dialect, method: "HEAD", path, expires: 300 });
        await expectError(
          await fetch(head.replace(new RegExp(`${sig}=[0-9a-f]{64}`), `${sig}=${"a".repeat(64)}`), {
            method: "HEAD",
          }),
          { status: 403, code: "SignatureDoesNotMatch", dialect, head: true },
        );
      });

      await t.step(`${dialect}: presigned request with unsigned ${hdr("*")} headers`, async () => {
        // The holder of a presigned PUT URL must not be able to add metadata, or turn the upload
        // into a copy of another object, with headers the signer never saw.
        const target = objectPath(bucket, "presigned/unsigned-headers");
        const url = await presign(server, { dialect, method: "PUT", path: target, expires: 300 });
        const meta = await fetch(url, {
          method: "PUT",
          headers: { [hdr("meta-evil")]: "1" },
          body: enc.encode("with extra metadata"),
        });
        await meta.body?.cancel();
        const afterMeta = await req({ method: "HEAD", path: target });
        await req({ method: "DELETE", path: target });
        const copy = await fetch(url, {
          method: "PUT",
          headers: { [hdr("copy-source")]: `/${bucket}/${key}` },
        });
        await copy.body?.cancel();
        const afterCopy = await req({ method: "GET", path: target });
        assertEquals({
          meta: meta.status,
          storedMeta: afterMeta.headers.get(hdr("meta-evil")),
          copy: copy.status,
          copiedStatus: afterCopy.status,
          copiedBody: afterCopy.status === 200 ? await afterCopy.text() : null,
        }, { meta: 403, storedMeta: null, copy: 403, copiedStatus: 404, copiedBody: null });
        if (!afterCopy.bodyUsed) await afterCopy.body?.cancel();
      });

      await t.step(`${dialect}: header and query authentication together`, async () => {
        const url = await presign(server, { dialect, method: "GET", path, expires: 300 });
        const signed = await capture(server, { dialect, method: "GET", path });
        const res = await fetch(url, { headers: signed.headers });
        await expectError(res, { status: 400, code: "InvalidArgument", dialect });
      });

      await t.step(`${dialect}: presigned PUT with a wrong Content-Type`, async () => {
        const target = objectPath(bucket, "presigned/typed");
        const url = await presign(server, {
          dialect,
          method: "PUT",
          path: target,
          expires: 300,
          headers: { "content-type": "image/png" },
        });
        const res = await fetch(url, {
          method: "PUT",
          headers: { "content-type": "text/html" },
          body: enc.encode("<script>"),
        });
        await expectError(res, { status: 403, code: "SignatureDoesNotMatch", dialect });
        await expectError(await req({ method: "HEAD", path: target }), {
          status: 404,
          code: "NoSuchKey",
          dialect,
          head: true,
        });
      });

      await t.step(`${dialect}: credential date differs from the request date`, async () => {
        const c = await capture(server, { dialect, method: "GET", path });
        c.headers[hdr("date")] = amzDate(new Date(Date.now() - 86_400_000));
        await expectError(await send(c), {
          status: 400,
          code: "AuthorizationHeaderMalformed",
          dialect,
        });
      });
    }
  });
});
