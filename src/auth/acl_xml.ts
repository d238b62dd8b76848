// The AccessControlPolicy document: rendering, and parsing into raw grants (acl.ts resolves them).
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { type Dialect, DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { dropFormatting, escapeXml, isBlank, text, withinXmlDepth } from "../http/xml.ts";
import type { Acl, Grantee, GroupName, Permission } from "./acl.ts";

const XSI = "http://www.w3.org/2001/XMLSchema-instance";
const MALFORMED =
  "The XML you provided was not well-formed or did not validate against our published schema.";
/** The protocol allows at most 100 grants in one ACL. */
export const MAX_GRANTS = 100;

const GROUP_PATHS: Record<GroupName, string> = {
  AllUsers: "global/AllUsers",
  AuthenticatedUsers: "global/AuthenticatedUsers",
  LogDelivery: "s3/LogDelivery",
};

/** The URI of a group in the given dialect. */
export function groupUri(dialect: Dialect, group: GroupName): string {
  return dialect.groupUriPrefix + GROUP_PATHS[group];
}

/** The group named by a URI of either dialect, or undefined when unknown. */
export function groupFromUri(uri: string): GroupName | undefined {
  for (const dialect of Object.values(DIALECTS)) {
    for (const [group, path] of Object.entries(GROUP_PATHS)) {
      if (uri === dialect.groupUriPrefix + path) return group as GroupName;
    }
  }
  return undefined;
}

function granteeXml(grantee: Grantee, dialect: Dialect): string {
  const open = `<Grantee xmlns:xsi="${XSI}" xsi:type="${grantee.type}">`;
  if (grantee.type === "Group") {
    return `${open}${text("URI", groupUri(dialect, grantee.group))}</Grantee>`;
  }
  return `${open}${text("ID", grantee.id)}${text("DisplayName", grantee.displayName)}</Grantee>`;
}

/** The full AccessControlPolicy document, in the dialect of the request. */
export function renderAclXml(acl: Acl, dialect: Dialect): string {
  const owner = `<Owner>${text("ID", acl.owner.id)}${
    text("DisplayName", acl.owner.displayName)
  }</Owner>`;
  const grants = acl.grants.map((g) =>
    `<Grant>${granteeXml(g.grantee, dialect)}${text("Permission", g.permission)}</Grant>`
  ).join("");
  const ns = `xmlns="${escapeXml(dialect.xmlns)}" xmlns:xsi="${XSI}"`;
  return `<?xml version="1.0" encoding="UTF-8"?>\n<AccessControlPolicy ${ns}>${owner}` +
    `<AccessControlList>${grants}</AccessControlList></AccessControlPolicy>`;
}

/** A grant as written in the document, before grantees are resolved. */
export interface RawGrant {
  type: "CanonicalUser" | "Group" | "AmazonCustomerByEmail";
  /** ID, URI or EmailAddress, according to the type. */
  value: string;
  permission: Permission;
}

export interface RawPolicy {
  owner: { id: string; displayName?: string };
  grants: RawGrant[];
}

type Node = string | { [name: string]: Node | Node[] };
type Element = { [name: string]: Node | Node[] };

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@_",
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  processEntities: true,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  isArray: (name: string) => name === "Grant",
});

export const PERMISSIONS: readonly Permission[] = [
  "FULL_CONTROL",
  "WRITE",
  "WRITE_ACP",
  "READ",
  "READ_ACP",
];
const GRANTEE_FIELD = { CanonicalUser: "ID", Group: "URI", AmazonCustomerByEmail: "EmailAddress" };

function malformed(): S3Error {
  return new S3Error("MalformedACLError", MALFORMED);
}

/** An element with children (an empty element counts as one with none). */
function element(node: Node | Node[] | undefined): Element | undefined {
  if (node === undefined) return undefined;
  if (isBlank(node)) return {};
  if (typeof node !== "object" || Array.isArray(node)) throw malformed();
  return node;
}

/** The text of a leaf element (attributes on it are ignored). */
function leaf(node: Node | Node[] | undefined): string | undefined {
  if (node === undefined || typeof node === "string") return node;
  if (Array.isArray(node)) throw malformed();
  const keys = Object.keys(node).filter((k) => !k.startsWith("@_"));
  if (keys.length === 0) return "";
  if (keys.length === 1 && typeof node["#text"] === "string") return node["#text"];
  throw malformed();
}

function parseGrant(node: Node): RawGrant {
  const grant = element(node);
  const grantee = element(grant?.Grantee);
  if (!grant || !grantee) throw malformed();
  const permission = leaf(grant.Permission);
  if (!PERMISSIONS.includes(permission as Permission)) throw malformed();
  const type = grantee["@_type"];
  if (typeof type !== "string" || !Object.hasOwn(GRANTEE_FIELD, type)) throw malformed();
  const value = leaf(grantee[GRANTEE_FIELD[type as RawGrant["type"]]]);
  if (!value) throw malformed();
  return { type: type as RawGrant["type"], value, permission: permission as Permission };
}

/**
 * Parses an AccessControlPolicy document into its owner and raw grants. Anything that is not
 * well-formed or does not follow the document's shape is a MalformedACLError.
 */
export function parsePolicyXml(body: string): RawPolicy {
  if (body.trim() === "" || /<!DOCTYPE|<!ENTITY/i.test(body)) throw malformed();
  if (!withinXmlDepth(body) || XMLValidator.validate(body) !== true) throw malformed();
  const doc = dropFormatting(parser.parse(body) as Element);
  const roots = Object.keys(doc);
  if (roots.length !== 1 || roots[0] !== "AccessControlPolicy") throw malformed();
  const root = element(doc.AccessControlPolicy);
  const owner = element(root?.Owner);
  const list = element(root?.AccessControlList);
  if (!root || !owner || !list) throw malformed();
  const ownerId = leaf(owner.ID);
  if (!ownerId) throw malformed();
  const grants = (list.Grant as Node[] | undefined ?? []).map(parseGrant);
  if (grants.length > MAX_GRANTS) throw malformed();
  return { owner: { id: ownerId, displayName: leaf(owner.DisplayName) }, grants };
}
