// The request XML of PutBucketLifecycleConfiguration, read and validated as the protocol does.
//
// Checks run in the protocol's order: first the document's shape (MalformedXML, what a schema
// check finds), then the rule count, the IDs, each rule's values (InvalidArgument) and
// combinations (InvalidRequest), the overlap of legacy prefixes, and last the transitions this
// server refuses (NotImplemented), so a document the protocol would refuse gets its answer.
import { S3Error } from "../http/errors.ts";
import { children, isBlank, leafText, parseXml, type XmlNode } from "../http/xml.ts";
import {
  checkActions,
  checkFilter,
  checkForm,
  checkOverlaps,
  checkRuleSet,
} from "../object/lifecycle_checks.ts";
import type {
  GivenRule,
  LifecycleAnd,
  LifecycleFilter,
  LifecycleRule,
  LifecycleTag,
} from "../object/lifecycle_rules.ts";

const MAX_INT = 2147483647;

type Struct = Record<string, XmlNode | XmlNode[]>;

function malformed(message: string): S3Error {
  return new S3Error("MalformedXML", message);
}

/** A container element that appears at most once, with only the `allowed` children. */
function struct(value: XmlNode | XmlNode[] | undefined, name: string, allowed: string[]) {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw malformed(`${name} may appear only once in its parent.`);
  if (isBlank(value)) return {} as Struct;
  if (typeof value !== "object") throw malformed(`${name} must contain elements, not text.`);
  for (const child of Object.keys(value)) {
    if (!allowed.includes(child)) throw malformed(`Unexpected element ${child} in ${name}.`);
  }
  return value as Struct;
}

/** An integer element; out of the 32-bit range the schema allows, the document is malformed. */
function integer(value: XmlNode | XmlNode[] | undefined, name: string, max = MAX_INT) {
  const raw = leafText(value, name);
  if (raw === undefined) return undefined;
  if (!/^[+-]?\d{1,20}$/.test(raw)) throw malformed(`${name} must be an integer.`);
  const n = Number(raw);
  if (n > max || n < -max - 1) throw malformed(`${name} is out of range.`);
  return n;
}

function size(value: XmlNode | XmlNode[] | undefined, name: string) {
  return integer(value, name, Number.MAX_SAFE_INTEGER);
}

function readTag(value: XmlNode | XmlNode[] | undefined, name: string): LifecycleTag {
  const node = struct(value, name, ["Key", "Value"]) ?? {};
  const key = leafText(node.Key, "Key");
  const tagValue = leafText(node.Value, "Value");
  if (!key || tagValue === undefined) {
    throw malformed(`A ${name} needs a non-empty Key and a Value.`);
  }
  return { key, value: tagValue };
}

function readAnd(value: XmlNode | XmlNode[] | undefined): LifecycleAnd | undefined {
  const node = struct(value, "And", [
    "Prefix",
    "Tag",
    "ObjectSizeGreaterThan",
    "ObjectSizeLessThan",
  ]);
  if (!node) return undefined;
  const and: LifecycleAnd = {
    prefix: leafText(node.Prefix, "Prefix"),
    tags: children(node.Tag).map((t) => readTag(t, "Tag")),
    objectSizeGreaterThan: size(node.ObjectSizeGreaterThan, "ObjectSizeGreaterThan"),
    objectSizeLessThan: size(node.ObjectSizeLessThan, "ObjectSizeLessThan"),
  };
  const predicates = and.tags.length +
    [and.prefix, and.objectSizeGreaterThan, and.objectSizeLessThan].filter((v) => v !== undefined)
      .length;
  if (predicates < 2) throw malformed("And must combine at least two predicates.");
  return and;
}

function readFilter(value: XmlNode | XmlNode[] | undefined): LifecycleFilter | undefined {
  const node = struct(value, "Filter", [
    "Prefix",
    "Tag",
    "And",
    "ObjectSizeGreaterThan",
    "ObjectSizeLessThan",
  ]);
  if (!node) return undefined;
  if (Object.keys(node).length > 1) {
    throw malformed(
      "Filter must have exactly one of Prefix, Tag, And, ObjectSizeGreaterThan or ObjectSizeLessThan.",
    );
  }
  const filter: LifecycleFilter = {};
  if (node.Prefix !== undefined) filter.prefix = leafText(node.Prefix, "Prefix");
  if (node.Tag !== undefined) filter.tag = readTag(node.Tag, "Tag");
  if (node.And !== undefined) filter.and = readAnd(node.And);
  const gt = size(node.ObjectSizeGreaterThan, "ObjectSizeGreaterThan");
  if (gt !== undefined) filter.objectSizeGreaterThan = gt;
  const lt = size(node.ObjectSizeLessThan, "ObjectSizeLessThan");
  if (lt !== undefined) filter.objectSizeLessThan = lt;
  return filter;
}

const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

