// Server access logging over HTTP: Get/PutBucketLogging with the SDK and raw requests in both
// dialects (errors included), and the records delivered into the target bucket as log objects,
// parsed back field by field; delivery by count and by interval, on shutdown, and the key formats.
import {
  CreateBucketCommand,
  GetBucketLoggingCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutBucketEncryptionCommand,
  PutBucketLoggingCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { assert, assertEquals, assertMatch, assertRejectsCode } from "./assert.ts";
import {
  createUser,
  DIALECTS,
  expectError,
  expectStatus,
  md5Base64,
  NAMESPACE,
} from "./access_helpers.ts";
import { s3Client, startServer, type TestServer, withServer } from "./server.ts";
import { objectPath, presign, signedFetch, xmlValue } from "./signer.ts";

/** The fields of one record, named as the format documents them, in order. */
const FIELDS = [
  "bucketOwner",
  "bucket",
  "time",
  "remoteIp",
  "requester",
  "requestId",
  "operation",
  "key",
  "requestUri",
  "status",
  "errorCode",
  "bytesSent",
  "objectSize",
  "totalTime",
  "turnAroundTime",
  "referer",
  "userAgent",
  "versionId",
  "hostId",
  "signatureVersion",
  "cipherSuite",
  "authenticationType",
  "hostHeader",
  "tlsVersion",
  "accessPointArn",
  "aclRequired",
] as const;

type LogRecord = Record<(typeof FIELDS)[number], string>;

/** Splits a record: bracketed time, quoted strings (with `\"` escapes) and bare fields. */
function parseRecord(line: string): LogRecord {
  const parts = [...line.matchAll(/\[[^\]]*\]|"(?:[^"\\]|\\.)*"|\S+/g)].map((m) => m[0]);
  assertEquals(parts.length, FIELDS.length, line);
  const unquote = (s: string) => s.startsWith('"') ? s.slice(1, -1).replace(/\\(.)/g, "$1") : s;
  return Object.fromEntries(FIELDS.map((f, i) => [f, unquote(parts[i])])) as LogRecord;
}

async function logObjects(s3: S3Client, Bucket: string, Prefix: string): Promise<string[]> {
  const list = await s3.send(new ListObjectsV2Command({ Bucket, Prefix }));
  return (list.Contents ?? []).map((o) => o.Key!);
}

async function records(s3: S3Client, Bucket: string, Prefix: string): Promise<LogRecord[]> {
  const out: LogRecord[] = [];
  for (const Key of await logObjects(s3, Bucket, Prefix)) {
    const got = await s3.send(new GetObjectCommand({ Bucket, Key }));
    assertEquals(got.ContentType, "text/plain");
    const text = await got.Body!.transformToString();
    for (const line of text.split("\n").filter(Boolean)) out.push(parseRecord(line));
  }
  return out;
}

