// PostObject: browser-based uploads with an HTML form (POST /{bucket}, multipart/form-data).
// The fields before the file carry what PutObject takes as headers, plus the Signature V4 POST
// policy that authorizes the upload; the file part streams into the object layer.
import { checkSessionToken } from "../auth/sts/sessions.ts";
import { OPERATION_RULES } from "../auth/actions.ts";
import type { Principal } from "../auth/principal.ts";
import {
  checkPostPolicy,
  type LengthRange,
  missingField,
  parsePostPolicy,
  verifyPostSignature,
  verifyPostSignatureV2,
} from "../auth/post_policy.ts";
import { sigV2Refused } from "../auth/sigv2.ts";
import { uriEncode } from "../auth/sigv4.ts";
import { checksumChecks } from "../http/checksum.ts";
import { detectDialect, type Dialect, DIALECTS, h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { formBoundary, readForm } from "../http/form_data.ts";
import { contentTypeFor } from "../http/mime.ts";
import { text, xmlDocument } from "../http/xml.ts";
import { type Handler, type HandlerResult, originOf, type RequestContext } from "./context.ts";
import { writeEncryption } from "./encryption.ts";
import {
  isHeaderValue,
  readMetadata,
  rejectUnsupportedWriteOptions,
  validateKey,
} from "./object_headers.ts";
import { contentMd5, newObjectAcl, newObjectOwner } from "./objects.ts";
import { conditionFacts } from "./condition_facts.ts";
import { newVersionLock } from "./object_lock.ts";
import { parseTagging, requestTags } from "./tags.ts";
import type { TagSet } from "../meta/store.ts";

/** Fields before the file: at most 20 KiB each, 64 KiB in all (names and part headers too). */
export const FORM_LIMITS = { fieldBytes: 20 * 1024, totalBytes: 64 * 1024 };

/** Standard form fields that PutObject takes as headers of the same name. */
const HEADER_FIELDS = [
  "content-type",
  "cache-control",
  "content-disposition",
  "content-encoding",
  "expires",
  "content-md5",
];

/** Vendor fields that authenticate the form rather than describe the object. */
const AUTH_FIELDS = ["algorithm", "credential", "date", "signature", "security-token"];

/** Form fields by lower-case name (names are case-insensitive); a repeated field is refused. */
function fieldValues(fields: [string, string][]): Map<string, string> {
  const values = new Map<string, string>();
  for (const [name, value] of fields) {
    const lower = name.toLowerCase();
    if (values.has(lower)) {
      throw new S3Error("InvalidArgument", `The form field '${name}' appears more than once.`, {
        details: { ArgumentName: name, ArgumentValue: value },
      });
    }
    values.set(lower, value);
  }
  return values;
}

/**
 * The dialect of a form: its signature fields decide, then the prefix of its other vendor
 * fields, otherwise the request's own.
 */
export function formDialect(values: Map<string, string>, fallback: Dialect): Dialect {
  const all = Object.values(DIALECTS);
  for (const d of all) {
    if (values.has(h(d, "signature")) || values.has(h(d, "algorithm"))) return d;
  }
  for (const d of all) if (d.sigV2 && values.has(d.sigV2.accessKeyField.toLowerCase())) return d;
  for (const name of values.keys()) {
    for (const d of all) if (name.startsWith(d.headerPrefix)) return d;
  }
  return fallback;
}

interface Authorized {
  principal: Principal;
  /** The allowed file size (the content-length-range of a signed policy). */
  range: LengthRange;
}

/**
 * Authenticates the form and checks its policy. A form without a signature acts as the
 * request's own principal (anonymous unless the request itself was signed) and has no policy.
 */
async function authorizeForm(
  ctx: RequestContext,
  opts: { values: Map<string, string>; dialect: Dialect; key: string },
): Promise<Authorized> {
  const { values, dialect } = opts;
  const signatureField = h(dialect, "signature");
  const v2 = !values.has(signatureField) ? dialect.sigV2 : undefined;
  const v2Signed = !!v2 &&
    (values.has(v2.accessKeyField.toLowerCase()) || values.has("signature"));
  if (!values.has(signatureField) && !v2Signed) {
    if (values.has("policy")) throw missingField(signatureField);
    return { principal: ctx.principal, range: { min: 0, max: Number.MAX_SAFE_INTEGER } };
  }
  if (ctx.principal.kind !== "anonymous") {
    throw new S3Error("InvalidArgument", "Only one auth mechanism allowed.");
  }
  if (v2Signed && !ctx.config.sigV2) throw sigV2Refused(dialect);
  let found: { principal: Principal } | undefined;
  const secretFor = async (k: string) => (found = await ctx.credentials.lookup(k))?.secret;
  if (v2Signed) {
    await verifyPostSignatureV2(values, { accessKeyField: v2!.accessKeyField, secretFor });
  } else {
    await verifyPostSignature(values, { dialect, region: ctx.config.region, secretFor });
  }
  const principal = found?.principal;
  if (!principal) {
    throw new S3Error(
      "InvalidAccessKeyId",
      "The access key Id you provided does not exist in our records.",
    );
  }
  checkSessionToken(principal, values.get(h(dialect, "security-token")) ?? null, Date.now());
  const policy = parsePostPolicy(values.get("policy")!);
  const checked = new Map(values);
  checked.set("bucket", ctx.bucket);
  checked.set("key", opts.key);
  const range = checkPostPolicy(policy, {
    values: checked,
    fields: [...values.keys()],
    dialect,
    now: Date.now(),
  });
  return { principal, range };
}

/** The request headers a PutObject with these form fields would have carried. */
function writeHeaders(values: Map<string, string>, dialect: Dialect): Headers {
  const auth = AUTH_FIELDS.map((f) => h(dialect, f));
  const headers = new Headers();
  for (const [name, value] of values) {
    const header = name === "acl" ? h(dialect, "acl") : name;
    const vendor = name.startsWith(dialect.headerPrefix) && !auth.includes(name);
    if (!vendor && !HEADER_FIELDS.includes(name) && name !== "acl") continue;
    try {
      if (isHeaderValue(value)) {
        headers.set(header, value);
        continue;
      }
    } catch { /* a name that is no header name */ }
    throw new S3Error("InvalidArgument", `The form field '${name}' cannot be used as a header.`, {
      details: { ArgumentName: name, ArgumentValue: value },
    });
  }
  return headers;
}

/** The file's bytes, held to the policy's content-length-range as they stream. */
async function* withinRange(
  body: AsyncIterable<Uint8Array>,
  range: LengthRange,
): AsyncGenerator<Uint8Array> {
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > range.max) {
      throw new S3Error("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size", {
        details: { MaxSizeAllowed: String(range.max) },
      });
    }
    yield chunk;
  }
  if (size < range.min) {
    throw new S3Error(
      "EntityTooSmall",
      "Your proposed upload is smaller than the minimum allowed size",
      {
        details: { ProposedSize: String(size), MinSizeAllowed: String(range.min) },
      },
    );
  }
}

