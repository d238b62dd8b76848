import { assert, assertEquals, assertRejectsCode } from "../../tests/integration/assert.ts";
import { S3Error } from "../http/errors.ts";
import {
  coveringPrefixes,
  dueAt,
  expirationDue,
  ruleMatches,
  ruleMayMatch,
} from "./lifecycle_match.ts";
import { parseLifecycleConfiguration } from "../api/lifecycle_xml.ts";
import type { LifecycleRule } from "./lifecycle_rules.ts";

const doc = (...rules: string[]) =>
  `<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${
    rules.join("")
  }</LifecycleConfiguration>`;
const rule = (inner: string, status = "Enabled") =>
  `<Rule>${inner}<Status>${status}</Status></Rule>`;
const days = (n: number | string) => `<Expiration><Days>${n}</Days></Expiration>`;

function one(inner: string): LifecycleRule {
  const rules = parseLifecycleConfiguration(doc(rule(inner)));
  assertEquals(rules.length, 1);
  return rules[0];
}

/** Expects the document to be refused with this code (and a message matching `message`). */
function refused(body: string, code: string, message?: RegExp): void {
  try {
    parseLifecycleConfiguration(body);
  } catch (err) {
    assert(err instanceof S3Error, `an S3Error, got ${err}`);
    assertEquals(err.code, code, `${err.code}: ${err.message}`);
    if (message) assert(message.test(err.message), `message "${err.message}" !~ ${message}`);
    return;
  }
  throw new Error(`Accepted, expected ${code}: ${body}`);
}

Deno.test("lifecycle: accepted filter forms", () => {
  assertEquals(one(`<ID>a</ID><Prefix>logs/</Prefix>${days(1)}`).prefix, "logs/");
  assertEquals(one(`<ID>a</ID><Prefix></Prefix>${days(1)}`).prefix, "");
  assertEquals(one(`<Filter></Filter>${days(1)}`).filter, {});
  assertEquals(one(`<Filter/>${days(1)}`).filter, {});
  assertEquals(one(`<Filter><Prefix>a/</Prefix></Filter>${days(1)}`).filter, { prefix: "a/" });
  assertEquals(one(`<Filter><Prefix/></Filter>${days(1)}`).filter, { prefix: "" });
  assertEquals(
    one(`<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>${days(1)}`).filter,
    { tag: { key: "k", value: "v" } },
  );
  assertEquals(
    one(`<Filter><Tag><Key>k</Key><Value></Value></Tag></Filter>${days(1)}`).filter,
    { tag: { key: "k", value: "" } },
  );
  assertEquals(
    one(`<Filter><ObjectSizeGreaterThan>0</ObjectSizeGreaterThan></Filter>${days(1)}`).filter,
    { objectSizeGreaterThan: 0 },
  );
  assertEquals(
    one(`<Filter><ObjectSizeLessThan>100</ObjectSizeLessThan></Filter>${days(1)}`).filter,
    { objectSizeLessThan: 100 },
  );
  assertEquals(
    one(
      `<Filter><And><Prefix>p/</Prefix><Tag><Key>a</Key><Value>1</Value></Tag>` +
        `<Tag><Key>b</Key><Value>2</Value></Tag><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan>` +
        `<ObjectSizeLessThan>20</ObjectSizeLessThan></And></Filter>${days(1)}`,
    ).filter,
    {
      and: {
        prefix: "p/",
        tags: [{ key: "a", value: "1" }, { key: "b", value: "2" }],
        objectSizeGreaterThan: 10,
        objectSizeLessThan: 20,
      },
    },
  );
  assertEquals(
    one(
      `<Filter><And><Prefix>p/</Prefix><ObjectSizeLessThan>20</ObjectSizeLessThan></And></Filter>` +
        days(1),
    ).filter,
    { and: { prefix: "p/", tags: [], objectSizeLessThan: 20 } },
  );
  assertEquals(
    one(
      `<Filter><And><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>b</Key><Value>2</Value>` +
        `</Tag></And></Filter>${days(1)}`,
    ).filter?.and?.tags.length,
    2,
  );
});

