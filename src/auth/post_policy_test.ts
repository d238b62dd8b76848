import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { DIALECTS } from "../http/dialect.ts";
import { S3Error } from "../http/errors.ts";
import { checkPostPolicy, parsePostPolicy, verifyPostSignature } from "./post_policy.ts";

const store = DIALECTS.store;
const amz = DIALECTS.amz;
const enc = new TextEncoder();

function b64(doc: unknown): string {
  const text = typeof doc === "string" ? doc : JSON.stringify(doc);
  return btoa(String.fromCharCode(...enc.encode(text)));
}

function throwsCode(fn: () => unknown, code: string, message?: RegExp): void {
  try {
    fn();
  } catch (err) {
    assert(err instanceof S3Error, `expected S3Error ${code}, got ${err}`);
    assertEquals(err.code, code, err.message);
    if (message) assert(message.test(err.message), `${err.message} !~ ${message}`);
    return;
  }
  throw new Error(`expected ${code}, but it succeeded`);
}

async function rejectsCode(fn: () => Promise<unknown>, code: string): Promise<void> {
  try {
    await fn();
  } catch (err) {
    assert(err instanceof S3Error, `expected S3Error ${code}, got ${err}`);
    assertEquals(err.code, code, err.message);
    return;
  }
  throw new Error(`expected ${code}, but it succeeded`);
}

const FUTURE = "2999-01-01T00:00:00.000Z";

Deno.test("parsePostPolicy reads expiration and the three condition forms", () => {
  const policy = parsePostPolicy(b64({
    expiration: FUTURE,
    conditions: [
      { bucket: "photos", "X-Store-Meta-Uuid": "14365" },
      ["eq", "$Key", "a/b"],
      ["starts-with", "$Content-Type", "image/"],
      ["content-length-range", 1, "1048576"],
    ],
  }));
  assertEquals(policy.expiration, Date.parse(FUTURE));
  assertEquals(
    policy.conditions.map((c) =>
      c.op === "content-length-range" ? [c.op, c.min, c.max] : [c.op, c.field, c.value]
    ),
    [
      ["eq", "bucket", "photos"],
      ["eq", "x-store-meta-uuid", "14365"],
      ["eq", "key", "a/b"],
      ["starts-with", "content-type", "image/"],
      ["content-length-range", 1, 1048576],
    ],
  );
});

Deno.test("parsePostPolicy refuses malformed documents", () => {
  const bad: [unknown, RegExp][] = [
    ["not json", /Invalid JSON/],
    [[1, 2], /Invalid JSON/],
    [{ conditions: [] }, /missing expiration/],
    [{ expiration: "tomorrow", conditions: [] }, /Invalid 'expiration'/],
    [{ expiration: FUTURE }, /missing conditions/],
    [{ expiration: FUTURE, conditions: {} }, /conditions/],
    [{ expiration: FUTURE, conditions: [["ends-with", "$key", "x"]] }, /Invalid Condition/],
    [{ expiration: FUTURE, conditions: [["eq", "key", "x"]] }, /Invalid Condition/],
    [{ expiration: FUTURE, conditions: [["eq", "$key", 5]] }, /Invalid Condition/],
    [{ expiration: FUTURE, conditions: [["content-length-range", 10, 1]] }, /content-length/],
    [{ expiration: FUTURE, conditions: [["content-length-range", -1, 1]] }, /content-length/],
    [{ expiration: FUTURE, conditions: [{ acl: 1 }] }, /Simple-Condition/],
    [{ expiration: FUTURE, conditions: [{}] }, /Simple-Condition/],
    [{ expiration: FUTURE, conditions: ["acl"] }, /Invalid Condition/],
  ];
  for (const [doc, message] of bad) {
    throwsCode(() => parsePostPolicy(b64(doc as string)), "InvalidPolicyDocument", message);
  }
  throwsCode(() => parsePostPolicy("%%%"), "InvalidPolicyDocument", /Invalid JSON/);
});

