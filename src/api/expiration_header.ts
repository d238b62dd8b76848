// `x-*-expiration` on PutObject, GetObject and HeadObject: when a lifecycle rule of the bucket will
// expire the object, and which rule, as `expiry-date="<HTTP date>", rule-id="<id>"`.
import { h } from "../http/dialect.ts";
import type { ObjectVersion } from "../meta/store.ts";
import { plannedExpiration } from "../object/lifecycle_match.ts";
import { type LifecycleRule, readStoredLifecycle } from "../object/lifecycle_rules.ts";
import type { RequestContext } from "./context.ts";

/** Parsed stored configurations by bucket, so a read does not parse the JSON every time. */
const parsed = new Map<string, { text: string; rules: LifecycleRule[] }>();
const MAX_CACHED = 1000;

async function bucketRules(ctx: RequestContext): Promise<LifecycleRule[]> {
  const stored = await ctx.layer.meta.getBucketConfig(ctx.bucket, "lifecycle");
  if (stored === undefined) return [];
  const cached = parsed.get(ctx.bucket);
  if (cached?.text === stored) return cached.rules;
  const rules = readStoredLifecycle(stored);
  if (parsed.size >= MAX_CACHED) parsed.clear();
  parsed.set(ctx.bucket, { text: stored, rules });
  return rules;
}

/** The header for the current version `v` (none for delete markers or without a due rule). */
export async function expirationHeader(
  ctx: RequestContext,
  v: ObjectVersion,
): Promise<Record<string, string>> {
  if (v.deleteMarker) return {};
  const rules = await bucketRules(ctx);
  if (rules.length === 0) return {};
  const due = plannedExpiration(rules, v, ctx.config.lifecycleDay * 1000);
  if (!due) return {};
  // The protocol URL-encodes the rule id (it may hold any character, quotes included).
  const id = encodeURIComponent(due.ruleId);
  return {
    [h(ctx.dialect, "expiration")]: `expiry-date="${
      new Date(due.at).toUTCString()
    }", rule-id="${id}"`,
  };
}
