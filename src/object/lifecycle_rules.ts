// Lifecycle configurations as the object layer sees them: the validated rules, the rule shape the
// checks (lifecycle_checks.ts) work on, and the stored JSON form. The request XML is read in
// src/api/lifecycle_xml.ts.

export interface LifecycleTag {
  key: string;
  value: string;
}

/** The `And` of a filter: every predicate given must hold. */
export interface LifecycleAnd {
  prefix?: string;
  tags: LifecycleTag[];
  objectSizeGreaterThan?: number;
  objectSizeLessThan?: number;
}

/** A rule's `Filter`: at most one of these is set (none: every object). */
export interface LifecycleFilter {
  prefix?: string;
  tag?: LifecycleTag;
  and?: LifecycleAnd;
  objectSizeGreaterThan?: number;
  objectSizeLessThan?: number;
}

export interface LifecycleRule {
  id: string;
  status: "Enabled" | "Disabled";
  /** The rule-level `Prefix` of the original form of the protocol (set instead of `filter`). */
  prefix?: string;
  filter?: LifecycleFilter;
  /** Exactly one of the three is set. `date` is ISO 8601 at midnight UTC. */
  expiration?: { days?: number; date?: string; expiredObjectDeleteMarker?: boolean };
  noncurrentVersionExpiration?: { noncurrentDays: number; newerNoncurrentVersions?: number };
  abortIncompleteMultipartUpload?: { daysAfterInitiation: number };
}

/** A rule as the document gives it: shape checked, values not yet. */
export interface GivenRule extends Omit<LifecycleRule, "id"> {
  id?: string;
  /** How many Transition and NoncurrentVersionTransition elements the rule has. */
  transitions: number;
}

/** The stored form: JSON of the validated rules. */
export function storedLifecycle(rules: LifecycleRule[]): string {
  return JSON.stringify({ rules });
}

export function readStoredLifecycle(json: string): LifecycleRule[] {
  const doc = JSON.parse(json) as { rules?: LifecycleRule[] };
  if (!Array.isArray(doc.rules)) throw new Error("Stored lifecycle configuration has no rules");
  return doc.rules;
}
