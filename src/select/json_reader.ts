// A push parser for JSON input: LINES (one value per line) or DOCUMENT (values one after another,
// each of any size up to the record limit). Each top-level value is parsed whole with JSON.parse.
import { S3Error } from "../http/errors.ts";
import type { Value } from "./ast.ts";
import { MAX_RECORD, recordTooLarge } from "./limits.ts";

export type OnValue = (value: Value) => boolean;

function parse(text: string): Value {
  try {
    return JSON.parse(text) as Value;
  } catch (err) {
    throw new S3Error("JSONParsingError", `The input is not valid JSON: ${(err as Error).message}`);
  }
}

export class JsonReader {
  #pending = "";
  #stopped = false;
  // DOCUMENT scanning state, kept across slices: nesting depth and string/escape flags.
  #depth = 0;
  #inString = false;
  #escaped = false;
  #scanned = 0;

  constructor(readonly lines: boolean, readonly onValue: OnValue) {}

  get stopped(): boolean {
    return this.#stopped;
  }

  #emit(v: Value): void {
    if (!this.onValue(v)) this.#stopped = true;
  }

  push(text: string): void {
    if (this.#stopped) return;
    const buf = this.#pending + text;
    const rest = this.lines ? this.#lines(buf, false) : this.#document(buf, false);
    this.#pending = buf.slice(rest);
  }

  end(): void {
    if (this.#stopped) return;
    const buf = this.#pending;
    this.#pending = "";
    if (this.lines) this.#lines(buf, true);
    else this.#document(buf, true);
  }

  #lines(buf: string, final: boolean): number {
    let pos = this.#batch(buf);
    while (pos < buf.length && !this.#stopped) {
      let nl = buf.indexOf("\n", pos);
      if (nl < 0) {
        if (buf.length - pos > MAX_RECORD) throw recordTooLarge();
        if (!final) return pos;
        nl = buf.length;
      }
      if (nl - pos > MAX_RECORD) throw recordTooLarge();
      const line = buf.slice(pos, nl);
      if (line.trim() !== "") this.#emit(parse(line));
      pos = nl + 1;
    }
    return Math.min(pos, buf.length);
  }

  /**
   * Parses the complete lines of `buf` as one JSON array (a single parse is much cheaper than
   * one per line) when every line is one object within the record limit; returns where
   * line-by-line parsing must go on (0 when the batch was not possible or not valid JSON, so
   * the lines are parsed one by one and an error names the right line).
   */
  #batch(buf: string): number {
    const last = buf.lastIndexOf("\n");
    if (last <= 0) return 0;
    let lines = 0;
    for (let pos = 0; pos < last; lines++) {
      const nl = buf.indexOf("\n", pos);
      // Objects only, one per line: `{` first and `}` last (before an optional CR).
      const end = buf.charCodeAt(nl - 1) === 13 ? nl - 2 : nl - 1;
      if (nl - pos > MAX_RECORD || buf.charCodeAt(pos) !== 123 || buf.charCodeAt(end) !== 125) {
        return 0;
      }
      pos = nl + 1;
    }
    let values: Value[];
    try {
      values = JSON.parse("[" + buf.slice(0, last).replaceAll("\n", ",") + "]");
    } catch {
      return 0;
    }
    // A line holding two values, or a value spread over lines, is parsed line by line (and fails).
    if (values.length !== lines) return 0;
    for (let i = 0; i < values.length && !this.#stopped; i++) this.#emit(values[i]);
    return last + 1;
  }

  /** Finds where each top-level value ends; `#scanned` is how far `buf` was already scanned. */
  #document(buf: string, final: boolean): number {
    let start = 0;
    let i = this.#scanned;
    while (i < buf.length && !this.#stopped) {
      if (this.#depth === 0 && !this.#inString) {
        // Between values: skip white space; a value starts here.
        while (i < buf.length && /\s/.test(buf[i])) i++;
        start = i;
        if (i >= buf.length) break;
        const c = buf[i];
        if (c !== "{" && c !== "[" && c !== '"') {
          // A bare scalar: up to the next white space or structure.
          let j = i;
          while (j < buf.length && !/[\s{["]/.test(buf[j])) j++;
          if (j >= buf.length && !final) break;
          this.#emit(parse(buf.slice(i, j)));
          i = start = j;
          continue;
        }
      }
      for (; i < buf.length; i++) {
        const c = buf.charCodeAt(i);
        if (this.#inString) {
          if (this.#escaped) this.#escaped = false;
          else if (c === 92) this.#escaped = true;
          else if (c === 34) {
            this.#inString = false;
            if (this.#depth === 0) break;
          }
        } else if (c === 34) this.#inString = true;
        else if (c === 123 || c === 91) this.#depth++;
        else if (c === 125 || c === 93) {
          if (--this.#depth === 0) break;
          if (this.#depth < 0) {
            throw new S3Error("JSONParsingError", "Unbalanced brackets in the input.");
          }
        }
      }
      if (i >= buf.length) break;
      i++;
      if (i - start > MAX_RECORD) throw recordTooLarge();
      this.#emit(parse(buf.slice(start, i)));
      start = i;
    }
    if (i >= buf.length && (this.#depth > 0 || this.#inString)) {
      if (final) throw new S3Error("JSONParsingError", "The input ends inside a JSON value.");
      if (buf.length - start > MAX_RECORD) throw recordTooLarge();
    }
    this.#scanned = Math.max(0, i - start);
    return start;
  }
}
