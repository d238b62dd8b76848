// Expressions compiled to closures over a record. How a path reaches into a record (CSV columns
// or JSON members) is the binder's business; everything else is the same for both inputs.
import { S3Error } from "../http/errors.ts";
import type { Expr, Step, Value } from "./ast.ts";
import {
  dateAdd,
  dateDiff,
  extract,
  formatTimestamp,
  parseTimestamp,
  Timestamp,
  timestampText,
} from "./time.ts";

export type Getter<R> = (record: R) => Value;

export interface Binder<R> {
  /** A getter for a path whose table alias has been removed (an empty path: the record). */
  path(steps: Step[]): Getter<R>;
}

/** Per-aggregate state, updated once per matching record. */
export interface Aggregate<R> {
  update(record: R): void;
  result(): Value;
}

function isAbsent(v: Value): v is null | undefined {
  return v === null || v === undefined;
}

const NUMERIC = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/** A number from a number or numeric text; undefined otherwise. */
function asNumber(v: Value): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v !== "string") return undefined;
  // Fast path for plain decimal text (the common case of CSV fields); radix prefixes, white
  // space and the rest go through the full pattern.
  const c = v.charCodeAt(0);
  const c1 = v.charCodeAt(1);
  if (((c >= 48 && c <= 57) || c === 45) && !(c1 > 57 && c1 !== 101 && c1 !== 69)) {
    const n = +v;
    if (Number.isFinite(n)) return n;
  }
  return NUMERIC.test(v) ? Number(v) : undefined;
}

function numberOf(v: Value, what: string): number {
  const n = asNumber(v);
  if (n === undefined) {
    throw new S3Error("InvalidDataType", `${what} needs a number, not ${describe(v)}.`);
  }
  return n;
}

function describe(v: Value): string {
  if (typeof v === "string") return `'${v.length > 40 ? v.slice(0, 40) + "..." : v}'`;
  if (v instanceof Date) return "a timestamp";
  if (typeof v === "object" && v !== null) return Array.isArray(v) ? "a list" : "a structure";
  return String(v);
}

function timeOf(v: Value, what: string): Date {
  if (v instanceof Date) return v;
  if (typeof v === "string") {
    const t = parseTimestamp(v);
    if (t) return t;
  }
  throw new S3Error(
    "IncorrectSqlFunctionArgumentType",
    `${what} needs a timestamp, not ${describe(v)}.`,
  );
}

function stringOf(v: Value, what: string): string {
  if (typeof v === "string") return v;
  throw new S3Error(
    "IncorrectSqlFunctionArgumentType",
    `${what} needs a string, not ${describe(v)}.`,
  );
}

/** Text of a value as a CSV field or a string conversion. */
export function textOf(v: Value): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "string") return v;
  if (v instanceof Date) return timestampText(v);
  if (typeof v === "object") return JSON.stringify(toJson(v));
  return String(v);
}

/** A value as JSON output writes it (timestamps as text). */
export function toJson(v: Value): unknown {
  if (v instanceof Date) return timestampText(v);
  if (Array.isArray(v)) return v.map(toJson);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = toJson(x);
    return out;
  }
  return v;
}

/** Ordering of two values; null when unknown (an absent side or incomparable types). */
export function compare(a: Value, b: Value): number | null {
  if (isAbsent(a) || isAbsent(b)) return null;
  if (typeof a === "number" && typeof b === "number") return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === "number" || typeof b === "number") {
    const x = asNumber(a);
    const y = asNumber(b);
    if (x === undefined || y === undefined) return null;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a instanceof Date || b instanceof Date) {
    const x = a instanceof Date ? a : typeof a === "string" ? parseTimestamp(a) : undefined;
    const y = b instanceof Date ? b : typeof b === "string" ? parseTimestamp(b) : undefined;
    if (!x || !y) return null;
    return Math.sign(x.getTime() - y.getTime());
  }
  if (typeof a === "boolean" || typeof b === "boolean") {
    const x = typeof a === "boolean" ? a : typeof a === "string" ? boolText(a) : undefined;
    const y = typeof b === "boolean" ? b : typeof b === "string" ? boolText(b) : undefined;
    if (x === undefined || y === undefined) return null;
    return Number(x) - Number(y);
  }
  const x = JSON.stringify(toJson(a));
  const y = JSON.stringify(toJson(b));
  return x === y ? 0 : null;
}

function boolText(s: string): boolean | undefined {
  const l = s.trim().toLowerCase();
  return l === "true" ? true : l === "false" ? false : undefined;
}

