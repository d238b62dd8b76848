// SQL text -> tokens. Identifiers are kept as written (the parser compares keywords
// case-insensitively); double-quoted identifiers are marked quoted and match names exactly.
import { S3Error } from "../http/errors.ts";

export type Token =
  | { type: "ident"; text: string; quoted: boolean; pos: number }
  | { type: "string"; text: string; pos: number }
  | { type: "number"; text: string; pos: number }
  | { type: "op"; text: string; pos: number }
  | { type: "end"; text: ""; pos: number };

const OPS = [
  "<>",
  "!=",
  "<=",
  ">=",
  "||",
  "(",
  ")",
  "[",
  "]",
  ",",
  ".",
  "*",
  "+",
  "-",
  "/",
  "%",
  "=",
  "<",
  ">",
  ";",
];

// Sticky: matched at lastIndex, without copying the rest of the text.
const NUMBER = /(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/y;
const IDENT = /[A-Za-z_][A-Za-z0-9_]*/y;

export function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === "-" && sql[i + 1] === "-") {
      // A line comment.
      while (i < sql.length && sql[i] !== "\n") i++;
      continue;
    }
    const pos = i;
    if (c === "'" || c === '"') {
      const parts: string[] = [];
      i++;
      while (true) {
        if (i >= sql.length) {
          throw new S3Error(
            "LexerInvalidLiteral",
            `Unterminated ${c === "'" ? "string literal" : "quoted identifier"} at ${pos}.`,
          );
        }
        if (sql[i] === c) {
          if (sql[i + 1] === c) {
            parts.push(c);
            i += 2;
            continue;
          }
          i++;
          break;
        }
        const next = sql.indexOf(c, i);
        const stop = next < 0 ? sql.length : next;
        parts.push(sql.slice(i, stop));
        i = stop;
      }
      const text = parts.join("");
      out.push(
        c === "'" ? { type: "string", text, pos } : { type: "ident", text, quoted: true, pos },
      );
      continue;
    }
    if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(sql[i + 1] ?? ""))) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(sql)!;
      out.push({ type: "number", text: m[0], pos });
      i += m[0].length;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      IDENT.lastIndex = i;
      const m = IDENT.exec(sql)!;
      out.push({ type: "ident", text: m[0], quoted: false, pos });
      i += m[0].length;
      continue;
    }
    const op = OPS.find((o) => sql.startsWith(o, i));
    if (!op) throw new S3Error("LexerInvalidChar", `Invalid character '${c}' at ${pos}.`);
    out.push({ type: "op", text: op, pos });
    i += op.length;
  }
  out.push({ type: "end", text: "", pos: sql.length });
  return out;
}