/** The answer the form asked for: a redirect, 200, 201 with a PostResponse, or 204. */
function successResult(
  ctx: RequestContext,
  opts: { values: Map<string, string>; key: string; etag: string; headers: Record<string, string> },
): HandlerResult {
  const { values, key, etag } = opts;
  const redirect = values.get("success_action_redirect") ?? values.get("redirect");
  if (redirect) {
    let url: URL | undefined;
    try {
      url = new URL(redirect);
    } catch { /* a URL that cannot be interpreted is ignored, as the protocol defines */ }
    if (url && (url.protocol === "http:" || url.protocol === "https:")) {
      url.searchParams.append("bucket", ctx.bucket);
      url.searchParams.append("key", key);
      url.searchParams.append("etag", etag);
      return { status: 303, headers: { ...opts.headers, location: url.toString() } };
    }
  }
  const scheme = ctx.facts.secureTransport ? "https" : "http";
  const host = ctx.headers.get("host") ?? "localhost";
  const location = `${scheme}://${host}/${uriEncode(ctx.bucket)}/${uriEncode(key, true)}`;
  const headers = { ...opts.headers, location };
  const status = values.get("success_action_status");
  if (status === "201") {
    const body = xmlDocument(
      "PostResponse",
      undefined,
      text("Location", location) + text("Bucket", ctx.bucket) + text("Key", key) +
        text("ETag", etag),
    );
    return { status: 201, headers: { ...headers, "content-type": "application/xml" }, body };
  }
  return { status: status === "200" ? 200 : 204, headers };
}