function readExpiration(value: XmlNode | XmlNode[] | undefined): GivenRule["expiration"] {
  const node = struct(value, "Expiration", ["Date", "Days", "ExpiredObjectDeleteMarker"]);
  if (!node) return undefined;
  const date = leafText(node.Date, "Date");
  const days = integer(node.Days, "Days");
  const marker = leafText(node.ExpiredObjectDeleteMarker, "ExpiredObjectDeleteMarker");
  if ([date, days, marker].filter((v) => v !== undefined).length !== 1) {
    throw malformed(
      "Expiration must have exactly one of Date, Days and ExpiredObjectDeleteMarker.",
    );
  }
  if (date !== undefined) {
    if (!DATE.test(date) || Number.isNaN(Date.parse(date))) {
      throw malformed("Date must be an ISO 8601 date and time.");
    }
    return { date };
  }
  if (marker !== undefined) {
    if (!["true", "false", "1", "0"].includes(marker)) {
      throw malformed("ExpiredObjectDeleteMarker must be true or false.");
    }
    return { expiredObjectDeleteMarker: marker === "true" || marker === "1" };
  }
  return { days };
}

function readNoncurrent(value: XmlNode | XmlNode[] | undefined) {
  const node = struct(value, "NoncurrentVersionExpiration", [
    "NoncurrentDays",
    "NewerNoncurrentVersions",
  ]);
  if (!node) return undefined;
  const noncurrentDays = integer(node.NoncurrentDays, "NoncurrentDays");
  if (noncurrentDays === undefined) {
    throw malformed("NoncurrentVersionExpiration must have NoncurrentDays.");
  }
  const newer = integer(node.NewerNoncurrentVersions, "NewerNoncurrentVersions");
  return { noncurrentDays, ...(newer !== undefined ? { newerNoncurrentVersions: newer } : {}) };
}

function readAbort(value: XmlNode | XmlNode[] | undefined) {
  const node = struct(value, "AbortIncompleteMultipartUpload", ["DaysAfterInitiation"]);
  if (!node) return undefined;
  const daysAfterInitiation = integer(node.DaysAfterInitiation, "DaysAfterInitiation");
  if (daysAfterInitiation === undefined) {
    throw malformed("AbortIncompleteMultipartUpload must have DaysAfterInitiation.");
  }
  return { daysAfterInitiation };
}

const RULE_ELEMENTS = [
  "ID",
  "Prefix",
  "Filter",
  "Status",
  "Expiration",
  "Transition",
  "NoncurrentVersionTransition",
  "NoncurrentVersionExpiration",
  "AbortIncompleteMultipartUpload",
];

function readRule(value: XmlNode): GivenRule {
  if (typeof value !== "object") throw malformed("A Rule must contain elements.");
  const node = struct(value, "Rule", RULE_ELEMENTS)!;
  const status = leafText(node.Status, "Status");
  if (status !== "Enabled" && status !== "Disabled") {
    throw malformed("Status must be Enabled or Disabled.");
  }
  const prefix = leafText(node.Prefix, "Prefix");
  const filter = readFilter(node.Filter);
  if (prefix !== undefined && filter !== undefined) {
    throw malformed("A rule has either a Filter or a Prefix, not both.");
  }
  if (prefix === undefined && filter === undefined) {
    throw malformed("A rule must have a Filter or a Prefix.");
  }
  const rule: GivenRule = {
    id: leafText(node.ID, "ID") || undefined,
    status,
    ...(prefix !== undefined ? { prefix } : { filter }),
    expiration: readExpiration(node.Expiration),
    noncurrentVersionExpiration: readNoncurrent(node.NoncurrentVersionExpiration),
    abortIncompleteMultipartUpload: readAbort(node.AbortIncompleteMultipartUpload),
    transitions: children(node.Transition).length +
      children(node.NoncurrentVersionTransition).length,
  };
  for (const k of Object.keys(rule) as (keyof GivenRule)[]) {
    if (rule[k] === undefined) delete rule[k];
  }
  return rule;
}

/** An ID for a rule given without one, as the protocol assigns: 48 random characters. */
function generatedId(): string {
  return btoa(crypto.randomUUID());
}

/** Reads and validates a PutBucketLifecycleConfiguration body. */
export function parseLifecycleConfiguration(body: string): LifecycleRule[] {
  const root = parseXml(body, "LifecycleConfiguration");
  for (const name of Object.keys(root)) {
    if (name !== "Rule") throw malformed(`Unexpected element ${name} in LifecycleConfiguration.`);
  }
  const given = children(root.Rule).map(readRule);
  checkRuleSet(given);
  const v2 = given[0].filter !== undefined;
  for (const rule of given) {
    checkForm(rule, v2);
    checkFilter(rule);
    checkActions(rule, v2);
  }
  if (!v2) checkOverlaps(given);
  if (given.some((r) => r.transitions > 0)) {
    throw new S3Error(
      "NotImplemented",
      "Transition and NoncurrentVersionTransition actions are not supported: STANDARD is the " +
        "only storage class, so there is no other class to move objects to.",
    );
  }
  return given.map(({ transitions: _, id, expiration, ...rest }) => ({
    id: id ?? generatedId(),
    ...rest,
    ...(expiration ? { expiration: normalExpiration(expiration) } : {}),
  }));
}

function normalExpiration(e: NonNullable<LifecycleRule["expiration"]>) {
  return e.date !== undefined ? { date: new Date(Date.parse(e.date)).toISOString() } : e;
}
