// The parsed form of a query: expressions, the SELECT list, the FROM path, WHERE and LIMIT.

/** A step of a path: a member name (quoted names match exactly), an index, or a wildcard. */
export type Step =
  | { kind: "name"; name: string; quoted: boolean }
  | { kind: "index"; index: number }
  | { kind: "star" };

export type Expr =
  | { kind: "literal"; value: Value }
  | { kind: "path"; steps: Step[] }
  | { kind: "unary"; op: "-" | "NOT"; arg: Expr }
  | { kind: "binary"; op: string; left: Expr; right: Expr }
  | { kind: "like"; arg: Expr; pattern: Expr; escape?: Expr; not: boolean }
  | { kind: "between"; arg: Expr; low: Expr; high: Expr; not: boolean }
  | { kind: "in"; arg: Expr; list: Expr[]; not: boolean }
  | { kind: "is"; arg: Expr; what: "NULL" | "MISSING" | "TRUE" | "FALSE"; not: boolean }
  | { kind: "call"; name: string; args: Expr[] }
  | { kind: "cast"; arg: Expr; type: string }
  | { kind: "aggregate"; name: string; arg: Expr | null };

export interface SelectItem {
  expr: Expr;
  alias?: string;
}

export interface Query {
  /** "*" for SELECT *. */
  items: SelectItem[] | "*";
  /** The path after S3Object (`S3Object[*].a.b` gives [star, a, b]). */
  from: Step[];
  /** The table alias, lower-cased; "s3object" when none is given. */
  alias: string;
  where?: Expr;
  limit?: number;
  aggregate: boolean;
}

/**
 * A SQL value. `undefined` is MISSING (an absent field), `null` is NULL; timestamps are Dates;
 * JSON objects and arrays stay as parsed.
 */
export type Value =
  | undefined
  | null
  | boolean
  | number
  | string
  | Date
  | Value[]
  | { [name: string]: Value };
