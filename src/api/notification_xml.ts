// The NotificationConfiguration document: the protocol's QueueConfiguration and
// TopicConfiguration, and SPEC's WebhookConfiguration, read, validated and rendered.
import { type DialectName, DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { children, el, leafText, parseXml, text, type XmlNode } from "../http/xml.ts";
import type { NotifyConfig, NotifyRule, RuleKind } from "../events/notify_config.ts";
import { rulesOverlap } from "../events/notify_config.ts";
import { parseEventName, spellEvent } from "../events/names.ts";
import type { TargetKind } from "../events/target.ts";

type Struct = Record<string, XmlNode | XmlNode[]>;

/** Rules of one document; the protocol allows no more than this many. */
const MAX_RULES = 100;
const MAX_URL = 2048;
const MAX_FILTER_VALUE = 1024;

const ELEMENTS: Record<string, RuleKind> = {
  QueueConfiguration: "queue",
  TopicConfiguration: "topic",
  WebhookConfiguration: "webhook",
};
const PLANNED = ["CloudFunctionConfiguration", "LambdaFunctionConfiguration"];
const ARN_ELEMENT: Record<string, string> = { queue: "Queue", topic: "Topic" };
const ARN_SERVICE: Record<string, string> = { queue: "sqs", topic: "sns" };

export interface ArnContext {
  region: string;
  /** Whether an environment target of this kind and id exists. */
  hasTarget(kind: TargetKind, id: string): boolean;
}

function malformed(message: string): S3Error {
  return new S3Error("MalformedXML", message);
}

function invalid(message: string, details: Record<string, string> = {}): S3Error {
  return new S3Error("InvalidArgument", message, { details });
}

function struct(node: XmlNode, name: string, allowed: string[]): Struct {
  if (node === "") return {};
  if (typeof node !== "object") throw malformed(`${name} must contain elements.`);
  for (const child of Object.keys(node)) {
    if (!allowed.includes(child)) throw malformed(`Unexpected element ${child} in ${name}.`);
  }
  return node as Struct;
}

function single(node: XmlNode | XmlNode[] | undefined, name: string): XmlNode | undefined {
  if (Array.isArray(node)) throw malformed(`${name} may appear only once.`);
  return node;
}

function readFilter(node: XmlNode | undefined, rule: NotifyRule): void {
  if (node === undefined) return;
  const filter = struct(node, "Filter", ["S3Key"]);
  const keyNode = single(filter.S3Key, "S3Key");
  if (keyNode === undefined) return;
  const s3key = struct(keyNode, "S3Key", ["FilterRule"]);
  for (const ruleNode of children(s3key.FilterRule)) {
    const fr = struct(ruleNode, "FilterRule", ["Name", "Value"]);
    const name = leafText(fr.Name, "Name")?.toLowerCase();
    const value = leafText(fr.Value, "Value") ?? "";
    if (name !== "prefix" && name !== "suffix") {
      throw invalid("FilterRule names must be either prefix or suffix.", {
        ArgumentName: "FilterRule.Name",
        ArgumentValue: leafText(fr.Name, "Name") ?? "",
      });
    }
    if (rule[name] !== undefined) {
      throw invalid(`Cannot specify more than one ${name} rule in a filter.`, {
        ArgumentName: "FilterRule.Name",
        ArgumentValue: name,
      });
    }
    if (value.length > MAX_FILTER_VALUE) throw invalid(`The ${name} filter value is too long.`);
    rule[name] = value;
  }
}

function readArn(arn: string, kind: RuleKind, ctx: ArnContext, dialects: Set<DialectName>) {
  const parts = arn.split(":");
  const partition = Object.values(DIALECTS).find((d) => d.arnPartition === parts[1]);
  const bad = () =>
    invalid("Unable to validate the following destination configurations", {
      ArgumentName: arn,
      ArgumentValue: "The destination ARN is unknown or malformed.",
    });
  if (parts.length !== 6 || parts[0] !== "arn" || !partition) throw bad();
  if (parts[2] !== ARN_SERVICE[kind] || parts[3] !== ctx.region) throw bad();
  const targetKind = parts[5] as TargetKind;
  if (!ctx.hasTarget(targetKind, parts[4])) throw bad();
  dialects.add(partition.name);
  return { kind: targetKind, id: parts[4] };
}

function readWebhookUrl(node: Struct): string {
  const url = leafText(single(node.Url, "Url"), "Url");
  if (url === undefined) throw malformed("WebhookConfiguration requires a Url.");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid("The webhook URL is not a valid URL.", { ArgumentName: "Url" });
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw invalid("The webhook URL must be http or https.", { ArgumentName: "Url" });
  }
  if (url.length > MAX_URL || parsed.username || parsed.password) {
    throw invalid("The webhook URL is too long or carries credentials.", { ArgumentName: "Url" });
  }
  return parsed.href;
}