/** Three-valued truth of a condition's value: true, false or null (unknown). */
function truth(v: Value): boolean | null {
  if (typeof v === "boolean") return v;
  if (isAbsent(v)) return null;
  if (typeof v === "string") {
    const b = boolText(v);
    if (b !== undefined) return b;
  }
  throw new S3Error("InvalidDataType", `A condition needs a boolean, not ${describe(v)}.`);
}

export function cast(v: Value, type: string): Value {
  if (isAbsent(v)) return v;
  const fail = (): never => {
    throw new S3Error("CastFailed", `Cannot cast ${describe(v)} to ${type}.`);
  };
  switch (type) {
    case "INT":
    case "INTEGER": {
      if (typeof v === "boolean") return v ? 1 : 0;
      const n = asNumber(v);
      return n === undefined || !Number.isFinite(n) ? fail() : Math.trunc(n);
    }
    case "FLOAT":
    case "DECIMAL":
    case "NUMERIC": {
      if (typeof v === "boolean") return v ? 1 : 0;
      const n = asNumber(v);
      return n === undefined ? fail() : n;
    }
    case "STRING":
    case "VARCHAR":
      return textOf(v);
    case "BOOL":
    case "BOOLEAN": {
      if (typeof v === "boolean") return v;
      if (typeof v === "number") return v !== 0;
      const b = typeof v === "string" ? boolText(v) : undefined;
      return b === undefined ? fail() : b;
    }
    default: {
      if (v instanceof Date) return v;
      const t = typeof v === "string" ? parseTimestamp(v) : undefined;
      return t ?? fail();
    }
  }
}

