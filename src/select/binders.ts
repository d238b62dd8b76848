// How paths reach into records: CSV columns by name or position, JSON members and elements.
import { S3Error } from "../http/errors.ts";
import type { Step, Value } from "./ast.ts";
import type { CsvRow } from "./csv_reader.ts";
import type { Binder, Getter } from "./eval.ts";

/** Columns of a CSV record, by `_N` or by header name (case-insensitive unless quoted). */
export function csvBinder(header: string[] | undefined): Binder<CsvRow> {
  return {
    path(steps: Step[]): Getter<CsvRow> {
      if (steps.length === 0) return (r) => r.all();
      const first = steps[0];
      if (first.kind === "star") return (r) => r.all();
      if (first.kind === "index") {
        throw new S3Error("InvalidColumnIndex", "CSV columns are named _1, _2, ... or by header.");
      }
      let index = -1;
      const positional = /^_(\d+)$/.exec(first.name);
      if (header) {
        index = header.indexOf(first.name);
        if (index < 0 && !first.quoted) {
          const lower = first.name.toLowerCase();
          index = header.findIndex((h) => h.toLowerCase() === lower);
        }
      }
      if (index < 0 && positional) {
        index = Number(positional[1]) - 1;
        if (index < 0) throw new S3Error("InvalidColumnIndex", "Column indexes start at _1.");
      }
      if (index < 0) {
        throw new S3Error(
          "EvaluatorBindingDoesNotExist",
          header
            ? `The column '${first.name}' is not in the header.`
            : `The column '${first.name}' needs FileHeaderInfo USE; without it use _1, _2, ...`,
        );
      }
      // A CSV field is text: any step into it is MISSING.
      if (steps.length > 1) return () => undefined;
      return (r) => r.field(index);
    },
  };
}

function member(v: Value, name: string, quoted: boolean): Value {
  if (v === null || typeof v !== "object" || Array.isArray(v) || v instanceof Date) {
    return undefined;
  }
  const exact = v[name];
  if (exact !== undefined || quoted) return exact;
  const lower = name.toLowerCase();
  for (const key of Object.keys(v)) if (key.toLowerCase() === lower) return v[key];
  return undefined;
}

/** Every value `steps` reaches from `v` (a wildcard fans out over elements or members). */
export function walk(v: Value, steps: Step[], from = 0, out: Value[] = []): Value[] {
  if (from === steps.length) {
    if (v !== undefined) out.push(v);
    return out;
  }
  const step = steps[from];
  if (step.kind === "name") walk(member(v, step.name, step.quoted), steps, from + 1, out);
  else if (step.kind === "index") {
    if (Array.isArray(v)) walk(v[step.index], steps, from + 1, out);
  } else if (Array.isArray(v)) {
    for (const x of v) walk(x, steps, from + 1, out);
  } else if (v !== null && typeof v === "object" && !(v instanceof Date)) {
    for (const x of Object.values(v)) walk(x, steps, from + 1, out);
  }
  return out;
}

export const jsonBinder: Binder<Value> = {
  path(steps: Step[]): Getter<Value> {
    if (steps.some((s) => s.kind === "star")) return (r) => walk(r, steps);
    return (r) => {
      let v = r;
      for (const s of steps) {
        if (s.kind === "name") v = member(v, s.name, s.quoted);
        else v = Array.isArray(v) ? v[(s as { index: number }).index] : undefined;
        if (v === undefined) return undefined;
      }
      return v;
    };
  },
};
