// A push parser for CSV text: decoded text goes in slice by slice, records (arrays of field
// strings) come out through a callback. Only the unfinished last record is kept between slices.
import { S3Error } from "../http/errors.ts";
import { MAX_RECORD, recordTooLarge } from "./limits.ts";

export interface CsvInput {
  fieldDelimiter: string;
  recordDelimiter: string;
  quote: string;
  quoteEscape: string;
  /** Lines starting with it are skipped; "" for none. */
  comments: string;
  allowQuotedRecordDelimiter: boolean;
}

/**
 * One record, valid only during the callback (the reader reuses it). Fields of a plain line are
 * found lazily: a query touching two columns never splits the rest of the line.
 */
export class CsvRow {
  #buf = "";
  #start = 0;
  #end = 0;
  /** End offsets of the fields found so far. */
  #ends = new Int32Array(64);
  #found = 0;
  #complete = false;
  #fields: string[] | undefined;

  constructor(readonly delimiter: string) {}

  /** A plain line: `buf` from `start` to `end` (exclusive), no quotes in it. */
  setLine(buf: string, start: number, end: number): void {
    this.#buf = buf;
    this.#start = start;
    this.#end = end;
    this.#found = 0;
    this.#complete = false;
    this.#fields = undefined;
  }

  setFields(fields: string[]): void {
    this.#fields = fields;
  }

