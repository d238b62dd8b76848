// Event names. Stored and matched without prefix (`ObjectCreated:Put`); spelled with the
// dialect's prefix (`store:` or `s3:`) in configurations and records.
import type { Dialect } from "../http/dialect.ts";
import { DIALECTS } from "../http/dialect.ts";

/** Every event an operation emits (SPEC.md "Events", plus lifecycle expirations). */
export const EVENT_NAMES = [
  "ObjectCreated:Put",
  "ObjectCreated:Post",
  "ObjectCreated:Copy",
  "ObjectCreated:CompleteMultipartUpload",
  "ObjectRemoved:Delete",
  "ObjectRemoved:DeleteMarkerCreated",
  "ObjectTagging:Put",
  "ObjectTagging:Delete",
  "ObjectAcl:Put",
  "LifecycleExpiration:Delete",
  "LifecycleExpiration:DeleteMarkerCreated",
  // Cluster replication (src/cluster/objects.ts): the source learned a node's outcome.
  "Replication:OperationCompletedReplication",
  "Replication:OperationFailedReplication",
] as const;

export type EventName = typeof EVENT_NAMES[number];

/** The name of the test event a new configuration sends (never matched by filters). */
export const TEST_EVENT = "TestEvent";

/** Names a configuration may list: the events and their families (`ObjectCreated:*`). */
const ACCEPTED = new Set<string>([
  ...EVENT_NAMES,
  ...new Set(EVENT_NAMES.map((n) => n.slice(0, n.indexOf(":")) + ":*")),
]);

/**
 * Reads a configured event name in either spelling: its unprefixed form and the dialect it was
 * written in, or undefined when it is not an event this server emits.
 */
export function parseEventName(
  text: string,
): { name: string; dialect: Dialect } | undefined {
  for (const dialect of Object.values(DIALECTS)) {
    if (text.startsWith(dialect.eventPrefix)) {
      const name = text.slice(dialect.eventPrefix.length);
      return ACCEPTED.has(name) ? { name, dialect } : undefined;
    }
  }
  return undefined;
}

/** Whether an event matches a configured name (exact, or a `Family:*` wildcard). */
export function eventMatches(pattern: string, name: string): boolean {
  if (pattern.endsWith(":*")) return name.startsWith(pattern.slice(0, -1));
  return pattern === name;
}

export function spellEvent(dialect: Dialect, name: string): string {
  return dialect.eventPrefix + name;
}
