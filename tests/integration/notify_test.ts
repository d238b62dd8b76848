// Event notifications end to end: configuration through the protocol, records delivered to a
// real HTTP receiver for every event kind, in the configuration's dialect.
import { assert, assertEquals } from "./assert.ts";
import { createHash } from "node:crypto";
import { ADMIN_PASSWORD, ADMIN_USER, startServer } from "./server.ts";
import { objectPath, signedFetch, xmlValue } from "./signer.ts";
import { WebhookReceiver } from "./webhook_receiver.ts";
import { call, putConfig, webhookConfig } from "./notify_helpers.ts";

const ENV = { STORE_NOTIFY_WEBHOOK_ALLOW: "127.0.0.1", STORE_NOTIFY_RETRY_MAX: "1" };

Deno.test("notify: each event kind reaches a webhook with the protocol's record shape", async () => {
  const receiver = new WebhookReceiver().start();
  const server = await startServer({ env: ENV });
  try {
    await call(server, "PUT", objectPath("evts"));
    await call(server, "PUT", objectPath("evts"), {
      query: [["versioning", ""]],
      body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>",
    });
    const res = await putConfig(
      server,
      "evts",
      webhookConfig([{
        id: "all",
        url: `${receiver.url}/hook`,
        events: [
          "store:ObjectCreated:*",
          "store:ObjectRemoved:*",
          "store:ObjectTagging:*",
          "store:ObjectAcl:Put",
        ],
        token: "secret-token",
      }]),
    );
    assertEquals(res.status, 200, await res.text());
    await receiver.until(() => receiver.received.some((r) => r.body.includes("TestEvent")));
    const test = JSON.parse(receiver.received[0].body);
    assertEquals(test.Event, "store:TestEvent");
    assertEquals(test.Bucket, "evts");
    assertEquals(receiver.received[0].authorization, "Bearer secret-token");

    await call(server, "PUT", objectPath("evts", "a b/c.txt"), { body: "hello" });
    await call(server, "PUT", objectPath("evts", "copy"), {
      headers: { "x-store-copy-source": "/evts/a%20b/c.txt" },
    });
    await call(server, "PUT", objectPath("evts", "copy"), {
      query: [["tagging", ""]],
      body: "<Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tagging>",
    });
    await call(server, "DELETE", objectPath("evts", "copy"), { query: [["tagging", ""]] });
    await call(server, "PUT", objectPath("evts", "copy"), {
      query: [["acl", ""]],
      headers: { "x-store-acl": "public-read" },
    });
    const init = await signedFetch(server, {
      method: "POST",
      path: objectPath("evts", "mp"),
      query: [["uploads", ""]],
    });
    const uploadId = xmlValue(await init.text(), "UploadId")!;
    const part = await call(server, "PUT", objectPath("evts", "mp"), {
      query: [["partNumber", "1"], ["uploadId", uploadId]],
      body: "part-one",
    });
    await call(server, "POST", objectPath("evts", "mp"), {
      query: [["uploadId", uploadId]],
      body: `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${
        part.headers.get("etag")
      }</ETag></Part></CompleteMultipartUpload>`,
    });
    const marker = await call(server, "DELETE", objectPath("evts", "copy"));
    const markerId = marker.headers.get("x-store-version-id")!;
    await call(server, "DELETE", objectPath("evts", "copy"), { query: [["versionId", markerId]] });

    const expected = [
      "store:ObjectCreated:Put",
      "store:ObjectCreated:Copy",
      "store:ObjectTagging:Put",
      "store:ObjectTagging:Delete",
      "store:ObjectAcl:Put",
      "store:ObjectCreated:CompleteMultipartUpload",
      "store:ObjectRemoved:DeleteMarkerCreated",
      "store:ObjectRemoved:Delete",
    ];
    await receiver.until(() => receiver.records().length >= expected.length);
    const records = receiver.records();
    // Different keys may be delivered in parallel: order by sequencer.
    records.sort((a, b) => a.s3.object.sequencer.localeCompare(b.s3.object.sequencer));
    assertEquals(records.map((r) => r.eventName), expected);
    const put = records[0];
    assertEquals(put.eventVersion, "2.1");
    assertEquals(put.eventSource, "store:store");
    assertEquals(put.awsRegion, "us-east-1");
    assert(!isNaN(Date.parse(put.eventTime)), "eventTime is a date");
    assert(typeof put.userIdentity.principalId === "string" && put.userIdentity.principalId !== "");
    assertEquals(put.requestParameters.sourceIPAddress, "127.0.0.1");
    assert(/^[0-9A-F]{16}$/.test(put.responseElements["x-store-request-id"]), "request id");
    assertEquals(put.s3.s3SchemaVersion, "1.0");
    assertEquals(put.s3.configurationId, "all");
    assertEquals(put.s3.bucket.name, "evts");
    assertEquals(put.s3.bucket.arn, "arn:store:store:::evts");
    assertEquals(put.s3.bucket.ownerIdentity.principalId, put.userIdentity.principalId);
    assertEquals(put.s3.object.key, "a+b%2Fc.txt");
    assertEquals(put.s3.object.size, 5);
    assertEquals(put.s3.object.eTag, "5d41402abc4b2a76b9719d911017c592");
    assert(typeof put.s3.object.versionId === "string", "versionId in a versioned bucket");
    assertEquals(records[2].eventVersion, "2.3");
    assertEquals(records[5].s3.object.size, 8);
    assertEquals(records[6].s3.object.versionId, markerId);
    assertEquals(records[7].s3.object.versionId, markerId);
    assertEquals(records[7].s3.object.size, undefined);
    const seqs = records.map((r) => r.s3.object.sequencer);
    assertEquals(new Set(seqs).size, seqs.length);
  } finally {
    await server.stop();
    await receiver.stop();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("notify: form uploads (Post) and lifecycle expirations; failures emit nothing", async () => {
  const receiver = new WebhookReceiver().start();
  const server = await startServer({
    env: { ...ENV, STORE_LIFECYCLE_DAY: "1", STORE_LIFECYCLE_INTERVAL: "3600" },
  });
  try {
    await call(server, "PUT", objectPath("form-bucket"), {
      headers: { "x-store-acl": "public-read-write" },
    });
    const res = await putConfig(
      server,
      "form-bucket",
      webhookConfig([{
        id: "life",
        url: `${receiver.url}/hook`,
        events: ["store:ObjectCreated:*", "store:LifecycleExpiration:*", "store:ObjectRemoved:*"],
      }]),
    );
    assertEquals(res.status, 200, await res.text());
    const form = new FormData();
    form.append("key", "uploads/form.txt");
    form.append("file", new Blob(["from a form"]), "form.txt");
    const post = await fetch(`${server.url}/form-bucket`, { method: "POST", body: form });
    assertEquals(post.status, 204, await post.text());
    // Refused requests emit nothing: a bad digest, a missing key's tags, an anonymous delete.
    const bad = await signedFetch(server, {
      method: "PUT",
      path: objectPath("form-bucket", "refused"),
      body: "x",
      headers: { "content-md5": "AAAAAAAAAAAAAAAAAAAAAA==" },
    });
    assertEquals(bad.status, 400);
    await bad.body?.cancel();
    const missing = await signedFetch(server, {
      method: "PUT",
      path: objectPath("form-bucket", "nothing-here"),
      query: [["tagging", ""]],
      body: "<Tagging><TagSet></TagSet></Tagging>",
    });
    assertEquals(missing.status, 404);
    await missing.body?.cancel();

    const lifecycle = "<LifecycleConfiguration><Rule><ID>r</ID><Filter><Prefix>uploads/</Prefix>" +
      "</Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>" +
      "</LifecycleConfiguration>";
    await call(server, "PUT", objectPath("form-bucket"), {
      query: [["lifecycle", ""]],
      body: lifecycle,
      headers: { "content-md5": createHash("md5").update(lifecycle).digest("base64") },
    });
    await new Promise((r) => setTimeout(r, 2100)); // two one-second lifecycle days
    const run = await fetch(`${server.url}/admin/lifecycle`, {
      method: "POST",
      headers: { authorization: `Basic ${btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`)}` },
    });
    assertEquals(run.status, 200, await run.text());
    await receiver.until(() => receiver.records().length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    const records = receiver.records();
    assertEquals(records.map((r) => [r.eventName, r.s3.object.key]), [
      ["store:ObjectCreated:Post", "uploads%2Fform.txt"],
      ["store:LifecycleExpiration:Delete", "uploads%2Fform.txt"],
    ]);
    assertEquals(records[0].userIdentity.principalId, "anonymous");
    assertEquals(records[0].s3.object.size, 11);
    assertEquals(records[1].eventVersion, "2.3");
  } finally {
    await server.stop();
    await receiver.stop();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});
