// Bucket policies: parsing and validation of the JSON document, and evaluation against a request.
// Every vendor spelling (action prefix, ARN prefixes, principal key) comes from the dialects, and
// a stored policy may use either spelling, or both, whatever the dialect of the request.
import { DIALECTS } from "../http/dialect.ts";
import { POLICY_ACTIONS } from "./actions.ts";
import {
  type Condition,
  type ConditionContext,
  conditionsMatch,
  isRecord,
  malformed,
  parseConditions,
  wildcardMatch,
} from "./policy_conditions.ts";

export type { Condition, ConditionKey } from "./policy_conditions.ts";

/**
 * "*" is everyone, anonymous included; a user name "*" is any authenticated user. `accounts` are
 * the account ids of root principals (`arn:<partition>:iam::<account>:root`).
 */
export type PolicyPrincipal = "*" | { users: string[]; accounts?: string[] };

/**
 * A resource pattern: `bucket` alone is the bucket ARN, `bucket/key` an object ARN. Both parts may
 * hold `*` and `?`; as in the protocol the whole ARN is matched at once, so `*` may cross the `/`
 * (`arn:...:::*` matches the bucket and its objects).
 */
export interface PolicyResource {
  bucket: string;
  key?: string;
}

export interface PolicyStatement {
  sid?: string;
  effect: "Allow" | "Deny";
  principal: PolicyPrincipal;
  /** The document said NotPrincipal: the statement applies to whoever `principal` misses. */
  notPrincipal?: boolean;
  /** Action patterns without prefix, e.g. "GetObject", "Get*", "*"; matched case-insensitively. */
  actions: string[];
  /** The document said NotAction. */
  notAction?: boolean;
  resources: PolicyResource[];
  /** The document said NotResource. */
  notResource?: boolean;
  conditions: Condition[];
}

export interface BucketPolicy {
  version: string;
  statements: PolicyStatement[];
  /**
   * User name -> the id of the user that had the name when the policy was stored (see
   * policy_principals.ts): a user name matches only that user. Unset: names alone match.
   */
  userIds?: Record<string, string>;
}

export interface PolicyRequest extends ConditionContext {
  /** Action without prefix, e.g. "GetObject", "ListBucket". */
  action: string;
  bucket: string;
  /** Object key for object actions; undefined for bucket actions. */
  key?: string;
  /** undefined for anonymous. */
  userName?: string;
  /** The user's stable id, which is also its account id (Owner.ID); undefined for anonymous. */
  userId?: string;
}

/** Actions a policy may name (without prefix), by lower case: those requests are checked against. */
const ACTION_NAMES = new Map(POLICY_ACTIONS.map((a) => [a.toLowerCase(), a]));

const DIALECT_LIST = Object.values(DIALECTS);
const VERSIONS = ["2012-10-17", "2008-10-17"];
/** The protocol's default when a document has no Version. */
const DEFAULT_VERSION = "2008-10-17";
const MAX_POLICY_BYTES = 20 * 1024;
const TOP_FIELDS = ["Version", "Id", "Statement"];
const STATEMENT_FIELDS =
  "Sid Effect Principal NotPrincipal Action NotAction Resource NotResource Condition"
    .split(" ");

function checkFields(obj: Record<string, unknown>, allowed: string[], where: string): void {
  for (const name of Object.keys(obj)) {
    if (!allowed.includes(name)) throw malformed(`${where}: unknown field "${name}"`);
  }
}

/** A string or a non-empty array of strings, as a list. */
function stringList(raw: unknown, what: string): string[] {
  const list = Array.isArray(raw) ? raw : [raw];
  if (list.length === 0 || list.some((v) => typeof v !== "string" || v === "")) {
    throw malformed(`${what} must be a string or a non-empty array of strings`);
  }
  return list as string[];
}

