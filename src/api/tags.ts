// Tag sets as the protocol writes them: the `Tagging` XML document (Put/Get*Tagging, the POST
// form's `tagging` field), the URL-encoded `x-*-tagging` header, and the limits every tag set is
// held to.
import { type Dialect, DIALECTS, h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { el, isBlank, leafText, parseXml, text, xmlDocument, type XmlNode } from "../http/xml.ts";
import type { TagSet } from "../meta/store.ts";

export const MAX_OBJECT_TAGS = 10;
export const MAX_BUCKET_TAGS = 50;
/** Lengths in UTF-16 code units, as the protocol counts them. */
export const MAX_TAG_KEY = 128;
export const MAX_TAG_VALUE = 256;

/** Unicode letters, numbers and spaces, and `_ . : / = + - @`. */
const ALLOWED = /^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$/u;

export type TagTarget = "object" | "bucket";

function invalidTag(message: string, details: Record<string, string>): S3Error {
  return new S3Error("InvalidTag", message, { details });
}

/** The checks of one tag, in the order the protocol reports them. */
function checkTag(key: string, value: string, opts: { target: TagTarget; dialect: Dialect }) {
  const reserved = Object.values(DIALECTS).map((d) => d.globalKeyPrefix);
  if (reserved.some((p) => key.toLowerCase().startsWith(p))) {
    throw invalidTag(
      opts.target === "bucket"
        ? "System tags cannot be added/updated by requester"
        : `Your TagKey cannot be prefixed with ${opts.dialect.globalKeyPrefix}`,
      { TagKey: key },
    );
  }
  if (key === "" || !ALLOWED.test(key)) {
    throw invalidTag("The TagKey you have provided is invalid", { TagKey: key });
  }
  if (key.length > MAX_TAG_KEY) {
    throw invalidTag(`The TagKey you have provided is too long, max ${MAX_TAG_KEY}`, {
      TagKey: key,
    });
  }
  if (!ALLOWED.test(value)) {
    throw invalidTag("The TagValue you have provided is invalid", { TagKey: key, TagValue: value });
  }
  if (value.length > MAX_TAG_VALUE) {
    throw invalidTag(`The TagValue you have provided is too long, max ${MAX_TAG_VALUE}`, {
      TagKey: key,
      TagValue: value,
    });
  }
}

/**
 * Holds parsed pairs to the protocol's limits and returns them as a tag set: at most 10 tags
 * on an object and 50 on a bucket, unique keys, keys of 1-128 and values of 0-256
 * characters from the allowed set, no reserved `aws:`/`store:` prefix (`InvalidTag`).
 */
export function checkedTagSet(
  pairs: [string, string][],
  opts: { target: TagTarget; dialect: Dialect },
): TagSet {
  const max = opts.target === "bucket" ? MAX_BUCKET_TAGS : MAX_OBJECT_TAGS;
  if (pairs.length > max) {
    throw new S3Error(
      "InvalidTag",
      `${opts.target === "bucket" ? "Bucket" : "Object"} tags cannot be greater than ${max}`,
    );
  }
  const seen = new Set<string>();
  for (const [key, value] of pairs) {
    if (seen.has(key)) {
      throw invalidTag("Cannot provide multiple Tags with the same key", { TagKey: key });
    }
    seen.add(key);
    checkTag(key, value, opts);
  }
  // fromEntries defines own properties, so a key such as `__proto__` stays an ordinary tag.
  return Object.fromEntries(pairs);
}

function malformed(message: string): S3Error {
  return new S3Error("MalformedXML", message);
}

function oneTag(node: XmlNode): [string, string] {
  if (typeof node !== "object" || Array.isArray(node)) {
    throw malformed("Tag must hold a Key and a Value.");
  }
  for (const name of Object.keys(node)) {
    if (name !== "Key" && name !== "Value") throw malformed(`Unexpected element ${name} in Tag.`);
  }
  const key = leafText(node.Key, "Key");
  const value = leafText(node.Value, "Value");
  if (key === undefined || value === undefined) {
    throw malformed("Tag must hold a Key and a Value.");
  }
  return [key, value];
}

/**
 * Parses `<Tagging><TagSet><Tag><Key/><Value/></Tag>...</TagSet></Tagging>`. The schema is
 * MalformedXML when broken; the tags are then checked as `checkedTagSet` does. An empty
 * `TagSet` is an empty tag set.
 */
export function parseTagging(
  body: string,
  opts: { target: TagTarget; dialect: Dialect },
): TagSet {
  const root = parseXml(body, "Tagging");
  for (const name of Object.keys(root)) {
    if (name !== "TagSet") throw malformed(`Unexpected element ${name} in Tagging.`);
  }
  const set = root.TagSet;
  if (set === undefined) throw malformed("Tagging must hold a TagSet.");
  if (Array.isArray(set)) throw malformed("Tagging must hold one TagSet.");
  if (typeof set === "string") {
    if (!isBlank(set)) throw malformed("TagSet must hold Tag elements.");
    return {};
  }
  for (const name of Object.keys(set)) {
    if (name !== "Tag") throw malformed(`Unexpected element ${name} in TagSet.`);
  }
  const nodes = Array.isArray(set.Tag) ? set.Tag : [set.Tag];
  return checkedTagSet(nodes.map(oneTag), opts);
}

function formDecode(part: string): string {
  return decodeURIComponent(part.replaceAll("+", " "));
}

/**
 * Parses the `x-*-tagging` header, URL query parameters (`k1=v1&k2=v2`, both sides
 * URL-encoded; a key without `=` has the empty value). A pair that does not decode, holds a
 * second `=` or repeats a key is InvalidArgument; the tags are then checked for an object.
 */
export function parseTaggingHeader(raw: string, dialect: Dialect): TagSet {
  const name = h(dialect, "tagging");
  const refused = () =>
    new S3Error(
      "InvalidArgument",
      `The header '${name}' shall be encoded as UTF-8 then URLEncoded URL query parameters ` +
        "without tag name duplicates.",
      { details: { ArgumentName: name, ArgumentValue: raw } },
    );
  const pairs: [string, string][] = [];
  const seen = new Set<string>();
  for (const part of raw.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    const rawValue = eq < 0 ? "" : part.slice(eq + 1);
    if (rawValue.includes("=")) throw refused();
    let key: string;
    let value: string;
    try {
      key = formDecode(eq < 0 ? part : part.slice(0, eq));
      value = formDecode(rawValue);
    } catch {
      throw refused();
    }
    if (seen.has(key)) throw refused();
    seen.add(key);
    pairs.push([key, value]);
  }
  return checkedTagSet(pairs, { target: "object", dialect });
}

/** The tags a write request sets through `x-*-tagging`; undefined when it has no such header. */
export function requestTags(headers: Headers, dialect: Dialect): TagSet | undefined {
  const raw = headers.get(h(dialect, "tagging"));
  return raw === null ? undefined : parseTaggingHeader(raw, dialect);
}

/** The `Tagging` document of a tag set, its tags in key order. */
export function taggingXml(tags: TagSet | undefined, xmlns: string | undefined): string {
  const sorted = Object.entries(tags ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return xmlDocument(
    "Tagging",
    xmlns,
    el("TagSet", ...sorted.map(([k, v]) => el("Tag", text("Key", k), text("Value", v)))),
  );
}
