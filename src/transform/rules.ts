// A bucket's transformation rules (bucket config "transform") and the jobs a new version starts:
// the object layer calls jobsFor before each commit and records the jobs in the same transaction,
// so no matching write is ever without its job. Outputs of jobs start none (no loops).
import type { EventName } from "../events/names.ts";
import type { EventOrigin } from "../events/outbox.ts";
import type { MetaStore, NewJob, ObjectVersion } from "../meta/store.ts";
import { type JobSpec, type Rule, ruleMatches, ruleOutputKey } from "./spec.ts";

export async function readRules(meta: MetaStore, bucket: string): Promise<Rule[] | undefined> {
  const text = await meta.getBucketConfig(bucket, "transform");
  return text === undefined ? undefined : (JSON.parse(text) as { rules: Rule[] }).rules;
}

export function newJob(
  source: { bucket: string; key: string; versionId?: string },
  spec: JobSpec,
  requester: string,
  rule?: string,
): NewJob {
  return {
    id: crypto.randomUUID(),
    bucket: source.bucket,
    key: source.key,
    versionId: source.versionId,
    spec: JSON.stringify(spec),
    rule,
    requester,
    createdAt: Date.now(),
  };
}

/** The object layer's hook (ObjectLayer.jobsFor). */
export function rulesHook(meta: MetaStore) {
  return async (version: ObjectVersion, event: EventName, origin: EventOrigin) => {
    if (origin.transform || version.deleteMarker) return [];
    const rules = await readRules(meta, version.bucket);
    if (!rules) return [];
    return rules.filter((r) => ruleMatches(r, version.key, event)).map((r) =>
      newJob(
        version,
        {
          actions: r.actions,
          output: { bucket: r.output.bucket ?? version.bucket, key: ruleOutputKey(r, version.key) },
        },
        origin.principal,
        r.id,
      )
    );
  };
}
