// Bucket lifecycle through the AWS SDK: the configuration round trip and its refusals, and real
// expirations by the background worker with one lifecycle day lasting one second.
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketLifecycleCommand,
  DeleteObjectCommand,
  GetBucketLifecycleConfigurationCommand,
  GetObjectCommand,
  type LifecycleRule,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutBucketLifecycleConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  PutObjectLegalHoldCommand,
  PutObjectTaggingCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { assert, assertEquals, assertRejectsCode } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER, s3Client, type TestServer, withServer } from "./server.ts";
import { signedFetch, xmlValue } from "./signer.ts";

const putRules = (s3: S3Client, Bucket: string, Rules: LifecycleRule[]) =>
  s3.send(
    new PutBucketLifecycleConfigurationCommand({ Bucket, LifecycleConfiguration: { Rules } }),
  );

async function keys(s3: S3Client, Bucket: string): Promise<string[]> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket }));
  return (out.Contents ?? []).map((c) => c.Key!);
}

/** Each version as `key:versionId` (`key:marker` for a delete marker), newest first per key. */
async function versions(s3: S3Client, Bucket: string): Promise<string[]> {
  const out = await s3.send(new ListObjectVersionsCommand({ Bucket }));
  const all = [
    ...(out.DeleteMarkers ?? []).map((m, i) => ({
      key: m.Key!,
      id: "marker",
      latest: m.IsLatest,
      i,
    })),
    ...(out.Versions ?? []).map((v, i) => ({
      key: v.Key!,
      id: v.VersionId!,
      latest: v.IsLatest,
      i,
    })),
  ];
  // The SDK splits versions from markers; within each list the server's order is kept.
  all.sort((a, b) =>
    a.key < b.key ? -1 : a.key > b.key ? 1 : Number(!!b.latest) - Number(!!a.latest) || a.i - b.i
  );
  return all.map((v) => `${v.key}:${v.id}`);
}

/** The value with object keys in order, so comparisons ignore the order the SDK builds them in. */
function ordered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(ordered);
  if (value && typeof value === "object" && !(value instanceof Date)) {
    return Object.fromEntries(
      Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, ordered(v)]),
    );
  }
  return value;
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`Timed out waiting for: ${what}`);
}

