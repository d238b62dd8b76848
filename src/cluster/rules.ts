// Bucket replication rules (Get/Put/DeleteBucketReplication): the protocol's
// ReplicationConfiguration, read and validated, stored as JSON (bucket config "replication"), and
// the rule that applies to an object change. Without a configuration every change of the bucket
// goes to every node; with one, only changes an Enabled rule matches, into its destination bucket.
import { S3Error } from "../http/errors.ts";
import { children, el, isBlank, leafText, parseXml, text, type XmlNode } from "../http/xml.ts";
import type { TagSet } from "../meta/store.ts";

export interface ReplicationTag {
  key: string;
  value: string;
}

export interface ReplicationRule {
  id: string;
  enabled: boolean;
  priority?: number;
  /** The legacy form: a Prefix directly in the rule. */
  prefix?: string;
  filter?: {
    prefix?: string;
    tag?: ReplicationTag;
    and?: { prefix?: string; tags: ReplicationTag[] };
  };
  /** The destination bucket's name (from `arn:aws:s3:::<name>`). */
  destination: string;
  deleteMarkers: boolean;
}

export interface ReplicationConfig {
  role: string;
  rules: ReplicationRule[];
}

type Struct = Record<string, XmlNode | XmlNode[]>;
const ARN = "arn:aws:s3:::";
const MAX_RULES = 1000;

function malformed(message: string): S3Error {
  return new S3Error("MalformedXML", message);
}

function struct(value: XmlNode | XmlNode[] | undefined, name: string, allowed: string[]) {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw malformed(`${name} may appear only once in its parent.`);
  if (isBlank(value)) return {} as Struct;
  if (typeof value !== "object") throw malformed(`${name} must contain elements, not text.`);
  for (const child of Object.keys(value)) {
    if (!allowed.includes(child)) throw malformed(`Unexpected element ${child} in ${name}.`);
  }
  return value as Struct;
}

function readTag(value: XmlNode | XmlNode[]): ReplicationTag {
  const node = struct(value, "Tag", ["Key", "Value"]) ?? {};
  const key = leafText(node.Key, "Key");
  const tagValue = leafText(node.Value, "Value");
  if (!key || tagValue === undefined) throw malformed("A Tag needs a non-empty Key and a Value.");
  return { key, value: tagValue };
}

function readStatus(value: XmlNode | XmlNode[] | undefined, where: string): boolean {
  const status = leafText(value, "Status");
  if (status !== "Enabled" && status !== "Disabled") {
    throw malformed(`${where} needs a Status of Enabled or Disabled.`);
  }
  return status === "Enabled";
}

function readRule(value: XmlNode): ReplicationRule {
  const node = struct(value, "Rule", [
    "ID",
    "Status",
    "Priority",
    "Prefix",
    "Filter",
    "Destination",
    "DeleteMarkerReplication",
    "SourceSelectionCriteria",
    "ExistingObjectReplication",
  ])!;
  const id = leafText(node.ID, "ID") ?? crypto.randomUUID();
  if (id.length > 255) throw new S3Error("InvalidArgument", "A rule ID is at most 255 characters.");
  const rawPriority = leafText(node.Priority, "Priority");
  if (rawPriority !== undefined && !/^\d{1,9}$/.test(rawPriority)) {
    throw new S3Error("InvalidArgument", "Priority must be a non-negative integer.");
  }
  const filterNode = struct(node.Filter, "Filter", ["Prefix", "Tag", "And"]);
  let filter: ReplicationRule["filter"];
  if (filterNode) {
    const and = struct(filterNode.And, "And", ["Prefix", "Tag"]);
    const parts = ["Prefix", "Tag", "And"].filter((n) => filterNode[n] !== undefined);
    if (parts.length > 1) {
      throw malformed("A Filter holds one of Prefix, Tag or And; combine them with And.");
    }
    filter = {
      prefix: leafText(filterNode.Prefix, "Prefix"),
      tag: filterNode.Tag === undefined ? undefined : readTag(filterNode.Tag as XmlNode),
      and: and
        ? { prefix: leafText(and.Prefix, "Prefix"), tags: children(and.Tag).map(readTag) }
        : undefined,
    };
  }
  const prefix = leafText(node.Prefix, "Prefix");
  if (prefix !== undefined && filter) {
    throw malformed("A rule has either a Prefix or a Filter, not both.");
  }
  const destination = struct(node.Destination, "Destination", ["Bucket", "StorageClass"]);
  const arn = leafText(destination?.Bucket, "Bucket");
  if (!arn) throw malformed("A rule needs a Destination with a Bucket.");
  if (!arn.startsWith(ARN) || arn.length === ARN.length) {
    throw new S3Error("InvalidArgument", `The destination bucket must be given as ${ARN}<name>.`);
  }
  const storageClass = leafText(destination?.StorageClass, "StorageClass");
  if (storageClass !== undefined && storageClass !== "STANDARD") {
    throw new S3Error("InvalidStorageClass", "STANDARD is the only storage class.");
  }
  const markers = struct(node.DeleteMarkerReplication, "DeleteMarkerReplication", ["Status"]);
  return {
    id,
    enabled: readStatus(node.Status, "A rule"),
    priority: rawPriority === undefined ? undefined : Number(rawPriority),
    prefix,
    filter,
    destination: arn.slice(ARN.length),
    deleteMarkers: markers ? readStatus(markers.Status, "DeleteMarkerReplication") : false,
  };
}

