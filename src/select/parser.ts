// Tokens -> Query, by recursive descent. Precedence, loosest first: OR, AND, NOT, comparisons
// (=, <>, <, LIKE, BETWEEN, IN, IS), ||, + -, * / %, unary minus.
import { S3Error } from "../http/errors.ts";
import type { Expr, Query, SelectItem, Step } from "./ast.ts";
import { type Token, tokenize } from "./lexer.ts";

const AGGREGATES = new Set(["COUNT", "SUM", "AVG", "MIN", "MAX"]);
const FUNCTIONS = new Set([
  "LOWER",
  "UPPER",
  "TRIM",
  "SUBSTRING",
  "CHAR_LENGTH",
  "CHARACTER_LENGTH",
  "COALESCE",
  "NULLIF",
  "UTCNOW",
  "TO_TIMESTAMP",
  "TO_STRING",
  "EXTRACT",
  "DATE_ADD",
  "DATE_DIFF",
]);
const CAST_TYPES = new Set([
  "INT",
  "INTEGER",
  "FLOAT",
  "DECIMAL",
  "NUMERIC",
  "STRING",
  "VARCHAR",
  "BOOL",
  "BOOLEAN",
  "TIMESTAMP",
]);
const DATE_PARTS = new Set([
  "YEAR",
  "MONTH",
  "DAY",
  "HOUR",
  "MINUTE",
  "SECOND",
  "TIMEZONE_HOUR",
  "TIMEZONE_MINUTE",
]);
/** Words that end an expression or a select item (never taken as an alias). */
const RESERVED = new Set([
  "SELECT",
  "FROM",
  "WHERE",
  "LIMIT",
  "AND",
  "OR",
  "NOT",
  "AS",
  "LIKE",
  "ESCAPE",
  "BETWEEN",
  "IN",
  "IS",
  "NULL",
  "MISSING",
  "TRUE",
  "FALSE",
  "CAST",
  "GROUP",
  "ORDER",
  "JOIN",
  "HAVING",
  "UNION",
  "CASE",
  "WHEN",
  "THEN",
  "ELSE",
  "END",
]);

class Parser {
  #tokens: Token[];
  #i = 0;
  constructor(sql: string) {
    this.#tokens = tokenize(sql);
  }

