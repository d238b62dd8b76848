// What a transformation is: its actions and where its output goes, as given in rules
// (PUT /api/v1/transforms/{bucket}) and job requests (POST /api/v1/jobs), validated here.
import { EVENT_NAMES } from "../events/names.ts";

export const FORMATS = ["webp", "avif", "jpeg", "png"] as const;
export type Format = typeof FORMATS[number];
export const FITS = ["cover", "contain", "fill", "inside", "outside"] as const;
export type Fit = typeof FITS[number];

export type Action =
  | { thumbnail: { width?: number; height?: number; fit: Fit } }
  | { strip_metadata: true }
  | { convert: { format: Format; quality?: number } };

/** What a job stores (JSON in its row): the actions and the resolved output. */
export interface JobSpec {
  actions: Action[];
  output: { bucket: string; key: string };
}

export interface Rule {
  id: string;
  prefix: string;
  suffix: string;
  /** Unprefixed event names or `ObjectCreated:*`. */
  events: string[];
  actions: Action[];
  output: { bucket?: string; prefix: string };
}

const CREATED = EVENT_NAMES.filter((n) => n.startsWith("ObjectCreated:")) as string[];
const MAX_RULES = 100;
const MAX_ACTIONS = 8;
const MAX_SIDE = 16_384;
const MAX_KEY_BYTES = 1024;

export class SpecError extends Error {}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function onlyFields(v: Record<string, unknown>, allowed: string[], where: string): void {
  const extra = Object.keys(v).filter((k) => !allowed.includes(k));
  if (extra.length > 0) throw new SpecError(`${where}: unknown field ${extra[0]}.`);
}

function keyPart(v: unknown, where: string): string {
  if (v === undefined) return "";
  if (typeof v !== "string" || new TextEncoder().encode(v).length > MAX_KEY_BYTES) {
    throw new SpecError(`${where} must be a string of at most ${MAX_KEY_BYTES} bytes.`);
  }
  return v;
}

function intIn(v: unknown, min: number, max: number, where: string): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw new SpecError(`${where} must be an integer from ${min} to ${max}.`);
  }
  return v;
}

function parseAction(v: unknown, where: string): Action {
  if (!isObject(v) || Object.keys(v).length !== 1) {
    throw new SpecError(
      `${where} must be an object with one of thumbnail, strip_metadata, convert.`,
    );
  }
  if ("strip_metadata" in v) {
    if (v.strip_metadata !== true) throw new SpecError(`${where}.strip_metadata must be true.`);
    return { strip_metadata: true };
  }
  if ("thumbnail" in v) {
    const t = v.thumbnail;
    if (!isObject(t)) throw new SpecError(`${where}.thumbnail must be an object.`);
    onlyFields(t, ["width", "height", "fit"], `${where}.thumbnail`);
    if (t.width === undefined && t.height === undefined) {
      throw new SpecError(`${where}.thumbnail needs width, height or both.`);
    }
    const fit = t.fit ?? "inside";
    if (!FITS.includes(fit as Fit)) {
      throw new SpecError(`${where}.thumbnail.fit must be one of ${FITS.join(", ")}.`);
    }
    return {
      thumbnail: {
        width: t.width === undefined ? undefined : intIn(t.width, 1, MAX_SIDE, `${where}.width`),
        height: t.height === undefined
          ? undefined
          : intIn(t.height, 1, MAX_SIDE, `${where}.height`),
        fit: fit as Fit,
      },
    };
  }
  if ("convert" in v) {
    const c = v.convert;
    if (!isObject(c)) throw new SpecError(`${where}.convert must be an object.`);
    onlyFields(c, ["format", "quality"], `${where}.convert`);
    if (!FORMATS.includes(c.format as Format)) {
      throw new SpecError(`${where}.convert.format must be one of ${FORMATS.join(", ")}.`);
    }
    return {
      convert: {
        format: c.format as Format,
        quality: c.quality === undefined ? undefined : intIn(c.quality, 1, 100, `${where}.quality`),
      },
    };
  }
  throw new SpecError(`${where} must be one of thumbnail, strip_metadata, convert.`);
}

export function parseActions(v: unknown, where = "actions"): Action[] {
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_ACTIONS) {
    throw new SpecError(`${where} must be a list of 1 to ${MAX_ACTIONS} actions.`);
  }
  const actions = v.map((a, i) => parseAction(a, `${where}[${i}]`));
  if (actions.filter((a) => "convert" in a).length > 1) {
    throw new SpecError(`${where} may convert once.`);
  }
  return actions;
}

