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

/** Returns false to stop the reader (LIMIT reached). */
export type OnFields = (fields: string[]) => boolean;

export class CsvReader {
  #pending = "";
  #stopped = false;

  constructor(readonly opts: CsvInput, readonly onRecord: OnFields) {}

  get stopped(): boolean {
    return this.#stopped;
  }

  push(text: string): void {
    if (this.#stopped) return;
    const buf = this.#pending + text;
    this.#pending = buf.slice(this.#parse(buf, false));
  }

  end(): void {
    if (this.#stopped || this.#pending === "") return;
    this.#parse(this.#pending, true);
    this.#pending = "";
  }

  #emit(fields: string[]): void {
    if (!this.onRecord(fields)) this.#stopped = true;
  }

  /** Parses the complete records of `buf`; returns where the unfinished rest begins. */
  #parse(buf: string, final: boolean): number {
    const { fieldDelimiter: fd, recordDelimiter: rd, quote: q, comments } = this.opts;
    const lf = rd === "\n";
    let pos = 0;
    let nextQuote = q === "" ? -1 : buf.indexOf(q);
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
        if (end > pos) this.#emit(buf.slice(pos, end).split(fd));
        pos = nl + rd.length;
        continue;
      }
      const limit = this.opts.allowQuotedRecordDelimiter ? buf.length : nl;
      const parsed = this.#quoted(buf, pos, limit, final || limit === nl);
      if (!parsed) {
        if (buf.length - pos > MAX_RECORD) throw recordTooLarge();
        return pos;
      }
      this.#emit(parsed.fields);
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
      [...value].length > max || (value === "" && name !== "Comments" && name !== "QuoteCharacter")
    ) {
      throw new S3Error(
        "InvalidRequestParameter",
        `${where} ${name} must be ${max === 2 ? "one or two characters" : "a single character"}.`,
      );
    }
  }
}
