// Tag sets: the Tagging document, the x-*-tagging header and the protocol's limits.
import { assertEquals } from "../../tests/integration/assert.ts";
import { DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { parseTagging, parseTaggingHeader, taggingXml } from "./tags.ts";

const amz = DIALECTS.amz;
const store = DIALECTS.store;
const object = { target: "object" as const, dialect: amz };
const bucket = { target: "bucket" as const, dialect: amz };

function doc(...tags: [string, string][]): string {
  return `<Tagging><TagSet>${
    tags.map(([k, v]) => `<Tag><Key>${k}</Key><Value>${v}</Value></Tag>`).join("")
  }</TagSet></Tagging>`;
}

/** The error `fn` throws: its code, and its message when `message` is given. */
function refused(fn: () => unknown, code: string, message?: RegExp): S3Error {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof S3Error)) throw err;
    assertEquals(err.code, code, `${err.code}: ${err.message}`);
    if (message) assertEquals(message.test(err.message), true, err.message);
    return err;
  }
  throw new Error(`Expected ${code}, but nothing was thrown`);
}

Deno.test("tags: Tagging documents round trip", () => {
  const tags = parseTagging(doc(["b", "2"], ["a", "1"], ["empty", ""]), object);
  assertEquals(tags, { b: "2", a: "1", empty: "" });
  assertEquals(
    taggingXml(tags, amz.xmlns),
    `<?xml version="1.0" encoding="UTF-8"?>\n<Tagging xmlns="${amz.xmlns}"><TagSet>` +
      `<Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>b</Key><Value>2</Value></Tag>` +
      `<Tag><Key>empty</Key><Value></Value></Tag></TagSet></Tagging>`,
  );
  assertEquals(parseTagging("<Tagging><TagSet/></Tagging>", object), {});
  assertEquals(
    parseTagging(`<Tagging xmlns="${amz.xmlns}"><TagSet></TagSet></Tagging>`, object),
    {},
  );
  // Unicode letters, numbers, spaces and _ . : / = + - @ are allowed.
  const fancy = "Ünï cödé 漢字 ٣ _.:/=+-@";
  assertEquals(parseTagging(doc([fancy, fancy]), object), { [fancy]: fancy });
  // `__proto__` is an ordinary key.
  const proto = parseTagging(doc(["__proto__", "x"]), object);
  assertEquals(Object.keys(proto), ["__proto__"]);
  assertEquals(taggingXml(proto, undefined).includes("<Key>__proto__</Key>"), true);
});

Deno.test("tags: limits of the protocol", () => {
  const ten = Array.from({ length: 10 }, (_, i) => [`k${i}`, "v"] as [string, string]);
  assertEquals(Object.keys(parseTagging(doc(...ten), object)).length, 10);
  refused(() => parseTagging(doc(...ten, ["k10", "v"]), object), "InvalidTag", /greater than 10/);
  const fifty = Array.from({ length: 50 }, (_, i) => [`k${i}`, "v"] as [string, string]);
  assertEquals(Object.keys(parseTagging(doc(...fifty), bucket)).length, 50);
  refused(() => parseTagging(doc(...fifty, ["k50", "v"]), bucket), "InvalidTag", /50/);
  // Lengths count UTF-16 code units: 64 astral letters are 128 units, 65 are too many.
  const astral = "\u{20000}";
  assertEquals(Object.keys(parseTagging(doc([astral.repeat(64), "v"]), object)).length, 1);
  refused(() => parseTagging(doc([astral.repeat(65), "v"]), object), "InvalidTag", /long/);
  refused(() => parseTagging(doc(["emoji\u{1F600}", "v"]), object), "InvalidTag", /invalid/);
  parseTagging(doc(["k".repeat(128), "v".repeat(256)]), object);
  refused(() => parseTagging(doc(["k".repeat(129), "v"]), object), "InvalidTag", /TagKey.*long/);
  refused(() => parseTagging(doc(["k", "v".repeat(257)]), object), "InvalidTag", /TagValue.*long/);
  refused(() => parseTagging(doc(["", "v"]), object), "InvalidTag", /TagKey .*invalid/);
  refused(() => parseTagging(doc(["a", "1"], ["a", "2"]), object), "InvalidTag", /same key/);
  const bad = refused(() => parseTagging(doc(["a!", "v"]), object), "InvalidTag", /TagKey/);
  assertEquals(bad.details.TagKey, "a!");
  refused(() => parseTagging(doc(["a", "v&amp;"]), object), "InvalidTag", /TagValue .*invalid/);
  refused(() => parseTagging(doc(["a", "tab\there"]), object), "InvalidTag", /TagValue/);
  // The reserved prefixes of both dialects.
  refused(() => parseTagging(doc(["aws:x", "v"]), object), "InvalidTag", /prefixed with aws:/);
  refused(
    () => parseTagging(doc(["Store:x", "v"]), { target: "object", dialect: store }),
    "InvalidTag",
    /prefixed with store:/,
  );
  refused(() => parseTagging(doc(["aws:x", "v"]), bucket), "InvalidTag", /System tags/);
});

Deno.test("tags: documents that break the schema are MalformedXML", () => {
  for (
    const body of [
      "",
      "<Tagging>",
      "<Tagging/>",
      "<Other><TagSet/></Other>",
      "<Tagging><TagSet/><TagSet/></Tagging>",
      "<Tagging><TagSet/><Extra/></Tagging>",
      "<Tagging><TagSet>text</TagSet></Tagging>",
      "<Tagging><TagSet><Other/></TagSet></Tagging>",
      "<Tagging><TagSet><Tag/></TagSet></Tagging>",
      "<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>",
      "<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>",
      "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value><X/></Tag></TagSet></Tagging>",
      "<Tagging><TagSet><Tag><Key>k</Key><Key>j</Key><Value>v</Value></Tag></TagSet></Tagging>",
      "<Tagging><TagSet><Tag><Key><A/></Key><Value>v</Value></Tag></TagSet></Tagging>",
    ]
  ) {
    refused(() => parseTagging(body, object), "MalformedXML");
  }
});

Deno.test("tags: the x-*-tagging header", () => {
  assertEquals(parseTaggingHeader("a=1&b=2", amz), { a: "1", b: "2" });
  assertEquals(parseTaggingHeader("", amz), {});
  assertEquals(parseTaggingHeader("flag&x=", amz), { flag: "", x: "" });
  assertEquals(parseTaggingHeader("sp+ace=a%20b&%C3%BC=%2F%3D", amz), { "sp ace": "a b", ü: "/=" });
  const dup = refused(
    () => parseTaggingHeader("a=1&a=2", store),
    "InvalidArgument",
    /x-store-tagging/,
  );
  assertEquals(dup.details, { ArgumentName: "x-store-tagging", ArgumentValue: "a=1&a=2" });
  refused(() => parseTaggingHeader("a=1=2", amz), "InvalidArgument", /x-amz-tagging/);
  refused(() => parseTaggingHeader("a=%zz", amz), "InvalidArgument");
  refused(() => parseTaggingHeader("a%5B=1", amz), "InvalidTag", /TagKey/);
  refused(() => parseTaggingHeader("=1", amz), "InvalidTag", /TagKey/);
  const eleven = Array.from({ length: 11 }, (_, i) => `k${i}=v`).join("&");
  refused(() => parseTaggingHeader(eleven, amz), "InvalidTag", /greater than 10/);
});
