// The Condition element of a bucket policy: operators, keys, value checks and evaluation.
// Key prefixes come from the dialects; either spelling is accepted in any request.
import { DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";

export type ConditionKey = "SourceIp" | "CurrentTime" | "SecureTransport" | "prefix" | "max-keys";

export interface Condition {
  /** Operator without the `IfExists` suffix, in its canonical spelling, e.g. "StringLike". */
  operator: string;
  key: ConditionKey;
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
}

type Family = "string" | "numeric" | "date" | "bool" | "ip" | "null";

interface OperatorSpec {
  family: Family;
  /** The positive comparison a negated operator inverts (itself when not negated). */
  base: string;
  negated: boolean;
}

const KEY_FAMILY: Record<ConditionKey, Family> = {
  SourceIp: "ip",
  CurrentTime: "date",
  SecureTransport: "bool",
  prefix: "string",
  "max-keys": "numeric",
};
const GLOBAL_KEYS: ConditionKey[] = ["SourceIp", "CurrentTime", "SecureTransport"];
const SERVICE_KEYS: ConditionKey[] = ["prefix", "max-keys"];

/** Lower-case spelled key (any dialect) -> canonical key. */
const KEY_NAMES = new Map<string, ConditionKey>();
for (const d of Object.values(DIALECTS)) {
  for (const k of GLOBAL_KEYS) KEY_NAMES.set((d.globalKeyPrefix + k).toLowerCase(), k);
  for (const k of SERVICE_KEYS) KEY_NAMES.set((d.actionPrefix + k).toLowerCase(), k);
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

interface Ip {
  v6: boolean;
  value: bigint;
}

function parseV4(text: string): bigint | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let n = 0n;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return undefined;
    n = n * 256n + BigInt(part);
  }
  return n;
}

function parseV6(text: string): bigint | undefined {
  const last = text.lastIndexOf(":");
  const tail = text.slice(last + 1);
  const v4 = tail.includes(".") ? parseV4(tail) : undefined;
  if (tail.includes(".") && v4 === undefined) return undefined;
  const head = v4 === undefined ? text : `${text.slice(0, last + 1)}0:0`;
  const halves = head.split("::");
  if (halves.length > 2) return undefined;
  const groupsOf = (s: string) => (s === "" ? [] : s.split(":"));
  const left = groupsOf(halves[0]);
  const right = halves.length === 2 ? groupsOf(halves[1]) : [];
  const missing = 8 - left.length - right.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  let n = 0n;
  for (const g of [...left, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...right]) {
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return undefined;
    n = (n << 16n) | BigInt(`0x${g}`);
  }
  return v4 === undefined ? n : n | v4;
}

const MAPPED_V4 = 0xffffn << 32n;

/** An IPv4 or IPv6 address; brackets and a zone id are ignored. */
function parseIp(text: string): Ip | undefined {
  let t = text.trim();
  if (t.startsWith("[") && t.endsWith("]")) t = t.slice(1, -1);
  const zone = t.indexOf("%");
  if (zone >= 0) t = t.slice(0, zone);
  if (!t.includes(":")) {
    const v4 = parseV4(t);
    return v4 === undefined ? undefined : { v6: false, value: v4 };
  }
  const v6 = parseV6(t);
  return v6 === undefined ? undefined : { v6: true, value: v6 };
}

/**
 * A CIDR block or a single address (a block of one). Blocks inside the IPv4-mapped range
 * (::ffff:0:0/96) are turned into their IPv4 equivalent.
 */
function parseCidr(text: string): (Ip & { bits: number }) | undefined {
  const slash = text.indexOf("/");
  const ip = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (!ip) return undefined;
  const width = ip.v6 ? 128 : 32;
  const bitsText = slash < 0 ? String(width) : text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bitsText) || Number(bitsText) > width) return undefined;
  const bits = Number(bitsText);
  if (ip.v6 && bits >= 96 && ip.value >> 32n === 0xffffn) {
    return { v6: false, value: ip.value - MAPPED_V4, bits: bits - 96 };
  }
  return { ...ip, bits };
}

/** True when `address` lies in `cidr`; an IPv4-mapped IPv6 address counts as IPv4. */
function cidrContains(cidr: string, address: string): boolean {
  const block = parseCidr(cidr);
  const ip = address.includes("/") ? undefined : parseCidr(address);
  if (!block || !ip || block.v6 !== ip.v6) return false;
  const shift = BigInt((block.v6 ? 128 : 32) - block.bits);
  return ip.value >> shift === block.value >> shift;
}

function parseOperator(name: string, where: string): { operator: string; ifExists: boolean } {
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
    const { operator, ifExists } = parseOperator(opName, where);
    if (!isRecord(block) || Object.keys(block).length === 0) {
      throw malformed(`${where}: condition operator ${opName} must map keys to values`);
    }
    const family = OPERATORS[operator].family;
    for (const [keyName, value] of Object.entries(block)) {
      const key = KEY_NAMES.get(keyName.toLowerCase());
      if (!key) throw malformed(`${where}: unsupported condition key "${keyName}"`);
      if (family !== "string" && family !== "null" && family !== KEY_FAMILY[key]) {
        throw malformed(`${where}: condition operator ${opName} does not apply to ${keyName}`);
      }
      out.push({ operator, key, ifExists, values: parseValues(value, family, where) });
    }
  }
  return out;
}

/** The request's value for a key, as a string; undefined when the request does not carry it. */
function contextValue(key: ConditionKey, ctx: ConditionContext): string | undefined {
  switch (key) {
    case "SourceIp":
      return ctx.sourceIp === "" ? undefined : ctx.sourceIp;
    case "CurrentTime":
      return ctx.now.toISOString();
    case "SecureTransport":
      return String(ctx.secureTransport);
    case "prefix":
      return ctx.prefix;
    case "max-keys":
      return ctx.maxKeys === undefined ? undefined : String(ctx.maxKeys);
  }
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
  const actual = contextValue(c.key, ctx);
  if (c.operator === "Null") {
    return c.values.some((v) => (v.toLowerCase() === "true") === (actual === undefined));
  }
  const spec = OPERATORS[c.operator];
  if (actual === undefined) return c.ifExists || spec.negated;
  const hit = c.values.some((v) => compare(spec.base, actual, v, ctx));
  return spec.negated ? !hit : hit;
}

/** True when every condition holds (conditions in one statement are ANDed). */
export function conditionsMatch(conditions: Condition[], ctx: ConditionContext): boolean {
  return conditions.every((c) => conditionMatches(c, ctx));
}
