import { assert, assertEquals, assertMatch } from "../../tests/integration/assert.ts";
import { DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import {
  type Acl,
  aclFromGrantHeaders,
  aclFromJson,
  aclGrants,
  type AclResolver,
  aclToJson,
  assertSingleAclMethod,
  cannedAcl,
  cannedAclName,
  hasGrantHeaders,
  isPublicAcl,
  parseAclXml,
  type Permission,
  privateAcl,
  renderAclXml,
} from "./acl.ts";

const ALICE = { id: "alice-id", displayName: "alice" };
const BOB = { id: "bob-id", displayName: "bob" };
const USERS = [ALICE, BOB];
const resolve: AclResolver = {
  email: (a) => USERS.find((u) => `${u.displayName}@example.com` === a),
  userId: (id) => USERS.find((u) => u.id === id),
};
const STORE = DIALECTS.store;
const AMZ = DIALECTS.amz;
const ALL = "http://acs.amazonaws.com/groups/global/AllUsers";
const AUTH_STORE = "http://acs.store.local/groups/global/AuthenticatedUsers";

function throwsCode(fn: () => unknown, code: string): void {
  try {
    fn();
  } catch (err) {
    assert(err instanceof S3Error, `Expected S3Error ${code}, got ${err}`);
    assertEquals(err.code, code);
    return;
  }
  throw new Error(`Expected error ${code}, but the call succeeded`);
}

/** Grants as short strings, e.g. `U:alice-id:FULL_CONTROL`, `G:AllUsers:READ`. */
function brief(acl: Acl): string[] {
  return acl.grants.map((g) =>
    `${g.grantee.type === "Group" ? `G:${g.grantee.group}` : `U:${g.grantee.id}`}:${g.permission}`
  );
}

Deno.test("privateAcl gives the owner FULL_CONTROL only", () => {
  const acl = privateAcl(ALICE);
  assertEquals(acl.owner, ALICE);
  assertEquals(acl.grants, [{
    grantee: { type: "CanonicalUser", id: "alice-id", displayName: "alice" },
    permission: "FULL_CONTROL",
  }]);
});

Deno.test("every canned ACL has its grants", () => {
  const own = "U:alice-id:FULL_CONTROL";
  const cases: [string, string[]][] = [
    ["private", [own]],
    // Group grants are listed before the owner's.
    ["public-read", ["G:AllUsers:READ", own]],
    ["public-read-write", ["G:AllUsers:READ", "G:AllUsers:WRITE", own]],
    ["authenticated-read", ["G:AuthenticatedUsers:READ", own]],
    ["bucket-owner-read", [own, "U:bob-id:READ"]],
    ["bucket-owner-full-control", [own, "U:bob-id:FULL_CONTROL"]],
    ["log-delivery-write", ["G:LogDelivery:WRITE", "G:LogDelivery:READ_ACP", own]],
  ];
  for (const [name, grants] of cases) {
    const acl = cannedAcl(name, ALICE, BOB);
    assertEquals(brief(acl), grants, name);
    assertEquals(acl.owner, ALICE);
    assertEquals(cannedAclName(acl, BOB), name);
  }
  // On a bucket (no bucket owner given) or when the owners are the same: private.
  assertEquals(brief(cannedAcl("bucket-owner-read", ALICE)), [own]);
  assertEquals(brief(cannedAcl("bucket-owner-full-control", ALICE, ALICE)), [own]);
  assertEquals(cannedAclName(cannedAcl("bucket-owner-read", ALICE)), "private");
  throwsCode(() => cannedAcl("public", ALICE), "InvalidArgument");
  throwsCode(() => cannedAcl("PRIVATE", ALICE), "InvalidArgument");
});

Deno.test("isPublicAcl and cannedAclName", () => {
  assert(isPublicAcl(cannedAcl("public-read", ALICE)));
  assert(isPublicAcl(cannedAcl("public-read-write", ALICE)));
  assert(!isPublicAcl(cannedAcl("authenticated-read", ALICE)));
  assert(!isPublicAcl(privateAcl(ALICE)));
  const custom: Acl = { owner: ALICE, grants: [] };
  assertEquals(cannedAclName(custom), undefined);
});

function grantHeaders(dialect: typeof STORE, entries: Record<string, string>): Headers {
  const headers = new Headers();
  for (const [k, v] of Object.entries(entries)) headers.set(dialect.headerPrefix + k, v);
  return headers;
}

Deno.test("grant headers: id, uri and email forms, several entries", () => {
  const headers = grantHeaders(AMZ, {
    "grant-read": `id="bob-id", uri="${ALL}"`,
    "grant-write": `uri="${AUTH_STORE}"`,
    "grant-read-acp": `emailAddress="bob@example.com"`,
    "grant-write-acp": `id=bob-id`,
    "grant-full-control": ` id="alice-id" ,emailaddress="alice@example.com" `,
  });
  assert(hasGrantHeaders(headers, AMZ));
  assert(!hasGrantHeaders(headers, STORE));
  const acl = aclFromGrantHeaders(headers, AMZ, ALICE, resolve);
  assert(acl);
  assertEquals(acl.owner, ALICE);
  assertEquals(brief(acl), [
    "U:bob-id:READ",
    "G:AllUsers:READ",
    "G:AuthenticatedUsers:WRITE",
    "U:bob-id:READ_ACP",
    "U:bob-id:WRITE_ACP",
    "U:alice-id:FULL_CONTROL",
    "U:alice-id:FULL_CONTROL",
  ]);
  assertEquals(acl.grants[0].grantee, { type: "CanonicalUser", id: "bob-id", displayName: "bob" });
});

Deno.test("grant headers: none present, other dialect, empty values", () => {
  assertEquals(aclFromGrantHeaders(new Headers(), STORE, ALICE, resolve), undefined);
  const amzOnly = grantHeaders(AMZ, { "grant-read": 'id="bob-id"' });
  assertEquals(aclFromGrantHeaders(amzOnly, STORE, ALICE, resolve), undefined);
  const empty = grantHeaders(STORE, { "grant-read": "  " });
  assertEquals(aclFromGrantHeaders(empty, STORE, ALICE, resolve), undefined);
  const store = grantHeaders(STORE, { "grant-write": `uri="${ALL}"` });
  assertEquals(brief(aclFromGrantHeaders(store, STORE, ALICE, resolve)!), ["G:AllUsers:WRITE"]);
});

Deno.test("malformed grant headers", () => {
  const bad: [string, string][] = [
    ['name="bob"', "InvalidArgument"],
    ["bob-id", "InvalidArgument"],
    ['id="bob-id",', "InvalidArgument"],
    ['id="bob-id" id="alice-id"', "InvalidArgument"],
    ['id=""', "InvalidArgument"],
    ['id="bob-id,', "InvalidArgument"],
    ['uri="http://acs.amazonaws.com/groups/global/Everyone"', "InvalidArgument"],
    ['id="nobody"', "InvalidArgument"],
    ['emailAddress="nobody@example.com"', "UnresolvableGrantByEmailAddress"],
  ];
  for (const [value, code] of bad) {
    const headers = grantHeaders(STORE, { "grant-read": value });
    throwsCode(() => aclFromGrantHeaders(headers, STORE, ALICE, resolve), code);
  }
  const many = Array.from({ length: 101 }, () => 'id="bob-id"').join(",");
  const headers = grantHeaders(STORE, { "grant-read": many });
  throwsCode(() => aclFromGrantHeaders(headers, STORE, ALICE, resolve), "InvalidArgument");
});

const MIXED: Acl = {
  owner: ALICE,
  grants: [
    {
      grantee: { type: "CanonicalUser", id: "alice-id", displayName: "alice" },
      permission: "FULL_CONTROL",
    },
    {
      grantee: { type: "CanonicalUser", id: "bob-id", displayName: "bob" },
      permission: "WRITE_ACP",
    },
    { grantee: { type: "Group", group: "AllUsers" }, permission: "READ" },
    { grantee: { type: "Group", group: "AuthenticatedUsers" }, permission: "WRITE" },
    { grantee: { type: "Group", group: "LogDelivery" }, permission: "READ_ACP" },
  ],
};

Deno.test("XML round trip in both dialects", () => {
  for (const dialect of [STORE, AMZ]) {
    const xml = renderAclXml(MIXED, dialect);
    assert(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<AccessControlPolicy '));
    assert(xml.includes(`xmlns="${dialect.xmlns}"`));
    assert(xml.includes('xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'));
    assert(xml.includes(`<URI>${dialect.groupUriPrefix}global/AllUsers</URI>`));
    assert(xml.includes(`<URI>${dialect.groupUriPrefix}s3/LogDelivery</URI>`));
    assert(
      xml.includes(
        '<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group">',
      ),
    );
    assertMatch(xml, /<Owner><ID>alice-id<\/ID><DisplayName>alice<\/DisplayName><\/Owner>/);
    const back = parseAclXml(xml, { expectedOwnerId: "alice-id", resolve });
    assertEquals(back, MIXED, dialect.name);
  }
  const empty: Acl = { owner: ALICE, grants: [] };
  const back = parseAclXml(renderAclXml(empty, AMZ), { expectedOwnerId: "alice-id", resolve });
  assertEquals(back, empty);
});

Deno.test("XML from a client: email grantee, other dialect's URIs, prefixes, no DisplayName", () => {
  const xml = `<?xml version="1.0" encoding="UTF-8"?>
<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Owner><ID>alice-id</ID></Owner>
  <AccessControlList>
    <Grant>
      <Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="AmazonCustomerByEmail">
        <EmailAddress>bob@example.com</EmailAddress>
      </Grantee>
      <Permission>READ</Permission>
    </Grant>
    <Grant>
      <Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group">
        <URI>${AUTH_STORE}</URI>
      </Grantee>
      <Permission>READ_ACP</Permission>
    </Grant>
  </AccessControlList>
</AccessControlPolicy>`;
  const acl = parseAclXml(xml, { expectedOwnerId: "alice-id", resolve });
  assertEquals(acl.owner, ALICE);
  assertEquals(brief(acl), ["U:bob-id:READ", "G:AuthenticatedUsers:READ_ACP"]);
  const amz = renderAclXml(acl, AMZ);
  assert(amz.includes("<URI>http://acs.amazonaws.com/groups/global/AuthenticatedUsers</URI>"));
  assert(amz.includes("<ID>bob-id</ID><DisplayName>bob</DisplayName>"));
});

function policy(grants: string, owner = "<Owner><ID>alice-id</ID></Owner>"): string {
  return `<AccessControlPolicy xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">${owner}` +
    `<AccessControlList>${grants}</AccessControlList></AccessControlPolicy>`;
}

/** A Grant element; `type` undefined leaves out the xsi:type attribute. */
function grant(type: string | undefined, inner: string, permission = "READ"): string {
  const attr = type === undefined ? "" : ` xsi:type="${type}"`;
  return `<Grant><Grantee${attr}>${inner}</Grantee><Permission>${permission}</Permission></Grant>`;
}

const TO_BOB = grant("CanonicalUser", "<ID>bob-id</ID>");
const NO_LIST = "<AccessControlPolicy><Owner><ID>alice-id</ID></Owner></AccessControlPolicy>";
const DOCTYPE = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "alice-id">]>';

Deno.test("malformed ACL documents", () => {
  const bad: [string, string, string][] = [
    ["empty body", "", "MalformedACLError"],
    ["not XML", "hello", "MalformedACLError"],
    ["unclosed", "<AccessControlPolicy><Owner>", "MalformedACLError"],
    ["bad root", "<AccessControlList></AccessControlList>", "MalformedACLError"],
    ["two roots", policy("") + policy(""), "MalformedACLError"],
    ["no owner", policy("", ""), "MalformedACLError"],
    [
      "owner without ID",
      policy("", "<Owner><DisplayName>a</DisplayName></Owner>"),
      "MalformedACLError",
    ],
    ["no list", NO_LIST, "MalformedACLError"],
    [
      "unknown permission",
      policy(grant("CanonicalUser", "<ID>bob-id</ID>", "DELETE")),
      "MalformedACLError",
    ],
    [
      "no permission",
      policy(TO_BOB.replace(/<Permission>.*<\/Permission>/, "")),
      "MalformedACLError",
    ],
    ["no grantee", policy("<Grant><Permission>READ</Permission></Grant>"), "MalformedACLError"],
    ["grantee without type", policy(grant(undefined, "<ID>bob-id</ID>")), "MalformedACLError"],
    ["unknown grantee type", policy(grant("Role", "<ID>bob-id</ID>")), "MalformedACLError"],
    ["user without ID", policy(grant("CanonicalUser", "<URI>x</URI>")), "MalformedACLError"],
    ["repeated ID", policy(grant("CanonicalUser", "<ID>a</ID><ID>b</ID>")), "MalformedACLError"],
    ["DOCTYPE", DOCTYPE + policy("", "<Owner><ID>&e;</ID></Owner>"), "MalformedACLError"],
    ["too many grants", policy(TO_BOB.repeat(101)), "MalformedACLError"],
    ["unknown group", policy(grant("Group", `<URI>${ALL}x</URI>`)), "InvalidArgument"],
    ["unknown user", policy(grant("CanonicalUser", "<ID>carol-id</ID>")), "InvalidArgument"],
    [
      "unknown email",
      policy(grant("AmazonCustomerByEmail", "<EmailAddress>c@example.com</EmailAddress>")),
      "UnresolvableGrantByEmailAddress",
    ],
  ];
  for (const [name, body, code] of bad) {
    try {
      parseAclXml(body, { expectedOwnerId: "alice-id", resolve });
    } catch (err) {
      assert(err instanceof S3Error, `${name}: ${err}`);
      assertEquals(err.code, code, name);
      continue;
    }
    throw new Error(`${name}: expected ${code}, but it parsed`);
  }
});

Deno.test("owner mismatch is AccessDenied", () => {
  const body = policy("", "<Owner><ID>bob-id</ID><DisplayName>bob</DisplayName></Owner>");
  throwsCode(() => parseAclXml(body, { expectedOwnerId: "alice-id", resolve }), "AccessDenied");
  // The owner's display name comes from the user record, not the document.
  const ok = policy("", "<Owner><ID>alice-id</ID><DisplayName>someone</DisplayName></Owner>");
  assertEquals(parseAclXml(ok, { expectedOwnerId: "alice-id", resolve }).owner, ALICE);
});

Deno.test("aclGrants truth table", () => {
  const owner = { id: "alice-id", anonymous: false };
  const other = { id: "bob-id", anonymous: false };
  const carol = { id: "carol-id", anonymous: false };
  const anon = { id: "anonymous", anonymous: true };
  const who = [owner, other, carol, anon];
  const perms: Permission[] = ["READ", "WRITE", "READ_ACP", "WRITE_ACP", "FULL_CONTROL"];
  const table = (acl: Acl) =>
    who.map((w) => perms.map((p) => (aclGrants(acl, w, p) ? "1" : "0")).join(""));
  // Rows: owner, bob, carol (authenticated), anonymous. Columns: READ WRITE READ_ACP WRITE_ACP FC.
  assertEquals(table(privateAcl(ALICE)), ["11111", "00000", "00000", "00000"]);
  assertEquals(table(cannedAcl("public-read", ALICE)), ["11111", "10000", "10000", "10000"]);
  assertEquals(table(cannedAcl("public-read-write", ALICE)), ["11111", "11000", "11000", "11000"]);
  assertEquals(table(cannedAcl("authenticated-read", ALICE)), ["11111", "10000", "10000", "00000"]);
  assertEquals(table(cannedAcl("bucket-owner-read", ALICE, BOB)), [
    "11111",
    "10000",
    "00000",
    "00000",
  ]);
  assertEquals(table(cannedAcl("bucket-owner-full-control", ALICE, BOB)), [
    "11111",
    "11111",
    "00000",
    "00000",
  ]);
  assertEquals(table(cannedAcl("log-delivery-write", ALICE)), ["11111", "00000", "00000", "00000"]);
  assertEquals(table(MIXED), ["11111", "11010", "11000", "10000"]);
  // An anonymous principal never matches a user grant, even with the same id.
  const toAnonId: Acl = {
    owner: ALICE,
    grants: [{ grantee: { type: "CanonicalUser", id: "anonymous" }, permission: "READ" }],
  };
  assert(!aclGrants(toAnonId, anon, "READ"));
});

Deno.test("JSON storage round trip and corrupt input", () => {
  for (const acl of [MIXED, privateAcl(BOB), { owner: ALICE, grants: [] }]) {
    assertEquals(aclFromJson(aclToJson(acl)), acl);
  }
  const noName: Acl = {
    owner: ALICE,
    grants: [{ grantee: { type: "CanonicalUser", id: "x" }, permission: "READ" }],
  };
  assertEquals(aclFromJson(aclToJson(noName)), noName);
  for (
    const bad of [
      "{}",
      "[]",
      '{"o":["a","b"],"g":[["G","Nobody","READ"]]}',
      '{"o":["a","b"],"g":[["U","x",null,"ALL"]]}',
      "nope",
    ]
  ) {
    let threw = false;
    try {
      aclFromJson(bad);
    } catch {
      threw = true;
    }
    assert(threw, `expected ${bad} to be rejected`);
  }
});

Deno.test("assertSingleAclMethod", () => {
  assertSingleAclMethod(false, false, false);
  assertSingleAclMethod(true, false, false);
  assertSingleAclMethod(false, true, false);
  assertSingleAclMethod(false, false, true);
  throwsCode(() => assertSingleAclMethod(true, true, false), "InvalidRequest");
  throwsCode(() => assertSingleAclMethod(true, true, true), "InvalidRequest");
  throwsCode(() => assertSingleAclMethod(true, false, true), "UnexpectedContent");
  throwsCode(() => assertSingleAclMethod(false, true, true), "UnexpectedContent");
  try {
    assertSingleAclMethod(false, true, true);
  } catch (err) {
    assertEquals((err as S3Error).status, 400);
  }
});
