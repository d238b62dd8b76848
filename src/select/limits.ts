// Limits of the protocol's SELECT: the SQL text and a single record (in the input or result).
import { S3Error } from "../http/errors.ts";

export const MAX_EXPRESSION = 256 * 1024;
export const MAX_RECORD = 1024 * 1024;

export function recordTooLarge(): S3Error {
  return new S3Error(
    "OverMaxRecordSize",
    `A record in the input or result is longer than ${MAX_RECORD} bytes.`,
  );
}
