// A bucket's notification configuration: which events go to which destinations. Stored as JSON
// (bucket config kind `notification`); read from and rendered to the protocol's XML by
// src/api/notification_xml.ts.
import type { DialectName } from "../http/dialect.ts";
import type { TargetKind } from "./target.ts";
import { eventMatches } from "./names.ts";

export type RuleKind = "queue" | "topic" | "webhook";

export interface NotifyRule {
  kind: RuleKind;
  /** The configuration's Id (s3.configurationId of its records). */
  id: string;
  /** Unprefixed event names or families (`ObjectCreated:*`). */
  events: string[];
  prefix?: string;
  suffix?: string;
  /** Queue and topic rules: the ARN as written and the environment target it names. */
  arn?: string;
  target?: { kind: TargetKind; id: string };
  /** Webhook rules. */
  url?: string;
  authToken?: string;
}

export interface NotifyConfig {
  /** The spelling of the configuration's event names: its records use the same. */
  dialect: DialectName;
  rules: NotifyRule[];
}

export function readStoredConfig(text: string | undefined): NotifyConfig | undefined {
  if (text === undefined) return undefined;
  const config = JSON.parse(text) as NotifyConfig;
  return config.rules.length > 0 ? config : undefined;
}

/** Whether a rule wants an event about `key`. */
export function ruleWants(rule: NotifyRule, name: string, key: string): boolean {
  if (rule.prefix !== undefined && !key.startsWith(rule.prefix)) return false;
  if (rule.suffix !== undefined && !key.endsWith(rule.suffix)) return false;
  return rule.events.some((pattern) => eventMatches(pattern, name));
}

/** The consumer name of an environment target: its cursor and its ARN's last two fields. */
export function targetConsumer(target: { kind: TargetKind; id: string }): string {
  return `target:${target.kind}:${target.id}`;
}

/** The consumer name of a bucket's webhook rule. */
export function webhookConsumer(bucket: string, ruleId: string): string {
  return `webhook:${bucket}:${ruleId}`;
}

function eventsOverlap(a: string[], b: string[]): boolean {
  return a.some((x) => b.some((y) => eventMatches(x, y) || eventMatches(y, x)));
}

function affixOverlap(a: string | undefined, b: string | undefined, isSuffix: boolean): boolean {
  if (!a || !b) return true;
  return isSuffix ? a.endsWith(b) || b.endsWith(a) : a.startsWith(b) || b.startsWith(a);
}

/**
 * Two rules for a common event type whose key filters can both match one key: the protocol
 * refuses such a configuration ("Configurations overlap").
 */
export function rulesOverlap(a: NotifyRule, b: NotifyRule): boolean {
  return eventsOverlap(a.events, b.events) && affixOverlap(a.prefix, b.prefix, false) &&
    affixOverlap(a.suffix, b.suffix, true);
}
