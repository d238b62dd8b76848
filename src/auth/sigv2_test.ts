// Signature Version 2 against the examples of the protocol's "Signing and authenticating REST
// requests" reference (its example credentials, dates and expected signatures).
import { DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import {
  canonicalResource,
  signV2,
  stringToSignV2,
  verifyV2Header,
  verifyV2Query,
} from "./sigv2.ts";
import type { SignatureInput } from "./sigv4.ts";

const SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const KEY = "AKIAIOSFODNN7EXAMPLE";
const amz = DIALECTS.amz;

function assertEquals<T>(actual: T, expected: T): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(`expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

async function assertCode(p: Promise<unknown>, code: string): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (err instanceof S3Error && err.code === code) return;
    throw err;
  }
  throw new Error(`expected ${code}`);
}

function sign(
  method: string,
  path: string,
  headers: Record<string, string>,
  dateLine: string,
): string {
  const [rawPath, rawQuery = ""] = path.split("?");
  const input = { method, rawPath, rawQuery, headers: new Headers(headers), dialect: amz };
  return signV2(SECRET, stringToSignV2(input, dateLine));
}

Deno.test("sigv2: the reference's examples", () => {
  const get = "Tue, 27 Mar 2007 19:36:42 +0000";
  assertEquals(
    sign("GET", "/awsexamplebucket1/photos/puppy.jpg", { date: get }, get),
    "qgk2+6Sv9/oM7G3qLEjTH1a1l1g=",
  );
  const put = "Tue, 27 Mar 2007 21:15:45 +0000";
  assertEquals(
    sign("PUT", "/awsexamplebucket1/photos/puppy.jpg", {
      date: put,
      "content-type": "image/jpeg",
      "content-length": "94328",
    }, put),
    "iqRzw+ileNPu1fhspnRs8nOjjIA=",
  );
  const list = "Tue, 27 Mar 2007 19:42:41 +0000";
  assertEquals(
    sign("GET", "/awsexamplebucket1/?prefix=photos&max-keys=50&marker=puppy", {
      date: list,
    }, list),
    "m0WP8eCtspQl5Ahe6L1SozdX9YA=",
  );
  const acl = "Tue, 27 Mar 2007 19:44:46 +0000";
  assertEquals(
    sign("GET", "/awsexamplebucket1/?acl", { date: acl }, acl),
    "82ZHiFIjc+WbcwFKGUVEQspPn+0=",
  );
  const upload = "Tue, 27 Mar 2007 21:06:08 +0000";
  assertEquals(
    sign("PUT", "/static.example.com/db-backup.dat.gz", {
      date: upload,
      "x-amz-acl": "public-read",
      "content-type": "application/x-download",
      "content-md5": "4gJE4saaMU4BqNR0kLY+lw==",
      "x-amz-meta-reviewedby": "joe@example.com,jane@example.com",
      "x-amz-meta-filechecksum": "0x02661779",
      "x-amz-meta-checksumalgorithm": "crc32",
    }, upload),
    "jtBQa0Aq+DkULFI8qrpwIjGEx0E=",
  );
  const buckets = "Wed, 28 Mar 2007 01:29:59 +0000";
  assertEquals(sign("GET", "/", { date: buckets }, buckets), "qGdzdERIC03wnaRNKh6OqZehG9s=");
  const unicode = "Wed, 28 Mar 2007 01:49:49 +0000";
  assertEquals(
    sign("GET", "/dictionary/fran%C3%A7ais/pr%c3%a9f%c3%a8re", { date: unicode }, unicode),
    "DNEZGsoieTZ92F3bUfSPQcbGmlM=",
  );
  // Query string authentication: the date line is Expires.
  assertEquals(
    sign("GET", "/johnsmith/photos/puppy.jpg", {}, "1175139620"),
    "NpgCjnDzrM+WFzoENXmpNDUsSn8=",
  );
});

Deno.test("sigv2: the canonicalized resource keeps only signed subresources, sorted", () => {
  assertEquals(canonicalResource("/b/k", ""), "/b/k");
  assertEquals(
    canonicalResource("/b/k", "uploadId=x%2By&partNumber=2&foo=1"),
    "/b/k?partNumber=2&uploadId=x+y",
  );
  assertEquals(canonicalResource("/b", "acl"), "/b?acl");
  assertEquals(canonicalResource("/b", "acl="), "/b?acl=");
  assertEquals(canonicalResource("/b", "prefix=a&delete"), "/b?delete");
  assertEquals(
    canonicalResource("/b/k", "versionId=1&response-content-type=text%2Fplain"),
    "/b/k?response-content-type=text/plain&versionId=1",
  );
});

function input(over: Partial<SignatureInput> & { headers: Headers }): SignatureInput {
  return {
    method: "GET",
    rawPath: "/b/k",
    rawQuery: "",
    dialect: amz,
    region: "us-east-1",
    now: Date.parse("Tue, 27 Mar 2007 19:36:42 +0000"),
    secretFor: (key) => Promise.resolve(key === KEY ? SECRET : undefined),
    ...over,
  };
}

Deno.test("sigv2: header verification", async () => {
  const date = "Tue, 27 Mar 2007 19:36:42 +0000";
  const good = sign("GET", "/b/k", { date }, date);
  const ok = await verifyV2Header(input({ headers: new Headers({ date }) }), `AWS ${KEY}:${good}`);
  assertEquals(ok.accessKey, KEY);
  await assertCode(
    verifyV2Header(input({ headers: new Headers({ date }) }), `AWS ${KEY}:${good.slice(1)}x`),
    "SignatureDoesNotMatch",
  );
  await assertCode(
    verifyV2Header(input({ headers: new Headers({ date }) }), `AWS OTHER:${good}`),
    "InvalidAccessKeyId",
  );
  await assertCode(
    verifyV2Header(input({ headers: new Headers({ date }), method: "PUT" }), `AWS ${KEY}:${good}`),
    "SignatureDoesNotMatch",
  );
  await assertCode(
    verifyV2Header(
      input({ headers: new Headers({ date }), now: Date.now() }),
      `AWS ${KEY}:${good}`,
    ),
    "RequestTimeTooSkewed",
  );
  await assertCode(
    verifyV2Header(input({ headers: new Headers() }), `AWS ${KEY}:${good}`),
    "AccessDenied",
  );
  await assertCode(
    verifyV2Header(input({ headers: new Headers({ date }) }), `AWS ${KEY}`),
    "InvalidArgument",
  );
  // A path-style bucket may be signed as `/b/` (as for a virtual-hosted bucket).
  const bucketSig = sign("GET", "/b/", { date }, date);
  const bucketInput = input({ headers: new Headers({ date }), rawPath: "/b" });
  assertEquals((await verifyV2Header(bucketInput, `AWS ${KEY}:${bucketSig}`)).accessKey, KEY);
  const keyInput = input({ headers: new Headers({ date }), rawPath: "/b/k" });
  await assertCode(
    verifyV2Header(keyInput, `AWS ${KEY}:${sign("GET", "/b/k/", { date }, date)}`),
    "SignatureDoesNotMatch",
  );
  // With the vendor date header the date line is empty.
  const vendor = new Headers({ "x-amz-date": date, date: "Mon, 01 Jan 2001 00:00:00 +0000" });
  const withVendor = sign("GET", "/b/k", { "x-amz-date": date }, "");
  assertEquals(
    (await verifyV2Header(input({ headers: vendor }), `AWS ${KEY}:${withVendor}`)).accessKey,
    KEY,
  );
});

Deno.test("sigv2: query verification and expiry", async () => {
  const signature = sign("GET", "/b/k", {}, "1175139620");
  const query = (s: string) =>
    new URLSearchParams({ AWSAccessKeyId: KEY, Expires: "1175139620", Signature: s });
  const raw = `AWSAccessKeyId=${KEY}&Expires=1175139620&Signature=${encodeURIComponent(signature)}`;
  const ok = await verifyV2Query(
    input({ headers: new Headers(), rawQuery: raw }),
    query(signature),
  );
  assertEquals(ok.presigned, true);
  await assertCode(
    verifyV2Query(
      input({ headers: new Headers(), rawQuery: raw, now: 1175139621_000 }),
      query(signature),
    ),
    "AccessDenied",
  );
  await assertCode(
    verifyV2Query(
      input({ headers: new Headers(), rawQuery: raw }),
      query("AAAA" + signature.slice(4)),
    ),
    "SignatureDoesNotMatch",
  );
  await assertCode(
    verifyV2Query(
      input({ headers: new Headers(), rawQuery: raw, method: "POST" }),
      query(signature),
    ),
    "AccessDenied",
  );
});
