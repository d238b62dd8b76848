// Access control lists: canned ACLs, grant headers, the AccessControlPolicy document (acl_xml.ts)
// and the permission check.
import { type Dialect, h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { groupFromUri, MAX_GRANTS, parsePolicyXml, PERMISSIONS, type RawGrant } from "./acl_xml.ts";

export { renderAclXml } from "./acl_xml.ts";

export type Permission = "FULL_CONTROL" | "WRITE" | "WRITE_ACP" | "READ" | "READ_ACP";
export type GroupName = "AllUsers" | "AuthenticatedUsers" | "LogDelivery";
export type Grantee =
  | { type: "CanonicalUser"; id: string; displayName?: string }
  | { type: "Group"; group: GroupName };
export interface Grant {
  grantee: Grantee;
  permission: Permission;
}
export interface AclUser {
  id: string;
  displayName: string;
}
export interface Acl {
  owner: AclUser;
  grants: Grant[];
}
/** Maps grantees named in a request to known users; undefined when there is none. */
export interface AclResolver {
  email(address: string): AclUser | undefined;
  userId(id: string): AclUser | undefined;
}

export const CANNED_ACLS = [
  "private",
  "public-read",
  "public-read-write",
  "authenticated-read",
  "bucket-owner-read",
  "bucket-owner-full-control",
  "log-delivery-write",
] as const;

function user(u: AclUser): Grantee {
  return { type: "CanonicalUser", id: u.id, displayName: u.displayName };
}

function group(name: GroupName): Grantee {
  return { type: "Group", group: name };
}

/** The default private ACL: owner FULL_CONTROL. */
export function privateAcl(owner: AclUser): Acl {
  return { owner: { ...owner }, grants: [{ grantee: user(owner), permission: "FULL_CONTROL" }] };
}

/**
 * A canned ACL. The bucket-owner-* ones add `bucketOwner` (given for objects only; on a bucket,
 * or when the bucket owner is the object owner, they equal private). Unknown name: InvalidArgument.
 */
export function cannedAcl(name: string, owner: AclUser, bucketOwner?: AclUser): Acl {
  const acl = privateAcl(owner);
  const add = (grantee: Grantee, permission: Permission) =>
    acl.grants.push({ grantee, permission });
  const other = bucketOwner && bucketOwner.id !== owner.id ? bucketOwner : undefined;
  switch (name) {
    case "private":
      break;
    case "public-read":
      add(group("AllUsers"), "READ");
      break;
    case "public-read-write":
      add(group("AllUsers"), "READ");
      add(group("AllUsers"), "WRITE");
      break;
    case "authenticated-read":
      add(group("AuthenticatedUsers"), "READ");
      break;
    case "bucket-owner-read":
      if (other) add(user(other), "READ");
      break;
    case "bucket-owner-full-control":
      if (other) add(user(other), "FULL_CONTROL");
      break;
    case "log-delivery-write":
      add(group("LogDelivery"), "WRITE");
      add(group("LogDelivery"), "READ_ACP");
      break;
    default:
      throw new S3Error("InvalidArgument", `Unknown canned ACL: ${name}.`);
  }
  // Group grants come before the owner's, as the widely used implementations list them.
  const groups = acl.grants.filter((g) => g.grantee.type === "Group");
  acl.grants = [...groups, ...acl.grants.filter((g) => g.grantee.type !== "Group")];
  return acl;
}

const GRANT_HEADERS: readonly [string, Permission][] = [
  ["grant-read", "READ"],
  ["grant-write", "WRITE"],
  ["grant-read-acp", "READ_ACP"],
  ["grant-write-acp", "WRITE_ACP"],
  ["grant-full-control", "FULL_CONTROL"],
];

/** Whether any (non-empty) grant header of the dialect is present. */
export function hasGrantHeaders(headers: Headers, dialect: Dialect): boolean {
  return GRANT_HEADERS.some(([suffix]) => (headers.get(h(dialect, suffix)) ?? "").trim() !== "");
}

function badGrant(value: string): S3Error {
  return new S3Error("InvalidArgument", `Argument format not recognized: ${value}`);
}

/** Splits `id="a", uri="b", emailAddress=c` into [key, value] pairs (values quoted or bare). */
function splitGrantees(header: string): [string, string][] {
  const entries: [string, string][] = [];
  const re = /\s*([A-Za-z]+)\s*=\s*(?:"([^"]*)"|([^",\s]+))\s*(,|$)/y;
  let pos = 0;
  while (pos < header.length) {
    re.lastIndex = pos;
    const m = re.exec(header);
    if (!m || m[0] === "") throw badGrant(header);
    entries.push([m[1], (m[2] ?? m[3]).trim()]);
    pos = re.lastIndex;
    if (m[4] === "," && pos >= header.length) throw badGrant(header);
  }
  return entries;
}

