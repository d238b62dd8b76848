// Bad input never produces a 500 and never changes stored state: a snapshot taken before a long
// list of malformed (but validly signed) requests must be identical afterwards.
import { createHash } from "node:crypto";
import { join } from "node:path";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { type TestServer, withServer } from "./server.ts";
import {
  objectPath,
  type RawRequest,
  signedFetch,
  type SignedRequest,
  signRequest,
  xmlValue,
  xmlValues,
} from "./signer.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const BUCKET = "bkt";
const SMALL = "obj";
const LARGE = "big";
const SMALL_BODY = enc.encode("the original small object");
const LARGE_BODY = new Uint8Array(200 * 1024).map((_, i) => (i * 31) & 0xff);

function md5(data: Uint8Array | string, encoding: "hex" | "base64"): string {
  return createHash("md5").update(data).digest(encoding);
}

function sha256(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

async function fileCount(dir: string): Promise<number> {
  let n = 0;
  try {
    for await (const entry of Deno.readDir(dir)) {
      n += entry.isDirectory ? await fileCount(join(dir, entry.name)) : 1;
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return n;
}

/** Signed but not yet sent, so a test can tamper with it first. */
type Captured = SignedRequest;
const capture = signRequest;

interface RawResponse {
  status: number;
  headers: Headers;
  body: Uint8Array;
  text: string;
}

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  for (let off = 0; off < data.byteLength;) off += await conn.write(data.subarray(off));
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from = 0): number {
  outer: for (let i = from; i <= haystack.byteLength - needle.byteLength; i++) {
    for (let j = 0; j < needle.byteLength; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function dechunk(data: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  let pos = 0;
  while (true) {
    const eol = indexOf(data, enc.encode("\r\n"), pos);
    const size = parseInt(dec.decode(data.subarray(pos, eol)), 16);
    if (!size) break;
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    pos = eol + 2 + size + 2;
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.byteLength;
  }
  return out;
}

/**
 * HTTP/1.1 over a plain socket, so the request target reaches the server byte for byte (fetch
 * would resolve `.` and `..` segments). `declaredLength` sends a Content-Length larger than the
 * body and then half-closes the connection.
 */
async function rawHttp(
  server: TestServer,
  opts: {
    method: string;
    target: string;
    headers: Record<string, string>;
    body?: Uint8Array;
    declaredLength?: number;
  },
): Promise<RawResponse> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  try {
    const body = opts.body ?? new Uint8Array(0);
    const lines = [
      `${opts.method} ${opts.target} HTTP/1.1`,
      `host: ${new URL(server.url).host}`,
      "connection: close",
      ...Object.entries(opts.headers).map(([k, v]) => `${k}: ${v}`),
    ];
    if (opts.body || opts.declaredLength !== undefined) {
      lines.push(`content-length: ${opts.declaredLength ?? body.byteLength}`);
    }
    await writeAll(conn, enc.encode(lines.join("\r\n") + "\r\n\r\n"));
    await writeAll(conn, body);
    if (opts.declaredLength !== undefined) await conn.closeWrite();
    const chunks: Uint8Array[] = [];
    const buf = new Uint8Array(64 * 1024);
    while (true) {
      const n = await conn.read(buf);
      if (n === null) break;
      chunks.push(buf.slice(0, n));
    }
    const all = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
    let off = 0;
    for (const c of chunks) {
      all.set(c, off);
      off += c.byteLength;
    }
    const split = indexOf(all, enc.encode("\r\n\r\n"));
    assert(split > 0, `no response head: ${dec.decode(all)}`);
    const [statusLine, ...headerLines] = dec.decode(all.subarray(0, split)).split("\r\n");
    const headers = new Headers();
    for (const line of headerLines) {
      const colon = line.indexOf(":");
      headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    let responseBody: Uint8Array = all.subarray(split + 4);
    if (headers.get("transfer-encoding")?.includes("chunked")) responseBody = dechunk(responseBody);
    return {
      status: Number(statusLine.split(" ")[1]),
      headers,
      body: responseBody,
      text: dec.decode(responseBody),
    };
  } finally {
    conn.close();
  }
}

/** Signs `r` (whose path is the canonical one) and sends it raw with `wirePath` on the wire. */
async function signedRaw(
  server: TestServer,
  r: RawRequest & { wirePath?: string; declaredLength?: number },
): Promise<RawResponse> {
  const c = await capture(server, r);
  const target = c.url.slice(server.url.length);
  return await rawHttp(server, {
    method: c.method,
    target: r.wirePath ? r.wirePath + target.slice(r.path.length) : target,
    headers: c.headers,
    body: c.body,
    declaredLength: r.declaredLength,
  });
}

const STATUS: Record<string, number> = {
  BadDigest: 400,
  BadRequest: 400,
  BucketNotEmpty: 409,
  EntityTooLarge: 400,
  IllegalLocationConstraintException: 400,
  IncompleteBody: 400,
  InvalidArgument: 400,
  InvalidBucketName: 400,
  InvalidDigest: 400,
  InvalidRange: 416,
  InvalidRequest: 400,
  InvalidStorageClass: 400,
  InvalidTag: 400,
  InvalidURI: 400,
  KeyTooLongError: 400,
  MalformedXML: 400,
  MetadataTooLarge: 400,
  MethodNotAllowed: 405,
  MissingContentLength: 411,
  NoSuchBucket: 404,
  NoSuchKey: 404,
  NoSuchVersion: 404,
  NotImplemented: 501,
  PreconditionFailed: 412,
  SignatureDoesNotMatch: 403,
  XStoreContentSHA256Mismatch: 400,
};

/**
 * Asserts a rejection: a 4xx (or 501 for NotImplemented) with an XML error body whose code is
 * `code` (any code when undefined). Never a 500.
 */
function expectRejected(
  res: { status: number; text: string },
  code: string | undefined,
  what: string,
): void {
  const where = `${what}: got ${res.status} ${res.text}`;
  assert(res.status !== 500, `500 for ${where}`);
  if (code) assertEquals(res.status, STATUS[code], `status for ${where}`);
  else assert(res.status >= 400 && res.status < 500, `not a 4xx for ${where}`);
  assertMatch(res.text, /<Error><Code>[^<]+<\/Code><Message>[^<]*<\/Message>/, where);
  if (code) assertEquals(xmlValue(res.text, "Code"), code, `code for ${where}`);
}

async function send(server: TestServer, r: RawRequest): Promise<RawResponse> {
  const res = await signedFetch(server, r);
  const body = new Uint8Array(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body, text: dec.decode(body) };
}

/** Everything a malformed request must not change. */
async function snapshot(server: TestServer): Promise<string> {
  const out: unknown[] = [];
  const get = async (path: string, query: [string, string][] = []) => {
    const res = await send(server, { method: "GET", path, query });
    assertEquals(res.status, 200, `snapshot GET ${path}: ${res.text}`);
    return res;
  };
  out.push((await get("/")).text);
  out.push((await get(objectPath(BUCKET), [["list-type", "2"]])).text);
  out.push((await get(objectPath(BUCKET))).text);
  for (const key of [SMALL, LARGE]) {
    const res = await get(objectPath(BUCKET, key));
    out.push({
      key,
      sha256: sha256(res.body),
      etag: res.headers.get("etag"),
      type: res.headers.get("content-type"),
      modified: res.headers.get("last-modified"),
      meta: res.headers.get("x-store-meta-note"),
      tags: res.headers.get("x-store-tagging-count"),
    });
  }
  out.push((await get(objectPath(BUCKET, SMALL), [["tagging", ""]])).text);
  out.push({
    shards: await fileCount(join(server.dataDir, "chunks")),
    tmp: await fileCount(join(server.dataDir, "tmp")),
  });
  return JSON.stringify(out, null, 1);
}

/** A Tagging document of `n` tags, keys `<key><i>` (all `key` when `key` is "same"). */
function tagDoc(n: number, key = "k"): string {
  const tags = Array.from({ length: n }, (_, i) => {
    const k = key === "same" ? "same" : n === 1 ? key : `${key}${i}`;
    return `<Tag><Key>${k}</Key><Value>v</Value></Tag>`;
  });
  return `<Tagging><TagSet>${tags.join("")}</TagSet></Tagging>`;
}

function deleteBody(keys: string[], extra = ""): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Delete>${extra}${
    keys.map((k) => `<Object><Key>${k}</Key></Object>`).join("")
  }</Delete>`;
}

interface Case {
  name: string;
  request: RawRequest;
  /** Expected error code; undefined accepts any 4xx code. */
  code?: string;
}

function cases(): Case[] {
  const smallPath = objectPath(BUCKET, SMALL);
  const newBucket = objectPath("newbkt");
  const createBucket = (name: string, body: string | Uint8Array, code = "MalformedXML"): Case => ({
    name: `CreateBucket: ${name}`,
    request: { method: "PUT", path: newBucket, body },
    code,
  });
  const deleteObjects = (
    name: string,
    body: string,
    code: string,
    md5Header: string | null = md5(body, "base64"),
  ): Case => ({
    name: `DeleteObjects: ${name}`,
    request: {
      method: "POST",
      path: objectPath(BUCKET),
      query: [["delete", ""]],
      body,
      headers: md5Header === null ? {} : { "content-md5": md5Header },
    },
    code,
  });
  const put = (
    name: string,
    headers: Record<string, string>,
    code: string,
    body = "new",
  ): Case => ({
    name: `PutObject: ${name}`,
    request: { method: "PUT", path: smallPath, body, headers },
    code,
  });
  const tagging = (name: string, body: string, code = "MalformedXML"): Case => ({
    name: `PutObjectTagging: ${name}`,
    request: { method: "PUT", path: smallPath, query: [["tagging", ""]], body },
    code,
  });
  const list = (name: string, query: [string, string][], code = "InvalidArgument"): Case => ({
    name: `List: ${name}`,
    request: { method: "GET", path: objectPath(BUCKET), query },
    code,
  });
  const copy = (name: string, source: string, code: string, extra = {}): Case => ({
    name: `CopyObject: ${name}`,
    request: {
      method: "PUT",
      path: smallPath,
      headers: { "x-store-copy-source": source, ...extra },
    },
    code,
  });
  const bomb = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">` +
    Array.from(
      { length: 9 },
      (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? "" : i};`.repeat(10)}">`,
    ).join("") +
    `]><CreateBucketConfiguration><LocationConstraint>&lol9;</LocationConstraint>` +
    `</CreateBucketConfiguration>`;
  const xxe = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>` +
    `<CreateBucketConfiguration><LocationConstraint>&e;</LocationConstraint>` +
    `</CreateBucketConfiguration>`;
  const thousandAndOne = Array.from({ length: 1001 }, (_, i) => i === 0 ? SMALL : `k${i}`);
  return [
    createBucket("not XML at all", "this is not xml"),
    createBucket(
      "text instead of elements",
      "<CreateBucketConfiguration>garbage</CreateBucketConfiguration>",
    ),
    createBucket(
      "unclosed tags",
      "<CreateBucketConfiguration><LocationConstraint>us-east-1</LocationConstraint>",
    ),
    createBucket(
      "mismatched tags",
      "<CreateBucketConfiguration><LocationConstraint>us-east-1</Location>" +
        "</CreateBucketConfiguration>",
    ),
    createBucket("wrong root", "<Foo><LocationConstraint>us-east-1</LocationConstraint></Foo>"),
    createBucket(
      "two roots",
      "<CreateBucketConfiguration></CreateBucketConfiguration><CreateBucketConfiguration/>",
    ),
    createBucket("entity bomb", bomb),
    createBucket("external entity", xxe),
    createBucket(
      "unknown element",
      "<CreateBucketConfiguration><Foo>1</Foo></CreateBucketConfiguration>",
    ),
    createBucket(
      "structured LocationConstraint",
      "<CreateBucketConfiguration><LocationConstraint><a>b</a></LocationConstraint>" +
        "</CreateBucketConfiguration>",
    ),
    createBucket(
      "repeated LocationConstraint",
      "<CreateBucketConfiguration><LocationConstraint>us-east-1</LocationConstraint>" +
        "<LocationConstraint>us-east-1</LocationConstraint></CreateBucketConfiguration>",
    ),
    createBucket(
      "deeply nested elements",
      "<CreateBucketConfiguration>" + "<a>".repeat(5000) + "</a>".repeat(5000) +
        "</CreateBucketConfiguration>",
    ),
    createBucket("invalid UTF-8", new Uint8Array([0x3c, 0xff, 0xfe, 0x3e, 0x80])),
    createBucket(
      "a region that is not the server's",
      "<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint>" +
        "</CreateBucketConfiguration>",
      "IllegalLocationConstraintException",
    ),
    {
      name: "CreateBucket: oversized configuration",
      request: {
        method: "PUT",
        path: newBucket,
        body: "<CreateBucketConfiguration>" + " ".repeat(100 * 1024) +
          "</CreateBucketConfiguration>",
      },
    },
    deleteObjects("malformed XML", `<Delete><Object><Key>${SMALL}</Key></Object>`, "MalformedXML"),
    deleteObjects("no Content-MD5", deleteBody([SMALL]), "InvalidRequest", null),
    deleteObjects("wrong Content-MD5", deleteBody([SMALL]), "BadDigest", md5("other", "base64")),
    deleteObjects("invalid Content-MD5", deleteBody([SMALL]), "InvalidDigest", "not-a-digest"),
    deleteObjects("1001 keys", deleteBody(thousandAndOne), "MalformedXML"),
    deleteObjects("empty Delete", "<Delete></Delete>", "MalformedXML"),
    deleteObjects("self-closing Delete", "<Delete/>", "MalformedXML"),
    deleteObjects("empty body", "", "MalformedXML"),
    deleteObjects(
      "wrong root",
      `<Remove><Object><Key>${SMALL}</Key></Object></Remove>`,
      "MalformedXML",
    ),
    deleteObjects(
      "Quiet not a boolean",
      deleteBody([SMALL], "<Quiet>maybe</Quiet>"),
      "MalformedXML",
    ),
    deleteObjects(
      "Object without Key",
      "<Delete><Object><VersionId>x</VersionId></Object></Delete>",
      "MalformedXML",
    ),
    deleteObjects(
      "structured Key",
      `<Delete><Object><Key><a>${SMALL}</a></Key></Object></Delete>`,
      "MalformedXML",
    ),
    deleteObjects(
      "DOCTYPE",
      `<!DOCTYPE d [<!ENTITY k "${SMALL}">]><Delete><Object><Key>&k;</Key></Object></Delete>`,
      "MalformedXML",
    ),
    {
      name: "DeleteObjects: missing bucket",
      request: {
        method: "POST",
        path: objectPath("nosuchbucket"),
        query: [["delete", ""]],
        body: deleteBody([SMALL]),
        headers: { "content-md5": md5(deleteBody([SMALL]), "base64") },
      },
      code: "NoSuchBucket",
    },
    put("wrong Content-MD5", { "content-md5": md5("something else", "base64") }, "BadDigest"),
    put("Content-MD5 not base64", { "content-md5": "!!not base64!!" }, "InvalidDigest"),
    put("Content-MD5 of the wrong length", { "content-md5": btoa("short") }, "InvalidDigest"),
    put("storage class GLACIER", { "x-store-storage-class": "GLACIER" }, "InvalidStorageClass"),
    put("user metadata over 2 KiB", { "x-store-meta-big": "x".repeat(2100) }, "MetadataTooLarge"),
    put(
      "many small metadata headers over 2 KiB",
      Object.fromEntries(
        Array.from({ length: 30 }, (_, i) => [`x-store-meta-m${i}`, "v".repeat(70)]),
      ),
      "MetadataTooLarge",
    ),
    put("wrong CRC32 checksum", { "x-store-checksum-crc32": "AAAAAA==" }, "BadDigest"),
    put("wrong SHA256 checksum", { "x-store-checksum-sha256": btoa("x".repeat(32)) }, "BadDigest"),
    {
      name: "PutObject: wrong Content-MD5 on a file-backed body",
      request: {
        method: "PUT",
        path: objectPath(BUCKET, LARGE),
        body: new Uint8Array(150 * 1024).fill(1),
        headers: { "content-md5": md5("nope", "base64") },
      },
      code: "BadDigest",
    },
    {
      name: "PutObject: key over 1024 bytes",
      request: { method: "PUT", path: objectPath(BUCKET, "k".repeat(1025)), body: "x" },
      code: "KeyTooLongError",
    },
    {
      name: "PutObject: multi-byte key over 1024 bytes",
      request: { method: "PUT", path: objectPath(BUCKET, "é".repeat(513)), body: "x" },
      code: "KeyTooLongError",
    },
    {
      name: "PutObject: missing bucket",
      request: { method: "PUT", path: objectPath("nosuchbucket", "k"), body: "x" },
      code: "NoSuchBucket",
    },
    {
      name: "PutObject: streaming payload without its decoded length",
      request: {
        method: "PUT",
        path: smallPath,
        body: "0;chunk-signature=00\r\n\r\n",
        payloadHash: "STREAMING-STORE4-HMAC-SHA256-PAYLOAD",
      },
      code: "MissingContentLength",
    },
    {
      name: "PutObject: streaming payload with a bad chunk signature",
      request: {
        method: "PUT",
        path: smallPath,
        body: `0;chunk-signature=${"0".repeat(64)}\r\n\r\n`,
        headers: { "x-store-decoded-content-length": "0" },
        payloadHash: "STREAMING-STORE4-HMAC-SHA256-PAYLOAD",
      },
      code: "SignatureDoesNotMatch",
    },
    {
      name: "PutObject: streaming payload of an unknown kind",
      request: {
        method: "PUT",
        path: smallPath,
        body: "0\r\n\r\n",
        headers: { "x-store-decoded-content-length": "0" },
        payloadHash: "STREAMING-STORE4-ECDSA-P256-SHA256-PAYLOAD",
      },
      code: "NotImplemented",
    },
    ...["BKT-UPPER", "ab", "a".repeat(64), "192.168.1.1", "a..b", "-abc", "abc-", "a_b", ".abc"]
      .map((name): Case => ({
        name: `CreateBucket: invalid name ${name.length > 20 ? name.slice(0, 8) + "..." : name}`,
        request: { method: "PUT", path: "/" + name },
        code: "InvalidBucketName",
      })),
    list("max-keys=-1", [["list-type", "2"], ["max-keys", "-1"]]),
    list("max-keys=abc", [["list-type", "2"], ["max-keys", "abc"]]),
    list("V1 max-keys=abc", [["max-keys", "abc"]]),
    list("max-keys=1.5", [["max-keys", "1.5"]]),
    list("list-type=3", [["list-type", "3"]]),
    list("list-type empty", [["list-type", ""]]),
    list("bad continuation token", [["list-type", "2"], ["continuation-token", "!!!"]]),
    list("continuation token of invalid UTF-8", [["list-type", "2"], [
      "continuation-token",
      btoa("\xff\xfe\xfd"),
    ]]),
    list("encoding-type=foo", [["list-type", "2"], ["encoding-type", "foo"]]),
    list("V1 encoding-type=foo", [["encoding-type", "foo"]]),
    {
      name: "List: missing bucket",
      request: { method: "GET", path: "/nosuchbucket", query: [["list-type", "2"]] },
      code: "NoSuchBucket",
    },
    {
      name: "PATCH",
      request: { method: "PATCH", path: smallPath, body: "patched" },
      code: "MethodNotAllowed",
    },
    {
      name: "unimplemented subresource POST ?restore",
      request: { method: "POST", path: smallPath, query: [["restore", ""]], body: "" },
      code: "NotImplemented",
    },
    {
      name: "GetObjectAttributes without the attributes header",
      request: { method: "GET", path: smallPath, query: [["attributes", ""]] },
      code: "InvalidArgument",
    },
    tagging("a Tag without a Value", "<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>"),
    tagging("no TagSet", "<Tagging/>"),
    tagging("not XML", "tags please"),
    tagging("eleven tags", tagDoc(11), "InvalidTag"),
    tagging("a repeated key", tagDoc(2, "same"), "InvalidTag"),
    tagging("a key of 129 characters", tagDoc(1, "k".repeat(129)), "InvalidTag"),
    tagging("a key with a character outside the allowed set", tagDoc(1, "a*"), "InvalidTag"),
    tagging("a reserved key prefix", tagDoc(1, "store:x"), "InvalidTag"),
    {
      name: "POST on an object without a subresource",
      request: { method: "POST", path: smallPath, body: "x" },
      code: "MethodNotAllowed",
    },
    copy("source without a key", "nonsense", "InvalidArgument"),
    copy("source with a bucket only", `/${BUCKET}/`, "InvalidArgument"),
    copy("empty source", "", "InvalidArgument"),
    copy("source with invalid percent-encoding", "%zz/obj", "InvalidArgument"),
    copy("source in a missing bucket", "/nosuchbucket/obj", "NoSuchBucket"),
    copy("missing source key", `/${BUCKET}/nosuchkey`, "NoSuchKey"),
    copy("onto itself with COPY", `/${BUCKET}/${SMALL}`, "InvalidRequest"),
    copy("onto itself, directive by default", `${BUCKET}/${SMALL}`, "InvalidRequest"),
    copy("unknown metadata directive", `/${BUCKET}/${LARGE}`, "InvalidArgument", {
      "x-store-metadata-directive": "MERGE",
    }),
    copy("source with a missing version", `/${BUCKET}/${LARGE}?versionId=nope`, "NoSuchVersion"),
    {
      name: "GetObject: Range beyond the size",
      request: { method: "GET", path: smallPath, headers: { range: "bytes=1000-2000" } },
      code: "InvalidRange",
    },
    {
      name: "GetObject: empty versionId",
      request: { method: "GET", path: smallPath, query: [["versionId", ""]] },
      code: "InvalidArgument",
    },
    {
      name: "GetObject: unknown versionId",
      request: { method: "GET", path: smallPath, query: [["versionId", "nope"]] },
      code: "NoSuchVersion",
    },
    {
      name: "CreateBucket: payload hash mismatch",
      request: { method: "PUT", path: newBucket, body: "", payloadHash: sha256(enc.encode("x")) },
      code: "XStoreContentSHA256Mismatch",
    },
    {
      name: "CreateBucket: unknown canned ACL",
      request: { method: "PUT", path: newBucket, headers: { "x-store-acl": "everyone-can-read" } },
      code: "InvalidArgument",
    },
    {
      name: "CreateBucket: Object Lock header that is not a boolean",
      request: {
        method: "PUT",
        path: newBucket,
        headers: { "x-store-bucket-object-lock-enabled": "maybe" },
      },
      code: "InvalidArgument",
    },
    {
      name: "DeleteObjects: payload hash mismatch",
      request: {
        method: "POST",
        path: objectPath(BUCKET),
        query: [["delete", ""]],
        body: deleteBody([SMALL]),
        headers: { "content-md5": md5(deleteBody([SMALL]), "base64") },
        payloadHash: sha256(enc.encode(deleteBody([LARGE]))),
      },
      code: "XStoreContentSHA256Mismatch",
    },
    {
      name: "DeleteObjects: wrong CRC32 checksum",
      request: {
        method: "POST",
        path: objectPath(BUCKET),
        query: [["delete", ""]],
        body: deleteBody([SMALL]),
        headers: { "x-store-checksum-crc32": "AAAAAA==" },
      },
      code: "BadDigest",
    },
    put("tagging header with a repeated key", { "x-store-tagging": "a=b&a=c" }, "InvalidArgument"),
    put("tagging header with eleven tags", {
      "x-store-tagging": Array.from({ length: 11 }, (_, i) => `k${i}=v`).join("&"),
    }, "InvalidTag"),
    put("tagging header with an invalid key", { "x-store-tagging": "a%3C=1" }, "InvalidTag"),
    put("unknown encryption algorithm", {
      "x-store-server-side-encryption": "DES",
    }, "InvalidArgument"),
    put("customer key of the wrong length", {
      "x-store-server-side-encryption-customer-algorithm": "AES256",
      "x-store-server-side-encryption-customer-key": btoa("short"),
      "x-store-server-side-encryption-customer-key-md5": btoa("0123456789abcdef"),
    }, "InvalidArgument"),
    put("unknown canned ACL", { "x-store-acl": "everyone-can-read" }, "InvalidArgument"),
    put("canned ACL and grant headers together", {
      "x-store-acl": "public-read",
      "x-store-grant-read": 'uri="http://acs.store.local/groups/global/AllUsers"',
    }, "InvalidRequest"),
    put("grant header naming an unknown user", {
      "x-store-grant-read": 'id="no-such-user"',
    }, "InvalidArgument"),
    {
      name: "PutObject: payload hash mismatch",
      request: {
        method: "PUT",
        path: smallPath,
        body: "replacement",
        payloadHash: sha256(enc.encode("other")),
      },
      code: "XStoreContentSHA256Mismatch",
    },
    {
      name: "PutObject: key of 8 KiB",
      request: { method: "PUT", path: objectPath(BUCKET, "k".repeat(8192)), body: "x" },
      code: "KeyTooLongError",
    },
    copy("REPLACE with metadata over 2 KiB", `/${BUCKET}/${LARGE}`, "MetadataTooLarge", {
      "x-store-metadata-directive": "REPLACE",
      "x-store-meta-big": "x".repeat(2100),
    }),
    copy("storage class GLACIER", `/${BUCKET}/${LARGE}`, "InvalidStorageClass", {
      "x-store-storage-class": "GLACIER",
    }),
    copy("failed copy-source-if-match", `/${BUCKET}/${LARGE}`, "PreconditionFailed", {
      "x-store-copy-source-if-match": '"0123"',
    }),
    {
      name: "CopyObject: payload hash mismatch",
      request: {
        method: "PUT",
        path: smallPath,
        body: "junk",
        payloadHash: sha256(enc.encode("other")),
        headers: { "x-store-copy-source": `/${BUCKET}/${LARGE}` },
      },
      code: "XStoreContentSHA256Mismatch",
    },
    {
      name: "GetObject: failed If-Match",
      request: { method: "GET", path: smallPath, headers: { "if-match": '"0123"' } },
      code: "PreconditionFailed",
    },
    {
      name: "DeleteBucket: not empty",
      request: { method: "DELETE", path: objectPath(BUCKET) },
      code: "BucketNotEmpty",
    },
  ];
}

Deno.test("bad input is rejected and changes nothing", async (t) => {
  await withServer(async (server) => {
    const ok = async (r: RawRequest, status = 200) => {
      const res = await send(server, r);
      assertEquals(res.status, status, `${r.method} ${r.path}: ${res.text}`);
      return res;
    };
    await ok({ method: "PUT", path: objectPath(BUCKET) });
    await ok({
      method: "PUT",
      path: objectPath(BUCKET, SMALL),
      body: SMALL_BODY,
      headers: {
        "content-type": "text/x-original",
        "x-store-meta-note": "kept",
        "x-store-tagging": "kept=1",
      },
    });
    await ok({ method: "PUT", path: objectPath(BUCKET, LARGE), body: LARGE_BODY });
    const before = await snapshot(server);
    assert(before.includes(md5(SMALL_BODY, "hex")) && before.includes(md5(LARGE_BODY, "hex")));
    assertEquals(await fileCount(join(server.dataDir, "chunks")), 1, "one file-backed object");

    for (const c of cases()) {
      await t.step(c.name, async () => {
        expectRejected(await send(server, { dialect: "store", ...c.request }), c.code, c.name);
      });
    }

    await t.step("invalid percent-encoding in the path", async () => {
      for (const path of [`/${BUCKET}/%zz`, `/${BUCKET}/%C3%28`, `/${BUCKET}/a%`]) {
        expectRejected(await send(server, { method: "GET", path }), "InvalidURI", path);
        const put = await signedRaw(server, { method: "PUT", path, body: "x" });
        expectRejected(put, "InvalidURI", `PUT ${path}`);
      }
      const res = await signedRaw(server, {
        method: "GET",
        path: objectPath(BUCKET),
        wirePath: `/${BUCKET}?prefix=%zz&`,
      });
      expectRejected(res, "InvalidURI", "query");
    });

    await t.step("unknown method", async () => {
      const res = await signedRaw(server, { method: "FROB", path: objectPath(BUCKET, SMALL) });
      expectRejected(res, "MethodNotAllowed", "FROB");
    });

    await t.step("body shorter than its Content-Length", async () => {
      const res = await signedRaw(server, {
        method: "PUT",
        path: objectPath(BUCKET, SMALL),
        body: "short",
        payloadHash: "UNSIGNED-PAYLOAD",
        declaredLength: 100,
      });
      expectRejected(res, "IncompleteBody", "short body");
    });

    await t.step("Content-Length over the maximum object size", async () => {
      const res = await signedRaw(server, {
        method: "PUT",
        path: objectPath(BUCKET, SMALL),
        body: "x",
        payloadHash: "UNSIGNED-PAYLOAD",
        declaredLength: 6 * 1024 ** 3,
      });
      expectRejected(res, "EntityTooLarge", "huge Content-Length");
    });

    await t.step("HEAD errors carry no body", async () => {
      const res = await signedFetch(server, {
        method: "HEAD",
        path: objectPath(BUCKET, SMALL),
        headers: { range: "bytes=1000-2000" },
      });
      assertEquals(res.status, 416);
      assertEquals(await res.text(), "");
    });

    await t.step("state is unchanged", async () => {
      assertEquals(await snapshot(server), before);
      assert(!server.logs().includes(`"level":"error"`), `errors logged:\n${server.logs()}`);
    });

    await t.step(
      "a body that does not match its signed hash is refused even when unused",
      async () => {
        // DeleteObject and DeleteBucket do not need their body, but a request whose body is not
        // the one that was signed has been tampered with and must not take effect.
        const wrong = sha256(enc.encode("what was signed"));
        const problems: string[] = [];
        await ok({ method: "PUT", path: objectPath("unused-body") });
        await ok({ method: "PUT", path: objectPath("unused-body", "victim"), body: "still here" });
        const del = await send(server, {
          method: "DELETE",
          path: objectPath("unused-body", "victim"),
          body: "what was sent",
          payloadHash: wrong,
        });
        if (del.status !== 400) problems.push(`DeleteObject answered ${del.status} ${del.text}`);
        const kept = await send(server, {
          method: "GET",
          path: objectPath("unused-body", "victim"),
        });
        if (kept.status !== 200) problems.push(`the object is gone (GET ${kept.status})`);

        await ok({ method: "PUT", path: objectPath("empty-bucket") });
        const delBucket = await send(server, {
          method: "DELETE",
          path: objectPath("empty-bucket"),
          body: "what was sent",
          payloadHash: wrong,
        });
        if (delBucket.status !== 400) {
          problems.push(`DeleteBucket answered ${delBucket.status} ${delBucket.text}`);
        }
        const head = await send(server, { method: "HEAD", path: objectPath("empty-bucket") });
        if (head.status !== 200) problems.push(`the bucket is gone (HEAD ${head.status})`);
        assertEquals(problems, [], "requests with a body that does not match the signed hash");
        expectRejected(del, "XStoreContentSHA256Mismatch", "DeleteObject with a tampered body");
        expectRejected(delBucket, "XStoreContentSHA256Mismatch", "DeleteBucket, tampered body");
      },
    );

    await t.step("path tricks in keys are stored under their exact names", async () => {
      const bucket = "tricks";
      await ok({ method: "PUT", path: objectPath(bucket) });
      // [key, path signed (canonical), path on the wire]
      const dotted: [string, string, string][] = [
        ["../../etc/passwd", "/tricks/../../etc/passwd", "/tricks/../../etc/passwd"],
        ["../../../../../../tmp/escaped", "/tricks/../../../../../../tmp/escaped", ""],
        ["a/./b", "/tricks/a/./b", "/tricks/a/./b"],
        ["a/../b", "/tricks/a/../b", "/tricks/a/%2E%2E/b"],
        ["..", "/tricks/..", "/tricks/%2e%2e"],
        [".", "/tricks/.", "/tricks/."],
        ["x/..", "/tricks/x/..", "/tricks/x/.."],
      ];
      const plain = ["a//b", "/leading", "trailing/", "with space", "plus+sign", "100%", "q?x#y"];
      const stored = new Map<string, string>();
      for (const [key, path, wire] of dotted) {
        const body = `body of ${key}`;
        let res = await signedRaw(server, { method: "PUT", path, wirePath: wire || path, body });
        assertEquals(res.status, 200, `PUT ${key}: ${res.text}`);
        res = await signedRaw(server, { method: "GET", path, wirePath: wire || path });
        assertEquals(res.status, 200, `GET ${key}: ${res.text}`);
        assertEquals(res.text, body, `GET ${key}`);
        stored.set(key, body);
      }
      for (const key of plain) {
        const body = `body of ${key}`;
        await ok({ method: "PUT", path: objectPath(bucket, key), body });
        const res = await ok({ method: "GET", path: objectPath(bucket, key) });
        assertEquals(res.text, body, `GET ${key}`);
        stored.set(key, body);
      }
      const res = await ok({
        method: "GET",
        path: objectPath(bucket),
        query: [["list-type", "2"], ["encoding-type", "url"]],
      });
      const listed = xmlValues(res.text, "Key").map(decodeURIComponent).sort();
      assertEquals(listed, [...stored.keys()].sort());
      // Nothing was written next to or above the data directory.
      for (
        const p of [
          join(server.dataDir, "etc"),
          join(server.dataDir, "..", "etc", "passwd"),
          join(server.dataDir, "chunks", "..", "etc"),
          join(server.dataDir, "..", "escaped"),
          "/tmp/escaped",
        ]
      ) {
        const exists = await Deno.stat(p).then(() => true, () => false);
        assert(!exists, `${p} exists`);
      }
      assertEquals(
        (await Deno.readTextFile("/etc/passwd")).includes("body of"),
        false,
        "/etc/passwd untouched",
      );
      // Deleting the dotted keys removes exactly them.
      for (const [key, path, wire] of dotted) {
        const del = await signedRaw(server, { method: "DELETE", path, wirePath: wire || path });
        assertEquals(del.status, 204, `DELETE ${key}: ${del.text}`);
        stored.delete(key);
      }
      const after = await ok({
        method: "GET",
        path: objectPath(bucket),
        query: [["list-type", "2"], ["encoding-type", "url"]],
      });
      assertEquals(
        xmlValues(after.text, "Key").map(decodeURIComponent).sort(),
        [...stored.keys()].sort(),
      );
    });

    await t.step("concurrent writers to one key", async () => {
      const bucket = "race";
      await ok({ method: "PUT", path: objectPath(bucket) });
      const path = objectPath(bucket, "contended");
      // Even writers send file-backed bodies, odd ones inline bodies.
      const bodies = Array.from(
        { length: 20 },
        (_, i) => new Uint8Array(i % 2 === 0 ? 100 * 1024 + i : 1000 + i).fill(i + 1),
      );
      const results = await Promise.all(
        bodies.map((body) => send(server, { method: "PUT", path, body })),
      );
      for (const [i, r] of results.entries()) {
        assertEquals(r.status, 200, `writer ${i}: ${r.text}`);
        assertEquals(r.headers.get("etag"), `"${md5(bodies[i], "hex")}"`);
      }
      const res = await ok({ method: "GET", path });
      const winner = bodies.findIndex((b) => sha256(b) === sha256(res.body));
      assert(winner >= 0, `GET returned none of the bodies (${res.body.byteLength} bytes)`);
      assertEquals(res.headers.get("etag"), `"${md5(bodies[winner], "hex")}"`);
      assertEquals(res.headers.get("content-length"), String(bodies[winner].byteLength));
      const listing = await ok({
        method: "GET",
        path: objectPath(bucket),
        query: [["list-type", "2"]],
      });
      assertEquals(xmlValues(listing.text, "Key"), ["contended"]);
      assertEquals(xmlValue(listing.text, "ETag"), `&quot;${md5(bodies[winner], "hex")}&quot;`);
      assertEquals(xmlValue(listing.text, "Size"), String(bodies[winner].byteLength));
      // Only the winner's file (if it has one) and the big object's file remain.
      const expectedBlobs = 1 + (winner % 2 === 0 ? 1 : 0);
      assertEquals(await fileCount(join(server.dataDir, "chunks")), expectedBlobs, "shard files");
      assertEquals(await fileCount(join(server.dataDir, "tmp")), 0, "temp files");
      assert(!server.logs().includes(`"level":"error"`), `errors logged:\n${server.logs()}`);
    });
  }, { env: { STORE_ALLOW_INSECURE_SSE_C: "true" } }); // SSE-C over plain HTTP
});
