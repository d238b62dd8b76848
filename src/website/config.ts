// A bucket's website configuration (PutBucketWebsite): the document, its checks in the
// protocol's terms, and its XML form. Stored as JSON in the bucket config kind "website".
import { S3Error } from "../http/errors.ts";
import { children, el, isBlank, leafText, parseXml, text, type XmlNode } from "../http/xml.ts";

export interface Redirect {
  hostName?: string;
  protocol?: "http" | "https";
  /** 301 when absent. */
  httpRedirectCode?: string;
  replaceKeyPrefixWith?: string;
  replaceKeyWith?: string;
}

export interface RoutingRule {
  condition?: { keyPrefixEquals?: string; httpErrorCodeReturnedEquals?: string };
  redirect: Redirect;
}

export interface WebsiteConfig {
  indexSuffix?: string;
  errorKey?: string;
  redirectAll?: { hostName: string; protocol?: "http" | "https" };
  routingRules: RoutingRule[];
}

/** The protocol allows this many routing rules. */
export const MAX_ROUTING_RULES = 50;

type Node = XmlNode | XmlNode[] | undefined;
type Struct = Record<string, XmlNode | XmlNode[]>;

function malformed(message: string): S3Error {
  return new S3Error(
    "MalformedXML",
    `The XML you provided was not well-formed or did not validate against our published schema: ${message}`,
  );
}

