// Bucket policy condition keys on object tags, request headers, versionid and delimiter; set
// operators; account-root principals. Both dialect spellings.
import { assert, assertEquals, AssertionError } from "../../tests/integration/assert.ts";
import { type Dialect, DIALECTS, h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import {
  evaluatePolicy,
  parseBucketPolicy,
  type PolicyRequest,
  readsExistingTags,
} from "./policy.ts";

const BUCKET = "photos";
const BOTH = [DIALECTS.store, DIALECTS.amz];

function policy(d: Dialect, condition: unknown, principal: unknown = "*") {
  return parseBucketPolicy(
    JSON.stringify({
      Version: "2012-10-17",
      Statement: {
        Effect: "Allow",
        Principal: principal,
        Action: `${d.actionPrefix}*`,
        Resource: `${d.resourceArnPrefix}${BUCKET}/*`,
        ...(condition === undefined ? {} : { Condition: condition }),
      },
    }),
    BUCKET,
  );
}

function req(over: Partial<PolicyRequest> = {}): PolicyRequest {
  return {
    action: "PutObject",
    bucket: BUCKET,
    key: "cat.jpg",
    sourceIp: "127.0.0.1",
    secureTransport: false,
    now: new Date("2024-06-01T12:00:00Z"),
    ...over,
  };
}

function allowed(d: Dialect, condition: unknown, over: Partial<PolicyRequest> = {}): boolean {
  return evaluatePolicy(policy(d, condition), req(over)) === "Allow";
}

/** A header lookup as the request in dialect `d` would answer it. */
function headers(d: Dialect, values: Record<string, string>) {
  const all = new Headers(Object.entries(values).map(([k, v]) => [h(d, k), v]));
  return (suffix: string) => all.get(h(d, suffix)) ?? undefined;
}

Deno.test("condition keys: ExistingObjectTag and RequestObjectTag, both spellings", () => {
  for (const d of BOTH) {
    const p = d.actionPrefix;
    const existing = { StringEquals: { [`${p}ExistingObjectTag/team`]: "blue" } };
    assert(readsExistingTags(policy(d, existing)));
    assert(!readsExistingTags(policy(d, undefined)));
    assert(allowed(d, existing, { existingTags: { team: "blue" } }));
    assert(!allowed(d, existing, { existingTags: { team: "red" } }));
    assert(!allowed(d, existing, { existingTags: { Team: "blue" } }), "tag keys are exact");
    assert(!allowed(d, existing, {}), "no object, no tag");
    const requested = { StringLike: { [`${p}RequestObjectTag/env`]: "prod-*" } };
    assert(allowed(d, requested, { requestTags: { env: "prod-eu" } }));
    assert(!allowed(d, requested, { requestTags: { env: "dev" } }));
    assert(!allowed(d, requested, { requestTags: {} }));
  }
});

Deno.test("condition keys: RequestObjectTagKeys with set operators", () => {
  for (const d of BOTH) {
    const key = `${d.actionPrefix}RequestObjectTagKeys`;
    const all = { "ForAllValues:StringEquals": { [key]: ["env", "team"] } };
    assert(allowed(d, all, { requestTags: { env: "a", team: "b" } }));
    assert(!allowed(d, all, { requestTags: { env: "a", other: "b" } }));
    assert(allowed(d, all, {}), "ForAllValues holds for no tags");
    const any = { "ForAnyValue:StringLike": { [key]: "sec*" } };
    assert(allowed(d, any, { requestTags: { env: "a", secret: "b" } }));
    assert(!allowed(d, any, { requestTags: { env: "a" } }));
    assert(!allowed(d, any, {}), "ForAnyValue needs a value");
    const none = { "ForAnyValue:StringNotEquals": { [key]: "env" } };
    assert(allowed(d, none, { requestTags: { env: "a", x: "b" } }));
    assert(!allowed(d, none, { requestTags: { env: "a" } }));
  }
});

Deno.test("condition keys: vendor headers, versionid, delimiter", () => {
  for (const d of BOTH) {
    const p = d.actionPrefix;
    const aclKey = `${p}${d.headerPrefix}acl`;
    const acl = { StringEquals: { [aclKey]: "bucket-owner-full-control" } };
    const header = headers(d, { acl: "bucket-owner-full-control" });
    assert(allowed(d, acl, { header }));
    assert(!allowed(d, acl, { header: headers(d, { acl: "public-read" }) }));
    assert(!allowed(d, acl, { header: headers(d, {}) }), "absent header");
    const names = [
      "copy-source",
      "metadata-directive",
      "grant-read",
      "grant-write",
      "grant-read-acp",
      "grant-write-acp",
      "grant-full-control",
      "server-side-encryption",
      "server-side-encryption-customer-algorithm",
    ];
    for (const name of names) {
      const cond = { StringEquals: { [`${p}${d.headerPrefix}${name}`]: "v" } };
      assert(allowed(d, cond, { header: headers(d, { [name]: "v" }) }), name);
      assert(!allowed(d, cond, { header: headers(d, { [name]: "w" }) }), name);
      const nulls = { Null: { [`${p}${d.headerPrefix}${name}`]: "true" } };
      assert(allowed(d, nulls, { header: headers(d, {}) }), `${name} Null`);
    }
    const version = { StringEquals: { [`${p}versionid`]: "v1" } };
    assert(allowed(d, version, { versionId: "v1" }));
    assert(!allowed(d, version, { versionId: "v2" }));
    assert(!allowed(d, version, {}));
    const delimiter = { StringEquals: { [`${p}delimiter`]: "/" } };
    assert(allowed(d, delimiter, { delimiter: "/" }));
    assert(!allowed(d, delimiter, {}));
  }
});

Deno.test("condition keys: unknown keys and set operators are MalformedPolicy", () => {
  const d = DIALECTS.amz;
  for (
    const condition of [
      { StringEquals: { "s3:ExistingObjectTag/": "x" } },
      { StringEquals: { "s3:x-amz-unknown": "x" } },
      { StringEquals: { "s3:x-store-acl": "x" } },
      { "SomeValues:StringEquals": { "s3:RequestObjectTagKeys": "x" } },
      { "ForAnyValue:Null": { "s3:RequestObjectTagKeys": "true" } },
      { "ForAnyValue:ForAllValues:StringEquals": { "s3:RequestObjectTagKeys": "x" } },
      { NumericEquals: { "s3:versionid": "1" } },
    ]
  ) {
    try {
      policy(d, condition);
    } catch (err) {
      assert(err instanceof S3Error && err.code === "MalformedPolicy", String(err));
      continue;
    }
    throw new AssertionError(`accepted ${JSON.stringify(condition)}`);
  }
});

Deno.test("principals: account roots match the account's own user", () => {
  for (const d of BOTH) {
    const root = d.userArnPrefix.replace("user/", "u-123:root");
    const p = policy(d, undefined, { [d.principalKey]: root });
    assertEquals(evaluatePolicy(p, req({ userId: "u-123", userName: "alice" })), "Allow");
    assertEquals(evaluatePolicy(p, req({ userId: "u-456", userName: "u-123" })), "NoMatch");
    assertEquals(evaluatePolicy(p, req({})), "NoMatch", "anonymous");
    // Roots and users together, in a list.
    const both = policy(d, undefined, {
      [d.principalKey]: [root, `${d.userArnPrefix}bob`],
    });
    assertEquals(evaluatePolicy(both, req({ userId: "u-9", userName: "bob" })), "Allow");
    assertEquals(evaluatePolicy(both, req({ userId: "u-123", userName: "x" })), "Allow");
  }
});
