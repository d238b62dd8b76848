import { createHash } from "node:crypto";
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { MasterKey } from "../auth/master_key.ts";
import { DIALECTS, h } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { ChunkIntegrityError, decodeChunk, encodeChunk } from "../storage/codec.ts";
import {
  parseSseCustomerKey,
  parseSseWrite,
  SseKeys,
  type SseRecord,
  sseResponseHeaders,
} from "./sse.ts";

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const md5b64 = (bytes: Uint8Array) => b64(new Uint8Array(createHash("md5").update(bytes).digest()));

const KEY_A = crypto.getRandomValues(new Uint8Array(32));
const KEY_B = crypto.getRandomValues(new Uint8Array(32));

function catchS3(fn: () => unknown): S3Error {
  try {
    fn();
  } catch (err) {
    if (err instanceof S3Error) return err;
    throw err;
  }
  throw new Error("Expected an S3Error, but the call succeeded");
}

async function catchS3Async(fn: () => Promise<unknown>): Promise<S3Error> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof S3Error) return err;
    throw err;
  }
  throw new Error("Expected an S3Error, but the call succeeded");
}

function expectError(err: S3Error, code: string, status: number, argument?: string): void {
  assertEquals([err.code, err.status], [code, status], err.message);
  if (argument !== undefined) assertEquals(err.details.ArgumentName, argument);
}

