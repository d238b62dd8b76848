// Shared helpers of the access-control tests (access_policy_test.ts, access_acl_test.ts): users
// through the admin API, requests as a user in either dialect, anonymous requests, and checks of
// protocol error answers.
import { createHash } from "node:crypto";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER, type TestServer } from "./server.ts";
import {
  type DialectName,
  headerName,
  objectPath,
  type RawRequest,
  signedFetch,
  xmlValue,
} from "./signer.ts";

export const DIALECTS: DialectName[] = ["store", "amz"];

export const NAMESPACE: Record<DialectName, string> = {
  store: "http://store.local/doc/2006-03-01/",
  amz: "http://s3.amazonaws.com/doc/2006-03-01/",
};

/** The vendor spellings a test document (policy, ACL) uses in each dialect. */
export const SPELL = {
  store: {
    action: "store:",
    globalKey: "store:",
    arn: "arn:store:store:::",
    userArn: "arn:store:iam::user/",
    principalKey: "Store",
    groups: "http://acs.store.local/groups/",
  },
  amz: {
    action: "s3:",
    globalKey: "aws:",
    arn: "arn:aws:s3:::",
    userArn: "arn:aws:iam::user/",
    principalKey: "AWS",
    groups: "http://acs.amazonaws.com/groups/",
  },
} as const;

export interface TestUser {
  name: string;
  email: string;
  accessKey: string;
  secret: string;
}

export type Access = "read" | "write" | "readwrite" | "none";

function basic(): string {
  return "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`);
}

