// The CORS rules kept with a bucket (bucket config kind "cors", the validated rules as JSON).
import type { MetaStore } from "../meta/store.ts";
import type { CorsRule } from "./rules.ts";

// Requests with an Origin header read the rules each time; the JSON is parsed once per text.
const parsed = new Map<string, { text: string; rules: CorsRule[] }>();
const MAX_CACHED = 1000;

/** The bucket's CORS rules; undefined when it has none (or does not exist). */
export async function storedCorsRules(
  meta: MetaStore,
  bucket: string,
): Promise<CorsRule[] | undefined> {
  const text = await meta.getBucketConfig(bucket, "cors");
  if (text === undefined) return undefined;
  const cached = parsed.get(bucket);
  if (cached?.text === text) return cached.rules;
  const rules = JSON.parse(text) as CorsRule[];
  if (parsed.size >= MAX_CACHED) parsed.clear();
  parsed.set(bucket, { text, rules });
  return rules;
}