/** Reads and validates a PutBucketReplication body. */
export function parseReplicationConfiguration(body: string): ReplicationConfig {
  const root = parseXml(body, "ReplicationConfiguration");
  for (const name of Object.keys(root)) {
    if (name !== "Role" && name !== "Rule") {
      throw malformed(`Unexpected element ${name} in ReplicationConfiguration.`);
    }
  }
  const rules = children(root.Rule).map(readRule);
  if (rules.length === 0 || rules.length > MAX_RULES) {
    throw malformed(`A replication configuration has 1 to ${MAX_RULES} rules.`);
  }
  const ids = new Set(rules.map((r) => r.id));
  if (ids.size !== rules.length) {
    throw new S3Error("InvalidArgument", "Rule IDs must be unique.");
  }
  const priorities = rules.filter((r) => r.priority !== undefined).map((r) => r.priority);
  if (new Set(priorities).size !== priorities.length) {
    throw new S3Error("InvalidArgument", "Rule priorities must be unique.");
  }
  return { role: leafText(root.Role, "Role") ?? "", rules };
}

function tagXml(t: ReplicationTag): string {
  return el("Tag", text("Key", t.key), text("Value", t.value));
}

/** The inner XML of GetBucketReplication's ReplicationConfiguration. */
export function replicationConfigurationXml(config: ReplicationConfig): string {
  const rules = config.rules.map((r) => {
    const f = r.filter;
    const filter = f === undefined ? "" : el(
      "Filter",
      text("Prefix", f.prefix),
      f.tag ? tagXml(f.tag) : "",
      f.and ? el("And", text("Prefix", f.and.prefix), ...f.and.tags.map(tagXml)) : "",
    );
    return el(
      "Rule",
      text("ID", r.id),
      text("Priority", r.priority),
      text("Status", r.enabled ? "Enabled" : "Disabled"),
      text("Prefix", r.prefix),
      filter,
      el("Destination", text("Bucket", ARN + r.destination)),
      el("DeleteMarkerReplication", text("Status", r.deleteMarkers ? "Enabled" : "Disabled")),
    );
  });
  return text("Role", config.role) + rules.join("");
}

function matches(rule: ReplicationRule, key: string, tags: TagSet): boolean {
  const f = rule.filter;
  const prefix = rule.prefix ?? f?.prefix ?? f?.and?.prefix ?? "";
  if (!key.startsWith(prefix)) return false;
  const wanted = [...(f?.tag ? [f.tag] : []), ...(f?.and?.tags ?? [])];
  return wanted.every((t) => Object.hasOwn(tags, t.key) && tags[t.key] === t.value);
}

/**
 * The rule an object change follows: of the rules whose filter matches, the one with the highest
 * priority (the first listed among equals); undefined when none matches or it is Disabled, and
 * the change is then not replicated.
 */
export function ruleFor(
  config: ReplicationConfig,
  object: { key: string; tags?: TagSet },
): ReplicationRule | undefined {
  let best: ReplicationRule | undefined;
  for (const rule of config.rules) {
    if (!matches(rule, object.key, object.tags ?? {})) continue;
    if (!best || (rule.priority ?? 0) > (best.priority ?? 0)) best = rule;
  }
  return best?.enabled ? best : undefined;
}
