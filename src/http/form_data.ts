// A streaming multipart/form-data reader (RFC 7578, RFC 2046 §5.1) for browser form uploads.
// The small fields before the file part are read whole, within limits; the file part is handed
// on as a stream of the body's own chunks and is never buffered whole.
import { S3Error } from "./errors.ts";

export interface FormLimits {
  /** Largest value of one field before the file, in bytes. */
  fieldBytes: number;
  /** Largest total of everything before the file (headers, names, values), in bytes. */
  totalBytes: number;
}

export interface FormFile {
  /** The part's field name as sent (`file`). */
  name: string;
  /** The `filename` parameter of its Content-Disposition ("" when absent). */
  filename: string;
  /** The part's own Content-Type header, when it has one. */
  contentType?: string;
  /**
   * The part's bytes, read once. After the last one the rest of the body (fields after the
   * file, which are ignored) is drained, so a broken or unverifiable body fails before the
   * consumer sees the end.
   */
  body: AsyncIterable<Uint8Array>;
}

export interface Form {
  /** Fields before the file part, in order, names as sent. */
  fields: [string, string][];
  /** The part named `fileField`; undefined when the form ended without one. */
  file?: FormFile;
}

const CRLF = new Uint8Array([13, 10]);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function malformedPost(detail: string): S3Error {
  return new S3Error(
    "MalformedPOSTRequest",
    `The body of your POST request is not well-formed multipart/form-data. ${detail}`,
  );
}

function tooLarge(): S3Error {
  return new S3Error(
    "MaxPostPreDataLengthExceeded",
    "Your POST request fields preceding the upload file were too large.",
  );
}

/** The boundary of a `multipart/form-data` Content-Type, or undefined for any other type. */
export function formBoundary(contentType: string | null): string | undefined {
  if (contentType === null) return undefined;
  const [type, ...params] = contentType.split(";");
  if (type.trim().toLowerCase() !== "multipart/form-data") return undefined;
  for (const param of params) {
    const eq = param.indexOf("=");
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== "boundary") continue;
    let value = param.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
      value = value.slice(1, -1);
    }
    // RFC 2046: 1 to 70 characters.
    return value.length >= 1 && value.length <= 70 ? value : undefined;
  }
  return undefined;
}