async function adminLifecycle(server: TestServer, method: string): Promise<Response> {
  return await fetch(`${server.url}/admin/lifecycle`, {
    method,
    headers: { authorization: `Basic ${btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`)}` },
  });
}

const ENV = { STORE_LIFECYCLE_DAY: "1", STORE_LIFECYCLE_INTERVAL: "1" };

Deno.test("lifecycle configuration: round trip and refusals", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const Bucket = "lc-config";
    await s3.send(new CreateBucketCommand({ Bucket }));

    await t.step("no configuration: NoSuchLifecycleConfiguration (404)", async () => {
      await assertRejectsCode(
        () => s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket })),
        "NoSuchLifecycleConfiguration",
        404,
      );
      await assertRejectsCode(
        () => s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: "lc-missing" })),
        "NoSuchBucket",
        404,
      );
    });

    await t.step("Put, Get, Delete round trip", async () => {
      const Rules: LifecycleRule[] = [
        {
          ID: "logs",
          Status: "Enabled",
          Filter: {
            And: {
              Prefix: "logs/",
              Tags: [{ Key: "a", Value: "1" }],
              ObjectSizeGreaterThan: 10,
              ObjectSizeLessThan: 1000,
            },
          },
          Expiration: { Days: 30 },
          NoncurrentVersionExpiration: { NoncurrentDays: 7, NewerNoncurrentVersions: 3 },
        },
        {
          ID: "uploads",
          Status: "Disabled",
          Filter: { Prefix: "tmp/" },
          AbortIncompleteMultipartUpload: { DaysAfterInitiation: 2 },
        },
        {
          ID: "dated",
          Status: "Enabled",
          Filter: { ObjectSizeLessThan: 5 },
          Expiration: { Date: new Date("2030-01-01T00:00:00Z") },
        },
        {
          Status: "Enabled",
          Filter: {},
          Expiration: { ExpiredObjectDeleteMarker: true },
        },
      ];
      await putRules(s3, Bucket, Rules);
      const got = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket }));
      assertEquals(got.Rules?.length, 4);
      assertEquals(ordered(got.Rules![0]), ordered(Rules[0]));
      assertEquals(ordered(got.Rules![1]), ordered(Rules[1]));
      assertEquals(got.Rules![2].Expiration?.Date?.toISOString(), "2030-01-01T00:00:00.000Z");
      assertEquals(got.Rules![2].Filter, { ObjectSizeLessThan: 5 });
      assertEquals(got.Rules![3].Expiration, { ExpiredObjectDeleteMarker: true });
      assertEquals(got.Rules![3].ID?.length, 48, "a generated ID");
      // A second Put replaces the whole configuration.
      await putRules(s3, Bucket, [{
        ID: "only",
        Status: "Enabled",
        Prefix: "",
        Expiration: { Days: 1 },
      }]);
      const replaced = await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket }));
      assertEquals(
        ordered(replaced.Rules),
        ordered([{ ID: "only", Status: "Enabled", Prefix: "", Expiration: { Days: 1 } }]),
      );
      await s3.send(new DeleteBucketLifecycleCommand({ Bucket }));
      await assertRejectsCode(
        () => s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket })),
        "NoSuchLifecycleConfiguration",
      );
      // Deleting again is fine.
      await s3.send(new DeleteBucketLifecycleCommand({ Bucket }));
    });

    await t.step("Transition is refused: NotImplemented (501), nothing stored", async () => {
      await assertRejectsCode(
        () =>
          putRules(s3, Bucket, [{
            ID: "t",
            Status: "Enabled",
            Filter: { Prefix: "" },
            Transitions: [{ Days: 30, StorageClass: "GLACIER" }],
          }]),
        "NotImplemented",
        501,
      );
      await assertRejectsCode(
        () =>
          putRules(s3, Bucket, [{
            ID: "t",
            Status: "Enabled",
            Filter: { Prefix: "" },
            NoncurrentVersionTransitions: [{ NoncurrentDays: 30, StorageClass: "STANDARD_IA" }],
          }]),
        "NotImplemented",
        501,
      );
      await assertRejectsCode(
        () => s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket })),
        "NoSuchLifecycleConfiguration",
      );
    });

    await t.step("invalid rules: the protocol's codes", async () => {
      const rule = { ID: "x", Status: "Enabled" as const, Filter: { Prefix: "" } };
      await assertRejectsCode(
        () => putRules(s3, Bucket, [{ ...rule, Expiration: { Days: 0 } }]),
        "InvalidArgument",
        400,
      );
      await assertRejectsCode(
        () =>
          putRules(s3, Bucket, [{ ...rule, Expiration: { Days: 1 } }, {
            ...rule,
            Expiration: { Days: 2 },
          }]),
        "InvalidArgument",
      );
      await assertRejectsCode(() => putRules(s3, Bucket, [rule]), "InvalidRequest", 400);
      await assertRejectsCode(
        () =>
          putRules(s3, Bucket, [{
            ...rule,
            Filter: { Tag: { Key: "k", Value: "v" } },
            AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
          }]),
        "InvalidRequest",
      );
      await assertRejectsCode(
        () =>
          putRules(s3, Bucket, [{
            ...rule,
            Expiration: { Days: 1, ExpiredObjectDeleteMarker: true },
          }]),
        "MalformedXML",
        400,
      );
      await assertRejectsCode(
        () =>
          putRules(s3, Bucket, [{
            ID: "x",
            Status: "Enabled",
            Prefix: "a",
            Filter: { Prefix: "a" },
            Expiration: { Days: 1 },
          }]),
        "MalformedXML",
      );
    });

    await t.step("raw requests: an integrity header is required; bad XML", async () => {
      const body = `<LifecycleConfiguration><Rule><Filter/><Status>Enabled</Status>` +
        `<Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>`;
      const bare = await signedFetch(server, {
        method: "PUT",
        path: `/${Bucket}`,
        query: [["lifecycle", ""]],
        body,
      });
      assertEquals(bare.status, 400);
      assertEquals(xmlValue(await bare.text(), "Code"), "InvalidRequest");
      const md5 = (text: string) => createHash("md5").update(text).digest("base64");
      const ok = await signedFetch(server, {
        method: "PUT",
        path: `/${Bucket}`,
        query: [["lifecycle", ""]],
        headers: { "content-md5": md5(body) },
        body,
      });
      assertEquals(ok.status, 200, await ok.text());
      const wrong = await signedFetch(server, {
        method: "PUT",
        path: `/${Bucket}`,
        query: [["lifecycle", ""]],
        headers: { "content-md5": md5("other") },
        body,
      });
      assertEquals(wrong.status, 400);
      assertEquals(xmlValue(await wrong.text(), "Code"), "BadDigest");
      const broken = "<LifecycleConfiguration><Rule>";
      const bad = await signedFetch(server, {
        method: "PUT",
        path: `/${Bucket}`,
        query: [["lifecycle", ""]],
        headers: { "content-md5": md5(broken) },
        body: broken,
      });
      assertEquals(bad.status, 400);
      assertEquals(xmlValue(await bad.text(), "Code"), "MalformedXML");
      const get = await signedFetch(server, {
        method: "GET",
        path: `/${Bucket}`,
        query: [["lifecycle", ""]],
      });
      const xml = await get.text();
      assertEquals(get.status, 200, xml);
      assert(xml.includes("<Filter></Filter><Status>Enabled</Status>"), xml);
    });

    await t.step("only the owner may read or change it", async () => {
      const anonymous = await fetch(`${server.url}/${Bucket}?lifecycle`);
      assertEquals(anonymous.status, 403);
      await anonymous.body?.cancel();
    });
  });
});

Deno.test("lifecycle worker: expirations in seconds", async (t) => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    const put = (Bucket: string, Key: string, Body: string | Uint8Array = "x") =>
      s3.send(new PutObjectCommand({ Bucket, Key, Body }));
    const create = async (Bucket: string, versioned = false) => {
      await s3.send(new CreateBucketCommand({ Bucket }));
      if (versioned) {
        await s3.send(
          new PutBucketVersioningCommand({
            Bucket,
            VersioningConfiguration: { Status: "Enabled" },
          }),
        );
      }
    };
    const days = (n: number) => ({ Days: n });

    // Unversioned, prefix filter: logs/ goes, keep/ stays.
    await create("lc-plain");
    for (const k of ["logs/a", "logs/b", "keep/c"]) await put("lc-plain", k);
    await putRules(s3, "lc-plain", [{
      ID: "logs",
      Status: "Enabled",
      Filter: { Prefix: "logs/" },
      Expiration: days(1),
    }]);
    // Size filter: only objects larger than 100 bytes go; a disabled rule acts on nothing, and
    // neither does a tag filter here (no object in this bucket has tags).
    await create("lc-size");
    await put("lc-size", "big", "b".repeat(200));
    await put("lc-size", "small", "s".repeat(10));
    await putRules(s3, "lc-size", [
      { ID: "big", Status: "Enabled", Filter: { ObjectSizeGreaterThan: 100 }, Expiration: days(1) },
      { ID: "off", Status: "Disabled", Filter: { Prefix: "small" }, Expiration: days(1) },
      {
        ID: "tagged",
        Status: "Enabled",
        Filter: { Tag: { Key: "k", Value: "v" } },
        Expiration: days(1),
      },
    ]);
    // Tag filters: only objects carrying the tags (with equal values) go; And needs every tag.
    await create("lc-tags");
    const tagged = (Key: string, Tagging?: string) =>
      s3.send(new PutObjectCommand({ Bucket: "lc-tags", Key, Body: "t", Tagging }));
    await tagged("a", "expire=yes");
    await tagged("b", "expire=no");
    await tagged("c");
    await tagged("d", "team=x&expire=yes");
    await tagged("and/both", "team=a&env=dev");
    await tagged("and/one", "team=a");
    await tagged("other/both", "team=a&env=dev");
    await tagged("late");
    await s3.send(
      new PutObjectTaggingCommand({
        Bucket: "lc-tags",
        Key: "late",
        Tagging: { TagSet: [{ Key: "expire", Value: "yes" }] },
      }),
    );
    await putRules(s3, "lc-tags", [
      {
        ID: "tag",
        Status: "Enabled",
        Filter: { Tag: { Key: "expire", Value: "yes" } },
        Expiration: days(1),
      },
      {
        ID: "and",
        Status: "Enabled",
        Filter: {
          And: {
            Prefix: "and/",
            Tags: [{ Key: "team", Value: "a" }, { Key: "env", Value: "dev" }],
          },
        },
        Expiration: days(1),
      },
    ]);
    // A date in the past: every matching object goes at the next run.
    await create("lc-date");
    for (const k of ["d1", "d2"]) await put("lc-date", k);
    await putRules(s3, "lc-date", [{
      ID: "past",
      Status: "Enabled",
      Filter: {},
      Expiration: { Date: new Date("2020-01-01T00:00:00Z") },
    }]);
    // Versioned: expiration adds a delete marker and keeps the version.
    await create("lc-versioned", true);
    const kept = (await put("lc-versioned", "doc")).VersionId!;
    await putRules(s3, "lc-versioned", [{
      ID: "all",
      Status: "Enabled",
      Filter: { Prefix: "" },
      Expiration: days(1),
    }]);
    // Expired delete markers: a lone marker goes, a marker over a version stays.
    await create("lc-markers", true);
    await s3.send(new DeleteObjectCommand({ Bucket: "lc-markers", Key: "gone" }));
    const under = (await put("lc-markers", "covered")).VersionId!;
    await s3.send(new DeleteObjectCommand({ Bucket: "lc-markers", Key: "covered" }));
    await putRules(s3, "lc-markers", [{
      ID: "markers",
      Status: "Enabled",
      Filter: {},
      Expiration: { ExpiredObjectDeleteMarker: true },
    }]);
    // Noncurrent versions: keep the newest noncurrent one, the older ones go.
    await create("lc-noncurrent", true);
    const ids: string[] = [];
    for (const body of ["v1", "v2", "v3", "v4"]) {
      ids.push((await put("lc-noncurrent", "doc", body)).VersionId!);
    }
    await putRules(s3, "lc-noncurrent", [{
      ID: "noncurrent",
      Status: "Enabled",
      Filter: {},
      NoncurrentVersionExpiration: { NoncurrentDays: 1, NewerNoncurrentVersions: 1 },
    }]);
    // Incomplete multipart uploads under tmp/ are aborted.
    await create("lc-uploads");
    for (const Key of ["tmp/x", "keep/y"]) {
      await s3.send(new CreateMultipartUploadCommand({ Bucket: "lc-uploads", Key }));
    }
    await putRules(s3, "lc-uploads", [{
      ID: "uploads",
      Status: "Enabled",
      Filter: { Prefix: "tmp/" },
      AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
    }]);
    // Object Lock: a noncurrent version under legal hold is skipped; its neighbour goes.
    await s3.send(
      new CreateBucketCommand({ Bucket: "lc-locked", ObjectLockEnabledForBucket: true }),
    );
    const held = (await put("lc-locked", "held", "h1")).VersionId!;
    await s3.send(
      new PutObjectLegalHoldCommand({
        Bucket: "lc-locked",
        Key: "held",
        VersionId: held,
        LegalHold: { Status: "ON" },
      }),
    );
    await put("lc-locked", "held", "h2");
    await put("lc-locked", "free", "f1");
    const freeCurrent = (await put("lc-locked", "free", "f2")).VersionId!;
    await putRules(s3, "lc-locked", [{
      ID: "noncurrent",
      Status: "Enabled",
      Filter: {},
      NoncurrentVersionExpiration: { NoncurrentDays: 1 },
    }]);

    await t.step("Expiration Days, unversioned bucket, prefix filter", async () => {
      await waitFor("logs/ expired", async () => (await keys(s3, "lc-plain")).length === 1);
      assertEquals(await keys(s3, "lc-plain"), ["keep/c"]);
    });

    await t.step(
      "Expiration Days with a size filter; disabled and tag rules act on nothing",
      async () => {
        await waitFor("big expired", async () => !(await keys(s3, "lc-size")).includes("big"));
        assertEquals(await keys(s3, "lc-size"), ["small"]);
      },
    );

    await t.step("Expiration with Tag and And-with-Tags filters: tagged objects only", async () => {
      await waitFor("tagged objects expired", async () => (await keys(s3, "lc-tags")).length === 4);
      assertEquals(await keys(s3, "lc-tags"), ["and/one", "b", "c", "other/both"]);
    });

    await t.step("Expiration Date in the past", async () => {
      await waitFor("dated objects expired", async () => (await keys(s3, "lc-date")).length === 0);
    });

    await t.step(
      "Expiration Days, versioned bucket: a delete marker, the version kept",
      async () => {
        await waitFor("marker created", async () => (await keys(s3, "lc-versioned")).length === 0);
        await assertRejectsCode(
          () => s3.send(new GetObjectCommand({ Bucket: "lc-versioned", Key: "doc" })),
          "NoSuchKey",
        );
        assertEquals(await versions(s3, "lc-versioned"), ["doc:marker", `doc:${kept}`]);
      },
    );

    await t.step("ExpiredObjectDeleteMarker: a lone marker is removed", async () => {
      await waitFor(
        "lone marker removed",
        async () => !(await versions(s3, "lc-markers")).includes("gone:marker"),
      );
      assertEquals(await versions(s3, "lc-markers"), ["covered:marker", `covered:${under}`]);
    });

    await t.step("NoncurrentVersionExpiration keeps NewerNoncurrentVersions", async () => {
      await waitFor(
        "old versions removed",
        async () => (await versions(s3, "lc-noncurrent")).length === 2,
      );
      assertEquals(await versions(s3, "lc-noncurrent"), [`doc:${ids[3]}`, `doc:${ids[2]}`]);
    });

    await t.step("AbortIncompleteMultipartUpload", async () => {
      const uploads = async () =>
        ((await s3.send(new ListMultipartUploadsCommand({ Bucket: "lc-uploads" }))).Uploads ?? [])
          .map((u) => u.Key);
      await waitFor("upload aborted", async () => (await uploads()).length === 1);
      assertEquals(await uploads(), ["keep/y"]);
    });

    await t.step("Object Lock: a held version is skipped and counted as locked", async () => {
      await waitFor(
        "unheld noncurrent version removed",
        async () =>
          (await versions(s3, "lc-locked")).filter((v) => v.startsWith("free:")).length === 1,
      );
      const left = await versions(s3, "lc-locked");
      assertEquals(left.filter((v) => v.startsWith("free:")), [`free:${freeCurrent}`]);
      assert(left.includes(`held:${held}`), `the held version stays: ${left}`);
      const res = await adminLifecycle(server, "POST");
      const report = await res.json();
      assertEquals(res.status, 200);
      assert(report.locked >= 1, `locked counted: ${JSON.stringify(report)}`);
    });

    await t.step("later runs change nothing more", async () => {
      const res = await adminLifecycle(server, "POST");
      const report = await res.json();
      assertEquals(res.status, 200);
      assertEquals(report.buckets, 9);
      assertEquals(
        [
          report.expired,
          report.deleteMarkersRemoved,
          report.noncurrentExpired,
          report.uploadsAborted,
        ],
        [0, 0, 0, 0],
      );
      assertEquals(await keys(s3, "lc-plain"), ["keep/c"]);
      assertEquals(await keys(s3, "lc-size"), ["small"]);
      assertEquals(await keys(s3, "lc-tags"), ["and/one", "b", "c", "other/both"]);
      assertEquals((await versions(s3, "lc-versioned")).length, 2);
      assertEquals((await versions(s3, "lc-markers")).length, 2);
      assertEquals((await versions(s3, "lc-noncurrent")).length, 2);
      const last = await adminLifecycle(server, "GET");
      assertEquals(last.status, 200);
      assertEquals(typeof (await last.json()).startedAt, "string");
      const unauthorized = await fetch(`${server.url}/admin/lifecycle`, { method: "POST" });
      assertEquals(unauthorized.status, 401);
      await unauthorized.body?.cancel();
    });
  }, { env: ENV });
});
