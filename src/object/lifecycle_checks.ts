// The value and combination checks of a lifecycle configuration, run once its shape is known
// to be right (see lifecycle_rules.ts): InvalidArgument for values out of range, InvalidRequest
// for combinations the protocol refuses.
import { S3Error } from "../http/errors.ts";
import type { GivenRule, LifecycleTag } from "./lifecycle_rules.ts";

export const MAX_RULES = 1000;
const MAX_ID = 255;
const MAX_PREFIX_BYTES = 1024;
const MAX_TAG_KEY = 128;
const MAX_TAG_VALUE = 256;
const MAX_NEWER_VERSIONS = 100;

function invalidArgument(message: string, name: string, value: string | number): S3Error {
  return new S3Error("InvalidArgument", message, {
    details: { ArgumentName: name, ArgumentValue: String(value) },
  });
}

function invalidRequest(message: string): S3Error {
  return new S3Error("InvalidRequest", message);
}

/** The number of rules and their IDs: at most 255 characters, unique where given. */
export function checkRuleSet(given: GivenRule[]): void {
  if (given.length === 0) throw invalidRequest("At least one lifecycle rule must be specified.");
  if (given.length > MAX_RULES) {
    throw invalidRequest(
      "The number of lifecycle rules must not exceed the allowed limit of 1000 rules.",
    );
  }
  const ids = new Set<string>();
  for (const rule of given) {
    if (rule.id === undefined) continue;
    if (rule.id.length > MAX_ID) {
      throw invalidArgument("ID length should not exceed allowed limit of 255", "ID", rule.id);
    }
    if (ids.has(rule.id)) {
      throw invalidArgument(
        "Rule ID must be unique. Found same ID for more than one rule",
        "ID",
        rule.id,
      );
    }
    ids.add(rule.id);
  }
}

/**
 * The first rule decides the form: with a Filter it is the current form (every rule needs a
 * Filter), with a rule-level Prefix the original one (every rule has a Prefix).
 */
export function checkForm(rule: GivenRule, v2: boolean): void {
  if (v2 && rule.prefix !== undefined) {
    throw invalidRequest(
      "Base level prefix cannot be used in Lifecycle V2, prefixes are only supported in the Filter.",
    );
  }
  if (!v2 && rule.filter !== undefined) {
    throw invalidRequest("Filter element can only be used in Lifecycle V2.");
  }
}

/** Every prefix a rule names (rule-level, filter, and). */
function prefixesOf(rule: GivenRule): string[] {
  const f = rule.filter;
  return [rule.prefix, f?.prefix, f?.and?.prefix].filter((p): p is string => p !== undefined);
}

function tagsOf(rule: GivenRule): LifecycleTag[] {
  const f = rule.filter;
  return [...(f?.tag ? [f.tag] : []), ...(f?.and?.tags ?? [])];
}

function sizesOf(rule: GivenRule): { gt?: number; lt?: number } {
  const f = rule.filter;
  return {
    gt: f?.objectSizeGreaterThan ?? f?.and?.objectSizeGreaterThan,
    lt: f?.objectSizeLessThan ?? f?.and?.objectSizeLessThan,
  };
}

export function checkFilter(rule: GivenRule): void {
  for (const p of prefixesOf(rule)) {
    if (new TextEncoder().encode(p).byteLength > MAX_PREFIX_BYTES) {
      throw invalidRequest("The maximum size of a prefix is 1024.");
    }
  }
  const tags = tagsOf(rule);
  for (const t of tags) {
    if (t.key.length > MAX_TAG_KEY) {
      throw invalidRequest("The TagKey you have provided is too long, max 128");
    }
    if (t.value.length > MAX_TAG_VALUE) {
      throw invalidRequest("The TagValue you have provided is too long, max 256");
    }
  }
  if (new Set(tags.map((t) => t.key)).size !== tags.length) {
    throw invalidRequest("Duplicate Tag Keys are not allowed.");
  }
  const { gt, lt } = sizesOf(rule);
  if (gt !== undefined && gt < 0) {
    throw invalidRequest("'ObjectSizeGreaterThan' must be a nonnegative integer.");
  }
  if (lt !== undefined && lt < 1) {
    throw invalidRequest("'ObjectSizeLessThan' must be a positive integer.");
  }
  if (gt !== undefined && lt !== undefined && lt <= gt) {
    throw invalidRequest(
      "'ObjectSizeLessThan' has to be a value greater than 'ObjectSizeGreaterThan'.",
    );
  }
}

