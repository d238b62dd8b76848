// The Condition element of a bucket policy: operators, keys, value checks and evaluation.
// Key prefixes come from the dialects; either spelling is accepted in any request.
import { DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { cidrContains, parseCidr } from "./policy_ip.ts";

export type ConditionKey =
  | "SourceIp"
  | "CurrentTime"
  | "SecureTransport"
  | "prefix"
  | "max-keys"
  | "delimiter"
  | "versionid"
  | "ExistingObjectTag"
  | "RequestObjectTag"
  | "RequestObjectTagKeys"
  | HeaderKey;

/** A request header as a condition key, by its name after the vendor prefix (`x-*-acl`). */
export type HeaderKey = `header:${string}`;

/** Request headers that policies may test (`s3:x-amz-acl`, `store:x-store-acl`, ...). */
const HEADER_KEYS = [
  "acl",
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

export interface Condition {
  /** Operator without the `IfExists` suffix, in its canonical spelling, e.g. "StringLike". */
  operator: string;
  key: ConditionKey;
  /** The tag key of `ExistingObjectTag/<key>` and `RequestObjectTag/<key>`. */
  tagKey?: string;
  /** `ForAnyValue:` or `ForAllValues:`: the request's values are compared as a set. */
  setOperator?: "ForAnyValue" | "ForAllValues";
  /** The operator carried the `IfExists` suffix: a key absent from the request matches. */
  ifExists: boolean;
  /** Values as written (numbers and booleans turned into strings); any one may match. */
  values: string[];
}

/** The parts of a request that condition keys read. */
export interface ConditionContext {
  sourceIp: string;
  secureTransport: boolean;
  now: Date;
  prefix?: string;
  maxKeys?: number;
  delimiter?: string;
  versionId?: string;
  /** The value of a vendor header by its name after the prefix (`acl` for `x-*-acl`). */
  header?: (suffix: string) => string | undefined;
  /** Tags the request sets (`x-*-tagging`, a PutObjectTagging document). */
  requestTags?: Record<string, string>;
  /** Tags of the object version the request acts on (read only when a policy asks). */
  existingTags?: Record<string, string>;
}

type Family = "string" | "numeric" | "date" | "bool" | "ip" | "null";

interface OperatorSpec {
  family: Family;
  /** The positive comparison a negated operator inverts (itself when not negated). */
  base: string;
  negated: boolean;
}

const KEY_FAMILY: Partial<Record<ConditionKey, Family>> = {
  SourceIp: "ip",
  CurrentTime: "date",
  SecureTransport: "bool",
  "max-keys": "numeric",
};
/** The family of a key's values (string unless listed). */
function keyFamily(key: ConditionKey): Family {
  return KEY_FAMILY[key] ?? "string";
}
const GLOBAL_KEYS: ConditionKey[] = ["SourceIp", "CurrentTime", "SecureTransport"];
const SERVICE_KEYS: ConditionKey[] = [
  "prefix",
  "max-keys",
  "delimiter",
  "versionid",
  "RequestObjectTagKeys",
];
/** Service keys followed by `/<tag key>`. */
const TAG_KEYS: ConditionKey[] = ["ExistingObjectTag", "RequestObjectTag"];

/** Lower-case spelled key (any dialect) -> canonical key. */
const KEY_NAMES = new Map<string, ConditionKey>();
for (const d of Object.values(DIALECTS)) {
  for (const k of GLOBAL_KEYS) KEY_NAMES.set((d.globalKeyPrefix + k).toLowerCase(), k);
  for (const k of SERVICE_KEYS) KEY_NAMES.set((d.actionPrefix + k).toLowerCase(), k);
  for (const k of HEADER_KEYS) {
    KEY_NAMES.set(`${d.actionPrefix}${d.headerPrefix}${k}`.toLowerCase(), `header:${k}`);
  }
}

/** A spelled key -> canonical key (and the tag key of the tag keys); undefined if unknown. */
function parseKey(name: string): { key: ConditionKey; tagKey?: string } | undefined {
  const known = KEY_NAMES.get(name.toLowerCase());
  if (known) return { key: known };
  const slash = name.indexOf("/");
  if (slash < 0) return undefined;
  const head = name.slice(0, slash).toLowerCase();
  const tagKey = name.slice(slash + 1);
  for (const d of Object.values(DIALECTS)) {
    for (const k of TAG_KEYS) {
      if (head === (d.actionPrefix + k).toLowerCase() && tagKey !== "") return { key: k, tagKey };
    }
  }
  return undefined;
}

const OPERATORS: Record<string, OperatorSpec> = {};
function defineOperators(family: Family, pairs: [string, string?][]): void {
  for (const [positive, negative] of pairs) {
    OPERATORS[positive] = { family, base: positive, negated: false };
    if (negative) OPERATORS[negative] = { family, base: positive, negated: true };
  }
}
defineOperators("string", [
  ["StringEquals", "StringNotEquals"],
  ["StringEqualsIgnoreCase", "StringNotEqualsIgnoreCase"],
  ["StringLike", "StringNotLike"],
]);
defineOperators("numeric", [
  ["NumericEquals", "NumericNotEquals"],
  ["NumericLessThan"],
  ["NumericLessThanEquals"],
  ["NumericGreaterThan"],
  ["NumericGreaterThanEquals"],
]);
defineOperators("date", [
  ["DateEquals", "DateNotEquals"],
  ["DateLessThan"],
  ["DateLessThanEquals"],
  ["DateGreaterThan"],
  ["DateGreaterThanEquals"],
]);
defineOperators("bool", [["Bool"]]);
defineOperators("ip", [["IpAddress", "NotIpAddress"]]);
defineOperators("null", [["Null"]]);

const OPERATOR_NAMES = new Map(Object.keys(OPERATORS).map((name) => [name.toLowerCase(), name]));
const IF_EXISTS = "IfExists";

export function malformed(message: string): S3Error {
  return new S3Error("MalformedPolicy", message);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Matches `text` against a pattern where `*` is any run of characters and `?` one character. */
export function wildcardMatch(pattern: string, text: string): boolean {
  const p = Array.from(pattern);
  const t = Array.from(text);
  let pi = 0, ti = 0, star = -1, mark = 0;
  while (ti < t.length) {
    if (pi < p.length && (p[pi] === "?" || p[pi] === t[ti])) {
      pi++;
      ti++;
    } else if (pi < p.length && p[pi] === "*") {
      star = pi++;
      mark = ti;
    } else if (star >= 0) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.length && p[pi] === "*") pi++;
  return pi === p.length;
}

const SET_OPERATORS = ["ForAnyValue", "ForAllValues"] as const;

function parseOperator(
  name: string,
  where: string,
): { operator: string; ifExists: boolean; setOperator?: Condition["setOperator"] } {
  const colon = name.indexOf(":");
  if (colon >= 0) {
    const set = SET_OPERATORS.find((s) => s.toLowerCase() === name.slice(0, colon).toLowerCase());
    if (!set) throw malformed(`${where}: unknown condition set operator in "${name}"`);
    const inner = parseOperator(name.slice(colon + 1), where);
    if (inner.setOperator || inner.operator === "Null") {
      throw malformed(`${where}: unsupported condition operator "${name}"`);
    }
    return { ...inner, setOperator: set };
  }
  const lower = name.toLowerCase();
  const ifExists = lower.endsWith(IF_EXISTS.toLowerCase());
  const bare = ifExists ? lower.slice(0, -IF_EXISTS.length) : lower;
  const operator = OPERATOR_NAMES.get(bare);
  if (!operator || (ifExists && operator === "Null")) {
    throw malformed(`${where}: unknown or unsupported condition operator "${name}"`);
  }
  return { operator, ifExists };
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;
const ISO_DATE = /^(\d{4}-\d{2}-\d{2})(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/** A date value as milliseconds: ISO 8601 (UTC unless a zone is given) or epoch seconds. */
function parseDate(text: string): number | undefined {
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const m = ISO_DATE.exec(text);
  if (!m) return undefined;
  const [year, month, day] = m[1].split("-").map(Number);
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) {
    return undefined;
  }
  let zone = m[5] ?? "Z";
  if (zone.length === 5) zone = `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const ms = Date.parse(`${m[1]}${m[2] ?? "T00:00"}${zone}`.toUpperCase());
  return Number.isNaN(ms) ? undefined : ms;
}

function validValue(family: Family, text: string): boolean {
  switch (family) {
    case "numeric":
      return NUMBER.test(text);
    case "date":
      return parseDate(text) !== undefined;
    case "bool":
    case "null":
      return /^(true|false)$/i.test(text);
    case "ip":
      return parseCidr(text) !== undefined;
    default:
      return true;
  }
}

const VALUE_KIND: Record<Family, string> = {
  string: "text",
  numeric: "number",
  date: "date (ISO 8601 or epoch seconds)",
  bool: "boolean",
  ip: "IP address or CIDR block",
  null: "boolean",
};

function parseValues(raw: unknown, family: Family, where: string): string[] {
  const list = Array.isArray(raw) ? raw : [raw];
  if (list.length === 0) throw malformed(`${where}: a condition needs at least one value`);
  return list.map((v) => {
    if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") {
      throw malformed(`${where}: condition values must be strings, numbers or booleans`);
    }
    const text = String(v);
    if (!validValue(family, text)) {
      throw malformed(`${where}: invalid ${VALUE_KIND[family]} ${JSON.stringify(v)} in condition`);
    }
    return text;
  });
}

/** Parses a statement's Condition element; throws MalformedPolicy on anything unsupported. */
export function parseConditions(raw: unknown, where: string): Condition[] {
  if (raw === undefined) return [];
  if (!isRecord(raw)) throw malformed(`${where}: Condition must be an object`);
  const out: Condition[] = [];
  for (const [opName, block] of Object.entries(raw)) {
    const { operator, ifExists, setOperator } = parseOperator(opName, where);
    if (!isRecord(block) || Object.keys(block).length === 0) {
      throw malformed(`${where}: condition operator ${opName} must map keys to values`);
    }
    const family = OPERATORS[operator].family;
    for (const [keyName, value] of Object.entries(block)) {
      const parsed = parseKey(keyName);
      if (!parsed) throw malformed(`${where}: unsupported condition key "${keyName}"`);
      if (family !== "string" && family !== "null" && family !== keyFamily(parsed.key)) {
        throw malformed(`${where}: condition operator ${opName} does not apply to ${keyName}`);
      }
      const condition: Condition = {
        operator,
        key: parsed.key,
        ifExists,
        values: parseValues(value, family, where),
      };
      if (parsed.tagKey !== undefined) condition.tagKey = parsed.tagKey;
      if (setOperator) condition.setOperator = setOperator;
      out.push(condition);
    }
  }
  return out;
}

/**
 * The request's values for a condition's key (one for single-valued keys, the tag keys for
 * RequestObjectTagKeys); undefined when the request does not carry the key.
 */
function contextValues(c: Condition, ctx: ConditionContext): string[] | undefined {
  const one = (v: string | undefined) => (v === undefined ? undefined : [v]);
  const tag = (tags: Record<string, string> | undefined) =>
    tags && Object.hasOwn(tags, c.tagKey!) ? [tags[c.tagKey!]] : undefined;
  switch (c.key) {
    case "SourceIp":
      return one(ctx.sourceIp === "" ? undefined : ctx.sourceIp);
    case "CurrentTime":
      return [ctx.now.toISOString()];
    case "SecureTransport":
      return [String(ctx.secureTransport)];
    case "prefix":
      return one(ctx.prefix);
    case "max-keys":
      return one(ctx.maxKeys === undefined ? undefined : String(ctx.maxKeys));
    case "delimiter":
      return one(ctx.delimiter);
    case "versionid":
      return one(ctx.versionId);
    case "ExistingObjectTag":
      return tag(ctx.existingTags);
    case "RequestObjectTag":
      return tag(ctx.requestTags);
    case "RequestObjectTagKeys":
      return ctx.requestTags ? Object.keys(ctx.requestTags) : undefined;
  }
  return one(ctx.header?.(c.key.slice("header:".length)));
}

function compareOrdered(base: string, actual: number, expected: number): boolean {
  if (Number.isNaN(actual) || Number.isNaN(expected)) return false;
  if (base.endsWith("LessThanEquals")) return actual <= expected;
  if (base.endsWith("LessThan")) return actual < expected;
  if (base.endsWith("GreaterThanEquals")) return actual >= expected;
  if (base.endsWith("GreaterThan")) return actual > expected;
  return actual === expected;
}

/** The positive comparison of one request value with one policy value. */
function compare(base: string, actual: string, expected: string, ctx: ConditionContext): boolean {
  switch (OPERATORS[base].family) {
    case "numeric":
      return compareOrdered(base, Number(actual), Number(expected));
    case "date":
      return compareOrdered(base, ctx.now.getTime(), parseDate(expected) ?? NaN);
    case "bool":
      return actual === expected.toLowerCase();
    case "ip":
      return cidrContains(expected, actual);
  }
  if (base === "StringEqualsIgnoreCase") return actual.toLowerCase() === expected.toLowerCase();
  if (base === "StringLike") return wildcardMatch(expected, actual);
  return actual === expected;
}

/**
 * One condition against a request. A key the request lacks matches only `...IfExists`, `Null`
 * with "true", and negated operators (StringNot*, NotIpAddress, ...), as the protocol defines.
 * Values are any-of for positive operators and none-of for negated ones.
 */
function conditionMatches(c: Condition, ctx: ConditionContext): boolean {
  const actual = contextValues(c, ctx);
  if (c.operator === "Null") {
    return c.values.some((v) => (v.toLowerCase() === "true") === (actual === undefined));
  }
  const spec = OPERATORS[c.operator];
  // ForAllValues holds for an empty or missing set; ForAnyValue needs a value.
  if (actual === undefined || actual.length === 0) {
    if (c.setOperator === "ForAllValues") return true;
    if (c.setOperator === "ForAnyValue") return c.ifExists && actual === undefined;
    return c.ifExists || spec.negated;
  }
  const hits = (a: string) => c.values.some((v) => compare(spec.base, a, v, ctx));
  if (c.setOperator) {
    const matches = (a: string) => (spec.negated ? !hits(a) : hits(a));
    return c.setOperator === "ForAllValues" ? actual.every(matches) : actual.some(matches);
  }
  const hit = actual.some(hits);
  return spec.negated ? !hit : hit;
}

/** True when every condition holds (conditions in one statement are ANDed). */
export function conditionsMatch(conditions: Condition[], ctx: ConditionContext): boolean {
  return conditions.every((c) => conditionMatches(c, ctx));
}