/** The user name of a user ARN in either dialect, also `arn:<partition>:iam::<account>:user/`. */
function userNameOf(arn: string): string | undefined {
  for (const d of DIALECT_LIST) {
    if (arn.startsWith(d.userArnPrefix)) return arn.slice(d.userArnPrefix.length) || undefined;
    const head = d.userArnPrefix.slice(0, d.userArnPrefix.lastIndexOf("user/"));
    if (!arn.startsWith(head)) continue;
    const m = /^[^:/]*:user\/(.+)$/.exec(arn.slice(head.length));
    if (m) return m[1];
  }
  return undefined;
}

/** The account id of an account-root ARN in either dialect (`arn:aws:iam::<account>:root`). */
function accountOf(arn: string): string | undefined {
  for (const d of DIALECT_LIST) {
    const head = d.userArnPrefix.slice(0, d.userArnPrefix.lastIndexOf("user/"));
    const m = arn.startsWith(head) ? /^([^:/]+):root$/.exec(arn.slice(head.length)) : null;
    if (m) return m[1];
  }
  return undefined;
}

function parsePrincipal(raw: unknown, where: string): PolicyPrincipal {
  if (raw === "*") return "*";
  if (!isRecord(raw) || Object.keys(raw).length === 0) {
    throw malformed(`${where}: Principal must be "*" or an object of principal ARNs`);
  }
  const users: string[] = [];
  const accounts: string[] = [];
  let everyone = false;
  for (const [type, value] of Object.entries(raw)) {
    if (!DIALECT_LIST.some((d) => d.principalKey === type)) {
      throw malformed(`${where}: unsupported principal type "${type}"`);
    }
    for (const item of stringList(value, `${where}: Principal`)) {
      const account = accountOf(item);
      if (account !== undefined) {
        accounts.push(account);
        continue;
      }
      const name = item === "*" ? "*" : userNameOf(item);
      if (name === undefined) throw malformed(`${where}: invalid principal "${item}"`);
      if (item === "*") everyone = true;
      else users.push(name);
    }
  }
  if (everyone) return "*";
  return accounts.length > 0 ? { users, accounts } : { users };
}

function parseAction(text: string, where: string): string {
  if (text === "*") return "*";
  for (const d of DIALECT_LIST) {
    if (!text.toLowerCase().startsWith(d.actionPrefix.toLowerCase())) continue;
    const name = text.slice(d.actionPrefix.length);
    const lower = name.toLowerCase();
    if (!/[*?]/.test(name)) {
      const known = ACTION_NAMES.get(lower);
      if (known) return known;
    } else if (POLICY_ACTIONS.some((a) => wildcardMatch(lower, a.toLowerCase()))) {
      return name;
    }
    throw malformed(
      `${where}: unknown action "${text}" (not one any request here is checked against)`,
    );
  }
  throw malformed(`${where}: action "${text}" has no known service prefix`);
}

/**
 * A stored policy may name actions accepted by earlier versions and no longer: they are dropped,
 * which changes no decision (no request is checked against them).
 */
function parseActions(list: string[], where: string, stored: boolean): string[] {
  return list.flatMap((text) => {
    try {
      return [parseAction(text, where)];
    } catch (err) {
      if (stored && /unknown action/.test((err as Error).message)) return [];
      throw err;
    }
  });
}

/** `bucket` undefined: any bucket (a session policy). */
function parseResource(text: string, bucket: string | undefined, where: string): PolicyResource {
  if (text === "*") return { bucket: "*" };
  for (const d of DIALECT_LIST) {
    if (!text.startsWith(d.resourceArnPrefix)) continue;
    const rest = text.slice(d.resourceArnPrefix.length);
    const slash = rest.indexOf("/");
    const resource = slash < 0 ? { bucket: rest } : {
      bucket: rest.slice(0, slash),
      key: rest.slice(slash + 1),
    };
    if (
      resource.bucket === "" || (bucket !== undefined && !wildcardMatch(resource.bucket, bucket))
    ) {
      throw malformed(`${where}: resource "${text}" is not in bucket ${bucket}`);
    }
    return resource;
  }
  throw malformed(`${where}: resource "${text}" is not a bucket or object ARN`);
}