/** Waits until the target holds records of every request id in `ids`. */
async function waitForRecords(
  s3: S3Client,
  Bucket: string,
  Prefix: string,
  ids: string[],
): Promise<LogRecord[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const found = await records(s3, Bucket, Prefix);
    const have = new Set(found.map((r) => r.requestId));
    if (ids.every((id) => have.has(id))) return found;
    if (Date.now() > deadline) {
      throw new Error(`records missing: ${ids.filter((id) => !have.has(id)).join(", ")}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

const LOGGING = (target: string, prefix: string, format = "") =>
  `<BucketLoggingStatus><LoggingEnabled><TargetBucket>${target}</TargetBucket>` +
  `<TargetPrefix>${prefix}</TargetPrefix>${format}</LoggingEnabled></BucketLoggingStatus>`;

Deno.test("bucket logging: records delivered and parsed back field by field", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "app" }));
    await s3.send(new CreateBucketCommand({ Bucket: "logs" }));
    const none = await s3.send(new GetBucketLoggingCommand({ Bucket: "app" }));
    assertEquals(none.LoggingEnabled, undefined);
    await assertRejectsCode(
      () =>
        s3.send(
          new PutBucketLoggingCommand({
            Bucket: "app",
            BucketLoggingStatus: { LoggingEnabled: { TargetBucket: "ghost", TargetPrefix: "x/" } },
          }),
        ),
      "InvalidTargetBucketForLogging",
    );
    await s3.send(
      new PutBucketLoggingCommand({
        Bucket: "app",
        BucketLoggingStatus: { LoggingEnabled: { TargetBucket: "logs", TargetPrefix: "app/" } },
      }),
    );
    const got = await s3.send(new GetBucketLoggingCommand({ Bucket: "app" }));
    assertEquals(got.LoggingEnabled?.TargetBucket, "logs");
    assertEquals(got.LoggingEnabled?.TargetPrefix, "app/");

    // The requests to log, each with its expected fields.
    const started = Date.now();
    const id = (res: Response) => res.headers.get("x-store-request-id")!;
    const put = await signedFetch(server, {
      method: "PUT",
      path: objectPath("app", "dir/a b.txt"),
      body: "0123456789",
      headers: { "user-agent": "log-test/1.0", referer: "https://ref.example/" },
    });
    await expectStatus(put, 200);
    const get = await signedFetch(server, {
      method: "GET",
      path: objectPath("app", "dir/a b.txt"),
      headers: { range: "bytes=2-5" },
    });
    assertEquals(await expectStatus(get, 206), "2345");
    const missing = await signedFetch(server, { method: "GET", path: objectPath("app", "nope") });
    await expectError(missing, "NoSuchKey", 404);
    const anonymous = await fetch(`${server.url}/app/dir/a%20b.txt`);
    await expectError(anonymous, "AccessDenied", 403);
    const versioning = await signedFetch(server, {
      method: "GET",
      path: "/app",
      query: [["versioning", ""]],
    });
    await expectStatus(versioning, 200);
    const url = await presign(server, {
      method: "GET",
      path: objectPath("app", "dir/a b.txt"),
      expires: 60,
    });
    const presigned = await fetch(url);
    assertEquals(await presigned.text(), "0123456789");
    const amz = await signedFetch(server, {
      method: "HEAD",
      path: objectPath("app", "dir/a b.txt"),
      dialect: "amz",
    });
    await expectStatus(amz, 200);

    const ids = [put, get, missing, anonymous, versioning, presigned].map(id);
    ids.push(amz.headers.get("x-amz-request-id")!);
    const found = await waitForRecords(s3, "logs", "app/", ids);
    const byId = new Map(found.map((r) => [r.requestId, r]));
    const owner = byId.get(ids[0])!.bucketOwner;
    assert(owner !== "-" && owner.length > 0, owner);
    const host = new URL(server.url).host;
    const expected: Partial<LogRecord>[] = [
      {
        requester: owner,
        operation: "REST.PUT.OBJECT",
        key: "dir/a%20b.txt",
        requestUri: "PUT /app/dir/a%20b.txt HTTP/1.1",
        status: "200",
        errorCode: "-",
        bytesSent: "-",
        objectSize: "10",
        referer: "https://ref.example/",
        userAgent: "log-test/1.0",
        signatureVersion: "SigV4",
        authenticationType: "AuthHeader",
      },
      {
        operation: "REST.GET.OBJECT",
        status: "206",
        bytesSent: "4",
        objectSize: "10",
        referer: "-",
      },
      { operation: "REST.GET.OBJECT", key: "nope", status: "404", errorCode: "NoSuchKey" },
      {
        requester: "-",
        status: "403",
        errorCode: "AccessDenied",
        signatureVersion: "-",
        authenticationType: "-",
      },
      {
        operation: "REST.GET.VERSIONING",
        key: "-",
        requestUri: "GET /app?versioning= HTTP/1.1",
        status: "200",
      },
      {
        requester: owner,
        authenticationType: "QueryString",
        signatureVersion: "SigV4",
        bytesSent: "10",
      },
      { operation: "REST.HEAD.OBJECT", status: "200", bytesSent: "-", objectSize: "10" },
    ];
    for (let i = 0; i < ids.length; i++) {
      const r = byId.get(ids[i])!;
      for (const [field, value] of Object.entries(expected[i])) {
        assertEquals(r[field as keyof LogRecord], value, `request ${i} ${field}`);
      }
      // Fields every record has.
      assertEquals(r.bucketOwner, owner);
      assertEquals(r.bucket, "app");
      assertEquals(r.remoteIp, "127.0.0.1");
      assertEquals(r.hostHeader, host);
      assertMatch(r.time, /^\[\d\d\/[A-Z][a-z]{2}\/\d{4}:\d\d:\d\d:\d\d \+0000\]$/);
      const m = /^\[(\d\d)\/(\w{3})\/(\d{4}):(\d\d):(\d\d):(\d\d)/.exec(r.time)!;
      const at = Date.parse(`${m[2]} ${m[1]} ${m[3]} ${m[4]}:${m[5]}:${m[6]} GMT`);
      assert(at >= started - 2000 && at <= Date.now(), `time ${r.time}`);
      assertMatch(r.totalTime, /^\d+$/);
      for (const f of ["turnAroundTime", "hostId", "cipherSuite", "tlsVersion"] as const) {
        assertEquals(r[f], "-", f);
      }
    }
    assertEquals(byId.get(ids[1])!.key, "dir/a%20b.txt");
    for (const key of await logObjects(s3, "logs", "app/")) {
      assertMatch(key, /^app\/\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d-[0-9A-F]{16}$/);
    }

    // Logging off: later requests are not recorded.
    await s3.send(new PutBucketLoggingCommand({ Bucket: "app", BucketLoggingStatus: {} }));
    assertEquals(
      (await s3.send(new GetBucketLoggingCommand({ Bucket: "app" }))).LoggingEnabled,
      undefined,
    );
    const after = await signedFetch(server, { method: "GET", path: objectPath("app", "nope") });
    await after.body?.cancel();
    await new Promise((r) => setTimeout(r, 2500));
    const later = await records(s3, "logs", "app/");
    assert(!later.some((r) => r.requestId === id(after)), "logged after logging was turned off");
  }, { env: { STORE_BUCKET_LOG_INTERVAL: "1" } });
});

Deno.test("bucket logging: delivery by count, on shutdown, partitioned keys", async () => {
  const first = await startServer({
    env: { STORE_BUCKET_LOG_INTERVAL: "3600", STORE_BUCKET_LOG_BATCH: "3" },
  });
  let second: TestServer | undefined;
  try {
    const s3 = s3Client(first);
    await s3.send(new CreateBucketCommand({ Bucket: "src" }));
    await s3.send(new CreateBucketCommand({ Bucket: "sink" }));
    await s3.send(
      new PutBucketEncryptionCommand({
        Bucket: "sink",
        ServerSideEncryptionConfiguration: {
          Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }],
        },
      }),
    );
    await s3.send(
      new PutBucketLoggingCommand({
        Bucket: "src",
        BucketLoggingStatus: {
          LoggingEnabled: {
            TargetBucket: "sink",
            TargetPrefix: "p/",
            TargetObjectKeyFormat: { PartitionedPrefix: { PartitionDateSource: "EventTime" } },
          },
        },
      }),
    );
    // PutBucketLogging is the first record; two uploads make three: one object, long before
    // the hour-long interval.
    for (let i = 0; i < 2; i++) {
      await s3.send(new PutObjectCommand({ Bucket: "src", Key: `k${i}`, Body: "x" }));
    }
    const deadline = Date.now() + 10_000;
    let keys: string[] = [];
    while (keys.length === 0 && Date.now() < deadline) {
      keys = await logObjects(s3, "sink", "p/");
      if (keys.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    assertEquals(keys.length, 1);
    // The target's default encryption applies to log objects.
    const head = await s3.send(new HeadObjectCommand({ Bucket: "sink", Key: keys[0] }));
    assertEquals(head.ServerSideEncryption, "AES256");
    const delivered = await records(s3, "sink", "p/");
    assertEquals(delivered.map((r) => r.operation), [
      "REST.PUT.LOGGING_STATUS",
      "REST.PUT.OBJECT",
      "REST.PUT.OBJECT",
    ]);
    const owner = delivered[0].bucketOwner;
    const day = new Date().toISOString().slice(0, 10).split("-");
    assertMatch(
      keys[0],
      new RegExp(
        `^p/${owner}/us-east-1/src/${day[0]}/${day[1]}/${day[2]}/` +
          `${day.join("-")}-\\d\\d-\\d\\d-\\d\\d-[0-9A-F]{16}$`,
      ),
    );
    // Two more records wait in memory; a graceful stop delivers them.
    await s3.send(new PutObjectCommand({ Bucket: "src", Key: "k2", Body: "x" }));
    const got = await s3.send(new GetBucketLoggingCommand({ Bucket: "src" }));
    assert(got.LoggingEnabled?.TargetObjectKeyFormat?.PartitionedPrefix !== undefined);
    assertEquals((await logObjects(s3, "sink", "p/")).length, 1);
    await first.stop();
    second = await startServer({ dataDir: first.dataDir });
    const all = await records(s3Client(second), "sink", "p/");
    // Two objects now (their order in a listing is the random part of the key within a second).
    assertEquals((await logObjects(s3Client(second), "sink", "p/")).length, 2);
    assertEquals(all.map((r) => r.operation).sort(), [
      "REST.GET.LOGGING_STATUS",
      "REST.PUT.LOGGING_STATUS",
      "REST.PUT.OBJECT",
      "REST.PUT.OBJECT",
      "REST.PUT.OBJECT",
    ]);
    assertEquals(all.map((r) => r.key).filter((k) => k !== "-").sort(), ["k0", "k1", "k2"]);
  } finally {
    await first.stop();
    await second?.stop();
    await Deno.remove(first.dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("bucket logging: records not yet delivered survive a crash (the spool)", async () => {
  const env = { STORE_BUCKET_LOG_INTERVAL: "3600", STORE_BUCKET_LOG_BATCH: "100" };
  const first = await startServer({ env });
  let second: TestServer | undefined;
  try {
    const s3 = s3Client(first);
    await s3.send(new CreateBucketCommand({ Bucket: "src" }));
    await s3.send(new CreateBucketCommand({ Bucket: "sink" }));
    await s3.send(
      new PutBucketLoggingCommand({
        Bucket: "src",
        BucketLoggingStatus: { LoggingEnabled: { TargetBucket: "sink", TargetPrefix: "c/" } },
      }),
    );
    for (let i = 0; i < 3; i++) {
      await s3.send(new PutObjectCommand({ Bucket: "src", Key: `crash${i}`, Body: "x" }));
    }
    // Far from the batch size and the interval: nothing delivered yet; then SIGKILL.
    assertEquals(await logObjects(s3, "sink", "c/"), []);
    await first.kill();
    second = await startServer({ dataDir: first.dataDir, env });
    const delivered = await records(s3Client(second), "sink", "c/");
    assertEquals(delivered.map((r) => r.key).filter((k) => k !== "-"), [
      "crash0",
      "crash1",
      "crash2",
    ]);
    // Delivered once: the spool is empty after the delivery, a second restart adds nothing.
    await second.stop();
    second = await startServer({ dataDir: first.dataDir, env });
    assertEquals((await records(s3Client(second), "sink", "c/")).length, delivered.length);
    assertEquals([...Deno.readDirSync(`${first.dataDir}/access-log-spool`)], []);
  } finally {
    await first.stop();
    await second?.stop();
    await Deno.remove(first.dataDir, { recursive: true }).catch(() => {});
  }
});

Deno.test("bucket logging: raw requests and errors in both dialects", async () => {
  await withServer(async (server) => {
    const other = await createUser(server, "log-other");
    await expectStatus(
      await signedFetch(server, {
        method: "PUT",
        path: "/others-logs",
        accessKey: other.accessKey,
        secret: other.secret,
      }),
      200,
    );
    for (const dialect of DIALECTS) {
      const bucket = `logged-${dialect}`;
      const req = (r: Parameters<typeof signedFetch>[1]) => signedFetch(server, { dialect, ...r });
      await expectStatus(await req({ method: "PUT", path: `/${bucket}` }), 200);
      await expectStatus(await req({ method: "PUT", path: `/${bucket}-target` }), 200);
      const put = (xml: string) =>
        req({
          method: "PUT",
          path: `/${bucket}`,
          query: [["logging", ""]],
          headers: { "content-md5": md5Base64(xml) },
          body: xml,
        });
      const get = () => req({ method: "GET", path: `/${bucket}`, query: [["logging", ""]] });
      const empty = await expectStatus(await get(), 200);
      assert(
        empty.includes(`<BucketLoggingStatus xmlns="${NAMESPACE[dialect]}"></BucketLoggingStatus>`),
        empty,
      );

      const bad: [string, string, number][] = [
        [LOGGING("nowhere", "x/"), "InvalidTargetBucketForLogging", 400],
        [LOGGING("others-logs", "x/"), "InvalidTargetBucketForLogging", 400],
        [
          `<BucketLoggingStatus><LoggingEnabled><TargetBucket>${bucket}-target</TargetBucket>` +
          "</LoggingEnabled></BucketLoggingStatus>",
          "MalformedXML",
          400,
        ],
        [LOGGING(`${bucket}-target`, "x/", "<Other/>"), "MalformedXML", 400],
        [
          LOGGING(
            `${bucket}-target`,
            "x/",
            "<TargetGrants><Grant><Permission>READ</Permission></Grant></TargetGrants>",
          ),
          "NotImplemented",
          501,
        ],
        ["<Logging/>", "MalformedXML", 400],
      ];
      for (const [xml, code, status] of bad) await expectError(await put(xml), code, status, xml);

      await expectStatus(await put(LOGGING(`${bucket}-target`, "logs/")), 200);
      const doc = await expectStatus(await get(), 200);
      assertEquals(xmlValue(doc, "TargetBucket"), `${bucket}-target`);
      assertEquals(xmlValue(doc, "TargetPrefix"), "logs/");
      assert(doc.includes("<SimplePrefix></SimplePrefix>"), doc);
      await expectStatus(await put("<BucketLoggingStatus></BucketLoggingStatus>"), 200);
      assertEquals(xmlValue(await expectStatus(await get(), 200), "TargetBucket"), undefined);
    }
  });
});