function check(
  conditions: unknown[],
  values: Record<string, string>,
  opts: { now?: number; expiration?: string } = {},
) {
  const policy = parsePostPolicy(b64({ expiration: opts.expiration ?? FUTURE, conditions }));
  return checkPostPolicy(policy, {
    values: new Map(Object.entries(values)),
    fields: Object.keys(values).filter((k) => k !== "bucket"),
    dialect: store,
    now: opts.now ?? Date.now(),
  });
}

Deno.test("checkPostPolicy: expiration", () => {
  throwsCode(
    () => check([], {}, { expiration: "2020-01-01T00:00:00Z" }),
    "AccessDenied",
    /^Invalid according to Policy: Policy expired\.$/,
  );
  check([], {}, { expiration: "2020-01-01T00:00:00Z", now: Date.parse("2019-12-31T23:59:59Z") });
});

Deno.test("checkPostPolicy: exact and starts-with matches", () => {
  const values = {
    bucket: "b",
    key: "user/eric/cat.jpg",
    "content-type": "image/jpeg",
    acl: "public-read",
  };
  check([{ bucket: "b" }, ["eq", "$key", "user/eric/cat.jpg"], [
    "starts-with",
    "$Content-Type",
    "image/",
  ], { acl: "public-read" }], values);
  check([{ bucket: "b" }, ["starts-with", "$key", "user/eric/"], [
    "starts-with",
    "$content-type",
    "",
  ], ["starts-with", "$acl", "public"]], values);
  throwsCode(
    () =>
      check([
        { bucket: "other" },
        ["starts-with", "$key", ""],
        ["starts-with", "$content-type", ""],
        { acl: "public-read" },
      ], values),
    "AccessDenied",
    /Policy Condition failed: \["eq", "\$bucket", "other"\]/,
  );
  throwsCode(
    () =>
      check([["starts-with", "$key", "user/bob/"], ["starts-with", "$content-type", ""], {
        acl: "public-read",
      }], values),
    "AccessDenied",
    /Policy Condition failed: \["starts-with", "\$key", "user\/bob\/"\]/,
  );
  throwsCode(
    () =>
      check([["eq", "$key", "user/eric/cat.jpg"], ["eq", "$content-type", "image/png"], {
        acl: "public-read",
      }], values),
    "AccessDenied",
    /Condition failed/,
  );
  // A condition on a field the form does not have: exact fails, starts-with "" matches anything.
  throwsCode(() => check([{ "x-store-meta-a": "1" }], {}), "AccessDenied", /Condition failed/);
  check([["starts-with", "$success_action_redirect", ""]], {});
});

Deno.test("checkPostPolicy: every field must be covered", () => {
  const values = {
    key: "k",
    "x-store-meta-a": "1",
    "x-ignore-me": "x",
    policy: "p",
    "x-store-signature": "s",
    file: "",
  };
  throwsCode(
    () => check([["starts-with", "$key", ""]], values),
    "AccessDenied",
    /^Invalid according to Policy: Extra input fields: x-store-meta-a$/,
  );
  check([["starts-with", "$key", ""], ["starts-with", "$X-Store-Meta-A", ""]], values);
});

Deno.test("checkPostPolicy: exact-only fields refuse starts-with", () => {
  for (
    const field of [
      "bucket",
      "success_action_status",
      "x-store-date",
      "x-store-server-side-encryption",
    ]
  ) {
    throwsCode(
      () => check([["starts-with", `$${field}`, ""]], {}),
      "InvalidPolicyDocument",
      /exact matching only/,
    );
  }
  check([["starts-with", "$x-store-meta-x", ""], ["starts-with", "$cache-control", ""], [
    "starts-with",
    "$success_action_redirect",
    "",
  ]], {});
});

Deno.test("checkPostPolicy: content-length-range combines", () => {
  assertEquals(check([], {}), { min: 0, max: Number.MAX_SAFE_INTEGER });
  assertEquals(check([["content-length-range", 1, 100], ["content-length-range", 10, 1000]], {}), {
    min: 10,
    max: 100,
  });
});