Deno.test("lifecycle: accepted actions, status and IDs", () => {
  const r = one(`<ID>r1</ID><Filter/>${days(30)}`);
  assertEquals(r, { id: "r1", status: "Enabled", filter: {}, expiration: { days: 30 } });
  assertEquals(
    one(`<Filter/><Expiration><Date>2020-01-01T00:00:00Z</Date></Expiration>`).expiration,
    { date: "2020-01-01T00:00:00.000Z" },
  );
  assertEquals(
    one(`<Filter/><Expiration><Date>2031-06-01T00:00:00.000Z</Date></Expiration>`).expiration,
    { date: "2031-06-01T00:00:00.000Z" },
  );
  for (const [given, value] of [["true", true], ["false", false], ["1", true], ["0", false]]) {
    assertEquals(
      one(
        `<Filter/><Expiration><ExpiredObjectDeleteMarker>${given}</ExpiredObjectDeleteMarker>` +
          `</Expiration>`,
      ).expiration,
      { expiredObjectDeleteMarker: value as boolean },
    );
  }
  assertEquals(
    one(
      `<Filter/><NoncurrentVersionExpiration><NoncurrentDays>3</NoncurrentDays>` +
        `<NewerNoncurrentVersions>100</NewerNoncurrentVersions></NoncurrentVersionExpiration>`,
    )
      .noncurrentVersionExpiration,
    { noncurrentDays: 3, newerNoncurrentVersions: 100 },
  );
  assertEquals(
    one(
      `<Prefix/><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>` +
        `</NoncurrentVersionExpiration>`,
    ).noncurrentVersionExpiration,
    { noncurrentDays: 1 },
  );
  assertEquals(
    one(
      `<Filter><Prefix>up/</Prefix></Filter><AbortIncompleteMultipartUpload>` +
        `<DaysAfterInitiation>7</DaysAfterInitiation></AbortIncompleteMultipartUpload>`,
    )
      .abortIncompleteMultipartUpload,
    { daysAfterInitiation: 7 },
  );
  const all = one(
    `<ID>all</ID><Filter><Prefix>x</Prefix></Filter>${days(2)}` +
      `<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration>` +
      `<AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation>` +
      `</AbortIncompleteMultipartUpload>`,
  );
  assert(all.expiration && all.noncurrentVersionExpiration && all.abortIncompleteMultipartUpload);
  assertEquals(one(`<Filter/>${days(1)}`).status, "Enabled");
  const disabled = parseLifecycleConfiguration(doc(rule(`<Filter/>${days(1)}`, "Disabled")));
  assertEquals(disabled[0].status, "Disabled");
  // Without an ID (or with an empty one) the rule gets a generated one.
  const generated = one(`<ID></ID><Filter/>${days(1)}`).id;
  assertEquals(generated.length, 48);
  assertEquals(one(`<ID>${"i".repeat(255)}</ID><Filter/>${days(1)}`).id.length, 255);
  // The largest 32-bit day count is accepted.
  assertEquals(one(`<Filter/>${days(2147483647)}`).expiration?.days, 2147483647);
  // Several rules, each form of its own prefix; disjoint legacy prefixes do not overlap.
  const legacy = parseLifecycleConfiguration(
    doc(rule(`<Prefix>a/</Prefix>${days(1)}`), rule(`<Prefix>b/</Prefix>${days(2)}`)),
  );
  assertEquals(legacy.map((r) => r.prefix), ["a/", "b/"]);
  // Overlapping prefixes are fine in the current form, and for different actions.
  parseLifecycleConfiguration(doc(
    rule(`<Filter><Prefix>a</Prefix></Filter>${days(1)}`),
    rule(`<Filter><Prefix>ab</Prefix></Filter>${days(2)}`),
  ));
  parseLifecycleConfiguration(doc(
    rule(`<Prefix>a</Prefix>${days(1)}`),
    rule(
      `<Prefix>ab</Prefix><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>` +
        `</NoncurrentVersionExpiration>`,
    ),
  ));
  const many = Array.from({ length: 1000 }, (_, i) => rule(`<Filter/>${days(i + 1)}`));
  assertEquals(parseLifecycleConfiguration(doc(...many)).length, 1000);
});

