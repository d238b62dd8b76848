// The Range header: one byte range, including open (`bytes=5-`) and suffix (`bytes=-5`) forms.
import { S3Error } from "./errors.ts";

export interface ByteRange {
  offset: number;
  length: number;
}

/**
 * Resolves a Range header against an object size. Returns undefined when the header is absent
 * or not a single byte range (the protocol then serves the whole object), and throws
 * InvalidRange when the range is unsatisfiable.
 */
export function parseRange(header: string | null, size: number): ByteRange | undefined {
  if (header === null) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return undefined;
  let first: number;
  let last: number;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0) throw invalidRange(size);
    first = Math.max(0, size - suffix);
    last = size - 1;
  } else {
    first = Number(m[1]);
    last = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== "" && Number(m[2]) < first) return undefined;
  }
  if (first >= size) throw invalidRange(size);
  return { offset: first, length: last - first + 1 };
}

function invalidRange(size: number): S3Error {
  return new S3Error("InvalidRange", "The requested range is not satisfiable.", {
    details: { ActualObjectSize: String(size) },
    headers: { "content-range": `bytes */${size}` },
  });
}

export function contentRange(range: ByteRange, size: number): string {
  return `bytes ${range.offset}-${range.offset + range.length - 1}/${size}`;
}