function parseOutputBucket(v: unknown, where: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "string" || v === "") throw new SpecError(`${where} must be a bucket name.`);
  return v;
}

/** The format a job's output is written in: the converted one, else the input's. */
export function convertedTo(actions: Action[]): Format | undefined {
  for (const a of actions) if ("convert" in a) return a.convert.format;
  return undefined;
}

const EXTENSION: Record<Format, string> = { jpeg: "jpg", png: "png", webp: "webp", avif: "avif" };

/** `key` with its extension replaced by the format's (added when it has none). */
export function withExtension(key: string, format: Format | undefined): string {
  if (!format) return key;
  const slash = key.lastIndexOf("/");
  const dot = key.lastIndexOf(".");
  const stem = dot > slash + 1 ? key.slice(0, dot) : key;
  return `${stem}.${EXTENSION[format]}`;
}

export function parseRules(body: Record<string, unknown>): Rule[] {
  onlyFields(body, ["rules"], "body");
  const { rules } = body;
  if (!Array.isArray(rules) || rules.length === 0 || rules.length > MAX_RULES) {
    throw new SpecError(`rules must be a list of 1 to ${MAX_RULES} rules.`);
  }
  const ids = new Set<string>();
  return rules.map((r, i) => {
    const where = `rules[${i}]`;
    if (!isObject(r)) throw new SpecError(`${where} must be an object.`);
    onlyFields(r, ["id", "prefix", "suffix", "events", "actions", "output"], where);
    if (typeof r.id !== "string" || r.id === "" || r.id.length > 255) {
      throw new SpecError(`${where}.id must be a string of 1 to 255 characters.`);
    }
    if (ids.has(r.id)) throw new SpecError(`${where}.id ${r.id} is used twice.`);
    ids.add(r.id);
    const events = r.events ?? ["ObjectCreated:*"];
    if (
      !Array.isArray(events) || events.length === 0 ||
      !events.every((e) => e === "ObjectCreated:*" || CREATED.includes(e))
    ) {
      throw new SpecError(
        `${where}.events must list ObjectCreated:* or some of ${CREATED.join(", ")}.`,
      );
    }
    if (!isObject(r.output)) throw new SpecError(`${where}.output must be an object.`);
    onlyFields(r.output, ["bucket", "prefix"], `${where}.output`);
    const rule: Rule = {
      id: r.id,
      prefix: keyPart(r.prefix, `${where}.prefix`),
      suffix: keyPart(r.suffix, `${where}.suffix`),
      events: events as string[],
      actions: parseActions(r.actions, `${where}.actions`),
      output: {
        bucket: parseOutputBucket(r.output.bucket, `${where}.output.bucket`),
        prefix: keyPart(r.output.prefix, `${where}.output.prefix`),
      },
    };
    if (
      rule.output.bucket === undefined && rule.output.prefix === rule.prefix &&
      !convertedTo(rule.actions)
    ) {
      throw new SpecError(
        `${where}.output would write over its own input: give another prefix or bucket.`,
      );
    }
    return rule;
  });
}

export function ruleMatches(rule: Rule, key: string, event: string): boolean {
  return key.startsWith(rule.prefix) && key.endsWith(rule.suffix) &&
    rule.events.some((e) => e === event || (e === "ObjectCreated:*" && CREATED.includes(event)));
}

/** The output key of `rule` for source `key`: the part after the rule's prefix, re-prefixed. */
export function ruleOutputKey(rule: Rule, key: string): string {
  return withExtension(
    rule.output.prefix + key.slice(rule.prefix.length),
    convertedTo(rule.actions),
  );
}

/** A job request's output: an explicit key, or the prefix before the source key. */
export function parseJobOutput(
  v: unknown,
  source: { bucket: string; key: string },
  actions: Action[],
): { bucket: string; key: string } {
  if (!isObject(v)) throw new SpecError("output must be an object.");
  onlyFields(v, ["bucket", "prefix", "key"], "output");
  const bucket = parseOutputBucket(v.bucket, "output.bucket") ?? source.bucket;
  if (v.key !== undefined && v.prefix !== undefined) {
    throw new SpecError("output takes a key or a prefix, not both.");
  }
  const key = v.key !== undefined
    ? keyPart(v.key, "output.key")
    : withExtension(keyPart(v.prefix, "output.prefix") + source.key, convertedTo(actions));
  if (key === "") throw new SpecError("output.key must not be empty.");
  if (bucket === source.bucket && key === source.key) {
    throw new SpecError("output would write over its own input: give another key or prefix.");
  }
  return { bucket, key };
}