async function hmac(key: Uint8Array | ArrayBuffer, data: string): Promise<ArrayBuffer> {
  const k = await crypto.subtle.importKey(
    "raw",
    key as ArrayBuffer,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return crypto.subtle.sign("HMAC", k, enc.encode(data));
}

/** The POST signature, computed independently with WebCrypto. */
async function postSignature(seed: string, scope: string[], policy: string): Promise<string> {
  let key: ArrayBuffer = await hmac(enc.encode(seed), scope[0]);
  for (const part of scope.slice(1)) key = await hmac(key, part);
  return Array.from(new Uint8Array(await hmac(key, policy)), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

Deno.test("verifyPostSignature accepts a good signature in both dialects and refuses others", async () => {
  const secretFor = (k: string) =>
    Promise.resolve(k === "AKID" ? "secret-key-0123456789" : undefined);
  const policy = b64({ expiration: FUTURE, conditions: [] });
  for (
    const [d, seed, term, service] of [[store, "STORE4", "store4_request", "store"], [
      amz,
      "AWS4",
      "aws4_request",
      "s3",
    ]] as const
  ) {
    const p = d.headerPrefix;
    const fields = async (over: Record<string, string> = {}) => {
      const credential = over.credential ?? `AKID/20250102/us-east-1/${service}/${term}`;
      const [, day, region, svc, terminator] = credential.split("/");
      const values = new Map<string, string>([
        ["policy", policy],
        [`${p}algorithm`, d.algorithm],
        [`${p}credential`, credential],
        [`${p}date`, "20250102T030405Z"],
        [
          `${p}signature`,
          await postSignature(
            `${seed}secret-key-0123456789`,
            [day, region, svc, terminator],
            policy,
          ),
        ],
      ]);
      for (const [k, v] of Object.entries(over)) if (k !== "credential") values.set(`${p}${k}`, v);
      return values;
    };
    const opts = { dialect: d, region: "us-east-1", secretFor };
    assertEquals(await verifyPostSignature(await fields(), opts), "AKID");
    await rejectsCode(
      async () => verifyPostSignature(await fields({ signature: "0".repeat(64) }), opts),
      "SignatureDoesNotMatch",
    );
    await rejectsCode(
      async () => verifyPostSignature(await fields({ signature: "nothex" }), opts),
      "SignatureDoesNotMatch",
    );
    await rejectsCode(
      async () => verifyPostSignature(await fields({ algorithm: "HMAC" }), opts),
      "InvalidArgument",
    );
    await rejectsCode(
      async () => verifyPostSignature(await fields({ date: "20250103T030405Z" }), opts),
      "InvalidArgument",
    );
    await rejectsCode(
      async () =>
        verifyPostSignature(
          await fields({ credential: `AKID/20250102/eu-west-1/${service}/${term}` }),
          opts,
        ),
      "InvalidArgument",
    );
    await rejectsCode(
      async () =>
        verifyPostSignature(
          await fields({ credential: `AKID/20250102/us-east-1/${service}/other_request` }),
          opts,
        ),
      "InvalidArgument",
    );
    await rejectsCode(
      async () =>
        verifyPostSignature(
          await fields({ credential: `AKID/20250102/us-east-1/ec2/${term}` }),
          opts,
        ),
      "InvalidArgument",
    );
    await rejectsCode(
      async () => verifyPostSignature(await fields({ credential: "AKID/2025/us-east-1" }), opts),
      "InvalidArgument",
    );
    await rejectsCode(
      async () =>
        verifyPostSignature(
          await fields({ credential: `NOPE/20250102/us-east-1/${service}/${term}` }),
          opts,
        ),
      "InvalidAccessKeyId",
    );
    for (const missing of ["policy", `${p}algorithm`, `${p}credential`, `${p}date`]) {
      const values = await fields();
      values.delete(missing);
      await rejectsCode(() => verifyPostSignature(values, opts), "InvalidArgument");
    }
    // The policy is what is signed: another policy with the same signature fails.
    const other = await fields();
    other.set("policy", b64({ expiration: FUTURE, conditions: [["starts-with", "$key", ""]] }));
    await rejectsCode(() => verifyPostSignature(other, opts), "SignatureDoesNotMatch");
  }
});