/** Exactly one of `name` and `Not<name>`: its value and whether it was the negated one. */
function either(raw: Record<string, unknown>, name: string, where: string) {
  const plain = raw[name];
  const negated = raw[`Not${name}`];
  if (plain !== undefined && negated !== undefined) {
    throw malformed(`${where}: ${name} and Not${name} cannot both be given`);
  }
  if (plain === undefined && negated === undefined) {
    throw malformed(`${where}: missing required field ${name}`);
  }
  return { value: plain ?? negated, not: plain === undefined };
}

function parseStatement(
  raw: unknown,
  index: number,
  opts: { bucket?: string; stored: boolean },
): PolicyStatement {
  let where = `Statement ${index + 1}`;
  if (!isRecord(raw)) throw malformed(`${where} must be an object`);
  checkFields(raw, STATEMENT_FIELDS, where);
  const sid = raw.Sid;
  if (sid !== undefined && typeof sid !== "string") throw malformed(`${where}: Sid must be text`);
  if (sid) where += ` (${sid})`;
  const effect = raw.Effect;
  if (effect !== "Allow" && effect !== "Deny") {
    throw malformed(`${where}: Effect must be "Allow" or "Deny"`);
  }
  // A session policy (no bucket) speaks for its session only: it names no principal.
  const session = opts.bucket === undefined;
  if (session && (raw.Principal !== undefined || raw.NotPrincipal !== undefined)) {
    throw malformed(`${where}: a session policy cannot name a Principal`);
  }
  const principal = session ? { value: "*", not: false } : either(raw, "Principal", where);
  const action = either(raw, "Action", where);
  const resource = either(raw, "Resource", where);
  const statement: PolicyStatement = {
    effect,
    principal: parsePrincipal(principal.value, where),
    actions: parseActions(stringList(action.value, `${where}: Action`), where, opts.stored),
    resources: stringList(resource.value, `${where}: Resource`)
      .map((r) => parseResource(r, opts.bucket, where)),
    conditions: parseConditions(raw.Condition, where),
  };
  if (sid !== undefined) statement.sid = sid;
  if (principal.not) statement.notPrincipal = true;
  if (action.not) statement.notAction = true;
  if (resource.not) statement.notResource = true;
  return statement;
}

/**
 * Parses and validates a bucket policy for `bucket`. Throws S3Error("MalformedPolicy") naming the
 * problem: invalid JSON, wrong shape, unknown fields, unsupported Version, bad Effect, Principal,
 * Action, Resource (must lie in `bucket`) or Condition, duplicate Sid, or more than 20 KiB.
 * `stored`: the text was accepted before (see parseActions).
 */
export function parseBucketPolicy(
  text: string,
  bucket: string,
  opts: { stored?: boolean } = {},
): BucketPolicy {
  return parsePolicy(text, bucket, opts.stored ?? false);
}

/**
 * Parses a session policy (the `Policy` of a token service request): the same document without
 * Principal, its resources in any bucket. It can only narrow what the session's user may do.
 */
export function parseSessionPolicy(text: string, opts: { stored?: boolean } = {}): BucketPolicy {
  return parsePolicy(text, undefined, opts.stored ?? false);
}

