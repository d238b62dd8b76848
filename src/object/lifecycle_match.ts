// Which objects a lifecycle rule applies to, and when its actions fall due.
import type { LifecycleRule } from "./lifecycle_rules.ts";

/** The key prefix every object a rule applies to starts with ("" for all). */
export function rulePrefix(rule: LifecycleRule): string {
  return rule.prefix ?? rule.filter?.prefix ?? rule.filter?.and?.prefix ?? "";
}

/**
 * True when the rule applies to an object with this key and size. Objects carry no tags yet
 * (tagging is not built), so a rule whose filter names a tag applies to no object at all.
 */
export function ruleMatches(rule: LifecycleRule, key: string, size: number): boolean {
  const f = rule.filter;
  if (f?.tag || (f?.and && f.and.tags.length > 0)) return false;
  if (!key.startsWith(rulePrefix(rule))) return false;
  const gt = f?.objectSizeGreaterThan ?? f?.and?.objectSizeGreaterThan;
  const lt = f?.objectSizeLessThan ?? f?.and?.objectSizeLessThan;
  if (gt !== undefined && !(size > gt)) return false;
  if (lt !== undefined && !(size < lt)) return false;
  return true;
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