/** Reads the form up to its file: the fields by lower-case name and their dialect. */
async function readPostForm(ctx: RequestContext) {
  if (ctx.bucket === "") {
    throw new S3Error(
      "MethodNotAllowed",
      "POST Object needs the bucket in the path (POST /{bucket}); a form's bucket field " +
        "does not address one.",
      { headers: { allow: "GET" } },
    );
  }
  const boundary = formBoundary(ctx.headers.get("content-type"));
  if (!boundary) {
    throw new S3Error(
      "PreconditionFailed",
      "At least one of the pre-conditions you specified did not hold",
      { details: { Condition: "Bucket POST must be of the enclosure-type multipart/form-data" } },
    );
  }
  const form = await readForm(ctx.body.chunks(), {
    boundary,
    fileField: "file",
    limits: FORM_LIMITS,
  });
  const values = fieldValues(form.fields);
  // A form whose request and fields show no dialect is read as a browser form (amz dialect).
  const dialect = formDialect(values, detectDialect(ctx.headers, ctx.query, DIALECTS.amz));
  ctx.answer.dialect = dialect;
  if (!form.file) {
    throw new S3Error(
      "IncorrectNumberOfFilesInPostRequest",
      "POST requires exactly one file upload per request.",
      { details: { ProvidedNumberOfFiles: "0", ExpectedNumberOfFiles: "1" } },
    );
  }
  return { values, file: form.file, dialect };
}

/**
 * The tags of the form: its `tagging` field is a Tagging XML document, as the protocol's POST
 * Object takes it; a `x-*-tagging` field (URL-encoded, as the header) is taken too, not both.
 */
function formTags(
  values: Map<string, string>,
  headers: Headers,
  dialect: Dialect,
): TagSet | undefined {
  const xml = values.get("tagging");
  if (xml === undefined) return requestTags(headers, dialect);
  if (headers.has(h(dialect, "tagging"))) {
    throw new S3Error(
      "InvalidArgument",
      `A form may carry tags in its tagging field or in ${h(dialect, "tagging")}, not both.`,
      { details: { ArgumentName: "tagging", ArgumentValue: xml } },
    );
  }
  return parseTagging(xml, { target: "object", dialect });
}

/** Checks what the form asks to write before any byte of the file is stored. */
async function checkWrite(
  ctx: RequestContext,
  opts: { values: Map<string, string>; dialect: Dialect; key: string; principal: Principal },
): Promise<void> {
  const { values, key } = opts;
  if (key === "") {
    throw new S3Error("InvalidArgument", "User key must have a length greater than 0.");
  }
  validateKey(key);
  if (values.has("bucket") && values.get("bucket") !== ctx.bucket) {
    throw new S3Error("InvalidArgument", "The form's bucket field names another bucket.", {
      details: { ArgumentName: "bucket", ArgumentValue: values.get("bucket")! },
    });
  }
  const bucket = ctx.bucketRecord;
  // Policy conditions read the form's fields as the headers they stand for.
  const fields = conditionFacts(writeHeaders(values, opts.dialect), ctx.query, opts.dialect);
  await ctx.access.decideRule(opts.principal, OPERATION_RULES.PutObject, {
    bucket,
    bucketName: ctx.bucket,
    key,
    facts: { ...ctx.facts, ...fields },
  });
}

export const postObject: Handler = async (ctx) => {
  const { values, file, dialect } = await readPostForm(ctx);
  const rawKey = values.get("key");
  if (rawKey === undefined) throw missingField("key");
  const key = rawKey.replaceAll("${filename}", file.filename);
  const { principal, range } = await authorizeForm(ctx, { values, dialect, key });
  await checkWrite(ctx, { values, dialect, key, principal });
  const headers = writeHeaders(values, dialect);
  const write: RequestContext = { ...ctx, dialect, headers, key, principal };
  rejectUnsupportedWriteOptions(headers, dialect);
  const meta = readMetadata(headers, dialect);
  const tags = formTags(values, headers, dialect);
  const acl = await newObjectAcl(write);
  const sse = await writeEncryption(write);
  const version = await ctx.layer.putObject({
    bucket: ctx.bucket,
    key,
    body: withinRange(file.body, range),
    contentType: meta.contentType ?? contentTypeFor(key),
    userMeta: meta.userMeta,
    headers: meta.headers,
    owner: await newObjectOwner(write),
    contentMd5: contentMd5(headers),
    checks: checksumChecks(headers, dialect),
    acl,
    encryption: sse.encryption,
    lock: await newVersionLock(write),
    tags,
    origin: { ...originOf(ctx), principal: principal.id },
    eventName: "ObjectCreated:Post",
  });
  const answer: Record<string, string> = { etag: version.etag, ...sse.headers };
  if (version.versionId !== "null") answer[h(dialect, "version-id")] = version.versionId;
  return successResult(ctx, { values, key, etag: version.etag, headers: answer });
};
