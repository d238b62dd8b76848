// Structured log lines on stderr (stdout is kept for the one-time credential notice).

type Level = "debug" | "info" | "warn" | "error";
const ORDER: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };
let threshold: Level = "info";

export function setLogLevel(level: Level): void {
  threshold = level;
}

type Sink = (level: "warn" | "error", message: string, fields: Record<string, unknown>) => void;
let sink: Sink | undefined;

/** Where warnings and errors also go (the queryable error log, src/errorlog/). */
export function setLogSink(next: Sink | undefined): void {
  sink = next;
}

export function log(level: Level, message: string, fields: Record<string, unknown> = {}): void {
  if (sink && (level === "warn" || level === "error")) sink(level, message, fields);
  if (ORDER[level] < ORDER[threshold]) return;
  console.error(JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }));
}

export function isDebug(): boolean {
  return threshold === "debug";
}