Deno.test("lifecycle: MalformedXML for what the schema refuses", () => {
  const M = "MalformedXML";
  refused("", M);
  refused("<LifecycleConfiguration>", M);
  refused("<Other></Other>", M);
  refused(doc(`<Bogus/>`), M);
  refused(doc(`<Rule></Rule>`), M);
  refused(doc(rule(`<Filter/>${days(1)}<Unknown>1</Unknown>`)), M);
  refused(doc(`<Rule><Filter/>${days(1)}</Rule>`), M, /Status/);
  refused(doc(rule(`<Filter/>${days(1)}`, "enabled")), M, /Status/);
  refused(doc(rule(`<Filter/>${days(1)}`, "")), M, /Status/);
  refused(
    doc(`<Rule><Filter/>${days(1)}<Status>Enabled</Status><Status>Enabled</Status></Rule>`),
    M,
  );
  refused(doc(rule(days(1))), M, /Filter or a Prefix/);
  refused(doc(rule(`<Prefix>a</Prefix><Filter/>${days(1)}`)), M, /not both/);
  refused(doc(rule(`<Filter/><Filter/>${days(1)}`)), M);
  refused(doc(rule(`<Filter>text</Filter>${days(1)}`)), M);
  refused(
    doc(
      rule(
        `<Filter><Prefix>a</Prefix><ObjectSizeLessThan>5</ObjectSizeLessThan></Filter>` + days(1),
      ),
    ),
    M,
    /exactly one/,
  );
  refused(
    doc(
      rule(`<Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter>` + days(1)),
    ),
    M,
    /exactly one/,
  );
  refused(
    doc(rule(`<Filter><Prefix>a</Prefix><And><Prefix>a</Prefix></And></Filter>${days(1)}`)),
    M,
  );
  refused(doc(rule(`<Filter><Nope>a</Nope></Filter>${days(1)}`)), M);
  refused(doc(rule(`<Filter><And><Prefix>a</Prefix></And></Filter>${days(1)}`)), M, /two/);
  refused(
    doc(rule(`<Filter><And><Tag><Key>k</Key><Value>v</Value></Tag></And></Filter>${days(1)}`)),
    M,
    /two/,
  );
  refused(doc(rule(`<Filter><And></And></Filter>${days(1)}`)), M, /two/);
  refused(doc(rule(`<Filter><Tag><Key>k</Key></Tag></Filter>${days(1)}`)), M, /Key and a Value/);
  refused(
    doc(rule(`<Filter><Tag><Value>v</Value></Tag></Filter>${days(1)}`)),
    M,
    /Key and a Value/,
  );
  refused(doc(rule(`<Filter><Tag><Key></Key><Value>v</Value></Tag></Filter>${days(1)}`)), M);
  refused(
    doc(rule(`<Filter><ObjectSizeGreaterThan>ten</ObjectSizeGreaterThan></Filter>${days(1)}`)),
    M,
  );
  refused(doc(rule(`<Filter/><Expiration></Expiration>`)), M, /exactly one/);
  refused(
    doc(rule(`<Filter/><Expiration><Days>1</Days><Date>2020-01-01T00:00:00Z</Date></Expiration>`)),
    M,
  );
  refused(
    doc(
      rule(
        `<Filter/><Expiration><Days>1</Days><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>`,
      ),
    ),
    M,
  );
  refused(
    doc(
      rule(
        `<Filter/><Expiration><Date>2020-01-01T00:00:00Z</Date><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>`,
      ),
    ),
    M,
  );
  refused(
    doc(
      rule(
        `<Filter/><Expiration><ExpiredObjectDeleteMarker>yes</ExpiredObjectDeleteMarker></Expiration>`,
      ),
    ),
    M,
  );
  refused(doc(rule(`<Filter/><Expiration><Date>2020-01-01</Date></Expiration>`)), M, /ISO 8601/);
  refused(doc(rule(`<Filter/><Expiration><Date>tomorrow</Date></Expiration>`)), M);
  refused(doc(rule(`<Filter/>${days("1.5")}`)), M);
  refused(doc(rule(`<Filter/>${days("")}`)), M);
  refused(doc(rule(`<Filter/>${days(2147483648)}`)), M, /range/);
  refused(doc(rule(`<Filter/>${days(1)}${days(2)}`)), M);
  refused(
    doc(rule(`<Filter/><NoncurrentVersionExpiration></NoncurrentVersionExpiration>`)),
    M,
    /NoncurrentDays/,
  );
  refused(
    doc(
      rule(
        `<Filter/><NoncurrentVersionExpiration><NewerNoncurrentVersions>1</NewerNoncurrentVersions></NoncurrentVersionExpiration>`,
      ),
    ),
    M,
    /NoncurrentDays/,
  );
  refused(
    doc(rule(`<Filter/><AbortIncompleteMultipartUpload></AbortIncompleteMultipartUpload>`)),
    M,
    /DaysAfterInitiation/,
  );
  // Shape errors come before value errors anywhere in the document.
  refused(doc(rule(`<Filter/>${days(0)}`), rule(`<Filter/>${days("x")}`)), M);
});