  get #t(): Token {
    return this.#tokens[this.#i];
  }

  #fail(code: string, what: string): never {
    const t = this.#t;
    const near = t.type === "end" ? "the end of the expression" : `'${t.text}' at ${t.pos}`;
    throw new S3Error(code, `${what}, found ${near}.`);
  }

  #isWord(word: string): boolean {
    const t = this.#t;
    return t.type === "ident" && !t.quoted && t.text.toUpperCase() === word;
  }

  #acceptWord(word: string): boolean {
    if (!this.#isWord(word)) return false;
    this.#i++;
    return true;
  }

  #expectWord(word: string): void {
    if (!this.#acceptWord(word)) this.#fail("ParseExpectedKeyword", `Expected ${word}`);
  }

  #isOp(op: string): boolean {
    return this.#t.type === "op" && this.#t.text === op;
  }

  #acceptOp(op: string): boolean {
    if (!this.#isOp(op)) return false;
    this.#i++;
    return true;
  }

  #expectOp(op: string, code = "ParseExpectedTokenType"): void {
    if (!this.#acceptOp(op)) this.#fail(code, `Expected '${op}'`);
  }

  query(): Query {
    if (!this.#acceptWord("SELECT")) this.#fail("ParseUnsupportedSelect", "Expected SELECT");
    let items: SelectItem[] | "*";
    if (this.#acceptOp("*")) {
      items = "*";
      if (this.#isOp(",")) {
        this.#fail("ParseAsteriskIsNotAloneInSelectList", "Other expressions cannot follow *");
      }
    } else {
      if (this.#isWord("FROM")) this.#fail("ParseEmptySelect", "The SELECT list is empty");
      items = [this.#item()];
      while (this.#acceptOp(",")) {
        if (this.#isOp("*")) {
          this.#fail("ParseAsteriskIsNotAloneInSelectList", "* cannot follow other expressions");
        }
        items.push(this.#item());
      }
    }
    if (!this.#acceptWord("FROM")) this.#fail("ParseSelectMissingFrom", "Expected FROM");
    const source = this.#t;
    if (source.type !== "ident" || source.text.toUpperCase() !== "S3OBJECT") {
      this.#fail("InvalidDataSource", "The data source must be S3Object");
    }
    this.#i++;
    const from = this.#steps(true);
    let alias = "s3object";
    if (this.#acceptWord("AS")) alias = this.#aliasName();
    else if (this.#t.type === "ident" && !RESERVED.has(this.#t.text.toUpperCase())) {
      alias = this.#aliasName();
    }
    let where: Expr | undefined;
    if (this.#acceptWord("WHERE")) where = this.#expr();
    let limit: number | undefined;
    if (this.#acceptWord("LIMIT")) {
      if (this.#acceptOp("-")) this.#fail("EvaluatorNegativeLimit", "LIMIT must not be negative");
      const t = this.#t;
      if (t.type !== "number" || !/^\d+$/.test(t.text)) {
        this.#fail("ParseExpectedNumber", "Expected a whole number after LIMIT");
      }
      limit = Number(t.text);
      this.#i++;
    }
    this.#acceptOp(";");
    if (this.#t.type !== "end") {
      const t = this.#t;
      const word = t.type === "ident" ? t.text.toUpperCase() : "";
      if (["GROUP", "ORDER", "JOIN", "HAVING", "UNION"].includes(word)) {
        this.#fail("UnsupportedSqlStructure", `${word} is not supported`);
      }
      this.#fail("ParseUnexpectedToken", "Expected the end of the query");
    }
    // `SELECT s.*` alone is `SELECT *`.
    if (items !== "*" && items.length === 1 && isRecordStar(items[0], alias)) items = "*";
    const aggregate = items !== "*" && items.some((i) => hasAggregate(i.expr));
    if (aggregate && items !== "*" && items.some((i) => !aggregateOnly(i.expr))) {
      throw new S3Error(
        "UnsupportedSqlStructure",
        "Aggregate functions cannot be mixed with per-record expressions in the SELECT list.",
      );
    }
    if (where && hasAggregate(where)) {
      throw new S3Error("UnsupportedSqlStructure", "Aggregate functions cannot be used in WHERE.");
    }
    return { items, from, alias: alias.toLowerCase(), where, limit, aggregate };
  }

  #aliasName(): string {
    const t = this.#t;
    if (t.type !== "ident" || (!t.quoted && RESERVED.has(t.text.toUpperCase()))) {
      this.#fail("ParseExpectedIdentForAlias", "Expected an alias name");
    }
    this.#i++;
    return t.text;
  }

  #item(): SelectItem {
    const expr = this.#expr();
    if (this.#acceptWord("AS")) return { expr, alias: this.#aliasName() };
    const t = this.#t;
    if (t.type === "ident" && (t.quoted || !RESERVED.has(t.text.toUpperCase()))) {
      return { expr, alias: this.#aliasName() };
    }
    return { expr };
  }

  /** Path steps after a first name: `.name`, `.*`, `[n]`, `[*]`, `['name']`. */
  #steps(afterSource = false): Step[] {
    const steps: Step[] = [];
    while (true) {
      if (this.#acceptOp(".")) {
        if (this.#acceptOp("*")) {
          steps.push({ kind: "star" });
          continue;
        }
        const t = this.#t;
        if (t.type !== "ident") this.#fail("ParseInvalidPathComponent", "Expected a member name");
        this.#i++;
        steps.push({ kind: "name", name: t.text, quoted: t.quoted });
      } else if (this.#acceptOp("[")) {
        const t = this.#t;
        if (this.#acceptOp("*")) steps.push({ kind: "star" });
        else if (t.type === "number" && /^\d+$/.test(t.text)) {
          this.#i++;
          steps.push({ kind: "index", index: Number(t.text) });
        } else if (t.type === "string") {
          this.#i++;
          steps.push({ kind: "name", name: t.text, quoted: true });
        } else this.#fail("ParseInvalidPathComponent", "Expected an index, * or a name");
        this.#expectOp("]");
      } else return steps;
      if (afterSource && steps.length === 1 && steps[0].kind !== "star") {
        this.#fail("ParseInvalidPathComponent", "S3Object paths start with [*]");
      }
    }
  }

  #expr(): Expr {
    let left = this.#and();
    while (this.#acceptWord("OR")) left = { kind: "binary", op: "OR", left, right: this.#and() };
    return left;
  }

  #and(): Expr {
    let left = this.#not();
    while (this.#acceptWord("AND")) left = { kind: "binary", op: "AND", left, right: this.#not() };
    return left;
  }

  #not(): Expr {
    if (this.#acceptWord("NOT")) return { kind: "unary", op: "NOT", arg: this.#not() };
    return this.#comparison();
  }

  #comparison(): Expr {
    const left = this.#concat();
    const t = this.#t;
    if (t.type === "op" && ["=", "!=", "<>", "<", "<=", ">", ">="].includes(t.text)) {
      this.#i++;
      const op = t.text === "<>" ? "!=" : t.text;
      return { kind: "binary", op, left, right: this.#concat() };
    }
    if (this.#acceptWord("IS")) {
      const not = this.#acceptWord("NOT");
      for (const what of ["NULL", "MISSING", "TRUE", "FALSE"] as const) {
        if (this.#acceptWord(what)) return { kind: "is", arg: left, what, not };
      }
      this.#fail("ParseExpectedKeyword", "Expected NULL, MISSING, TRUE or FALSE after IS");
    }
    const not = this.#acceptWord("NOT");
    if (this.#acceptWord("LIKE")) {
      const pattern = this.#concat();
      const escape = this.#acceptWord("ESCAPE") ? this.#concat() : undefined;
      return { kind: "like", arg: left, pattern, escape, not };
    }
    if (this.#acceptWord("BETWEEN")) {
      const low = this.#concat();
      this.#expectWord("AND");
      return { kind: "between", arg: left, low, high: this.#concat(), not };
    }
    if (this.#acceptWord("IN")) {
      this.#expectOp("(", "ParseExpectedLeftParenValueConstructor");
      const list = [this.#expr()];
      while (this.#acceptOp(",")) list.push(this.#expr());
      this.#expectOp(")");
      return { kind: "in", arg: left, list, not };
    }
    if (not) this.#fail("ParseExpectedKeyword", "Expected LIKE, BETWEEN or IN after NOT");
    return left;
  }

  #concat(): Expr {
    let left = this.#additive();
    while (this.#acceptOp("||")) {
      left = { kind: "binary", op: "||", left, right: this.#additive() };
    }
    return left;
  }

  #additive(): Expr {
    let left = this.#multiplicative();
    while (this.#isOp("+") || this.#isOp("-")) {
      const op = this.#tokens[this.#i++].text;
      left = { kind: "binary", op, left, right: this.#multiplicative() };
    }
    return left;
  }

  #multiplicative(): Expr {
    let left = this.#unary();
    while (this.#isOp("*") || this.#isOp("/") || this.#isOp("%")) {
      const op = this.#tokens[this.#i++].text;
      left = { kind: "binary", op, left, right: this.#unary() };
    }
    return left;
  }

  #unary(): Expr {
    if (this.#acceptOp("-")) {
      const arg = this.#unary();
      if (arg.kind === "literal" && typeof arg.value === "number") {
        return { kind: "literal", value: -arg.value };
      }
      return { kind: "unary", op: "-", arg };
    }
    if (this.#acceptOp("+")) return this.#unary();
    return this.#primary();
  }

  #primary(): Expr {
    const t = this.#t;
    if (t.type === "number") {
      this.#i++;
      return { kind: "literal", value: Number(t.text) };
    }
    if (t.type === "string") {
      this.#i++;
      return { kind: "literal", value: t.text };
    }
    if (this.#acceptOp("(")) {
      const e = this.#expr();
      this.#expectOp(")");
      return e;
    }
    if (t.type !== "ident") this.#fail("ParseExpectedExpression", "Expected an expression");
    if (t.quoted) {
      this.#i++;
      return {
        kind: "path",
        steps: [{ kind: "name", name: t.text, quoted: true }, ...this.#steps()],
      };
    }
    const word = t.text.toUpperCase();
    if (word === "NULL" || word === "MISSING" || word === "TRUE" || word === "FALSE") {
      this.#i++;
      const value = word === "NULL" ? null : word === "MISSING" ? undefined : word === "TRUE";
      return { kind: "literal", value };
    }
    if (word === "CASE") this.#fail("ParseUnsupportedCase", "CASE is not supported");
    const next = this.#tokens[this.#i + 1];
    if (word === "CAST" && next.type === "op" && next.text === "(") {
      this.#i += 2;
      return this.#call(word);
    }
    if (RESERVED.has(word)) this.#fail("ParseUnexpectedKeyword", "Expected an expression");
    if (next.type === "op" && next.text === "(") {
      this.#i += 2;
      return this.#call(word);
    }
    if (word === "CAST") this.#fail("ParseExpectedLeftParenAfterCast", "Expected '(' after CAST");
    if (AGGREGATES.has(word) || FUNCTIONS.has(word)) {
      this.#fail("ParseExpectedLeftParenBuiltinFunctionCall", `Expected '(' after ${word}`);
    }
    this.#i++;
    return {
      kind: "path",
      steps: [{ kind: "name", name: t.text, quoted: false }, ...this.#steps()],
    };
  }

  #closeCall(): void {
    this.#expectOp(")", "ParseExpectedRightParenBuiltinFunctionCall");
  }

  #datePart(): string {
    const t = this.#t;
    const part = t.type === "ident" ? t.text.toUpperCase() : "";
    if (!DATE_PARTS.has(part)) this.#fail("ParseExpectedDatePart", "Expected a date part");
    this.#i++;
    return part;
  }

  /** After `NAME(`. */
  #call(name: string): Expr {
    if (name === "CAST") {
      const arg = this.#expr();
      this.#expectWord("AS");
      const t = this.#t;
      const type = t.type === "ident" ? t.text.toUpperCase() : "";
      if (!CAST_TYPES.has(type)) this.#fail("ParseExpectedTypeName", "Expected a type name");
      this.#i++;
      this.#closeCall();
      return { kind: "cast", arg, type };
    }
    if (AGGREGATES.has(name)) {
      let arg: Expr | null = null;
      if (this.#acceptOp("*")) {
        if (name !== "COUNT") this.#fail("ParseUnsupportedCallWithStar", `${name}(*) is invalid`);
      } else arg = this.#expr();
      if (this.#isOp(",")) {
        this.#fail("ParseNonUnaryAgregateFunctionCall", `${name} takes one argument`);
      }
      this.#closeCall();
      if (arg && hasAggregate(arg)) {
        throw new S3Error("UnsupportedSqlStructure", "Aggregate functions cannot be nested.");
      }
      return { kind: "aggregate", name, arg };
    }
    if (name === "EXTRACT") {
      const part = this.#datePart();
      this.#expectWord("FROM");
      const arg = this.#expr();
      this.#closeCall();
      return { kind: "call", name, args: [{ kind: "literal", value: part }, arg] };
    }
    if (name === "DATE_ADD" || name === "DATE_DIFF") {
      const part = this.#datePart();
      if (part.startsWith("TIMEZONE")) {
        this.#fail("ParseExpectedDatePart", `${part} cannot be used with ${name}`);
      }
      const args: Expr[] = [{ kind: "literal", value: part }];
      for (let k = 0; k < 2; k++) {
        this.#expectOp(",", "ParseExpectedArgumentDelimiter");
        args.push(this.#expr());
      }
      this.#closeCall();
      return { kind: "call", name, args };
    }
    if (name === "TRIM") return this.#trim();
    if (name === "SUBSTRING") return this.#substring();
    if (!FUNCTIONS.has(name)) {
      throw new S3Error("UnsupportedFunction", `The function ${name} is not supported.`);
    }
    const args: Expr[] = [];
    if (!this.#isOp(")")) {
      args.push(this.#expr());
      while (this.#acceptOp(",")) args.push(this.#expr());
    }
    this.#closeCall();
    checkArity(name, args.length);
    return { kind: "call", name, args };
  }

  /** TRIM([[LEADING|TRAILING|BOTH] [chars] FROM] s). */
  #trim(): Expr {
    let where = "BOTH";
    for (const w of ["LEADING", "TRAILING", "BOTH"]) {
      if (this.#acceptWord(w)) where = w;
    }
    let chars: Expr = { kind: "literal", value: " " };
    let arg: Expr;
    if (this.#acceptWord("FROM")) arg = this.#expr();
    else {
      const first = this.#expr();
      if (this.#acceptWord("FROM")) {
        chars = first;
        arg = this.#expr();
      } else arg = first;
    }
    this.#closeCall();
    return { kind: "call", name: "TRIM", args: [{ kind: "literal", value: where }, chars, arg] };
  }

  /** SUBSTRING(s FROM start [FOR length]) or SUBSTRING(s, start [, length]). */
  #substring(): Expr {
    const args = [this.#expr()];
    if (this.#acceptWord("FROM")) {
      args.push(this.#expr());
      if (this.#acceptWord("FOR")) args.push(this.#expr());
    } else {
      this.#expectOp(",", "ParseExpectedArgumentDelimiter");
      args.push(this.#expr());
      if (this.#acceptOp(",")) args.push(this.#expr());
    }
    this.#closeCall();
    return { kind: "call", name: "SUBSTRING", args };
  }
}

const ARITY: Record<string, [number, number]> = {
  LOWER: [1, 1],
  UPPER: [1, 1],
  CHAR_LENGTH: [1, 1],
  CHARACTER_LENGTH: [1, 1],
  COALESCE: [1, Infinity],
  NULLIF: [2, 2],
  UTCNOW: [0, 0],
  TO_TIMESTAMP: [1, 1],
  TO_STRING: [2, 2],
};

function checkArity(name: string, n: number): void {
  const [min, max] = ARITY[name];
  if (n < min || n > max) {
    throw new S3Error(
      "IncorrectSqlFunctionArgumentType",
      `${name} takes ${min === max ? min : `at least ${min}`} argument(s), not ${n}.`,
    );
  }
}

function isRecordStar(item: SelectItem, alias: string): boolean {
  const e = item.expr;
  if (item.alias !== undefined || e.kind !== "path" || e.steps.length !== 2) return false;
  const [first, second] = e.steps;
  if (first.kind !== "name" || first.quoted || second.kind !== "star") return false;
  const name = first.name.toLowerCase();
  return name === alias.toLowerCase() || name === "s3object";
}

function children(e: Expr): Expr[] {
  switch (e.kind) {
    case "literal":
    case "path":
      return [];
    case "unary":
    case "cast":
      return [e.arg];
    case "binary":
      return [e.left, e.right];
    case "like":
      return e.escape ? [e.arg, e.pattern, e.escape] : [e.arg, e.pattern];
    case "between":
      return [e.arg, e.low, e.high];
    case "in":
      return [e.arg, ...e.list];
    case "is":
      return [e.arg];
    case "call":
      return e.args;
    case "aggregate":
      return e.arg ? [e.arg] : [];
  }
}

function hasAggregate(e: Expr): boolean {
  return e.kind === "aggregate" || children(e).some(hasAggregate);
}

/** True when every path in `e` sits inside an aggregate (constants are fine). */
function aggregateOnly(e: Expr): boolean {
  if (e.kind === "aggregate") return true;
  if (e.kind === "path") return false;
  return children(e).every(aggregateOnly);
}

export function parseQuery(sql: string): Query {
  return new Parser(sql).query();
}
