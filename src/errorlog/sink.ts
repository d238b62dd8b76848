// The error log's writer: every warning and error logged (requests, lifecycle, scrub, notification
// delivery, ...) also becomes a row, at most STORE_ERROR_LOG_MAX of them. Rows are written through
// the group commit, never inside another write's transaction, and a failure to write one is only
// printed (logging it would loop).
import type { ErrorRecord, RecordStore } from "../meta/store.ts";

const MAX_TEXT = 4096;

function text(value: unknown): string {
  return typeof value === "string" ? value.slice(0, MAX_TEXT) : "";
}

export function errorRecord(
  level: "warn" | "error",
  message: string,
  fields: Record<string, unknown>,
  at = Date.now(),
): Omit<ErrorRecord, "id"> {
  const { source, code, bucket, requestId, operation, ...rest } = fields;
  const detail = Object.keys(rest).length > 0 ? JSON.stringify(rest).slice(0, MAX_TEXT) : "";
  return {
    at,
    level,
    source: text(source) || (requestId ? "request" : "server"),
    code: text(code),
    bucket: text(bucket),
    requestId: text(requestId),
    operation: text(operation),
    message: message.slice(0, MAX_TEXT),
    detail,
  };
}

export function errorLogSink(meta: RecordStore, max: number) {
  return (level: "warn" | "error", message: string, fields: Record<string, unknown>) => {
    meta.appendError(errorRecord(level, message, fields), max).catch((err) => {
      // A warning: the row is lost (typically on a full disk), the server is fine.
      console.error(JSON.stringify({
        time: new Date().toISOString(),
        level: "warn",
        message: "Error log write failed",
        error: String(err),
      }));
    });
  };
}
