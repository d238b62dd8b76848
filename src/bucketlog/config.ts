// A bucket's logging configuration (PutBucketLogging): where its access records go. Stored as
// JSON in the bucket config kind "logging"; no row means logging is off.
import { S3Error } from "../http/errors.ts";
import { el, isBlank, leafText, parseXml, text, type XmlNode } from "../http/xml.ts";

export interface LoggingConfig {
  targetBucket: string;
  targetPrefix: string;
  /** `simple`: prefix + time + id; `partitioned`: prefix + source/date folders + time + id. */
  keyFormat: "simple" | "partitioned";
}

type Node = XmlNode | XmlNode[] | undefined;
type Struct = Record<string, XmlNode | XmlNode[]>;

function malformed(message: string): S3Error {
  return new S3Error(
    "MalformedXML",
    `The XML you provided was not well-formed or did not validate against our published schema: ${message}`,
  );
}

function struct(node: Node, name: string, allowed: string[]): Struct | undefined {
  if (node === undefined) return undefined;
  if (Array.isArray(node)) throw malformed(`${name} may appear only once.`);
  if (isBlank(node)) return {};
  if (typeof node !== "object") throw malformed(`${name} must contain elements.`);
  for (const child of Object.keys(node)) {
    if (!allowed.includes(child)) throw malformed(`Unexpected element ${child} in ${name}.`);
  }
  return node as Struct;
}

/**
 * Reads a BucketLoggingStatus document: undefined (logging off) when it has no LoggingEnabled.
 * The key format is read from the element names (the parser drops attributes).
 */
export function parseLoggingStatus(body: string): LoggingConfig | undefined {
  const root = parseXml(body, "BucketLoggingStatus");
  const status = struct(root as XmlNode, "BucketLoggingStatus", ["LoggingEnabled"])!;
  const enabled = struct(status.LoggingEnabled, "LoggingEnabled", [
    "TargetBucket",
    "TargetPrefix",
    "TargetGrants",
    "TargetObjectKeyFormat",
  ]);
  if (enabled === undefined) return undefined;
  if (enabled.TargetGrants !== undefined) {
    throw new S3Error(
      "NotImplemented",
      "TargetGrants are not supported: log objects belong to the target bucket's owner.",
    );
  }
  const targetBucket = leafText(enabled.TargetBucket, "TargetBucket");
  const targetPrefix = leafText(enabled.TargetPrefix, "TargetPrefix");
  if (targetBucket === undefined || targetBucket === "") {
    throw malformed("LoggingEnabled needs a TargetBucket.");
  }
  if (targetPrefix === undefined) throw malformed("LoggingEnabled needs a TargetPrefix.");
  const format = struct(enabled.TargetObjectKeyFormat, "TargetObjectKeyFormat", [
    "SimplePrefix",
    "PartitionedPrefix",
  ]);
  if (format && format.SimplePrefix !== undefined && format.PartitionedPrefix !== undefined) {
    throw malformed("TargetObjectKeyFormat holds SimplePrefix or PartitionedPrefix, not both.");
  }
  return {
    targetBucket,
    targetPrefix,
    keyFormat: format?.PartitionedPrefix !== undefined ? "partitioned" : "simple",
  };
}

/** The inner XML of a BucketLoggingStatus document (empty when logging is off). */
export function loggingStatusXml(config: LoggingConfig | undefined): string {
  if (!config) return "";
  const format = config.keyFormat === "partitioned"
    ? '<PartitionedPrefix PartitionDateSource="EventTime"></PartitionedPrefix>'
    : "<SimplePrefix></SimplePrefix>";
  return el(
    "LoggingEnabled",
    text("TargetBucket", config.targetBucket),
    text("TargetPrefix", config.targetPrefix),
    el("TargetObjectKeyFormat", format),
  );
}
