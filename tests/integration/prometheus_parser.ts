// A strict parser of the Prometheus text exposition format (0.0.4) for the metrics tests: every
// line must be a HELP, a TYPE or a sample; a family's HELP/TYPE come once, before its samples,
// and its samples are contiguous; names and label names follow the format's grammar; values are
// floats; histograms have increasing `le` buckets ending in +Inf equal to _count.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = ["counter", "gauge", "histogram", "summary", "untyped"];

function parseValue(text: string, line: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) {
    throw new Error(`Bad value "${text}" in: ${line}`);
  }
  return Number(text);
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf("=", i);
    if (eq < 0) throw new Error(`Bad labels in: ${line}`);
    const name = text.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`Bad label name "${name}" in: ${line}`);
    if (name in labels) throw new Error(`Label ${name} repeated in: ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`Unquoted label value in: ${line}`);
    let value = "";
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === "\\") {
        const next = text[++j];
        if (next === "n") value += "\n";
        else if (next === "\\" || next === '"') value += next;
        else throw new Error(`Bad escape in: ${line}`);
      } else value += text[j];
    }
    if (j >= text.length) throw new Error(`Unterminated label value in: ${line}`);
    labels[name] = value;
    i = j + 1;
    if (i < text.length) {
      if (text[i] !== ",") throw new Error(`Expected a comma in: ${line}`);
      i++;
    }
  }
  return labels;
}

function familyOf(sample: string, families: Map<string, Family>): Family | undefined {
  const direct = families.get(sample);
  if (direct) return direct;
  const m = /^(.*)_(bucket|sum|count)$/.exec(sample);
  const base = m ? families.get(m[1]) : undefined;
  return base && (base.type === "histogram" || base.type === "summary") ? base : undefined;
}

export function parsePrometheus(text: string): Map<string, Family> {
  if (!text.endsWith("\n")) throw new Error("The exposition must end with a newline");
  const families = new Map<string, Family>();
  let current: Family | undefined;
  const closed = new Set<string>();
  for (const line of text.slice(0, -1).split("\n")) {
    if (line === "") throw new Error("Empty line in the exposition");
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta;
      if (!NAME.test(name)) throw new Error(`Bad metric name in: ${line}`);
      let fam = families.get(name);
      if (!fam) {
        if (closed.has(name)) throw new Error(`Family ${name} appears twice`);
        if (current) closed.add(current.name);
        fam = { name, type: "untyped", help: "", samples: [] };
        families.set(name, fam);
        current = fam;
      } else if (fam !== current || fam.samples.length > 0) {
        throw new Error(`${kind} of ${name} after its samples or another family`);
      }
      if (kind === "TYPE") {
        if (!TYPES.includes(rest)) throw new Error(`Bad type in: ${line}`);
        fam.type = rest;
      } else fam.help = rest;
      continue;
    }
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/.exec(line);
    if (!m) throw new Error(`Not a sample line: ${line}`);
    const fam = familyOf(m[1], families);
    if (!fam || fam !== current) throw new Error(`Sample outside its family: ${line}`);
    fam.samples.push({
      name: m[1],
      labels: parseLabels(m[3] ?? "", line),
      value: parseValue(m[4], line),
    });
  }
  for (const fam of families.values()) if (fam.type === "histogram") checkHistogram(fam);
  return families;
}

function checkHistogram(fam: Family): void {
  const series = new Map<string, Sample[]>();
  for (const s of fam.samples) {
    const { le: _le, ...rest } = s.labels;
    const key = JSON.stringify(rest);
    series.set(key, [...(series.get(key) ?? []), s]);
  }
  for (const [key, samples] of series) {
    const buckets = samples.filter((s) => s.name === `${fam.name}_bucket`);
    const count = samples.find((s) => s.name === `${fam.name}_count`);
    if (!count || !samples.some((s) => s.name === `${fam.name}_sum`)) {
      throw new Error(`${fam.name}${key}: no _sum or _count`);
    }
    let lastLe = -Infinity;
    let lastValue = 0;
    for (const b of buckets) {
      const le = parseValue(b.labels.le, b.labels.le);
      if (!(le > lastLe) || b.value < lastValue) {
        throw new Error(`${fam.name}${key}: buckets not increasing`);
      }
      lastLe = le;
      lastValue = b.value;
    }
    if (lastLe !== Infinity || lastValue !== count.value) {
      throw new Error(`${fam.name}${key}: the +Inf bucket must end the buckets and equal _count`);
    }
  }
}

/** The value of one sample (0 when the series does not exist yet). */
export function value(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number {
  const fam = familyOf(name, families);
  const s = fam?.samples.find((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  return s?.value ?? 0;
}