/** Position of `needle` in `hay` at or after `from`, or -1. */
export function indexOfBytes(hay: Uint8Array, needle: Uint8Array, from = 0): number {
  const last = hay.length - needle.length;
  for (
    let i = hay.indexOf(needle[0], from);
    i >= 0 && i <= last;
    i = hay.indexOf(needle[0], i + 1)
  ) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/** Unconsumed bytes of the body, refilled chunk by chunk. */
class Reader {
  #it: AsyncIterator<Uint8Array>;
  #done = false;
  buf: Uint8Array;

  constructor(body: AsyncIterable<Uint8Array>, initial: Uint8Array) {
    this.#it = body[Symbol.asyncIterator]();
    this.buf = initial;
  }

  /** Appends the next chunk; false at the end of the body. */
  async more(): Promise<boolean> {
    if (this.#done) return false;
    const next = await this.#it.next();
    if (next.done) {
      this.#done = true;
      return false;
    }
    if (this.buf.length === 0) {
      this.buf = next.value;
    } else {
      const joined = new Uint8Array(this.buf.length + next.value.length);
      joined.set(this.buf);
      joined.set(next.value, this.buf.length);
      this.buf = joined;
    }
    return true;
  }

  /** Makes sure at least `n` bytes are buffered; false when the body ends first. */
  async need(n: number): Promise<boolean> {
    while (this.buf.length < n) if (!(await this.more())) return false;
    return true;
  }

  take(n: number): Uint8Array {
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }

  /** Releases the body stream early (on errors). */
  async cancel(): Promise<void> {
    this.#done = true;
    await this.#it.return?.();
  }
}

interface PartHead {
  name: string;
  filename?: string;
  contentType?: string;
  bytes: number;
}

/** Parameters of a Content-Disposition value such as `form-data; name="a"; filename="b"`. */
function dispositionParams(value: string): Record<string, string> | undefined {
  if (!/^\s*form-data\s*(;|$)/i.test(value)) return undefined;
  const out: Record<string, string> = {};
  const re = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (const m of value.matchAll(re)) {
    out[m[1].toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : m[3].trim();
  }
  return out;
}

/** Reads the header lines of a part up to the empty line. */
async function readPartHead(reader: Reader, budget: number): Promise<PartHead> {
  let bytes = 0;
  let disposition: Record<string, string> | undefined;
  let contentType: string | undefined;
  while (true) {
    let at = indexOfBytes(reader.buf, CRLF);
    while (at < 0) {
      if (reader.buf.length > budget - bytes) throw tooLarge();
      if (!(await reader.more())) throw malformedPost("The form ended inside part headers.");
      at = indexOfBytes(reader.buf, CRLF);
    }
    bytes += at + 2;
    if (bytes > budget) throw tooLarge();
    const line = decoder.decode(reader.take(at));
    reader.take(2);
    if (line === "") break;
    const colon = line.indexOf(":");
    if (colon <= 0) throw malformedPost("A part header has no name.");
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-disposition") disposition = dispositionParams(value);
    else if (name === "content-type") contentType = value;
  }
  if (!disposition || disposition.name === undefined) {
    throw malformedPost("A part has no form-data Content-Disposition with a name.");
  }
  return { name: disposition.name, filename: disposition.filename, contentType, bytes };
}

/**
 * After a delimiter: true for the close delimiter (`--`), false when a part follows (the rest
 * of the boundary line, transport padding and CRLF, is consumed).
 */
async function afterDelimiter(reader: Reader): Promise<boolean> {
  if (!(await reader.need(2))) throw malformedPost("The form ended after a boundary.");
  if (reader.buf[0] === 45 && reader.buf[1] === 45) return true;
  while (true) {
    if (!(await reader.need(2))) throw malformedPost("The form ended after a boundary.");
    const c = reader.buf[0];
    if (c === 13 && reader.buf[1] === 10) {
      reader.take(2);
      return false;
    }
    if (c !== 32 && c !== 9) throw malformedPost("A boundary line has trailing characters.");
    reader.take(1);
  }
}

/** Reads up to the next delimiter (consumed), at most `limit` bytes of value. */
async function readValue(
  reader: Reader,
  delimiter: Uint8Array,
  limit: number,
): Promise<Uint8Array> {
  let from = 0;
  while (true) {
    const at = indexOfBytes(reader.buf, delimiter, from);
    if (at >= 0) {
      if (at > limit) throw tooLarge();
      const value = reader.take(at);
      reader.take(delimiter.length);
      return value;
    }
    if (reader.buf.length > limit + delimiter.length) throw tooLarge();
    from = Math.max(0, reader.buf.length - delimiter.length + 1);
    if (!(await reader.more())) throw malformedPost("The form ended inside a field.");
  }
}

/** The file part's bytes up to the next delimiter; then the rest of the body is drained. */
async function* fileBody(
  reader: Reader,
  delimiter: Uint8Array,
  trailingLimit: number,
): AsyncGenerator<Uint8Array> {
  const keep = delimiter.length - 1;
  let finished = false;
  try {
    while (true) {
      const at = indexOfBytes(reader.buf, delimiter);
      if (at >= 0) {
        if (at > 0) yield reader.take(at);
        reader.take(delimiter.length);
        break;
      }
      if (reader.buf.length > keep) yield reader.take(reader.buf.length - keep);
      if (!(await reader.more())) throw malformedPost("The form ended inside the file.");
    }
    // Fields after the file are ignored, as the protocol defines; the body is still read to
    // its end so that its integrity (signed payload hash, complete transfer) is checked.
    await drain(reader, trailingLimit);
    finished = true;
  } finally {
    // Stopped early (an error here or in the consumer): release the body.
    if (!finished) await reader.cancel().catch(() => {});
  }
}

/** Reads the rest of the body, at most `limit` bytes of it. */
async function drain(reader: Reader, limit: number): Promise<void> {
  let rest = reader.take(reader.buf.length).length;
  while (await reader.more()) {
    rest += reader.take(reader.buf.length).length;
    if (rest > limit) throw malformedPost("Too much data follows the last part.");
  }
}

/**
 * Reads a form up to the part named `fileField` (case-insensitive) and returns the fields before
 * it, with the file as a stream. Field values are decoded as UTF-8.
 */
export async function readForm(
  body: AsyncIterable<Uint8Array>,
  opts: { boundary: string; fileField: string; limits: FormLimits },
): Promise<Form> {
  const delimiter = encoder.encode(`\r\n--${opts.boundary}`);
  // A CRLF in front lets the first delimiter (which has none) match like the others.
  const reader = new Reader(body, CRLF);
  const { limits } = opts;
  const fields: [string, string][] = [];
  try {
    let used = (await readValue(reader, delimiter, limits.totalBytes)).length;
    while (!(await afterDelimiter(reader))) {
      const head = await readPartHead(reader, limits.totalBytes - used);
      used += head.bytes;
      if (head.name.toLowerCase() === opts.fileField) {
        return {
          fields,
          file: {
            name: head.name,
            filename: head.filename ?? "",
            contentType: head.contentType,
            body: fileBody(reader, delimiter, limits.totalBytes),
          },
        };
      }
      const value = await readValue(
        reader,
        delimiter,
        Math.min(limits.fieldBytes, limits.totalBytes - used),
      );
      used += value.length;
      fields.push([head.name, decoder.decode(value)]);
    }
    // The close delimiter: the form had no file part.
    await drain(reader, limits.totalBytes);
    return { fields };
  } catch (err) {
    await reader.cancel().catch(() => {});
    throw err;
  }
}