for (const dialect of Object.values(DIALECTS)) {
  const d = dialect.name;
  const sse = h(dialect, "server-side-encryption");
  const alg = h(dialect, "server-side-encryption-customer-algorithm");
  const key = h(dialect, "server-side-encryption-customer-key");
  const md5 = h(dialect, "server-side-encryption-customer-key-MD5");
  const trio = (k = KEY_A) => ({ [alg]: "AES256", [key]: b64(k), [md5]: md5b64(k) });
  const write = (init: Record<string, string>) => parseSseWrite(new Headers(init), dialect);

  const keyId = h(dialect, `server-side-encryption-${dialect.kmsVendor}-kms-key-id`);
  const context = h(dialect, "server-side-encryption-context");
  const ctx64 = btoa(JSON.stringify({ project: "x" }));

  Deno.test(`sse ${d}: no headers, SSE-S3 and both KMS spellings`, () => {
    assertEquals(write({}), { kind: "none" });
    assertEquals(write({ [sse]: "AES256" }), { kind: "s3" });
    assertEquals(write({ [sse]: "aws:kms" }), { kind: "kms", algorithm: "aws:kms" });
    assertEquals(write({ [sse]: "store:kms" }), { kind: "kms", algorithm: "store:kms" });
    assertEquals(write({ [sse]: "aws:kms", [keyId]: "k1", [context]: ctx64 }), {
      kind: "kms",
      algorithm: "aws:kms",
      keyId: "k1",
      context: ctx64,
    });
  });

  Deno.test(`sse ${d}: KMS header combinations the protocol refuses`, () => {
    const refused: [Record<string, string>, string][] = [
      [{ [keyId]: "k1" }, sse],
      [{ [sse]: "AES256", [keyId]: "k1" }, sse],
      [{ [context]: ctx64 }, sse],
      [{ [sse]: "AES256", [context]: ctx64 }, sse],
      [{ [sse]: "aws:kms", [context]: "not base64!" }, context],
      [{ [sse]: "aws:kms", [context]: btoa("[1,2]") }, context],
      [{ [sse]: "aws:kms", [context]: btoa('{"a":1}') }, context],
      [{ [sse]: "aws:kms", [keyId]: " " }, keyId],
      [{ [sse]: "aws:kms", ...trio() }, sse],
    ];
    for (const [headers, argument] of refused) {
      expectError(catchS3(() => write(headers)), "InvalidArgument", 400, argument);
    }
  });

  Deno.test(`sse ${d}: an unsupported SSE value is InvalidArgument`, () => {
    for (const value of ["AES128", "aes256", "", "aws:kms:dsse", "kms"]) {
      const err = catchS3(() => write({ [sse]: value }));
      expectError(err, "InvalidArgument", 400, sse);
      assertEquals(err.details.ArgumentValue, value);
    }
  });

  Deno.test(`sse ${d}: a valid SSE-C trio`, () => {
    const req = write(trio());
    assert(req.kind === "c", "kind c");
    assertEquals([...req.key], [...KEY_A]);
    assertEquals(req.keyMd5, md5b64(KEY_A));
    const read = parseSseCustomerKey(new Headers(trio()), dialect, {});
    assertEquals(read?.keyMd5, md5b64(KEY_A));
    assertEquals(parseSseCustomerKey(new Headers({}), dialect, {}), undefined);
  });

  Deno.test(`sse ${d}: malformed SSE-C trios`, () => {
    const t = trio();
    const without = (name: string) =>
      Object.fromEntries(Object.entries(t).filter(([n]) => n !== name));
    const cases: Array<[string, Record<string, string>, string, string]> = [
      ["only the algorithm", { [alg]: "AES256" }, "InvalidArgument", key],
      ["only the key", { [key]: t[key] }, "InvalidArgument", md5],
      ["only the MD5", { [md5]: t[md5] }, "InvalidArgument", key],
      ["no key", without(key), "InvalidArgument", key],
      ["no MD5", without(md5), "InvalidArgument", md5],
      ["no algorithm", without(alg), "InvalidArgument", alg],
      ["algorithm AES128", { ...t, [alg]: "AES128" }, "InvalidEncryptionAlgorithmError", alg],
      ["key not base64", { ...t, [key]: "not base64!" }, "InvalidArgument", key],
      ["key unpadded", { ...t, [key]: t[key].replace(/=+$/, "") }, "InvalidArgument", key],
      ["16-byte key", { ...trio(KEY_A.subarray(0, 16)) }, "InvalidArgument", key],
      ["MD5 of another key", { ...t, [md5]: md5b64(KEY_B) }, "InvalidArgument", md5],
      ["MD5 not base64", { ...t, [md5]: "???" }, "InvalidArgument", md5],
      ["hex MD5", { ...t, [md5]: "00".repeat(16) }, "InvalidArgument", md5],
    ];
    for (const [what, init, code, argument] of cases) {
      const err = catchS3(() => write(init));
      assertEquals([what, err.code, err.status, err.details.ArgumentName], [
        what,
        code,
        400,
        argument,
      ]);
      assert(!JSON.stringify(err.details).includes(t[key]), `${what}: key echoed`);
    }
  });

  Deno.test(`sse ${d}: SSE-S3 and SSE-C together is InvalidArgument`, () => {
    for (const value of ["AES256", "aws:kms"]) {
      expectError(catchS3(() => write({ [sse]: value, ...trio() })), "InvalidArgument", 400, sse);
    }
  });

  Deno.test(`sse ${d}: copy-source SSE-C headers`, () => {
    const src = (suffix: string) =>
      h(dialect, `copy-source-server-side-encryption-customer-${suffix}`);
    const init = {
      [src("algorithm")]: "AES256",
      [src("key")]: b64(KEY_B),
      [src("key-MD5")]: md5b64(KEY_B),
    };
    const got = parseSseCustomerKey(new Headers(init), dialect, { copySource: true });
    assertEquals(got?.keyMd5, md5b64(KEY_B));
    // The copy source's key is not the destination's: the write sees no SSE request.
    assertEquals(write(init), { kind: "none" });
    assertEquals(
      parseSseCustomerKey(new Headers(trio()), dialect, { copySource: true }),
      undefined,
    );
    const bad = { ...init, [src("key-MD5")]: md5b64(KEY_A) };
    const err = catchS3(() => parseSseCustomerKey(new Headers(bad), dialect, { copySource: true }));
    expectError(err, "InvalidArgument", 400, src("key-MD5"));
  });

  Deno.test(`sse ${d}: response headers`, () => {
    assertEquals(sseResponseHeaders(undefined, dialect), {});
    assertEquals(sseResponseHeaders({ kind: "s3", sealedKey: "v1:x" }, dialect), {
      [sse]: "AES256",
    });
    assertEquals(sseResponseHeaders({ kind: "c", keyMd5: md5b64(KEY_A) }, dialect), {
      [alg]: "AES256",
      [h(dialect, "server-side-encryption-customer-key-MD5")]: md5b64(KEY_A),
    });
  });
}

Deno.test("sse: each dialect reads only its own headers", () => {
  const amz = { "x-amz-server-side-encryption": "AES256" };
  assertEquals(parseSseWrite(new Headers(amz), DIALECTS.store), { kind: "none" });
  assertEquals(parseSseWrite(new Headers(amz), DIALECTS.amz), { kind: "s3" });
  const store = { "x-store-server-side-encryption": "store:kms" };
  assertEquals(parseSseWrite(new Headers(store), DIALECTS.amz), { kind: "none" });
  assertEquals(parseSseWrite(new Headers(store), DIALECTS.store), {
    kind: "kms",
    algorithm: "store:kms",
  });
});