/** Resolves a grantee named by type and value (ID, URI or EmailAddress) to a stored grantee. */
function resolveGrantee(type: RawGrant["type"], value: string, resolve: AclResolver): Grantee {
  if (type === "Group") {
    const name = groupFromUri(value);
    if (!name) throw new S3Error("InvalidArgument", `Invalid group uri: ${value}`);
    return group(name);
  }
  if (type === "AmazonCustomerByEmail") {
    const found = resolve.email(value);
    if (found) return user(found);
    throw new S3Error(
      "UnresolvableGrantByEmailAddress",
      "The email address you provided does not match any account on record.",
    );
  }
  const found = resolve.userId(value);
  if (!found) throw new S3Error("InvalidArgument", `Invalid id: ${value}`);
  return user(found);
}

const HEADER_KEYS: Record<string, RawGrant["type"]> = {
  id: "CanonicalUser",
  uri: "Group",
  emailaddress: "AmazonCustomerByEmail",
};

function checkGrantCount(count: number): void {
  if (count > MAX_GRANTS) {
    throw new S3Error("InvalidArgument", `An ACL can have at most ${MAX_GRANTS} grants.`);
  }
}

/**
 * The ACL given by the x-*-grant-* headers (each a comma-separated list of `id="..."`,
 * `uri="..."` or `emailAddress="..."`), or undefined when there is none. The ACL holds exactly
 * the listed grants. Unknown forms or group URIs and unknown ids: InvalidArgument; unknown
 * email: UnresolvableGrantByEmailAddress.
 */
export function aclFromGrantHeaders(
  headers: Headers,
  dialect: Dialect,
  owner: AclUser,
  resolve: AclResolver,
): Acl | undefined {
  if (!hasGrantHeaders(headers, dialect)) return undefined;
  const grants: Grant[] = [];
  for (const [suffix, permission] of GRANT_HEADERS) {
    const value = (headers.get(h(dialect, suffix)) ?? "").trim();
    if (value === "") continue;
    for (const [key, item] of splitGrantees(value)) {
      const type = HEADER_KEYS[key.toLowerCase()];
      if (!type || item === "") throw badGrant(value);
      grants.push({ grantee: resolveGrantee(type, item, resolve), permission });
    }
  }
  checkGrantCount(grants.length);
  return { owner: { ...owner }, grants };
}

/**
 * Parses an AccessControlPolicy body. Bad structure, unknown permission or grantee type:
 * MalformedACLError. An Owner ID other than `expectedOwnerId`: AccessDenied. Unknown user ids
 * or group URIs: InvalidArgument; unknown email: UnresolvableGrantByEmailAddress.
 */
export function parseAclXml(
  body: string,
  opts: { expectedOwnerId: string; resolve: AclResolver },
): Acl {
  const raw = parsePolicyXml(body);
  if (raw.owner.id !== opts.expectedOwnerId) throw new S3Error("AccessDenied", "Access Denied");
  const known = opts.resolve.userId(raw.owner.id);
  const owner = {
    id: raw.owner.id,
    displayName: known?.displayName ?? raw.owner.displayName ?? "",
  };
  const grants = raw.grants.map((g) => ({
    grantee: resolveGrantee(g.type, g.value, opts.resolve),
    permission: g.permission,
  }));
  return { owner, grants };
}

function matches(grantee: Grantee, who: { id: string; anonymous: boolean }): boolean {
  if (grantee.type === "CanonicalUser") return !who.anonymous && grantee.id === who.id;
  if (grantee.group === "AllUsers") return true;
  return grantee.group === "AuthenticatedUsers" && !who.anonymous;
}