function invalid(message: string, name?: string, value?: string): S3Error {
  const details: Record<string, string> = {};
  if (name !== undefined) details.ArgumentName = name;
  if (value !== undefined) details.ArgumentValue = value;
  return new S3Error("InvalidArgument", message, { details });
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

function protocolOf(node: Node): "http" | "https" | undefined {
  const value = leafText(node, "Protocol");
  if (value === undefined) return undefined;
  if (value !== "http" && value !== "https") {
    throw invalid("Invalid protocol, protocol can be http or https.", "Protocol", value);
  }
  return value;
}

function readRedirect(node: Node): Redirect {
  const r = struct(node, "Redirect", [
    "HostName",
    "HttpRedirectCode",
    "Protocol",
    "ReplaceKeyPrefixWith",
    "ReplaceKeyWith",
  ]);
  if (r === undefined) throw malformed("A RoutingRule needs a Redirect.");
  const redirect: Redirect = {
    hostName: leafText(r.HostName, "HostName"),
    protocol: protocolOf(r.Protocol),
    httpRedirectCode: leafText(r.HttpRedirectCode, "HttpRedirectCode"),
    replaceKeyPrefixWith: leafText(r.ReplaceKeyPrefixWith, "ReplaceKeyPrefixWith"),
    replaceKeyWith: leafText(r.ReplaceKeyWith, "ReplaceKeyWith"),
  };
  const code = redirect.httpRedirectCode;
  if (code !== undefined && (!/^3\d\d$/.test(code) || code === "300")) {
    throw invalid(
      `The provided HTTP redirect code (${code}) is not valid. Valid codes are 3XX except 300.`,
      "HttpRedirectCode",
      code,
    );
  }
  if (redirect.replaceKeyPrefixWith !== undefined && redirect.replaceKeyWith !== undefined) {
    throw invalid(
      "You can only define ReplaceKeyPrefix or ReplaceKey but not both.",
      "ReplaceKeyPrefixWith",
    );
  }
  if (Object.values(redirect).every((v) => v === undefined)) {
    throw invalid("A Redirect must name at least one of its elements.", "Redirect");
  }
  return dropUndefined(redirect);
}

function readRule(node: XmlNode): RoutingRule {
  const r = struct(node, "RoutingRule", ["Condition", "Redirect"])!;
  const c = struct(r.Condition, "Condition", ["KeyPrefixEquals", "HttpErrorCodeReturnedEquals"]);
  const rule: RoutingRule = { redirect: readRedirect(r.Redirect) };
  if (c !== undefined) {
    const condition = dropUndefined({
      keyPrefixEquals: leafText(c.KeyPrefixEquals, "KeyPrefixEquals"),
      httpErrorCodeReturnedEquals: leafText(
        c.HttpErrorCodeReturnedEquals,
        "HttpErrorCodeReturnedEquals",
      ),
    });
    const code = condition.httpErrorCodeReturnedEquals;
    if (code !== undefined && !/^[45]\d\d$/.test(code)) {
      throw invalid(
        `The provided HTTP error code (${code}) is not valid. Valid codes are 4XX or 5XX.`,
        "HttpErrorCodeReturnedEquals",
        code,
      );
    }
    if (Object.keys(condition).length === 0) {
      throw invalid("Condition cannot be empty.", "Condition");
    }
    rule.condition = condition;
  }
  return rule;
}

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/** Reads a WebsiteConfiguration document. */
export function parseWebsiteConfiguration(body: string): WebsiteConfig {
  const root = parseXml(body, "WebsiteConfiguration");
  for (const name of Object.keys(root)) {
    if (
      !["ErrorDocument", "IndexDocument", "RedirectAllRequestsTo", "RoutingRules"].includes(name)
    ) {
      throw malformed(`Unexpected element ${name}.`);
    }
  }
  const index = struct(root.IndexDocument, "IndexDocument", ["Suffix"]);
  const error = struct(root.ErrorDocument, "ErrorDocument", ["Key"]);
  const all = struct(root.RedirectAllRequestsTo, "RedirectAllRequestsTo", ["HostName", "Protocol"]);
  const rulesNode = struct(root.RoutingRules, "RoutingRules", ["RoutingRule"]);
  if (all !== undefined) {
    if (index !== undefined || error !== undefined || rulesNode !== undefined) {
      throw invalid(
        "RedirectAllRequestsTo cannot be provided in conjunction with other Routing Rules.",
        "RedirectAllRequestsTo",
      );
    }
    const hostName = leafText(all.HostName, "HostName");
    if (hostName === undefined || hostName === "") {
      throw invalid("RedirectAllRequestsTo needs a HostName.", "HostName");
    }
    return {
      redirectAll: dropUndefined({ hostName, protocol: protocolOf(all.Protocol) }),
      routingRules: [],
    };
  }
  if (index === undefined) {
    throw invalid(
      "A value for IndexDocument Suffix must be provided if RedirectAllRequestsTo is empty",
      "IndexDocument",
    );
  }
  const suffix = leafText(index.Suffix, "Suffix");
  if (suffix === undefined || suffix === "" || suffix.includes("/")) {
    throw invalid("The IndexDocument Suffix is not well formed", "IndexDocument", suffix);
  }
  let errorKey: string | undefined;
  if (error !== undefined) {
    errorKey = leafText(error.Key, "Key");
    if (errorKey === undefined || errorKey === "") {
      throw invalid("The ErrorDocument Key is not well formed", "ErrorDocument");
    }
  }
  const rules = rulesNode === undefined ? [] : children(rulesNode.RoutingRule).map(readRule);
  if (rulesNode !== undefined && rules.length === 0) {
    throw malformed("RoutingRules needs at least one RoutingRule.");
  }
  if (rules.length > MAX_ROUTING_RULES) {
    throw invalid(`At most ${MAX_ROUTING_RULES} routing rules are allowed.`, "RoutingRules");
  }
  return dropUndefined({ indexSuffix: suffix, errorKey, routingRules: rules });
}

function redirectXml(r: Redirect): string {
  return el(
    "Redirect",
    text("HostName", r.hostName),
    text("HttpRedirectCode", r.httpRedirectCode),
    text("Protocol", r.protocol),
    text("ReplaceKeyPrefixWith", r.replaceKeyPrefixWith),
    text("ReplaceKeyWith", r.replaceKeyWith),
  );
}

/** The inner XML of a WebsiteConfiguration document. */
export function websiteConfigurationXml(config: WebsiteConfig): string {
  if (config.redirectAll) {
    const all = config.redirectAll;
    return el(
      "RedirectAllRequestsTo",
      text("HostName", all.hostName),
      text("Protocol", all.protocol),
    );
  }
  const rules = config.routingRules.map((r) =>
    el(
      "RoutingRule",
      r.condition
        ? el(
          "Condition",
          text("HttpErrorCodeReturnedEquals", r.condition.httpErrorCodeReturnedEquals),
          text("KeyPrefixEquals", r.condition.keyPrefixEquals),
        )
        : "",
      redirectXml(r.redirect),
    )
  );
  return el("IndexDocument", text("Suffix", config.indexSuffix)) +
    (config.errorKey !== undefined ? el("ErrorDocument", text("Key", config.errorKey)) : "") +
    (rules.length > 0 ? el("RoutingRules", ...rules) : "");
}