const MASTER = new MasterKey(crypto.getRandomValues(new Uint8Array(32)));
const AAD = new TextEncoder().encode("b/k@v#0");
const DATA = new TextEncoder().encode("secret object contents ".repeat(500));

/** Proves two keys are the same by encrypting with one and decrypting with the other. */
async function sameKey(a: CryptoKey, b: CryptoKey): Promise<boolean> {
  const { bytes, form } = await encodeChunk(DATA, { compression: "auto", key: a, aad: AAD });
  try {
    const back = await decodeChunk(bytes, form, { key: b, aad: AAD });
    return back.byteLength === DATA.byteLength && back.every((v, i) => v === DATA[i]);
  } catch (err) {
    if (err instanceof ChunkIntegrityError) return false;
    throw err;
  }
}

Deno.test("sse keys: SSE-S3 data keys seal and unseal through a JSON round trip", async () => {
  const keys = new SseKeys(MASTER);
  const one = await keys.forNewObject({ kind: "s3" });
  const two = await keys.forNewObject({ kind: "s3" });
  assert(one.record && one.key && two.record && two.key, "records and keys");
  assertEquals(Object.keys(one.record).sort(), ["kind", "sealedKey"]);
  assert(one.record.sealedKey!.startsWith("v1:"), "versioned");
  assert(one.record.sealedKey !== two.record.sealedKey, "fresh key per object");
  assert(!(await sameKey(one.key, two.key)), "distinct data keys");
  const stored = JSON.parse(JSON.stringify(one.record)) as SseRecord;
  const again = await new SseKeys(MASTER).forExistingObject(stored, undefined);
  assert(again && await sameKey(one.key, again), "unsealed key decrypts");
});

Deno.test("sse keys: a sealed key fails under another master key or when altered", async () => {
  const { record } = await new SseKeys(MASTER).forNewObject({ kind: "s3" });
  const other = new SseKeys(new MasterKey(crypto.getRandomValues(new Uint8Array(32))));
  expectError(
    await catchS3Async(() => other.forExistingObject(record, undefined)),
    "InternalError",
    500,
  );
  const text = record!.sealedKey!;
  const flipped = text.slice(0, 10) + (text[10] === "A" ? "B" : "A") + text.slice(11);
  for (const sealedKey of [flipped, "v1:!!", "v2:" + text.slice(3), undefined]) {
    const err = await catchS3Async(() =>
      new SseKeys(MASTER).forExistingObject({ kind: "s3", sealedKey }, undefined)
    );
    expectError(err, "InternalError", 500);
  }
});

Deno.test("sse keys: SSE-C stores only the key MD5 and needs the same key to read", async () => {
  const keys = new SseKeys(MASTER);
  const customerA = { key: KEY_A, keyMd5: md5b64(KEY_A) };
  const customerB = { key: KEY_B, keyMd5: md5b64(KEY_B) };
  const made = await keys.forNewObject({ kind: "c", ...customerA });
  assertEquals(made.record, { kind: "c", keyMd5: md5b64(KEY_A) });
  assert(!JSON.stringify(made.record).includes(b64(KEY_A)), "key stored");
  const read = await keys.forExistingObject(made.record, customerA);
  assert(read && await sameKey(made.key!, read), "same key decrypts");
  const wrong = await catchS3Async(() => keys.forExistingObject(made.record, customerB));
  expectError(wrong, "AccessDenied", 403);
  const missing = await catchS3Async(() => keys.forExistingObject(made.record, undefined));
  expectError(missing, "InvalidRequest", 400);
  assert(missing.message.startsWith("The object was stored using a form of Server Side"), "msg");
});

Deno.test("sse keys: SSE-C headers on an object that is not SSE-C encrypted", async () => {
  const keys = new SseKeys(MASTER);
  const customer = { key: KEY_A, keyMd5: md5b64(KEY_A) };
  assertEquals(await keys.forExistingObject(undefined, undefined), undefined);
  assertEquals(await keys.forNewObject({ kind: "none" }), {});
  const plain = await catchS3Async(() => keys.forExistingObject(undefined, customer));
  expectError(plain, "InvalidRequest", 400);
  const { record } = await keys.forNewObject({ kind: "s3" });
  const s3 = await catchS3Async(() => keys.forExistingObject(record, customer));
  expectError(s3, "InvalidRequest", 400);
});