/**
 * Whether `who` gets `needed` from the grants. FULL_CONTROL implies every permission; AllUsers
 * matches everyone (anonymous included); AuthenticatedUsers any non-anonymous principal;
 * CanonicalUser matches by id; LogDelivery matches nobody. Ownership itself grants nothing here.
 */
export function aclGrants(
  acl: Acl,
  who: { id: string; anonymous: boolean },
  needed: Permission,
): boolean {
  return acl.grants.some((g) =>
    (g.permission === needed || g.permission === "FULL_CONTROL") && matches(g.grantee, who)
  );
}

/** Whether the ACL grants anything to AllUsers. */
export function isPublicAcl(acl: Acl): boolean {
  return acl.grants.some((g) => g.grantee.type === "Group" && g.grantee.group === "AllUsers");
}

function grantKey(g: Grant): string {
  const who = g.grantee.type === "Group" ? `G:${g.grantee.group}` : `U:${g.grantee.id}`;
  return `${who}:${g.permission}`;
}

/** The name of the canned ACL that the ACL equals (order of grants aside), or undefined. */
export function cannedAclName(acl: Acl, bucketOwner?: AclUser): string | undefined {
  const keys = acl.grants.map(grantKey).sort().join("|");
  return CANNED_ACLS.find((name) =>
    cannedAcl(name, acl.owner, bucketOwner).grants.map(grantKey).sort().join("|") === keys
  );
}

/** Compact JSON for storage in the metadata. */
export function aclToJson(acl: Acl): string {
  return JSON.stringify({
    o: [acl.owner.id, acl.owner.displayName],
    g: acl.grants.map((g) =>
      g.grantee.type === "Group"
        ? ["G", g.grantee.group, g.permission]
        : ["U", g.grantee.id, g.grantee.displayName ?? null, g.permission]
    ),
  });
}

const GROUP_NAMES: readonly GroupName[] = ["AllUsers", "AuthenticatedUsers", "LogDelivery"];

function isStr(v: unknown): v is string {
  return typeof v === "string";
}

function grantFromJson(row: unknown): Grant {
  if (!Array.isArray(row)) throw new Error("Stored ACL grant is not an array.");
  const permission = row[row.length - 1];
  if (!PERMISSIONS.includes(permission)) throw new Error("Stored ACL permission is invalid.");
  if (row[0] === "G" && row.length === 3 && GROUP_NAMES.includes(row[1])) {
    return { grantee: group(row[1]), permission };
  }
  if (row[0] === "U" && row.length === 4 && isStr(row[1]) && (row[2] === null || isStr(row[2]))) {
    const grantee: Grantee = { type: "CanonicalUser", id: row[1] };
    if (row[2] !== null) grantee.displayName = row[2];
    return { grantee, permission };
  }
  throw new Error("Stored ACL grant is invalid.");
}

/** Reads what aclToJson wrote; throws a plain Error when the text is not a stored ACL. */
export function aclFromJson(text: string): Acl {
  const doc = JSON.parse(text) as { o?: unknown; g?: unknown };
  const o = doc?.o;
  if (!Array.isArray(o) || o.length !== 2 || !isStr(o[0]) || !isStr(o[1])) {
    throw new Error("Stored ACL owner is invalid.");
  }
  if (!Array.isArray(doc.g)) throw new Error("Stored ACL grants are invalid.");
  return { owner: { id: o[0], displayName: o[1] }, grants: doc.g.map(grantFromJson) };
}

/**
 * A request sets an ACL in one way only. Canned and grant headers together: InvalidRequest;
 * either header together with a (non-empty) body: UnexpectedContent. Neither is checked here.
 */
export function assertSingleAclMethod(
  hasCanned: boolean,
  hasGrants: boolean,
  hasBody: boolean,
): void {
  if (hasCanned && hasGrants) {
    throw new S3Error(
      "InvalidRequest",
      "Specifying both Canned ACLs and Header Grants is not allowed",
    );
  }
  if (hasBody && (hasCanned || hasGrants)) {
    throw new S3Error("UnexpectedContent", "This request does not support content");
  }
}
