// Which objects a lifecycle rule applies to, and when its actions fall due.
import type { TagSet } from "../meta/store.ts";
import type { LifecycleRule, LifecycleTag } from "./lifecycle_rules.ts";

/** The key prefix every object a rule applies to starts with ("" for all). */
export function rulePrefix(rule: LifecycleRule): string {
  return rule.prefix ?? rule.filter?.prefix ?? rule.filter?.and?.prefix ?? "";
}

/** The tags a rule's filter names (Filter Tag, or the Tags of And); all must be present. */
export function ruleTags(rule: LifecycleRule): LifecycleTag[] {
  const f = rule.filter;
  return [...(f?.tag ? [f.tag] : []), ...(f?.and?.tags ?? [])];
}

/**
 * True when the rule's key and size conditions hold for an object; its tag conditions are left
 * to `ruleMatches`, so a walk over listings (which carry no tags) can choose the candidates.
 */
export function ruleMayMatch(rule: LifecycleRule, key: string, size: number): boolean {
  const f = rule.filter;
  if (!key.startsWith(rulePrefix(rule))) return false;
  const gt = f?.objectSizeGreaterThan ?? f?.and?.objectSizeGreaterThan;
  const lt = f?.objectSizeLessThan ?? f?.and?.objectSizeLessThan;
  if (gt !== undefined && !(size > gt)) return false;
  if (lt !== undefined && !(size < lt)) return false;
  return true;
}

/**
 * True when the rule applies to an object with this key, size and tags: every tag the filter
 * names is on the object with the same value (an object without tags matches no tag filter).
 */
export function ruleMatches(
  rule: LifecycleRule,
  object: { key: string; size: number; tags?: TagSet },
): boolean {
  if (!ruleMayMatch(rule, object.key, object.size)) return false;
  const tags = object.tags ?? {};
  return ruleTags(rule).every((t) => Object.hasOwn(tags, t.key) && tags[t.key] === t.value);
}

/**
 * When an action `days` lifecycle days after `start` falls due: the protocol counts from the
 * start and rounds up to the next day boundary (midnight UTC with the default day length).
 */
export function dueAt(start: number, days: number, dayMs: number): number {
  return Math.ceil((start + days * dayMs) / dayMs) * dayMs;
}

/** True when the rule's Expiration (Days or Date) has come for a current version. */
export function expirationDue(
  rule: LifecycleRule,
  lastModified: number,
  clock: { now: number; dayMs: number },
): boolean {
  const e = rule.expiration;
  if (e?.days !== undefined) return clock.now >= dueAt(lastModified, e.days, clock.dayMs);
  if (e?.date !== undefined) return clock.now >= Date.parse(e.date);
  return false;
}

/**
 * When a current version will expire under the enabled rules with an Expiration Days or Date
 * that apply to it, and by which rule (the earliest; the first such rule on a tie). Undefined
 * when none applies. This is what the `x-*-expiration` header reports.
 */
export function plannedExpiration(
  rules: LifecycleRule[],
  object: { key: string; size: number; tags?: TagSet; lastModified: number },
  dayMs: number,
): { ruleId: string; at: number } | undefined {
  let found: { ruleId: string; at: number } | undefined;
  for (const rule of rules) {
    const e = rule.expiration;
    if (rule.status !== "Enabled" || !e || !ruleMatches(rule, object)) continue;
    const at = e.days !== undefined
      ? dueAt(object.lastModified, e.days, dayMs)
      : e.date !== undefined
      ? Date.parse(e.date)
      : undefined;
    if (at !== undefined && (!found || at < found.at)) found = { ruleId: rule.id, at };
  }
  return found;
}

/**
 * The fewest prefixes whose ranges cover every given prefix: a prefix that another one starts
 * is dropped, so a scan never visits a key twice.
 */
export function coveringPrefixes(prefixes: string[]): string[] {
  const sorted = [...new Set(prefixes)].sort();
  const out: string[] = [];
  for (const p of sorted) {
    if (out.length === 0 || !p.startsWith(out[out.length - 1])) out.push(p);
  }
  return out;
}