function readRule(node: XmlNode, element: string, ctx: ArnContext, dialects: Set<DialectName>) {
  const kind = ELEMENTS[element];
  const allowed = ["Id", "Event", "Filter"];
  if (kind === "webhook") allowed.push("Url", "AuthToken");
  else allowed.push(ARN_ELEMENT[kind]);
  const s = struct(node, element, allowed);
  const id = leafText(single(s.Id, "Id"), "Id") ?? crypto.randomUUID();
  if (id.length > 255 || id === "") throw invalid("The configuration Id is invalid.");
  const rule: NotifyRule = { kind, id, events: [] };
  const events = children(s.Event);
  if (events.length === 0) throw malformed(`${element} requires at least one Event.`);
  for (const e of events) {
    const raw = leafText(e, "Event") ?? "";
    const parsed = parseEventName(raw);
    if (!parsed) {
      throw invalid("The event is not supported for notifications", {
        ArgumentName: "Event",
        ArgumentValue: raw,
      });
    }
    dialects.add(parsed.dialect.name);
    if (!rule.events.includes(parsed.name)) rule.events.push(parsed.name);
  }
  readFilter(single(s.Filter, "Filter"), rule);
  if (kind === "webhook") {
    rule.url = readWebhookUrl(s);
    const token = leafText(single(s.AuthToken, "AuthToken"), "AuthToken");
    if (token !== undefined && (token.length > 1024 || /[\r\n]/.test(token))) {
      throw invalid("The AuthToken is too long or has line breaks.", { ArgumentName: "AuthToken" });
    }
    if (token) rule.authToken = token;
  } else {
    const arn = leafText(single(s[ARN_ELEMENT[kind]], ARN_ELEMENT[kind]), ARN_ELEMENT[kind]);
    if (arn === undefined) throw malformed(`${element} requires a ${ARN_ELEMENT[kind]}.`);
    rule.arn = arn;
    rule.target = readArn(arn, kind, ctx, dialects);
  }
  return rule;
}

/** Reads and validates a document (every check but the webhook hosts, which need lookups). */
export function parseNotificationConfiguration(
  body: string,
  ctx: ArnContext & { fallback: DialectName },
): NotifyConfig {
  const root = parseXml(body, "NotificationConfiguration");
  for (const name of Object.keys(root)) {
    if (PLANNED.includes(name) || name === "EventBridgeConfiguration") {
      throw new S3Error("NotImplemented", `${name} is not supported by this server.`);
    }
    if (!ELEMENTS[name]) {
      throw malformed(`Unexpected element ${name} in NotificationConfiguration.`);
    }
  }
  const dialects = new Set<DialectName>();
  const rules: NotifyRule[] = [];
  for (const element of Object.keys(ELEMENTS)) {
    for (const node of children(root[element])) rules.push(readRule(node, element, ctx, dialects));
  }
  if (rules.length > MAX_RULES) throw invalid(`At most ${MAX_RULES} configurations are allowed.`);
  const ids = new Set<string>();
  for (const [i, rule] of rules.entries()) {
    if (ids.has(rule.id)) throw invalid("Two configurations have the same Id.", { Id: rule.id });
    ids.add(rule.id);
    if (rules.slice(0, i).some((other) => rulesOverlap(other, rule))) {
      throw invalid(
        "Configurations overlap. Configurations on the same bucket cannot share a common " +
          "event type.",
      );
    }
  }
  if (dialects.size > 1) {
    throw invalid("Event names and ARNs must all use the same prefix (store or s3).");
  }
  return { dialect: [...dialects][0] ?? ctx.fallback, rules };
}

function filterXml(rule: NotifyRule): string {
  const parts: string[] = [];
  if (rule.prefix !== undefined) {
    parts.push(el("FilterRule", text("Name", "prefix"), text("Value", rule.prefix)));
  }
  if (rule.suffix !== undefined) {
    parts.push(el("FilterRule", text("Name", "suffix"), text("Value", rule.suffix)));
  }
  return parts.length > 0 ? el("Filter", el("S3Key", ...parts)) : "";
}

/** The stored configuration as the document's inner XML (auth tokens are never shown). */
export function notificationXml(config: NotifyConfig | undefined): string {
  if (!config) return "";
  const dialect = DIALECTS[config.dialect];
  const out: string[] = [];
  for (const [element, kind] of Object.entries(ELEMENTS)) {
    for (const rule of config.rules.filter((r) => r.kind === kind)) {
      const destination = kind === "webhook"
        ? text("Url", rule.url)
        : text(ARN_ELEMENT[kind], rule.arn);
      out.push(el(
        element,
        text("Id", rule.id),
        destination,
        ...rule.events.map((e) => text("Event", spellEvent(dialect, e))),
        filterXml(rule),
      ));
    }
  }
  return out.join("");
}