Deno.test("lifecycle: InvalidArgument for values out of range", () => {
  const A = "InvalidArgument";
  refused(doc(rule(`<ID>${"i".repeat(256)}</ID><Filter/>${days(1)}`)), A, /255/);
  refused(
    doc(rule(`<ID>x</ID><Filter/>${days(1)}`), rule(`<ID>x</ID><Filter/>${days(2)}`)),
    A,
    /unique/,
  );
  refused(
    doc(rule(`<Filter/>${days(0)}`)),
    A,
    /'Days' for Expiration action must be a positive integer/,
  );
  refused(doc(rule(`<Filter/>${days(-1)}`)), A, /positive/);
  refused(
    doc(rule(`<Filter/><Expiration><Date>2020-01-01T10:00:00Z</Date></Expiration>`)),
    A,
    /midnight GMT/,
  );
  refused(
    doc(rule(`<Filter/><Expiration><Date>2020-01-01T00:00:00+01:00</Date></Expiration>`)),
    A,
    /midnight/,
  );
  refused(
    doc(
      rule(
        `<Filter/><NoncurrentVersionExpiration><NoncurrentDays>0</NoncurrentDays></NoncurrentVersionExpiration>`,
      ),
    ),
    A,
    /NoncurrentDays/,
  );
  for (const n of [0, -2, 101]) {
    refused(
      doc(
        rule(
          `<Filter/><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>${n}</NewerNoncurrentVersions></NoncurrentVersionExpiration>`,
        ),
      ),
      A,
      /NewerNoncurrentVersions/,
    );
  }
  refused(
    doc(
      rule(
        `<Filter/><AbortIncompleteMultipartUpload><DaysAfterInitiation>0</DaysAfterInitiation></AbortIncompleteMultipartUpload>`,
      ),
    ),
    A,
    /DaysAfterInitiation/,
  );
});

