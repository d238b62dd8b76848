// The POST policy of browser form uploads (Signature Version 4): a base64 JSON document with
// `expiration` and `conditions`, signed with the credential's signing key (the string to sign is
// the base64 policy itself), and the condition checks the protocol's POST Policy reference
// defines: exact matches, starts-with, content-length-range, and every form field covered.
import { createHmac, timingSafeEqual } from "node:crypto";
import { type Dialect, h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { parseAmzDate, signingKey } from "./sigv4.ts";
import { sameSignatureV2, signatureMismatch, signV2 } from "./sigv2.ts";

export type PolicyCondition =
  | { op: "eq" | "starts-with"; field: string; value: string; text: string }
  | { op: "content-length-range"; min: number; max: number; text: string };

export interface PostPolicy {
  expiration: number;
  conditions: PolicyCondition[];
}

/** The content-length-range the policy allows (the whole range when it names none). */
export interface LengthRange {
  min: number;
  max: number;
}

function invalidPolicy(detail: string): S3Error {
  return new S3Error("InvalidPolicyDocument", `Invalid Policy: ${detail}`);
}

function policyDenied(detail: string): S3Error {
  return new S3Error("AccessDenied", `Invalid according to Policy: ${detail}`);
}

/** A condition as the error messages show it, e.g. `["eq", "$key", "a"]`. */
function conditionText(items: unknown[]): string {
  return `[${items.map((i) => JSON.stringify(i)).join(", ")}]`;
}

function lengthBound(value: unknown): number | undefined {
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

function parseCondition(item: unknown): PolicyCondition[] {
  if (Array.isArray(item)) {
    const op = typeof item[0] === "string" ? item[0].toLowerCase() : "";
    const text = conditionText(item);
    if (op === "content-length-range" && item.length === 3) {
      const min = lengthBound(item[1]);
      const max = lengthBound(item[2]);
      if (min === undefined || max === undefined || min > max) {
        throw invalidPolicy(`Invalid content-length-range: ${text}`);
      }
      return [{ op, min, max, text }];
    }
    if (
      (op === "eq" || op === "starts-with") && item.length === 3 &&
      typeof item[1] === "string" && item[1].startsWith("$") && item[1].length > 1 &&
      typeof item[2] === "string"
    ) {
      return [{ op, field: item[1].slice(1).toLowerCase(), value: item[2], text }];
    }
    throw invalidPolicy(`Invalid Condition: ${text}`);
  }
  if (typeof item === "object" && item !== null) {
    const entries = Object.entries(item);
    if (entries.length === 0) throw invalidPolicy("Invalid Simple-Condition: an empty object.");
    return entries.map(([name, value]) => {
      if (typeof value !== "string") {
        throw invalidPolicy(`Invalid Simple-Condition: the value of ${name} must be a string.`);
      }
      const field = name.toLowerCase();
      return { op: "eq", field, value, text: conditionText(["eq", `$${name}`, value]) };
    });
  }
  throw invalidPolicy(`Invalid Condition: ${JSON.stringify(item)}`);
}

/** Decodes and parses the `policy` form field. */
export function parsePostPolicy(base64: string): PostPolicy {
  let doc: unknown;
  try {
    const bytes = Uint8Array.from(atob(base64.trim()), (c) => c.charCodeAt(0));
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw invalidPolicy("Invalid JSON.");
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw invalidPolicy("Invalid JSON.");
  }
  const { expiration, conditions } = doc as Record<string, unknown>;
  if (expiration === undefined) throw invalidPolicy("Policy missing expiration.");
  const when = typeof expiration === "string" &&
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(expiration)
    ? Date.parse(expiration)
    : NaN;
  if (Number.isNaN(when)) {
    throw invalidPolicy(`Invalid 'expiration' value: '${String(expiration)}'`);
  }
  if (conditions === undefined) throw invalidPolicy("Policy missing conditions.");
  if (!Array.isArray(conditions)) throw invalidPolicy("Invalid 'conditions' value.");
  return { expiration: when, conditions: conditions.flatMap(parseCondition) };
}

/** Fields that only support exact matching (the reference's condition table). */
function exactOnly(field: string, dialect: Dialect): boolean {
  if (field === "bucket" || field === "success_action_status") return true;
  return field.startsWith(dialect.headerPrefix) && !field.startsWith(h(dialect, "meta-"));
}

/** Form fields a policy need not mention. */
export function exemptFromPolicy(field: string, dialect: Dialect): boolean {
  const v2 = dialect.sigV2 &&
    (field === "signature" || field === dialect.sigV2.accessKeyField.toLowerCase());
  return field === "policy" || field === "file" || field === h(dialect, "signature") ||
    field.startsWith("x-ignore-") || !!v2;
}

/**
 * Checks the policy against the request: not expired, every condition met by `values` (form
 * fields by lower-case name, plus `bucket` and the final `key`), every form field in `fields`
 * covered by a condition. Returns the allowed content length range.
 */
export function checkPostPolicy(
  policy: PostPolicy,
  opts: { values: Map<string, string>; fields: string[]; dialect: Dialect; now: number },
): LengthRange {
  if (opts.now > policy.expiration) throw policyDenied("Policy expired.");
  const range: LengthRange = { min: 0, max: Number.MAX_SAFE_INTEGER };
  const covered = new Set<string>();
  for (const c of policy.conditions) {
    if (c.op === "content-length-range") {
      range.min = Math.max(range.min, c.min);
      range.max = Math.min(range.max, c.max);
      continue;
    }
    if (c.op === "starts-with" && exactOnly(c.field, opts.dialect)) {
      throw invalidPolicy(`Invalid Condition: ${c.text}: ${c.field} supports exact matching only.`);
    }
    covered.add(c.field);
    const value = opts.values.get(c.field) ?? "";
    const ok = c.op === "eq" ? value === c.value : value.startsWith(c.value);
    if (!ok) throw policyDenied(`Policy Condition failed: ${c.text}`);
  }
  const extra = opts.fields.filter((f) => !covered.has(f) && !exemptFromPolicy(f, opts.dialect));
  if (extra.length > 0) throw policyDenied(`Extra input fields: ${extra.join(", ")}`);
  return range;
}

/** The protocol's answer to a form without a field it needs. */
export function missingField(name: string): S3Error {
  return new S3Error(
    "InvalidArgument",
    `Bucket POST must contain a field named '${name}'.  If it is specified, please check the ` +
      "order of the fields.",
    { details: { ArgumentName: name, ArgumentValue: "" } },
  );
}

function badField(name: string, value: string, message: string): S3Error {
  return new S3Error("InvalidArgument", message, {
    details: { ArgumentName: name, ArgumentValue: value },
  });
}

/**
 * Verifies the signature fields of a form (`x-*-algorithm`, `x-*-credential`, `x-*-date`,
 * `x-*-signature` over `policy`) and returns the signing access key.
 */
export async function verifyPostSignature(
  values: Map<string, string>,
  opts: {
    dialect: Dialect;
    region: string;
    secretFor: (accessKey: string) => Promise<string | undefined>;
  },
): Promise<string> {
  const d = opts.dialect;
  const names = {
    algorithm: h(d, "algorithm"),
    credential: h(d, "credential"),
    date: h(d, "date"),
    signature: h(d, "signature"),
  };
  const policy = values.get("policy");
  if (policy === undefined) throw missingField("policy");
  for (const name of Object.values(names)) if (!values.has(name)) throw missingField(name);
  const algorithm = values.get(names.algorithm)!;
  if (algorithm !== d.algorithm) {
    throw badField(
      names.algorithm,
      algorithm,
      `${names.algorithm} only supports "${d.algorithm}".`,
    );
  }
  const credential = values.get(names.credential)!;
  const parts = credential.split("/");
  const [accessKey, day, region, service, terminator] = parts;
  if (parts.length !== 5 || accessKey === "" || !/^\d{8}$/.test(day)) {
    throw badField(names.credential, credential, `The credential "${credential}" is malformed.`);
  }
  if (terminator !== d.scopeTerminator) {
    throw badField(
      names.credential,
      credential,
      `The credential terminator must be "${d.scopeTerminator}".`,
    );
  }
  if (region !== opts.region) {
    throw badField(
      names.credential,
      credential,
      `The region '${region}' is wrong; expecting '${opts.region}'.`,
    );
  }
  if (!d.services.includes(service)) {
    throw badField(names.credential, credential, `The service '${service}' is not served here.`);
  }
  const date = values.get(names.date)!;
  if (Number.isNaN(parseAmzDate(date)) || date.slice(0, 8) !== day) {
    throw badField(
      names.date,
      date,
      `${names.date} is malformed or does not match the credential.`,
    );
  }
  const secret = await opts.secretFor(accessKey);
  if (secret === undefined) {
    throw new S3Error(
      "InvalidAccessKeyId",
      "The access key Id you provided does not exist in our records.",
    );
  }
  const expected = createHmac("sha256", signingKey(d, secret, { date: day, region, service }))
    .update(policy).digest();
  const given = values.get(names.signature)!;
  if (!/^[0-9a-f]{64}$/.test(given) || !timingSafeEqual(expected, Uint8Array.fromHex(given))) {
    throw new S3Error(
      "SignatureDoesNotMatch",
      "The request signature we calculated does not match the signature you provided. " +
        "Check your key and signing method.",
    );
  }
  return accessKey;
}

/**
 * Verifies a Signature Version 2 form: the access key field (`AWSAccessKeyId`) and `signature`,
 * the base64 HMAC-SHA1 of the base64 `policy` under the secret. Returns the access key.
 */
export async function verifyPostSignatureV2(
  values: Map<string, string>,
  opts: {
    accessKeyField: string;
    secretFor: (accessKey: string) => Promise<string | undefined>;
  },
): Promise<string> {
  const accessKey = values.get(opts.accessKeyField.toLowerCase());
  if (accessKey === undefined) throw missingField(opts.accessKeyField);
  const policy = values.get("policy");
  if (policy === undefined) throw missingField("policy");
  const given = values.get("signature");
  if (given === undefined) throw missingField("Signature");
  const secret = await opts.secretFor(accessKey);
  if (secret === undefined) {
    throw new S3Error(
      "InvalidAccessKeyId",
      "The access key Id you provided does not exist in our records.",
    );
  }
  if (!sameSignatureV2(signV2(secret, policy), given)) throw signatureMismatch();
  return accessKey;
}
