// Bucket policy parsing, validation and evaluation, in both dialect spellings.
import {
  assert,
  assertEquals,
  AssertionError,
  assertMatch,
} from "../../tests/integration/assert.ts";
import { DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { evaluatePolicy, isPublicPolicy, parseBucketPolicy, type PolicyRequest } from "./policy.ts";

const BUCKET = "photos";
const S = DIALECTS.store;
const A = DIALECTS.amz;
/** The real-world user ARN form, with an account id. */
const ACCOUNT_USER = A.userArnPrefix.replace("user/", "123456789012:user/");

type Json = Record<string, unknown>;

function doc(statement: unknown, extra: Json = {}): string {
  return JSON.stringify({ Version: "2012-10-17", Statement: statement, ...extra });
}

function stmt(over: Json = {}): Json {
  return {
    Effect: "Allow",
    Principal: "*",
    Action: `${A.actionPrefix}GetObject`,
    Resource: `${A.resourceArnPrefix}${BUCKET}/*`,
    ...over,
  };
}

function req(over: Partial<PolicyRequest> = {}): PolicyRequest {
  return {
    action: "GetObject",
    bucket: BUCKET,
    key: "cat.jpg",
    sourceIp: "127.0.0.1",
    secureTransport: false,
    now: new Date("2024-06-01T12:00:00Z"),
    ...over,
  };
}

function decide(statements: Json[], over: Partial<PolicyRequest> = {}): string {
  return evaluatePolicy(parseBucketPolicy(doc(statements), BUCKET), req(over));
}

/** Evaluates one Allow-everyone GetObject statement carrying `condition`. */
function allowedWhen(condition: Json, over: Partial<PolicyRequest> = {}): boolean {
  return decide([stmt({ Condition: condition })], over) === "Allow";
}

function rejects(text: string, pattern: RegExp): void {
  try {
    parseBucketPolicy(text, BUCKET);
  } catch (err) {
    assert(err instanceof S3Error, `not an S3Error: ${err}`);
    assertEquals((err as S3Error).code, "MalformedPolicy");
    assertEquals((err as S3Error).status, 400);
    assertMatch((err as S3Error).message, pattern);
    return;
  }
  throw new AssertionError(`accepted: ${text}`);
}

Deno.test("parse: a store-dialect policy is normalized", () => {
  const policy = parseBucketPolicy(
    doc([{
      Sid: "Public",
      Effect: "Allow",
      Principal: { [S.principalKey]: `${S.userArnPrefix}alice` },
      Action: [`${S.actionPrefix}GetObject`, `${S.actionPrefix}Get*`, `${S.actionPrefix}*`],
      Resource: [`${S.resourceArnPrefix}${BUCKET}`, `${S.resourceArnPrefix}${BUCKET}/docs/*`],
      Condition: { IpAddress: { [`${S.globalKeyPrefix}SourceIp`]: "10.0.0.0/8" } },
    }]),
    BUCKET,
  );
  assertEquals(policy, {
    version: "2012-10-17",
    statements: [{
      effect: "Allow",
      principal: { users: ["alice"] },
      actions: ["GetObject", "Get*", "*"],
      resources: [{ bucket: BUCKET }, { bucket: BUCKET, key: "docs/*" }],
      conditions: [{
        operator: "IpAddress",
        key: "SourceIp",
        ifExists: false,
        values: ["10.0.0.0/8"],
      }],
      sid: "Public",
    }],
  });
});

Deno.test("parse: amz spelling, a mix of both, a lone statement object, no Version", () => {
  const amz = parseBucketPolicy(doc(stmt({ Action: `${A.actionPrefix}getobject` })), BUCKET);
  assertEquals(amz.statements[0].actions, ["GetObject"]);
  const mixed = parseBucketPolicy(
    doc([stmt({
      Principal: {
        [A.principalKey]: [`${A.userArnPrefix}bob`, `${ACCOUNT_USER}carol`],
        [S.principalKey]: `${S.userArnPrefix}dave`,
      },
      Action: [`${A.actionPrefix}PutObject`, `${S.actionPrefix}DeleteObject`],
      Resource: [`${S.resourceArnPrefix}${BUCKET}/*`, `${A.resourceArnPrefix}ph?tos`],
      Condition: {
        Bool: { [`${A.globalKeyPrefix}SecureTransport`]: true },
        NumericLessThanEquals: { [`${S.actionPrefix}max-keys`]: 10 },
        StringLike: { [`${A.actionPrefix.toUpperCase()}PREFIX`]: ["a/*", "b/*"] },
      },
    })]),
    BUCKET,
  );
  const s = mixed.statements[0];
  assertEquals(s.principal, { users: ["bob", "carol", "dave"] });
  assertEquals(s.actions, ["PutObject", "DeleteObject"]);
  assertEquals(s.resources, [{ bucket: BUCKET, key: "*" }, { bucket: "ph?tos" }]);
  assertEquals(s.conditions.map((c) => [c.key, c.values]), [
    ["SecureTransport", ["true"]],
    ["max-keys", ["10"]],
    ["prefix", ["a/*", "b/*"]],
  ]);
  const bare = parseBucketPolicy(JSON.stringify({ Statement: stmt() }), BUCKET);
  assertEquals(bare.version, "2008-10-17");
  assertEquals(bare.statements.length, 1);
  const anyone = parseBucketPolicy(doc(stmt({ Principal: { [A.principalKey]: "*" } })), BUCKET);
  assertEquals(anyone.statements[0].principal, "*");
  const all = parseBucketPolicy(doc(stmt({ Action: "*", Resource: "*" })), BUCKET);
  assertEquals(all.statements[0].actions, ["*"]);
});

Deno.test("parse: each malformed document is rejected with MalformedPolicy", () => {
  const ip = `${A.globalKeyPrefix}SourceIp`;
  const time = `${A.globalKeyPrefix}CurrentTime`;
  const cases: [string, RegExp][] = [
    ["{not json", /valid JSON/],
    ["[]", /JSON object/],
    ['"text"', /JSON object/],
    [doc(stmt(), { Version: "2020-01-01" }), /Version/],
    [doc(stmt(), { Version: 2012 }), /Version/],
    [doc(stmt(), { Extra: 1 }), /unknown field "Extra"/],
    [JSON.stringify({ Version: "2012-10-17" }), /Statement/],
    [doc([]), /Statement/],
    [doc("text"), /Statement/],
    [doc(["text"]), /Statement 1 must be an object/],
    [doc(stmt({ Effect: "allow" })), /Effect/],
    [doc(stmt({ Effect: undefined })), /Effect/],
    [doc(stmt({ Principal: undefined })), /missing required field Principal/],
    [doc(stmt({ Principal: "someone" })), /Principal/],
    [doc(stmt({ Principal: {} })), /Principal/],
    [doc(stmt({ Principal: { Service: "x" } })), /principal type "Service"/],
    [doc(stmt({ Principal: { [A.principalKey]: "alice" } })), /invalid principal/],
    [doc(stmt({ Principal: { [A.principalKey]: A.userArnPrefix } })), /invalid principal/],
    [doc(stmt({ NotPrincipal: "*" })), /Principal and NotPrincipal/],
    [doc(stmt({ Action: undefined })), /missing required field Action/],
    [doc(stmt({ Action: [] })), /Action must be/],
    [doc(stmt({ Action: "GetObject" })), /no known service prefix/],
    [doc(stmt({ Action: "ec2:RunInstances" })), /no known service prefix/],
    [doc(stmt({ Action: `${A.actionPrefix}GetObjekt` })), /unknown action/],
    [doc(stmt({ Action: `${S.actionPrefix}Frobnicate*` })), /unknown action/],
    // Real actions of the protocol that no request here is checked against.
    [doc(stmt({ Action: `${A.actionPrefix}GetBucketRequestPayment` })), /unknown action/],
    [doc(stmt({ Action: `${A.actionPrefix}ListAllMyBuckets` })), /unknown action/],
    [doc(stmt({ Action: `${A.actionPrefix}CreateBucket` })), /unknown action/],
    [doc(stmt({ Resource: undefined })), /missing required field Resource/],
    [doc(stmt({ Resource: `${A.resourceArnPrefix}other/*` })), /not in bucket photos/],
    [doc(stmt({ Resource: [`${A.resourceArnPrefix}${BUCKET}`, `${A.resourceArnPrefix}x`] })), /x/],
    [doc(stmt({ Resource: `${A.resourceArnPrefix}/key` })), /not in bucket/],
    [doc(stmt({ Resource: BUCKET })), /not a bucket or object ARN/],
    [doc(stmt({ Condition: "x" })), /Condition must be an object/],
    [doc(stmt({ Condition: { StringSortOf: { [ip]: "x" } } })), /operator "StringSortOf"/],
    [doc(stmt({ Condition: { NullIfExists: { [ip]: "true" } } })), /operator "NullIfExists"/],
    [doc(stmt({ Condition: { IpAddress: {} } })), /must map keys to values/],
    [doc(stmt({ Condition: { StringEquals: { "aws:Referer": "x" } } })), /key "aws:Referer"/],
    [doc(stmt({ Condition: { IpAddress: { [ip]: "10.0.0.0/33" } } })), /invalid IP address/],
    [doc(stmt({ Condition: { IpAddress: { [ip]: "300.1.2.3" } } })), /invalid IP address/],
    [doc(stmt({ Condition: { IpAddress: { [ip]: "fe80:::1/64" } } })), /invalid IP address/],
    [doc(stmt({ Condition: { NotIpAddress: { [ip]: ["10.0.0.0/8", "x"] } } })), /invalid/],
    [doc(stmt({ Condition: { DateLessThan: { [time]: "tomorrow" } } })), /invalid date/],
    [doc(stmt({ Condition: { DateLessThan: { [time]: "2024-13-01T00:00:00Z" } } })), /date/],
    [doc(stmt({ Condition: { DateLessThan: { [time]: "2023-02-29" } } })), /date/],
    [
      doc(stmt({ Condition: { NumericLessThan: { [`${A.actionPrefix}max-keys`]: "ten" } } })),
      /invalid number/,
    ],
    [
      doc(stmt({ Condition: { Bool: { [`${A.globalKeyPrefix}SecureTransport`]: "yes" } } })),
      /invalid boolean/,
    ],
    [doc(stmt({ Condition: { NumericEquals: { [ip]: "1" } } })), /does not apply/],
    [doc(stmt({ Condition: { StringEquals: { [ip]: [] } } })), /at least one value/],
    [doc(stmt({ Condition: { StringEquals: { [ip]: { a: 1 } } } })), /strings, numbers/],
    [doc([stmt({ Sid: "a" }), stmt({ Sid: "a" })]), /unique/],
    [doc(stmt({ Sid: 5 })), /Sid/],
    [doc(stmt({ Actions: "x" })), /unknown field "Actions"/],
    [doc(stmt({ Resource: "*".repeat(21 * 1024) })), /no larger than 20480 bytes/],
  ];
  for (const [text, pattern] of cases) rejects(text, pattern);
});

Deno.test("evaluate: Deny wins over Allow, nothing matching is NoMatch", () => {
  const allow = stmt({ Action: `${A.actionPrefix}*` });
  const deny = stmt({ Effect: "Deny", Action: `${S.actionPrefix}DeleteObject` });
  assertEquals(decide([allow, deny], { action: "GetObject" }), "Allow");
  assertEquals(decide([allow, deny], { action: "DeleteObject" }), "Deny");
  assertEquals(decide([deny, allow], { action: "DeleteObject" }), "Deny");
  assertEquals(decide([deny], { action: "GetObject" }), "NoMatch");
  assertEquals(decide([stmt()], { bucket: "other" }), "NoMatch");
});

Deno.test("evaluate: principals", () => {
  const user = (arn: string) => stmt({ Principal: { [A.principalKey]: arn } });
  assertEquals(decide([stmt()]), "Allow");
  assertEquals(decide([stmt()], { userName: "alice" }), "Allow");
  for (const arn of [`${S.userArnPrefix}alice`, `${A.userArnPrefix}alice`]) {
    assertEquals(decide([user(arn)], { userName: "alice" }), "Allow");
    assertEquals(decide([user(arn)], { userName: "bob" }), "NoMatch");
    assertEquals(decide([user(arn)]), "NoMatch");
  }
  assertEquals(decide([user(`${ACCOUNT_USER}alice`)], { userName: "alice" }), "Allow");
  const empty = A.userArnPrefix.replace("user/", ":user/");
  assertEquals(decide([user(`${empty}alice`)], { userName: "alice" }), "Allow");
  const list = stmt({
    Principal: { [S.principalKey]: [`${S.userArnPrefix}alice`, `${A.userArnPrefix}bob`] },
  });
  assertEquals(decide([list], { userName: "bob" }), "Allow");
  assertEquals(decide([list], { userName: "carol" }), "NoMatch");
  const anyUser = user(`${A.userArnPrefix}*`);
  assertEquals(decide([anyUser], { userName: "carol" }), "Allow");
  assertEquals(decide([anyUser]), "NoMatch");
});

Deno.test("evaluate: action patterns", () => {
  const get = stmt({ Action: `${A.actionPrefix}Get*` });
  assertEquals(decide([get], { action: "GetObject" }), "Allow");
  assertEquals(decide([get], { action: "GetObjectAcl" }), "Allow");
  assertEquals(decide([get], { action: "PutObject" }), "NoMatch");
  const all = stmt({ Action: `${S.actionPrefix}*`, Resource: "*" });
  for (const action of ["PutObject", "ListBucket", "DeleteBucketPolicy"]) {
    assertEquals(decide([all], { action }), "Allow");
  }
  const q = stmt({ Action: `${A.actionPrefix.toUpperCase()}?ETOBJECT` });
  assertEquals(decide([q], { action: "GetObject" }), "Allow");
  assertEquals(decide([q], { action: "GetObjectAcl" }), "NoMatch");
});

Deno.test("evaluate: resources (bucket, objects, sub-prefix, wildcards)", () => {
  const list = { action: "ListBucket", key: undefined };
  const bucket = stmt({ Action: "*", Resource: `${A.resourceArnPrefix}${BUCKET}` });
  assertEquals(decide([bucket], list), "Allow");
  assertEquals(decide([bucket]), "NoMatch");
  const objects = stmt({ Action: "*", Resource: `${S.resourceArnPrefix}${BUCKET}/*` });
  assertEquals(decide([objects]), "Allow");
  assertEquals(decide([objects], list), "NoMatch");
  const sub = stmt({ Resource: `${A.resourceArnPrefix}${BUCKET}/2024/*.jpg` });
  assertEquals(decide([sub], { key: "2024/june/cat.jpg" }), "Allow");
  assertEquals(decide([sub], { key: "2024/cat.png" }), "NoMatch");
  assertEquals(decide([sub], { key: "2023/cat.jpg" }), "NoMatch");
  const exact = stmt({ Resource: `${A.resourceArnPrefix}${BUCKET}/a?c` });
  assertEquals(decide([exact], { key: "abc" }), "Allow");
  assertEquals(decide([exact], { key: "ABC" }), "NoMatch");
  assertEquals(decide([exact], { key: "abcd" }), "NoMatch");
  for (const r of ["*", `${A.resourceArnPrefix}*`, `${S.resourceArnPrefix}ph*`]) {
    const any = stmt({ Action: "*", Resource: r });
    assertEquals(decide([any]), "Allow");
    assertEquals(decide([any], list), "Allow");
  }
});

Deno.test("evaluate: NotPrincipal, NotAction, NotResource", () => {
  const notAlice = stmt({
    Effect: "Deny",
    NotPrincipal: { [A.principalKey]: `${A.userArnPrefix}alice` },
    Principal: undefined,
  });
  assertEquals(decide([stmt(), notAlice], { userName: "alice" }), "Allow");
  assertEquals(decide([stmt(), notAlice], { userName: "bob" }), "Deny");
  assertEquals(decide([stmt(), notAlice]), "Deny");
  const notDelete = stmt({ Action: undefined, NotAction: `${A.actionPrefix}Delete*` });
  assertEquals(decide([notDelete], { action: "PutObject" }), "Allow");
  assertEquals(decide([notDelete], { action: "DeleteObject" }), "NoMatch");
  const notPrivate = stmt({
    Resource: undefined,
    NotResource: `${A.resourceArnPrefix}${BUCKET}/private/*`,
  });
  assertEquals(decide([notPrivate], { key: "public/a" }), "Allow");
  assertEquals(decide([notPrivate], { key: "private/a" }), "NoMatch");
});

Deno.test("conditions: SourceIp with IpAddress and NotIpAddress, v4, v6 and mapped", () => {
  for (const key of [`${A.globalKeyPrefix}SourceIp`, `${S.globalKeyPrefix}sourceip`]) {
    const v4 = { IpAddress: { [key]: "192.168.1.0/24" } };
    assert(allowedWhen(v4, { sourceIp: "192.168.1.77" }));
    assert(!allowedWhen(v4, { sourceIp: "192.168.2.1" }));
    assert(allowedWhen(v4, { sourceIp: "::ffff:192.168.1.9" }));
    assert(!allowedWhen(v4, { sourceIp: "::1" }));
    assert(!allowedWhen(v4, { sourceIp: "not-an-ip" }));
  }
  const ip = `${A.globalKeyPrefix}SourceIp`;
  const single = { IpAddress: { [ip]: "10.1.2.3" } };
  assert(allowedWhen(single, { sourceIp: "10.1.2.3" }));
  assert(!allowedWhen(single, { sourceIp: "10.1.2.4" }));
  const v6 = { IpAddress: { [ip]: "2001:db8::/32" } };
  assert(allowedWhen(v6, { sourceIp: "2001:db8:0:1::5" }));
  assert(allowedWhen(v6, { sourceIp: "[2001:DB8::1]" }));
  assert(!allowedWhen(v6, { sourceIp: "2001:db9::1" }));
  assert(!allowedWhen(v6, { sourceIp: "32.1.13.184" }));
  const loop = { IpAddress: { [ip]: ["::1", "127.0.0.0/8"] } };
  assert(allowedWhen(loop, { sourceIp: "::1" }));
  assert(allowedWhen(loop, { sourceIp: "127.0.0.1" }));
  assert(!allowedWhen(loop, { sourceIp: "::2" }));
  const mappedBlock = { IpAddress: { [ip]: "::ffff:10.0.0.0/104" } };
  assert(allowedWhen(mappedBlock, { sourceIp: "10.9.9.9" }));
  assert(!allowedWhen(mappedBlock, { sourceIp: "11.0.0.1" }));
  const everywhere = { IpAddress: { [ip]: "0.0.0.0/0" } };
  assert(allowedWhen(everywhere, { sourceIp: "8.8.8.8" }));
  const outside = { NotIpAddress: { [ip]: ["10.0.0.0/8", "fd00::/8"] } };
  assert(allowedWhen(outside, { sourceIp: "8.8.8.8" }));
  assert(!allowedWhen(outside, { sourceIp: "10.0.0.1" }));
  assert(!allowedWhen(outside, { sourceIp: "fd12::1" }));
  const fence = stmt({ Effect: "Deny", Condition: outside });
  assertEquals(decide([stmt(), fence], { sourceIp: "10.2.3.4" }), "Allow");
  assertEquals(decide([stmt(), fence], { sourceIp: "203.0.113.5" }), "Deny");
});

Deno.test("conditions: CurrentTime with date operators, ISO 8601 and epoch seconds", () => {
  const time = `${S.globalKeyPrefix}CurrentTime`;
  const until = { DateLessThan: { [time]: "2024-07-01T00:00:00Z" } };
  assert(allowedWhen(until, { now: new Date("2024-06-30T23:59:59Z") }));
  assert(!allowedWhen(until, { now: new Date("2024-07-01T00:00:00Z") }));
  const from = { DateGreaterThanEquals: { [time]: String(Date.UTC(2024, 0, 1) / 1000) } };
  assert(allowedWhen(from, { now: new Date("2024-01-01T00:00:00Z") }));
  assert(!allowedWhen(from, { now: new Date("2023-12-31T23:59:59Z") }));
  const zoned = { DateGreaterThan: { [time]: "2024-06-01T14:00:00+0200" } };
  assert(allowedWhen(zoned, { now: new Date("2024-06-01T12:00:01Z") }));
  assert(!allowedWhen(zoned, { now: new Date("2024-06-01T12:00:00Z") }));
  const day = { DateEquals: { [time]: "2024-06-01" } };
  assert(allowedWhen(day, { now: new Date("2024-06-01T00:00:00Z") }));
  assert(!allowedWhen(day, { now: new Date("2024-06-01T00:00:01Z") }));
  const window = {
    DateGreaterThan: { [time]: "2024-01-01T00:00:00Z" },
    DateLessThanEquals: { [time]: 1735689600 },
  };
  assert(allowedWhen(window, { now: new Date("2024-06-01T00:00:00Z") }));
  assert(!allowedWhen(window, { now: new Date("2025-06-01T00:00:00Z") }));
});

Deno.test("conditions: SecureTransport with Bool", () => {
  for (
    const key of [`${A.globalKeyPrefix}SecureTransport`, `${S.globalKeyPrefix}SecureTransport`]
  ) {
    const https = { Bool: { [key]: "true" } };
    assert(allowedWhen(https, { secureTransport: true }));
    assert(!allowedWhen(https, { secureTransport: false }));
    const deny = stmt({ Effect: "Deny", Condition: { Bool: { [key]: false } } });
    assertEquals(decide([stmt(), deny], { secureTransport: false }), "Deny");
    assertEquals(decide([stmt(), deny], { secureTransport: true }), "Allow");
  }
});

Deno.test("conditions: prefix and max-keys on ListBucket, absent keys, IfExists", () => {
  const list = (over: Partial<PolicyRequest> = {}) => ({
    action: "ListBucket",
    key: undefined,
    ...over,
  });
  const listing = (condition: Json, over: Partial<PolicyRequest> = {}) =>
    decide([stmt({ Action: "*", Resource: "*", Condition: condition })], list(over));
  const prefix = `${A.actionPrefix}prefix`;
  const equals = { StringEquals: { [prefix]: ["home/", "shared/"] } };
  assertEquals(listing(equals, { prefix: "shared/" }), "Allow");
  assertEquals(listing(equals, { prefix: "Shared/" }), "NoMatch");
  assertEquals(listing(equals), "NoMatch");
  const like = { StringLike: { [`${S.actionPrefix}prefix`]: "home/*" } };
  assertEquals(listing(like, { prefix: "home/alice/" }), "Allow");
  assertEquals(listing(like, { prefix: "homer/" }), "NoMatch");
  assertEquals(
    listing({ StringEqualsIgnoreCase: { [prefix]: "HOME/" } }, { prefix: "home/" }),
    "Allow",
  );
  assertEquals(
    listing({ StringNotLike: { [prefix]: "secret*" } }, { prefix: "secret/" }),
    "NoMatch",
  );
  assertEquals(listing({ StringNotEquals: { [prefix]: "x" } }, { prefix: "y" }), "Allow");
  const max = `${S.actionPrefix}max-keys`;
  const small = { NumericLessThanEquals: { [max]: "100" } };
  assertEquals(listing(small, { maxKeys: 100 }), "Allow");
  assertEquals(listing(small, { maxKeys: 1000 }), "NoMatch");
  assertEquals(listing(small), "NoMatch");
  assertEquals(listing({ NumericLessThanEqualsIfExists: { [max]: 100 } }), "Allow");
  assertEquals(
    listing({ NumericLessThanEqualsIfExists: { [max]: 100 } }, { maxKeys: 101 }),
    "NoMatch",
  );
  assertEquals(listing({ StringLikeIfExists: { [prefix]: "home/*" } }), "Allow");
  // Absent key: positive operators fail, negated operators hold (the protocol's rule).
  assert(!allowedWhen({ StringEquals: { [prefix]: "a" } }));
  assert(allowedWhen({ StringNotEquals: { [prefix]: "a" } }));
  assert(allowedWhen({ Null: { [prefix]: "true" } }));
  assert(!allowedWhen({ Null: { [prefix]: "false" } }));
  assertEquals(listing({ Null: { [prefix]: false } }, { prefix: "" }), "Allow");
  const both = {
    StringLike: { [prefix]: "home/*" },
    NumericLessThan: { [max]: 50 },
  };
  assertEquals(listing(both, { prefix: "home/a", maxKeys: 10 }), "Allow");
  assertEquals(listing(both, { prefix: "home/a", maxKeys: 50 }), "NoMatch");
  assertEquals(listing(both, { prefix: "etc/", maxKeys: 10 }), "NoMatch");
});

Deno.test("isPublicPolicy: Allow to everyone is public", () => {
  const policy = (statements: Json[]) => parseBucketPolicy(doc(statements), BUCKET);
  assert(isPublicPolicy(policy([stmt()])));
  assert(isPublicPolicy(policy([stmt({ Principal: { [S.principalKey]: "*" } })])));
  assert(!isPublicPolicy(policy([stmt({ Effect: "Deny" })])));
  assert(!isPublicPolicy(policy([stmt({ Principal: { [A.principalKey]: ACCOUNT_USER + "a" } })])));
  const allButBob = stmt({
    Principal: undefined,
    NotPrincipal: { [A.principalKey]: `${A.userArnPrefix}bob` },
  });
  assert(isPublicPolicy(policy([allButBob])));
});

Deno.test("parse: a stored policy drops action names no longer accepted", () => {
  const text = JSON.stringify({
    Statement: [
      {
        Effect: "Allow",
        Principal: "*",
        Action: ["s3:GetBucketRequestPayment", "s3:GetObject"],
        Resource: "arn:aws:s3:::b/*",
      },
      {
        Effect: "Deny",
        Principal: "*",
        NotAction: "s3:GetAnalyticsConfiguration",
        Resource: "arn:aws:s3:::b/x",
      },
    ],
  });
  assertEquals(parseBucketPolicy(text, "b", { stored: true }).statements.map((s) => s.actions), [
    ["GetObject"],
    [],
  ]);
  const err = (() => {
    try {
      parseBucketPolicy(text, "b");
    } catch (e) {
      return e as S3Error;
    }
  })();
  assertEquals(err?.code, "MalformedPolicy");
});