Deno.test("lifecycle: InvalidRequest for combinations the protocol refuses", () => {
  const R = "InvalidRequest";
  refused(doc(), R, /At least one lifecycle rule/);
  refused(doc(...Array.from({ length: 1001 }, () => rule(`<Filter/>${days(1)}`))), R, /1000/);
  refused(doc(rule(`<Filter/>`)), R, /At least one action/);
  refused(doc(rule(`<Prefix/>`)), R, /At least one action/);
  refused(doc(rule(`<Prefix>${"p".repeat(1025)}</Prefix>${days(1)}`)), R, /1024/);
  refused(doc(rule(`<Filter><Prefix>${"p".repeat(1025)}</Prefix></Filter>${days(1)}`)), R, /1024/);
  refused(
    doc(
      rule(
        `<Filter><And><Prefix>${
          "é".repeat(513)
        }</Prefix><ObjectSizeLessThan>9</ObjectSizeLessThan></And></Filter>${days(1)}`,
      ),
    ),
    R,
    /1024/,
  );
  refused(
    doc(
      rule(`<Filter><Tag><Key>${"k".repeat(129)}</Key><Value>v</Value></Tag></Filter>${days(1)}`),
    ),
    R,
    /TagKey/,
  );
  refused(
    doc(
      rule(`<Filter><Tag><Key>k</Key><Value>${"v".repeat(257)}</Value></Tag></Filter>${days(1)}`),
    ),
    R,
    /TagValue/,
  );
  refused(
    doc(
      rule(
        `<Filter><And><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k</Key><Value>2</Value></Tag></And></Filter>${
          days(1)
        }`,
      ),
    ),
    R,
    /Duplicate Tag Keys/,
  );
  refused(
    doc(rule(`<Filter><ObjectSizeGreaterThan>-1</ObjectSizeGreaterThan></Filter>${days(1)}`)),
    R,
  );
  refused(doc(rule(`<Filter><ObjectSizeLessThan>0</ObjectSizeLessThan></Filter>${days(1)}`)), R);
  refused(
    doc(
      rule(
        `<Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>10</ObjectSizeLessThan></And></Filter>${
          days(1)
        }`,
      ),
    ),
    R,
    /greater than/,
  );
  const marker =
    `<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>`;
  const abort =
    `<AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>`;
  const tag = `<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>`;
  const andTag =
    `<Filter><And><Prefix>p</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></And></Filter>`;
  const sized = `<Filter><ObjectSizeGreaterThan>1</ObjectSizeGreaterThan></Filter>`;
  refused(doc(rule(tag + marker)), R, /ExpiredObjectDeleteMarker cannot be specified with Tags/);
  refused(doc(rule(andTag + marker)), R, /with Tags/);
  refused(
    doc(rule(sized + marker)),
    R,
    /ExpiredObjectDeleteMarker cannot be specified with Object Size/,
  );
  refused(
    doc(rule(tag + abort)),
    R,
    /AbortIncompleteMultipartUpload cannot be specified with Tags/,
  );
  refused(doc(rule(andTag + abort)), R, /with Tags/);
  refused(
    doc(rule(sized + abort)),
    R,
    /AbortIncompleteMultipartUpload cannot be specified with Object Size/,
  );
  // The first rule decides the form; the other form is refused in later rules.
  refused(
    doc(rule(`<Filter/>${days(1)}`), rule(`<Prefix>a</Prefix>${days(1)}`)),
    R,
    /Base level prefix/,
  );
  refused(
    doc(rule(`<Prefix>a</Prefix>${days(1)}`), rule(`<Filter/>${days(1)}`)),
    R,
    /only be used in Lifecycle V2/,
  );
  refused(
    doc(
      rule(
        `<Prefix/><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>1</NewerNoncurrentVersions></NoncurrentVersionExpiration>`,
      ),
    ),
    R,
    /NewerNoncurrentVersions/,
  );
  refused(
    doc(rule(`<Prefix>a</Prefix>${days(1)}`), rule(`<Prefix>ab</Prefix>${days(2)}`)),
    R,
    /overlapping prefixes 'a' and 'ab' for same action type 'Expiration'/,
  );
  refused(
    doc(rule(`<Prefix></Prefix>${days(1)}`), rule(`<Prefix>z</Prefix>${days(2)}`)),
    R,
    /overlapping/,
  );
});

Deno.test("lifecycle: transitions are refused with NotImplemented, after other checks", () => {
  const transition = `<Transition><Days>30</Days><StorageClass>GLACIER</StorageClass></Transition>`;
  const noncurrent = `<NoncurrentVersionTransition><NoncurrentDays>30</NoncurrentDays>` +
    `<StorageClass>STANDARD_IA</StorageClass></NoncurrentVersionTransition>`;
  refused(
    doc(rule(`<Filter/>${transition}`)),
    "NotImplemented",
    /STANDARD is the only storage class/,
  );
  refused(doc(rule(`<Filter/>${days(365)}${transition}${transition}`)), "NotImplemented");
  refused(doc(rule(`<Filter/>${noncurrent}`)), "NotImplemented");
  // A document that is wrong in another way gets that answer first.
  refused(doc(rule(`<Filter/>${days(0)}${transition}`)), "InvalidArgument");
  refused(doc(rule(`${transition}`)), "MalformedXML");
});