/** LIKE pattern -> anchored regular expression (`%` any run, `_` one character). */
export function likeRegex(pattern: string, escape?: string): RegExp {
  if (escape !== undefined && [...escape].length !== 1) {
    throw new S3Error("LikeInvalidInputs", "The LIKE escape must be a single character.");
  }
  let out = "";
  const chars = [...pattern];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i];
    if (c === escape) {
      const next = chars[++i];
      if (next === undefined) {
        throw new S3Error("LikeInvalidInputs", "The LIKE pattern ends with its escape character.");
      }
      out += next.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    } else if (c === "%") out += ".*";
    else if (c === "_") out += ".";
    else out += c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`, "su");
}

function trimChars(s: string, chars: string, where: string): string {
  const set = new Set([...chars]);
  const cs = [...s];
  let a = 0;
  let b = cs.length;
  if (where !== "TRAILING") { while (a < b && set.has(cs[a])) a++; }
  if (where !== "LEADING") { while (b > a && set.has(cs[b - 1])) b--; }
  return cs.slice(a, b).join("");
}

function substring(s: string, start: number, length?: number): string {
  const cs = [...s];
  const from = Math.max(start, 1);
  const to = length === undefined ? cs.length + 1 : start + length;
  if (length !== undefined && length < 0) {
    throw new S3Error("InvalidArgument", "SUBSTRING's length must not be negative.");
  }
  return to <= from ? "" : cs.slice(from - 1, to - 1).join("");
}

type Fn = (args: Value[]) => Value;

const FUNCTIONS: Record<string, Fn> = {
  LOWER: ([s]) => isAbsent(s) ? s : stringOf(s, "LOWER").toLowerCase(),
  UPPER: ([s]) => isAbsent(s) ? s : stringOf(s, "UPPER").toUpperCase(),
  CHAR_LENGTH: ([s]) => isAbsent(s) ? s : [...stringOf(s, "CHAR_LENGTH")].length,
  CHARACTER_LENGTH: ([s]) => isAbsent(s) ? s : [...stringOf(s, "CHARACTER_LENGTH")].length,
  TRIM: ([where, chars, s]) =>
    isAbsent(s) ? s : trimChars(stringOf(s, "TRIM"), stringOf(chars, "TRIM"), where as string),
  SUBSTRING: ([s, start, length]) => {
    if (isAbsent(s) || isAbsent(start)) return null;
    return substring(
      stringOf(s, "SUBSTRING"),
      Math.trunc(numberOf(start, "SUBSTRING")),
      isAbsent(length) ? undefined : Math.trunc(numberOf(length, "SUBSTRING")),
    );
  },
  COALESCE: (args) => args.find((a) => !isAbsent(a)) ?? null,
  NULLIF: ([a, b]) => compare(a, b) === 0 ? null : a,
  UTCNOW: () => new Timestamp(Date.now()),
  TO_TIMESTAMP: ([s]) => {
    if (isAbsent(s)) return s;
    if (s instanceof Date) return s;
    const t = parseTimestamp(stringOf(s, "TO_TIMESTAMP"));
    if (!t) throw new S3Error("CastFailed", `${describe(s)} is not a timestamp.`);
    return t;
  },
  TO_STRING: ([t, pattern]) =>
    isAbsent(t) ? t : formatTimestamp(timeOf(t, "TO_STRING"), stringOf(pattern, "TO_STRING")),
  EXTRACT: ([part, t]) => isAbsent(t) ? t : extract(part as string, timeOf(t, "EXTRACT")),
  DATE_ADD: ([part, n, t]) => {
    if (isAbsent(n) || isAbsent(t)) return null;
    return dateAdd(part as string, Math.trunc(numberOf(n, "DATE_ADD")), timeOf(t, "DATE_ADD"));
  },
  DATE_DIFF: ([part, a, b]) => {
    if (isAbsent(a) || isAbsent(b)) return null;
    return dateDiff(part as string, timeOf(a, "DATE_DIFF"), timeOf(b, "DATE_DIFF"));
  },
};

function arithmetic(op: string, a: Value, b: Value): Value {
  if (isAbsent(a) || isAbsent(b)) return null;
  const x = numberOf(a, `'${op}'`);
  const y = numberOf(b, `'${op}'`);
  switch (op) {
    case "+":
      return x + y;
    case "-":
      return x - y;
    case "*":
      return x * y;
    default: {
      if (y === 0) throw new S3Error("InvalidArgument", "Division by zero.");
      if (op === "%") return x % y;
      const q = x / y;
      // Integer operands divide to an integer, as in SQL.
      return Number.isInteger(x) && Number.isInteger(y) ? Math.trunc(q) : q;
    }
  }
}

const COMPARISONS = new Set(["=", "!=", "<", "<=", ">", ">="]);

function comparison(op: string): (c: number) => boolean {
  switch (op) {
    case "=":
      return (c) => c === 0;
    case "!=":
      return (c) => c !== 0;
    case "<":
      return (c) => c < 0;
    case "<=":
      return (c) => c <= 0;
    case ">":
      return (c) => c > 0;
    default:
      return (c) => c >= 0;
  }
}

/** Compiles expressions against one binder; aggregates found on the way are collected. */
export class Compiler<R> {
  readonly aggregates: Aggregate<R>[] = [];
  constructor(readonly binder: Binder<R>, readonly alias: string) {}

  /** Drops a leading table alias (or S3Object) from a path. */
  #unaliased(steps: Step[]): Step[] {
    const first = steps[0];
    if (first?.kind === "name" && !first.quoted) {
      const name = first.name.toLowerCase();
      if (name === this.alias || name === "s3object") return steps.slice(1);
    }
    return steps;
  }

  compile(e: Expr): Getter<R> {
    switch (e.kind) {
      case "literal": {
        const v = e.value;
        return () => v;
      }
      case "path":
        return this.binder.path(this.#unaliased(e.steps));
      case "unary": {
        const arg = this.compile(e.arg);
        if (e.op === "-") return (r) => arithmetic("-", 0, arg(r));
        return (r) => {
          const t = truth(arg(r));
          return t === null ? null : !t;
        };
      }
      case "binary": {
        const literal = e.right.kind === "literal" ? e.right.value : undefined;
        if (COMPARISONS.has(e.op) && (typeof literal === "number" || typeof literal === "string")) {
          return this.#againstLiteral(e.op, this.compile(e.left), literal);
        }
        return this.#binary(e.op, this.compile(e.left), this.compile(e.right));
      }
      case "like": {
        const arg = this.compile(e.arg);
        const pattern = this.compile(e.pattern);
        const escape = e.escape ? this.compile(e.escape) : undefined;
        let cached: { p: string; e?: string; re: RegExp } | undefined;
        return (r) => {
          const v = arg(r);
          const p = pattern(r);
          const esc = escape?.(r);
          if (isAbsent(v) || isAbsent(p) || (escape && isAbsent(esc))) return null;
          if (
            typeof v !== "string" || typeof p !== "string" ||
            (esc !== undefined && typeof esc !== "string")
          ) {
            throw new S3Error("LikeInvalidInputs", "LIKE compares strings.");
          }
          if (!cached || cached.p !== p || cached.e !== esc) {
            cached = {
              p,
              e: esc as string | undefined,
              re: likeRegex(p, esc as string | undefined),
            };
          }
          return cached.re.test(v) !== e.not;
        };
      }
      case "between": {
        const arg = this.compile(e.arg);
        const low = this.compile(e.low);
        const high = this.compile(e.high);
        return (r) => {
          const v = arg(r);
          const a = compare(v, low(r));
          const b = compare(v, high(r));
          if (a === null || b === null) return null;
          return (a >= 0 && b <= 0) !== e.not;
        };
      }
      case "in": {
        const arg = this.compile(e.arg);
        const list = e.list.map((x) => this.compile(x));
        return (r) => {
          const v = arg(r);
          if (isAbsent(v)) return null;
          let unknown = false;
          for (const item of list) {
            const c = compare(v, item(r));
            if (c === 0) return !e.not;
            if (c === null) unknown = true;
          }
          return unknown ? null : e.not;
        };
      }
      case "is": {
        const arg = this.compile(e.arg);
        const test: (v: Value) => boolean = e.what === "MISSING"
          ? (v) => v === undefined
          : e.what === "NULL"
          ? isAbsent
          : (v) => truth(v) === (e.what === "TRUE");
        return (r) => test(arg(r)) !== e.not;
      }
      case "cast": {
        const arg = this.compile(e.arg);
        return (r) => cast(arg(r), e.type);
      }
      case "call": {
        const fn = FUNCTIONS[e.name];
        const args = e.args.map((a) => this.compile(a));
        return (r) => fn(args.map((a) => a(r)));
      }
      case "aggregate":
        return this.#aggregate(e.name, e.arg ? this.compile(e.arg) : undefined);
    }
  }

  /** `x op literal`, the common shape of a filter, without the general comparison's dispatch. */
  #againstLiteral(op: string, left: Getter<R>, literal: number | string): Getter<R> {
    const test = comparison(op);
    if (typeof literal === "number") {
      return (r) => {
        const v = left(r);
        const n = typeof v === "number" ? v : typeof v === "string" ? asNumber(v) : undefined;
        if (n !== undefined) return test(n < literal ? -1 : n > literal ? 1 : 0);
        const c = compare(v, literal);
        return c === null ? null : test(c);
      };
    }
    return (r) => {
      const v = left(r);
      if (typeof v === "string") return test(v < literal ? -1 : v > literal ? 1 : 0);
      const c = compare(v, literal);
      return c === null ? null : test(c);
    };
  }

  #binary(op: string, left: Getter<R>, right: Getter<R>): Getter<R> {
    switch (op) {
      case "AND":
        return (r) => {
          const a = truth(left(r));
          if (a === false) return false;
          const b = truth(right(r));
          if (b === false) return false;
          return a === null || b === null ? null : true;
        };
      case "OR":
        return (r) => {
          const a = truth(left(r));
          if (a === true) return true;
          const b = truth(right(r));
          if (b === true) return true;
          return a === null || b === null ? null : false;
        };
      case "||":
        return (r) => {
          const a = left(r);
          const b = right(r);
          return isAbsent(a) || isAbsent(b) ? null : textOf(a) + textOf(b);
        };
      case "+":
      case "-":
      case "*":
      case "/":
      case "%":
        return (r) => arithmetic(op, left(r), right(r));
      default: {
        const test = comparison(op);
        return (r) => {
          const c = compare(left(r), right(r));
          return c === null ? null : test(c);
        };
      }
    }
  }

  #aggregate(name: string, arg: Getter<R> | undefined): Getter<R> {
    let count = 0;
    let sum = 0;
    let best: Value = null;
    const agg: Aggregate<R> = {
      update: (r) => {
        if (!arg) {
          count++;
          return;
        }
        const v = arg(r);
        if (isAbsent(v)) return;
        count++;
        if (name === "SUM" || name === "AVG") sum += numberOf(v, name);
        else if (name === "MIN" || name === "MAX") {
          const c = best === null ? null : compare(v, best);
          if (best === null || (c !== null && (name === "MIN" ? c < 0 : c > 0))) {
            best = typeof v === "string" && asNumber(v) !== undefined ? Number(v) : v;
          }
        }
      },
      result: () => {
        if (name === "COUNT") return count;
        if (count === 0) return null;
        if (name === "SUM") return sum;
        if (name === "AVG") return sum / count;
        return best;
      },
    };
    this.aggregates.push(agg);
    return () => agg.result();
  }
}
