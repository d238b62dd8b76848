// Result records -> output text (CSV or JSON lines), gathered into batches for Records events.
import type { Value } from "./ast.ts";
import { textOf, toJson } from "./eval.ts";
import { MAX_RECORD, recordTooLarge } from "./limits.ts";
import type { SelectRequest } from "./request.ts";

export interface RecordWriter {
  /** One result record: its values and, for JSON output, their names. */
  write(names: readonly string[], values: readonly Value[]): void;
  /** One result record that is already a JSON value (SELECT * over JSON input). */
  writeValue(value: Value): void;
  /** Text gathered so far (and cleared). */
  take(): string;
  readonly size: number;
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

class Batch {
  #parts: string[] = [];
  size = 0;
  add(record: string): void {
    if (record.length > MAX_RECORD) throw recordTooLarge();
    this.#parts.push(record);
    this.size += record.length;
  }
  take(): string {
    const text = this.#parts.join("");
    this.#parts = [];
    this.size = 0;
    return text;
  }
}

export function recordWriter(output: SelectRequest["output"]): RecordWriter {
  const batch = new Batch();
  if (output.kind === "JSON") {
    const rd = output.recordDelimiter;
    const write = (names: readonly string[], values: readonly Value[]) => {
      const obj: Record<string, unknown> = {};
      for (let i = 0; i < values.length; i++) {
        if (values[i] !== undefined) obj[names[i]] = toJson(values[i]);
      }
      batch.add(JSON.stringify(obj) + rd);
    };
    return {
      write,
      writeValue: (v) => {
        if (v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Date)) {
          batch.add(JSON.stringify(toJson(v)) + rd);
        } else write(["_1"], [v]);
      },
      take: () => batch.take(),
      get size() {
        return batch.size;
      },
    };
  }
  const { fieldDelimiter: fd, recordDelimiter: rd, quote: q, quoteEscape: esc } = output.csv;
  const always = output.csv.quoteFields === "ALWAYS";
  const special = new RegExp(
    [fd, rd, q, "\n", "\r"].filter((s) => s !== "").map(escapeRegex).join("|"),
  );
  const quoteAll = q === "" ? null : new RegExp(escapeRegex(q), "g");
  const field = (text: string): string => {
    if (q === "" || (!always && !special.test(text))) return text;
    return q + text.replace(quoteAll!, esc + q) + q;
  };
  const csvLine = (values: readonly Value[]): string => {
    let line = "";
    for (let i = 0; i < values.length; i++) {
      if (i > 0) line += fd;
      line += field(textOf(values[i]));
    }
    return line + rd;
  };
  return {
    write: (_names, values) => batch.add(csvLine(values)),
    writeValue: (v) => {
      if (v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Date)) {
        batch.add(csvLine(Object.values(v)));
      } else batch.add(csvLine(Array.isArray(v) ? v : [v]));
    },
    take: () => batch.take(),
    get size() {
      return batch.size;
    },
  };
}