Deno.test("lifecycle: matching and due times", async () => {
  const r = (inner: string) => one(inner);
  const at = (key: string, size: number, tags?: Record<string, string>) => ({ key, size, tags });
  assert(ruleMatches(r(`<Filter/>${days(1)}`), at("any", 0)));
  assert(ruleMatches(r(`<Prefix>a/</Prefix>${days(1)}`), at("a/b", 0)));
  assert(!ruleMatches(r(`<Prefix>a/</Prefix>${days(1)}`), at("b/a", 0)));
  const sized = r(
    `<Filter><And><Prefix>a/</Prefix><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan>` +
      `<ObjectSizeLessThan>20</ObjectSizeLessThan></And></Filter>${days(1)}`,
  );
  assert(ruleMatches(sized, at("a/x", 11)) && ruleMatches(sized, at("a/x", 19)));
  assert(
    !ruleMatches(sized, at("a/x", 10)) && !ruleMatches(sized, at("a/x", 20)) &&
      !ruleMatches(sized, at("b", 15)),
  );
  assert(
    ruleMatches(
      r(`<Filter><ObjectSizeLessThan>5</ObjectSizeLessThan></Filter>${days(1)}`),
      at("k", 4),
    ),
  );
  // A Tag filter: the object must carry that key with that value.
  const tagged = r(`<Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter>${days(1)}`);
  assert(!ruleMatches(tagged, at("k", 1)));
  assert(!ruleMatches(tagged, at("k", 1, { k: "other" })));
  assert(!ruleMatches(tagged, at("k", 1, { K: "v" })));
  assert(ruleMatches(tagged, at("k", 1, { k: "v" })));
  assert(ruleMatches(tagged, at("k", 1, { a: "b", k: "v" })));
  assert(ruleMayMatch(tagged, "k", 1), "key and size alone do not decide a tag filter");
  // And with Tags: every tag present with an equal value, and the prefix too.
  const both = r(
    `<Filter><And><Prefix>p/</Prefix><Tag><Key>a</Key><Value>1</Value></Tag>` +
      `<Tag><Key>b</Key><Value></Value></Tag></And></Filter>${days(1)}`,
  );
  assert(ruleMatches(both, at("p/x", 1, { a: "1", b: "", c: "3" })));
  assert(!ruleMatches(both, at("p/x", 1, { a: "1" })));
  assert(!ruleMatches(both, at("p/x", 1, { a: "1", b: "2" })));
  assert(!ruleMatches(both, at("q/x", 1, { a: "1", b: "" })));
  // Keys that name properties of every object are ordinary keys.
  const proto = r(`<Filter><Tag><Key>toString</Key><Value>x</Value></Tag></Filter>${days(1)}`);
  assert(!ruleMatches(proto, at("k", 1, {})));
  assert(ruleMatches(proto, at("k", 1, { toString: "x" })));
  const day = 86_400_000;
  assertEquals(
    dueAt(Date.parse("2024-01-01T10:00:00Z"), 1, day),
    Date.parse("2024-01-03T00:00:00Z"),
  );
  assertEquals(
    dueAt(Date.parse("2024-01-01T00:00:00Z"), 1, day),
    Date.parse("2024-01-02T00:00:00Z"),
  );
  assertEquals(dueAt(1500, 2, 1000), 4000);
  const expiring = r(`<Filter/>${days(2)}`);
  assert(!expirationDue(expiring, 1500, { now: 3999, dayMs: 1000 }));
  assert(expirationDue(expiring, 1500, { now: 4000, dayMs: 1000 }));
  const dated = r(`<Filter/><Expiration><Date>2020-01-01T00:00:00Z</Date></Expiration>`);
  assert(expirationDue(dated, Date.now(), { now: Date.now(), dayMs: day }));
  assert(!expirationDue(dated, 0, { now: Date.parse("2019-12-31T23:59:59Z"), dayMs: day }));
  const marker = r(
    `<Filter/><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>`,
  );
  assert(!expirationDue(marker, 0, { now: Date.now(), dayMs: day }));
  assertEquals(coveringPrefixes(["b/", "a/", "a/x", "", "c"]), [""]);
  assertEquals(coveringPrefixes(["b/", "a/", "a/x", "a/", "ab"]), ["a/", "ab", "b/"]);
  await Promise.resolve();
  await assertRejectsCode(
    () => Promise.resolve(parseLifecycleConfiguration(doc(rule(`<Filter/>`)))),
    "InvalidRequest",
  );
});