/** A request to the admin API with the administrator's credentials. */
export async function adminApi(
  server: TestServer,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> | null }> {
  const res = await fetch(`${server.url}/admin${path}`, {
    method,
    headers: {
      authorization: basic(),
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text === "" ? null : JSON.parse(text) };
}

/** Creates a user; its email is `<name>@example.test`. */
export async function createUser(
  server: TestServer,
  name: string,
  bucketAccess: { bucket: string; permission: Access }[] = [],
): Promise<TestUser> {
  const email = `${name}@example.test`;
  const { status, json } = await adminApi(server, "POST", "/users", {
    name,
    description: `test user ${name}`,
    email,
    bucket_access: bucketAccess,
  });
  assertEquals(status, 201, `create user ${name}: ${JSON.stringify(json)}`);
  return {
    name,
    email,
    accessKey: String(json!.access_key),
    secret: String(json!.secret_key),
  };
}

/** Sets a user's bucket_access list. */
export async function setBucketAccess(
  server: TestServer,
  user: TestUser,
  bucketAccess: { bucket: string; permission: Access }[],
): Promise<void> {
  const { status, json } = await adminApi(server, "PUT", `/users/${user.accessKey}/buckets`, {
    bucket_access: bucketAccess,
  });
  assertEquals(status, 200, `set bucket access: ${JSON.stringify(json)}`);
}

/** A raw request signed by `user` (the administrator when undefined). */
export type Requester = (r: RawRequest) => Promise<Response>;

export function as(
  server: TestServer,
  user: TestUser | undefined,
  dialect: DialectName,
): Requester {
  return (r) =>
    signedFetch(server, {
      dialect,
      ...(user ? { accessKey: user.accessKey, secret: user.secret } : {}),
      ...r,
    });
}

/**
 * An unsigned request (plain fetch, no credentials). With a dialect it carries that dialect's
 * `x-*-content-sha256: UNSIGNED-PAYLOAD`, so the server answers in that dialect.
 */
export function anonymous(
  server: TestServer,
  r: {
    method: string;
    path: string;
    query?: string;
    headers?: Record<string, string>;
    body?: string;
  },
  dialect?: DialectName,
): Promise<Response> {
  const url = `${server.url}${r.path}${r.query ? "?" + r.query : ""}`;
  const headers = {
    ...(dialect ? { [headerName(dialect, "content-sha256")]: "UNSIGNED-PAYLOAD" } : {}),
    ...r.headers,
  };
  return fetch(url, { method: r.method, headers, body: r.body });
}

/** Anonymous requests in a dialect, shaped like a Requester's (query given as pairs). */
export function anonymousAs(server: TestServer, dialect: DialectName): Requester {
  return (r) =>
    anonymous(server, {
      method: r.method,
      path: r.path,
      query: r.query?.map((
        [k, v],
      ) => (v === "" ? encodeURIComponent(k) : `${k}=${encodeURIComponent(v)}`))
        .join("&"),
      headers: r.headers,
      body: r.body as string | undefined,
    }, dialect);
}

/** Reads the body and asserts the status; returns the body text. */
export async function expectStatus(res: Response, status: number, what = ""): Promise<string> {
  const body = await res.text();
  assertEquals(res.status, status, `${what} expected ${status}, got ${res.status}: ${body}`);
  return body;
}

/**
 * Asserts a protocol error: status and (except for HEAD) an XML error body with the code.
 * Returns the body.
 */
export async function expectError(
  res: Response,
  code: string,
  status: number,
  what = "",
): Promise<string> {
  const body = await res.text();
  const where = `${what} expected ${code} ${status}, got ${res.status}: ${body}`;
  assertEquals(res.status, status, where);
  if (body === "") return body; // HEAD: no body
  assertMatch(body, /^<\?xml[^>]*\?>\s*<Error>/, where);
  assertEquals(xmlValue(body, "Code"), code, where);
  return body;
}

export function expectDenied(res: Response, what = ""): Promise<string> {
  return expectError(res, "AccessDenied", 403, what);
}

/** The success status when `allowed`, else AccessDenied. */
export function expectAllowed(
  res: Response,
  allowed: boolean,
  status: number,
  what = "",
): Promise<string> {
  return allowed ? expectStatus(res, status, what) : expectDenied(res, what);
}

export function md5Base64(data: string | Uint8Array): string {
  return createHash("md5").update(data).digest("base64");
}

/** A DeleteObjects body and its Content-MD5 header. */
export function deleteObjectsRequest(bucket: string, keys: string[]): RawRequest {
  const body = `<Delete>${keys.map((k) => `<Object><Key>${k}</Key></Object>`).join("")}</Delete>`;
  return {
    method: "POST",
    path: objectPath(bucket),
    query: [["delete", ""]],
    headers: { "content-md5": md5Base64(body), "content-type": "application/xml" },
    body,
  };
}

/** The per-key outcome of a DeleteObjects answer: key -> "Deleted" or the error code. */
export function deleteOutcome(xml: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of xml.matchAll(/<Deleted>(.*?)<\/Deleted>/gs)) {
    out[xmlValue(m[1], "Key")!] = "Deleted";
  }
  for (const m of xml.matchAll(/<Error>(.*?)<\/Error>/gs)) {
    out[xmlValue(m[1], "Key")!] = xmlValue(m[1], "Code")!;
  }
  return out;
}

/** Bucket names of a ListAllMyBucketsResult. */
export function bucketNames(xml: string): string[] {
  const buckets = /<Buckets>(.*)<\/Buckets>/s.exec(xml)?.[1] ?? "";
  return [...buckets.matchAll(/<Name>([^<]*)<\/Name>/g)].map((m) => m[1]);
}

/** The caller's canonical user id, from the Owner of its ListBuckets answer. */
export async function userId(server: TestServer, user: TestUser): Promise<string> {
  const res = await as(server, user, "store")({ method: "GET", path: "/" });
  const body = await expectStatus(res, 200, `ListBuckets of ${user.name}`);
  const owner = /<Owner>(.*?)<\/Owner>/s.exec(body)?.[1] ?? "";
  const id = xmlValue(owner, "ID");
  assert(id, `owner id of ${user.name}`);
  return id;
}

/** PUT an object as `req` and expect 200. */
export async function putOk(
  req: Requester,
  bucket: string,
  key: string,
  body = `content of ${key}`,
  headers: Record<string, string> = {},
): Promise<void> {
  await expectStatus(
    await req({ method: "PUT", path: objectPath(bucket, key), body, headers }),
    200,
    `PUT ${bucket}/${key}`,
  );
}

export type Doc = Record<string, unknown>;

export function putPolicy(req: Requester, bucket: string, doc: Doc | string): Promise<Response> {
  return req({
    method: "PUT",
    path: objectPath(bucket),
    query: [["policy", ""]],
    headers: { "content-type": "application/json" },
    body: typeof doc === "string" ? doc : JSON.stringify(doc),
  });
}

export async function setPolicy(req: Requester, bucket: string, doc: Doc): Promise<void> {
  await expectStatus(await putPolicy(req, bucket, doc), 204, `PutBucketPolicy ${bucket}`);
}

export function getPolicy(req: Requester, bucket: string): Promise<Response> {
  return req({ method: "GET", path: objectPath(bucket), query: [["policy", ""]] });
}

/** Builders of policy documents in one dialect's spelling. */
export function policyWords(dialect: DialectName, bucket: string) {
  const s = SPELL[dialect];
  return {
    doc: (...statements: Doc[]): Doc => ({ Version: "2012-10-17", Statement: statements }),
    allow: (principal: unknown, action: string | string[], resource: string | string[]): Doc => ({
      Effect: "Allow",
      Principal: principal,
      Action: action,
      Resource: resource,
    }),
    deny: (principal: unknown, action: string | string[], resource: string | string[]): Doc => ({
      Effect: "Deny",
      Principal: principal,
      Action: action,
      Resource: resource,
    }),
    act: (name: string) => s.action + name,
    bucketArn: s.arn + bucket,
    objArn: (key: string) => `${s.arn}${bucket}/${key}`,
    user: (u: TestUser) => ({ [s.principalKey]: `${s.userArn}${u.name}` }),
    key: (name: string) => s.globalKey + name,
    serviceKey: (name: string) => s.action + name,
  };
}

export async function createBucket(req: Requester, bucket: string): Promise<void> {
  await expectStatus(
    await req({ method: "PUT", path: objectPath(bucket) }),
    200,
    `create ${bucket}`,
  );
}

export async function exists(server: TestServer, bucket: string, key: string): Promise<boolean> {
  const res = await as(server, undefined, "store")({
    method: "HEAD",
    path: objectPath(bucket, key),
  });
  await res.body?.cancel();
  return res.status === 200;
}

export { headerName, objectPath };