export function checkActions(rule: GivenRule, v2: boolean): void {
  const { expiration: exp, noncurrentVersionExpiration: nve } = rule;
  const abort = rule.abortIncompleteMultipartUpload;
  if (!exp && !nve && !abort && rule.transitions === 0) {
    throw invalidRequest("At least one action needs to be specified in a rule");
  }
  if (exp?.days !== undefined && exp.days <= 0) {
    throw invalidArgument(
      "'Days' for Expiration action must be a positive integer",
      "Days",
      exp.days,
    );
  }
  if (exp?.date !== undefined && Date.parse(exp.date) % 86_400_000 !== 0) {
    throw invalidArgument("'Date' must be at midnight GMT", "Date", exp.date);
  }
  if (nve && nve.noncurrentDays <= 0) {
    throw invalidArgument(
      "'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer",
      "NoncurrentDays",
      nve.noncurrentDays,
    );
  }
  const newer = nve?.newerNoncurrentVersions;
  if (newer !== undefined && !v2) {
    throw invalidRequest("NewerNoncurrentVersions element can only be used in Lifecycle V2.");
  }
  if (newer !== undefined && (newer <= 0 || newer > MAX_NEWER_VERSIONS)) {
    throw invalidArgument(
      "'NewerNoncurrentVersions' must be a positive integer no greater than 100",
      "NewerNoncurrentVersions",
      newer,
    );
  }
  if (abort && abort.daysAfterInitiation <= 0) {
    throw invalidArgument(
      "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer",
      "DaysAfterInitiation",
      abort.daysAfterInitiation,
    );
  }
  const tags = tagsOf(rule).length > 0;
  const { gt, lt } = sizesOf(rule);
  const sizes = gt !== undefined || lt !== undefined;
  const marker = exp?.expiredObjectDeleteMarker !== undefined;
  if (marker && tags) {
    throw invalidRequest("ExpiredObjectDeleteMarker cannot be specified with Tags.");
  }
  if (marker && sizes) {
    throw invalidRequest("ExpiredObjectDeleteMarker cannot be specified with Object Size.");
  }
  if (abort && tags) {
    throw invalidRequest("AbortIncompleteMultipartUpload cannot be specified with Tags.");
  }
  if (abort && sizes) {
    throw invalidRequest("AbortIncompleteMultipartUpload cannot be specified with Object Size.");
  }
}

/** In the original form, no two rules whose prefixes overlap may take the same kind of action. */
export function checkOverlaps(rules: GivenRule[]): void {
  const kinds: [string, (r: GivenRule) => boolean][] = [
    ["Expiration", (r) => r.expiration !== undefined],
    ["NoncurrentVersionExpiration", (r) => r.noncurrentVersionExpiration !== undefined],
    ["AbortIncompleteMultipartUpload", (r) => r.abortIncompleteMultipartUpload !== undefined],
  ];
  for (const [kind, takes] of kinds) {
    const prefixes = rules.filter(takes).map((r) => r.prefix ?? "").sort();
    for (let i = 1; i < prefixes.length; i++) {
      if (prefixes[i].startsWith(prefixes[i - 1])) {
        throw invalidRequest(
          `Found overlapping prefixes '${prefixes[i - 1]}' and '${
            prefixes[i]
          }' for same action type '${kind}'`,
        );
      }
    }
  }
}