  /** Field `i` (from 0); undefined when the record has fewer. */
  field(i: number): string | undefined {
    if (this.#fields) return this.#fields[i];
    const d = this.delimiter;
    while (this.#found <= i && !this.#complete) {
      const from = this.#found === 0 ? this.#start : this.#ends[this.#found - 1] + d.length;
      let at: number;
      if (d.length === 1) {
        // A character loop: cheaper than indexOf calls on short fields.
        const buf = this.#buf;
        const end = this.#end;
        const dc = d.charCodeAt(0);
        at = from;
        while (at < end && buf.charCodeAt(at) !== dc) at++;
      } else {
        at = this.#buf.indexOf(d, from);
        if (at < 0) at = this.#end;
      }
      if (at >= this.#end) {
        at = this.#end;
        this.#complete = true;
      }
      if (this.#found === this.#ends.length) {
        const grown = new Int32Array(this.#ends.length * 2);
        grown.set(this.#ends);
        this.#ends = grown;
      }
      this.#ends[this.#found++] = at;
    }
    if (i >= this.#found) return undefined;
    const from = i === 0 ? this.#start : this.#ends[i - 1] + d.length;
    return this.#buf.slice(from, this.#ends[i]);
  }

  all(): string[] {
    return this.#fields ?? this.#buf.slice(this.#start, this.#end).split(this.delimiter);
  }
}

/** Returns false to stop the reader (LIMIT reached). */
export type OnFields = (row: CsvRow) => boolean;

export class CsvReader {
  #pending = "";
  #stopped = false;
  readonly #row: CsvRow;

  constructor(readonly opts: CsvInput, readonly onRecord: OnFields) {
    this.#row = new CsvRow(opts.fieldDelimiter);
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  push(text: string): void {
    if (this.#stopped) return;
    let from = 0;
    if (this.#pending !== "") {
      // The record cut by the slice boundary is parsed on its own, so the bulk of the slice is
      // read from the decoder's flat string rather than a concatenation (much slower to scan).
      const rd = this.opts.recordDelimiter;
      const nl = text.indexOf(rd);
      const head = this.#pending + (nl < 0 ? text : text.slice(0, nl + rd.length));
      const used = nl < 0 ? 0 : this.#parse(head, 0, false);
      if (used < head.length) {
        const buf = this.#pending + text;
        this.#pending = buf.slice(this.#parse(buf, 0, false));
        return;
      }
      from = nl + rd.length;
    }
    this.#pending = text.slice(this.#parse(text, from, false));
  }

  end(): void {
    if (this.#stopped || this.#pending === "") return;
    this.#parse(this.#pending, 0, true);
    this.#pending = "";
  }

  #emit(): void {
    if (!this.onRecord(this.#row)) this.#stopped = true;
  }

  /** Parses the complete records of `buf`; returns where the unfinished rest begins. */
  #parse(buf: string, from: number, final: boolean): number {
    const { recordDelimiter: rd, quote: q, comments } = this.opts;
    const lf = rd === "\n";
    let pos = from;
    let nextQuote = q === "" ? -1 : buf.indexOf(q, from);
    while (pos < buf.length && !this.#stopped) {
      let nl = buf.indexOf(rd, pos);
      if (nl < 0) {
        if (buf.length - pos > MAX_RECORD) throw recordTooLarge();
        if (!final) return pos;
        nl = buf.length;
      }
      if (nl - pos > MAX_RECORD) throw recordTooLarge();
      if (comments !== "" && buf.startsWith(comments, pos)) {
        pos = nl + rd.length;
        continue;
      }
      if (nextQuote >= 0 && nextQuote < pos) nextQuote = buf.indexOf(q, pos);
      if (nextQuote < 0 || nextQuote >= nl) {
        let end = nl;
        if (lf && end > pos && buf.charCodeAt(end - 1) === 13) end--;
        if (end > pos) {
          this.#row.setLine(buf, pos, end);
          this.#emit();
        }
        pos = nl + rd.length;
        continue;
      }
      const limit = this.opts.allowQuotedRecordDelimiter ? buf.length : nl;
      const parsed = this.#quoted(buf, pos, limit, final || limit === nl);
      if (!parsed) {
        if (buf.length - pos > MAX_RECORD) throw recordTooLarge();
        return pos;
      }
      this.#row.setFields(parsed.fields);
      this.#emit();
      pos = parsed.end + rd.length;
    }
    return Math.min(pos, buf.length);
  }

  /**
   * One record with quoted fields, from `pos`, ending at a record delimiter outside quotes (or at
   * `limit`). Undefined when the text ends inside a quoted field and more may follow.
   */
  #quoted(
    buf: string,
    pos: number,
    limit: number,
    complete: boolean,
  ): { fields: string[]; end: number } | undefined {
    const { fieldDelimiter: fd, recordDelimiter: rd, quote: q, quoteEscape: esc } = this.opts;
    const fields: string[] = [];
    let field = "";
    let i = pos;
    let inQuotes = false;
    while (true) {
      if (i >= limit) {
        if (inQuotes && !complete) return undefined;
        if (rd === "\n" && field.endsWith("\r") && !inQuotes) field = field.slice(0, -1);
        fields.push(field);
        return { fields, end: limit };
      }
      if (i - pos > MAX_RECORD) throw recordTooLarge();
      const c = buf[i];
      if (inQuotes) {
        if (esc !== q && c === esc && buf[i + 1] === q) {
          field += q;
          i += 2;
        } else if (c === q) {
          if (esc === q && buf[i + 1] === q) {
            field += q;
            i += 2;
          } else {
            inQuotes = false;
            i++;
          }
        } else {
          field += c;
          i++;
        }
        continue;
      }
      if (buf.startsWith(rd, i)) {
        if (rd === "\n" && field.endsWith("\r")) field = field.slice(0, -1);
        fields.push(field);
        return { fields, end: i };
      }
      if (buf.startsWith(fd, i)) {
        fields.push(field);
        field = "";
        i += fd.length;
      } else if (c === q) {
        inQuotes = true;
        i++;
      } else {
        field += c;
        i++;
      }
    }
  }
}

/** Checks the single-character settings of a CSV serialization. */
export function checkCsvChars(opts: Record<string, string>, where: string): void {
  for (const [name, value] of Object.entries(opts)) {
    const max = name === "RecordDelimiter" ? 2 : 1;
    if (
      [...value].length > max ||
      (value === "" && (name === "FieldDelimiter" || name === "RecordDelimiter"))
    ) {
      throw new S3Error(
        "InvalidRequestParameter",
        `${where} ${name} must be ${max === 2 ? "one or two characters" : "a single character"}.`,
      );
    }
  }
}
