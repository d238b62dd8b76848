// The XML documents of Object Lock: ObjectLockConfiguration, Retention and LegalHold.
import { S3Error } from "../http/errors.ts";
import { children, leafText, parseXml, type XmlNode } from "../http/xml.ts";
import type { Retention } from "../meta/store.ts";
import { LOCK_MODES, type LockConfig } from "../object/object_lock.ts";

/** The protocol's longest default retention periods. */
const MAX_PERIOD: Record<"Days" | "Years", number> = { Days: 36500, Years: 100 };

function positiveInt(value: string | undefined, name: "Days" | "Years"): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[+-]?\d+$/.test(value)) {
    throw new S3Error("InvalidArgument", `${name} must be a whole number.`);
  }
  if (+value < 1 || +value > MAX_PERIOD[name]) {
    throw new S3Error(
      "InvalidRetentionPeriod",
      `Default retention period must be a positive integer value (at most ${
        MAX_PERIOD[name]
      } ${name.toLowerCase()}).`,
    );
  }
  return Number(value);
}

/** Parses an ObjectLockConfiguration document. */
export function parseLockConfig(body: string): LockConfig {
  const root = parseXml(body, "ObjectLockConfiguration");
  if (leafText(root.ObjectLockEnabled, "ObjectLockEnabled") !== "Enabled") {
    throw new S3Error("MalformedXML", "ObjectLockEnabled must be Enabled.");
  }
  const rules = children(root.Rule);
  if (rules.length === 0) return {};
  if (rules.length > 1 || typeof rules[0] !== "object") {
    throw new S3Error("MalformedXML", "At most one Rule with a DefaultRetention is allowed.");
  }
  const retention = (rules[0] as Record<string, XmlNode>).DefaultRetention;
  if (typeof retention !== "object" || Array.isArray(retention)) {
    throw new S3Error("MalformedXML", "Rule must contain a DefaultRetention.");
  }
  const mode = leafText(retention.Mode as XmlNode, "Mode");
  if (!mode || !LOCK_MODES.includes(mode)) {
    throw new S3Error("MalformedXML", "DefaultRetention Mode must be GOVERNANCE or COMPLIANCE.");
  }
  const days = positiveInt(leafText(retention.Days as XmlNode, "Days"), "Days");
  const years = positiveInt(leafText(retention.Years as XmlNode, "Years"), "Years");
  if ((days === undefined) === (years === undefined)) {
    throw new S3Error("MalformedXML", "DefaultRetention needs exactly one of Days or Years.");
  }
  return { defaultRetention: { mode: mode as Retention["mode"], days, years } };
}

/** Parses a Retention document; the date must lie in the future. */
export function parseRetention(body: string, now: number): Retention | null {
  const root = parseXml(body, "Retention");
  const mode = leafText(root.Mode, "Mode");
  const date = leafText(root.RetainUntilDate, "RetainUntilDate");
  if (mode === undefined && date === undefined) return null;
  if (!mode || !LOCK_MODES.includes(mode) || !date) {
    throw new S3Error(
      "MalformedXML",
      "Retention needs a Mode (GOVERNANCE or COMPLIANCE) and a RetainUntilDate.",
    );
  }
  const until = Date.parse(date);
  if (Number.isNaN(until)) {
    throw new S3Error("InvalidArgument", "RetainUntilDate is not a valid date.");
  }
  if (until <= now) {
    throw new S3Error("InvalidArgument", "The retain until date must be in the future!");
  }
  return { mode: mode as Retention["mode"], until };
}

export function parseLegalHold(body: string): boolean {
  const status = leafText(parseXml(body, "LegalHold").Status, "Status");
  if (status !== "ON" && status !== "OFF") {
    throw new S3Error("MalformedXML", "Status must be ON or OFF.");
  }
  return status === "ON";
}
