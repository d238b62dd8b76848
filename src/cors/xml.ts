// The CORSConfiguration document of Put/GetBucketCors: parsed and validated as the protocol
// does (shape errors are MalformedXML, unsupported values InvalidRequest), and rendered back.
import { S3Error } from "../http/errors.ts";
import { children, el, parseXml, text, xmlDocument, type XmlNode } from "../http/xml.ts";
import { CORS_METHODS, type CorsRule } from "./rules.ts";

export const MAX_CORS_RULES = 100;
/** The protocol limits the whole document to 64 KB. */
export const MAX_CORS_BYTES = 64 * 1024;
const MAX_ID_LENGTH = 255;
const MAX_AGE = 2147483647;
const RULE_FIELDS = [
  "ID",
  "AllowedOrigin",
  "AllowedMethod",
  "AllowedHeader",
  "ExposeHeader",
  "MaxAgeSeconds",
];

function malformed(message: string): S3Error {
  return new S3Error("MalformedXML", message);
}

function invalid(message: string): S3Error {
  return new S3Error("InvalidRequest", message);
}

/** The texts of a repeated leaf element; structures inside are malformed. */
function leaves(node: XmlNode | XmlNode[] | undefined, name: string): string[] {
  return children(node).map((n) => {
    if (typeof n !== "string") throw malformed(`${name} must be a text element.`);
    // Origins, methods and header names never hold surrounding white space.
    return n.trim();
  });
}

function single(node: XmlNode | XmlNode[] | undefined, name: string): string | undefined {
  const values = leaves(node, name);
  if (values.length > 1) throw malformed(`${name} may appear only once in a CORSRule.`);
  return values[0];
}

function wildcardCount(s: string): number {
  return s.split("*").length - 1;
}

function readRule(node: XmlNode): CorsRule {
  if (typeof node !== "object" || Array.isArray(node)) {
    throw malformed("CORSRule must contain elements.");
  }
  for (const name of Object.keys(node)) {
    if (!RULE_FIELDS.includes(name)) throw malformed(`Unexpected element ${name} in CORSRule.`);
  }
  const id = single(node.ID, "ID");
  const origins = leaves(node.AllowedOrigin, "AllowedOrigin");
  const methods = leaves(node.AllowedMethod, "AllowedMethod");
  if (origins.length === 0 || methods.length === 0) {
    throw malformed("Each CORSRule needs at least one AllowedOrigin and one AllowedMethod.");
  }
  if (origins.includes("") || methods.includes("")) {
    throw malformed("AllowedOrigin and AllowedMethod may not be empty.");
  }
  if (id !== undefined && id.length > MAX_ID_LENGTH) {
    throw invalid(`The ID of a CORSRule is limited to ${MAX_ID_LENGTH} characters.`);
  }
  const unsupported = methods.find((m) => !CORS_METHODS.includes(m));
  if (unsupported !== undefined) {
    throw invalid(
      `Found unsupported HTTP method in CORS config. Unsupported method is ${unsupported}`,
    );
  }
  for (const origin of origins) {
    if (wildcardCount(origin) > 1) {
      throw invalid(`AllowedOrigin "${origin}" can not have more than one wildcard.`);
    }
  }
  const headers = leaves(node.AllowedHeader, "AllowedHeader");
  for (const header of headers) {
    if (wildcardCount(header) > 1) {
      throw invalid(`AllowedHeader "${header}" can not have more than one wildcard.`);
    }
  }
  const expose = leaves(node.ExposeHeader, "ExposeHeader");
  if (expose.includes("")) throw malformed("ExposeHeader may not be empty.");
  const maxAge = single(node.MaxAgeSeconds, "MaxAgeSeconds");
  if (maxAge !== undefined && (!/^\d{1,10}$/.test(maxAge) || Number(maxAge) > MAX_AGE)) {
    throw malformed("MaxAgeSeconds must be a non-negative integer.");
  }
  return {
    ...(id !== undefined && id !== "" ? { id } : {}),
    allowedOrigins: origins,
    allowedMethods: [...new Set(methods)],
    allowedHeaders: headers.map((h) => h.toLowerCase()),
    exposeHeaders: expose,
    ...(maxAge !== undefined ? { maxAgeSeconds: Number(maxAge) } : {}),
  };
}

/** Parses a PutBucketCors body (`CORSConfiguration`, or the `CorsConfiguration` spelling). */
export function parseCorsConfiguration(body: string): CorsRule[] {
  const root = parseXml(body, ["CORSConfiguration", "CorsConfiguration"]);
  for (const name of Object.keys(root)) {
    if (name !== "CORSRule") throw malformed(`Unexpected element ${name} in CORSConfiguration.`);
  }
  const nodes = children(root.CORSRule);
  if (nodes.length === 0) throw malformed("A CORS configuration needs at least one CORSRule.");
  if (nodes.length > MAX_CORS_RULES) {
    throw malformed(`A CORS configuration may hold at most ${MAX_CORS_RULES} rules.`);
  }
  return nodes.map(readRule);
}

/** The GetBucketCors answer. */
export function corsXml(rules: readonly CorsRule[], xmlns: string | undefined): string {
  const body = rules.map((r) =>
    el(
      "CORSRule",
      text("ID", r.id),
      ...r.allowedHeaders.map((h) => text("AllowedHeader", h)),
      ...r.allowedMethods.map((m) => text("AllowedMethod", m)),
      ...r.allowedOrigins.map((o) => text("AllowedOrigin", o)),
      ...r.exposeHeaders.map((h) => text("ExposeHeader", h)),
      text("MaxAgeSeconds", r.maxAgeSeconds),
    )
  ).join("");
  return xmlDocument("CORSConfiguration", xmlns, body);
}
