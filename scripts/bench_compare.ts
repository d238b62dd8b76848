// --compare: the same loads against another server, and the two side by side with ratios.
import { MiB, sizeLabel } from "./bench_options.ts";
import type { Result } from "./bench_run.ts";

/** Rounds of one op and size folded into one result (rates over the summed time). */
export function mergeRounds(results: Result[]): Result[] {
  const merged = new Map<string, Result>();
  for (const r of results) {
    const id = `${r.op} ${r.size}`;
    const m = merged.get(id);
    if (!m) {
      merged.set(id, { ...r, latencies: [...r.latencies] });
      continue;
    }
    m.ops += r.ops;
    m.errors += r.errors;
    m.seconds += r.seconds;
    m.bytes += r.bytes;
    m.latencies.push(...r.latencies);
    m.firstError ??= r.firstError;
    if (r.cpuSeconds !== undefined) m.cpuSeconds = (m.cpuSeconds ?? 0) + r.cpuSeconds;
    if (r.peakRss !== undefined) m.peakRss = Math.max(m.peakRss ?? 0, r.peakRss);
    if (r.settledRss !== undefined) m.settledRss = Math.max(m.settledRss ?? 0, r.settledRss);
  }
  return [...merged.values()];
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Data moved per second for ops that move object data, else operations per second. */
function rate(r: Result): { value: number; unit: string } {
  return ["put", "mpu", "get", "getrange"].includes(r.op)
    ? { value: r.bytes / 1e6 / r.seconds, unit: "MB/s" }
    : { value: r.ops / r.seconds, unit: "ops/s" };
}

function p99(r: Result): number {
  return percentile([...r.latencies].sort((a, b) => a - b), 99);
}

export function printTableOf(header: string[], rows: string[][]): void {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((row) => row[c].length)));
  const line = (cells: string[]) =>
    cells.map((cell, c) => (c < 2 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])))
      .join("  ");
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of rows) console.log(line(row));
}

/** One row per op and size measured on both: rate, p99 and peak RSS of each, and the ratios. */
export function printComparison(ours: Result[], theirs: Result[]): void {
  const mib = (n?: number) => n === undefined ? "-" : (n / MiB).toFixed(0);
  const cpu = (r: Result) =>
    r.cpuSeconds === undefined || r.ops === 0 ? "-" : (r.cpuSeconds * 1000 / r.ops).toFixed(2);
  const rows: string[][] = [];
  for (const a of ours) {
    const b = theirs.find((r) => r.op === a.op && r.size === a.size);
    if (!b) continue;
    const ra = rate(a);
    const rb = rate(b);
    rows.push([
      a.op.toUpperCase(),
      sizeLabel(a.size),
      ra.unit,
      ra.value.toFixed(1),
      rb.value.toFixed(1),
      (ra.value / rb.value).toFixed(2),
      p99(a).toFixed(1),
      p99(b).toFixed(1),
      cpu(a),
      cpu(b),
      mib(a.peakRss),
      mib(b.peakRss),
    ]);
  }
  printTableOf(
    [
      "op",
      "size",
      "unit",
      "ours",
      "other",
      "ratio",
      "p99 ms",
      "other p99",
      "cpu ms/op",
      "other",
      "peak MiB",
      "other",
    ],
    rows,
  );
  console.log("ratio: ours / other (above 1: ours is faster)");
}
