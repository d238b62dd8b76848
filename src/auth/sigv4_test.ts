// SigV4 against the published examples of the protocol's documentation.
import { assertEquals, assertRejectsCode } from "../../tests/integration/assert.ts";
import { DIALECTS } from "../http/dialect.ts";
import {
  canonicalQuery,
  canonicalUri,
  type SignatureInput,
  verifyHeaderAuth,
  verifyPresigned,
} from "./sigv4.ts";

const ACCESS = "AKIAIOSFODNN7EXAMPLE";
const SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const NOW = Date.UTC(2013, 4, 24, 0, 0, 0);

function input(over: Partial<SignatureInput>): SignatureInput {
  return {
    method: "GET",
    rawPath: "/test.txt",
    rawQuery: "",
    headers: new Headers(),
    dialect: DIALECTS.amz,
    region: "us-east-1",
    now: NOW,
    secretFor: (key) => Promise.resolve(key === ACCESS ? SECRET : undefined),
    ...over,
  };
}

const GET_OBJECT_HEADERS = {
  host: "examplebucket.s3.amazonaws.com",
  range: "bytes=0-9",
  "x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "x-amz-date": "20130524T000000Z",
};
const GET_OBJECT_AUTH =
  "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
  "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, " +
  "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";

Deno.test("header auth: the documented GET Object example verifies", async () => {
  const signed = await verifyHeaderAuth(
    input({ headers: new Headers(GET_OBJECT_HEADERS) }),
    GET_OBJECT_AUTH,
  );
  assertEquals(signed.accessKey, ACCESS);
  assertEquals(signed.payloadSha256, GET_OBJECT_HEADERS["x-amz-content-sha256"]);
});

Deno.test("header auth: any change breaks the signature", async () => {
  const headers = new Headers({ ...GET_OBJECT_HEADERS, range: "bytes=0-10" });
  await assertRejectsCode(
    () => verifyHeaderAuth(input({ headers }), GET_OBJECT_AUTH),
    "SignatureDoesNotMatch",
  );
  await assertRejectsCode(
    () =>
      verifyHeaderAuth(
        input({ headers: new Headers(GET_OBJECT_HEADERS), rawPath: "/test.txx" }),
        GET_OBJECT_AUTH,
      ),
    "SignatureDoesNotMatch",
  );
  await assertRejectsCode(
    () =>
      verifyHeaderAuth(
        input({ headers: new Headers(GET_OBJECT_HEADERS), now: NOW + 16 * 60_000 }),
        GET_OBJECT_AUTH,
      ),
    "RequestTimeTooSkewed",
  );
  await assertRejectsCode(
    () =>
      verifyHeaderAuth(
        input({ headers: new Headers(GET_OBJECT_HEADERS), region: "eu-west-1" }),
        GET_OBJECT_AUTH,
      ),
    "AuthorizationHeaderMalformed",
  );
  await assertRejectsCode(
    () =>
      verifyHeaderAuth(
        input({ headers: new Headers(GET_OBJECT_HEADERS) }),
        GET_OBJECT_AUTH.replace("AKIAIOSFODNN7EXAMPLE", "AKIAUNKNOWN"),
      ),
    "InvalidAccessKeyId",
  );
  const unsigned = new Headers({ ...GET_OBJECT_HEADERS, "x-amz-meta-extra": "1" });
  await assertRejectsCode(
    () => verifyHeaderAuth(input({ headers: unsigned }), GET_OBJECT_AUTH),
    "AccessDenied",
  );
});

const PRESIGNED_QUERY =
  "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request" +
  "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host" +
  "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";

function presignedInput(now: number): SignatureInput {
  return input({
    rawQuery: PRESIGNED_QUERY,
    headers: new Headers({ host: "examplebucket.s3.amazonaws.com" }),
    now,
  });
}

function queryOf(raw: string): URLSearchParams {
  return new URLSearchParams(raw);
}

Deno.test("presigned: the documented example verifies, then expires", async () => {
  const ok = await verifyPresigned(presignedInput(NOW + 1000), queryOf(PRESIGNED_QUERY));
  assertEquals(ok.presigned, true);
  assertEquals(ok.payloadSha256, undefined);
  await assertRejectsCode(
    () => verifyPresigned(presignedInput(NOW + 86401_000), queryOf(PRESIGNED_QUERY)),
    "ExpiredPresignedRequest",
  );
  const tampered = PRESIGNED_QUERY.replace("X-Amz-Expires=86400", "X-Amz-Expires=86401");
  await assertRejectsCode(
    () => verifyPresigned({ ...presignedInput(NOW), rawQuery: tampered }, queryOf(tampered)),
    "SignatureDoesNotMatch",
  );
  const tooLong = PRESIGNED_QUERY.replace("X-Amz-Expires=86400", "X-Amz-Expires=604801");
  await assertRejectsCode(
    () => verifyPresigned({ ...presignedInput(NOW), rawQuery: tooLong }, queryOf(tooLong)),
    "AuthorizationQueryParametersError",
  );
});

Deno.test("canonical URI and query encoding", () => {
  assertEquals(canonicalUri("/b/a%20b/c%2Bd~e"), "/b/a%20b/c%2Bd~e");
  assertEquals(canonicalUri("/b/a+b/(x)"), "/b/a%2Bb/%28x%29");
  assertEquals(
    canonicalQuery("b=2&a=1&a=0&list-type=2&prefix=a%20b&delimiter=%2F"),
    "a=0&a=1&b=2&delimiter=%2F&list-type=2&prefix=a%20b",
  );
  assertEquals(canonicalQuery("acl"), "acl=");
});