function parsePolicy(text: string, bucket: string | undefined, stored: boolean): BucketPolicy {
  if (new TextEncoder().encode(text).byteLength > MAX_POLICY_BYTES) {
    throw malformed(`Policies must be no larger than ${MAX_POLICY_BYTES} bytes`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw malformed("Policies must be valid JSON");
  }
  if (!isRecord(doc)) throw malformed("Policies must be a JSON object");
  checkFields(doc, TOP_FIELDS, "Policy");
  const version = doc.Version ?? DEFAULT_VERSION;
  if (typeof version !== "string" || !VERSIONS.includes(version)) {
    throw malformed(`Unsupported policy Version ${JSON.stringify(version)}: use "2012-10-17"`);
  }
  if (doc.Id !== undefined && typeof doc.Id !== "string") throw malformed("Id must be text");
  const raw = doc.Statement;
  const list = Array.isArray(raw) ? raw : isRecord(raw) ? [raw] : undefined;
  if (!list || list.length === 0) {
    throw malformed("Policies must have a Statement: an object or a non-empty array");
  }
  const statements = list.map((s, i) => parseStatement(s, i, { bucket, stored }));
  const sids = statements.flatMap((s) => (s.sid ? [s.sid] : []));
  const duplicate = sids.find((sid, i) => sids.indexOf(sid) !== i);
  if (duplicate !== undefined) throw malformed(`Statement ids must be unique: "${duplicate}"`);
  return { version, statements };
}

function principalMatches(
  principal: PolicyPrincipal,
  who: { userName?: string; userId?: string },
  userIds: Record<string, string> | undefined,
): boolean {
  if (principal === "*") return true;
  if (who.userId !== undefined && principal.accounts?.includes(who.userId)) return true;
  if (who.userName === undefined) return false;
  return principal.users.some((u) =>
    u === "*" ||
    (u === who.userName && (userIds === undefined || userIds[u] === who.userId))
  );
}

/** The user names a policy's principals list (not "*"). */
export function policyUserNames(policy: BucketPolicy): string[] {
  const names = policy.statements.flatMap((s) => s.principal === "*" ? [] : s.principal.users);
  return [...new Set(names.filter((n) => n !== "*"))];
}

function resourceMatches(resources: PolicyResource[], req: PolicyRequest): boolean {
  const target = req.key === undefined ? req.bucket : `${req.bucket}/${req.key}`;
  return resources.some((r) =>
    wildcardMatch(r.key === undefined ? r.bucket : `${r.bucket}/${r.key}`, target)
  );
}

function actionMatches(s: PolicyStatement, action: string): boolean {
  const lower = action.toLowerCase();
  return s.actions.some((a) => wildcardMatch(a.toLowerCase(), lower)) !== !!s.notAction;
}

function statementApplies(
  s: PolicyStatement,
  req: PolicyRequest,
  userIds: Record<string, string> | undefined,
): boolean {
  if (principalMatches(s.principal, req, userIds) === !!s.notPrincipal) return false;
  if (!actionMatches(s, req.action)) return false;
  if (resourceMatches(s.resources, req) === !!s.notResource) return false;
  return conditionsMatch(s.conditions, req);
}

/** "Deny" if any matching Deny statement, else "Allow" if any matching Allow, else "NoMatch". */
export function evaluatePolicy(
  policy: BucketPolicy,
  req: PolicyRequest,
): "Allow" | "Deny" | "NoMatch" {
  let allowed = false;
  for (const s of policy.statements) {
    if (!statementApplies(s, req, policy.userIds)) continue;
    if (s.effect === "Deny") return "Deny";
    allowed = true;
  }
  return allowed ? "Allow" : "NoMatch";
}

/** Whether a condition of the policy reads the tags of the object acted on. */
export function readsExistingTags(policy: BucketPolicy): boolean {
  return policy.statements.some((s) => s.conditions.some((c) => c.key === "ExistingObjectTag"));
}

/**
 * Whether some Allow statement could grant one of `actions` to anonymous callers on some
 * resource of the bucket, whatever the request's conditions.
 */
export function mayAllowAnonymous(policy: BucketPolicy, actions: string[]): boolean {
  return policy.statements.some((s) =>
    s.effect === "Allow" && principalMatches(s.principal, {}, undefined) !== !!s.notPrincipal &&
    actions.some((a) => actionMatches(s, a))
  );
}

/**
 * True when some Allow statement reaches everyone, anonymous included: Principal "*" (conditions
 * are not weighed), or a NotPrincipal that lists only users.
 */
export function isPublicPolicy(policy: BucketPolicy): boolean {
  return policy.statements.some((s) =>
    s.effect === "Allow" && (s.notPrincipal ? s.principal !== "*" : s.principal === "*")
  );
}
