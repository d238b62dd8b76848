// Writing the Prometheus text exposition format (version 0.0.4).

export type Labels = Record<string, string>;

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length > 0 ? `{${parts.join(",")}}` : "";
}

function num(value: number): string {
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  if (Number.isNaN(value)) return "NaN";
  return String(value);
}

/** Accumulates metric families; each family's HELP and TYPE come once, before its samples. */
export class Exposition {
  #lines: string[] = [];

  family(name: string, type: "counter" | "gauge" | "histogram", help: string): this {
    this.#lines.push(`# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`);
    this.#lines.push(`# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, value: number, labels: Labels = {}): this {
    this.#lines.push(`${name}${labelText(labels)} ${num(value)}`);
    return this;
  }

  /** One family with a single sample. */
  single(name: string, type: "counter" | "gauge", help: string, value: number): this {
    return this.family(name, type, help).sample(name, value);
  }

  histogram(name: string, h: Histogram, labels: Labels = {}): this {
    let cumulative = 0;
    h.bounds.forEach((le, i) => {
      cumulative += h.counts[i];
      this.sample(`${name}_bucket`, cumulative, { ...labels, le: num(le) });
    });
    this.sample(`${name}_bucket`, h.count, { ...labels, le: "+Inf" });
    this.sample(`${name}_sum`, h.sum, labels);
    this.sample(`${name}_count`, h.count, labels);
    return this;
  }

  text(): string {
    return this.#lines.join("\n") + "\n";
  }
}

export class Histogram {
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(readonly bounds: number[]) {
    this.counts = bounds.map(() => 0);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const i = this.bounds.findIndex((b) => value <= b);
    if (i >= 0) this.counts[i]++;
  }
}
