// Get/PutBucketNotificationConfiguration: round trips in both dialects, environment targets by
// ARN (through the SDK), and every malformed configuration refused without changing anything.
import {
  GetBucketNotificationConfigurationCommand,
  PutBucketNotificationConfigurationCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { assert, assertEquals } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER, s3Client, startServer } from "./server.ts";
import { objectPath, signedFetch, xmlValue, xmlValues } from "./signer.ts";
import { WebhookReceiver } from "./webhook_receiver.ts";
import { call, putConfig, webhookConfig } from "./notify_helpers.ts";

Deno.test("notify config: empty, round trip, refusals that change nothing", async () => {
  const receiver = new WebhookReceiver().start();
  const server = await startServer({
    env: { STORE_NOTIFY_WEBHOOK_ALLOW: "127.0.0.1", STORE_NOTIFY_WEBHOOK_Q1_URL: receiver.url },
  });
  try {
    await call(server, "PUT", objectPath("cfg-bucket"));
    const get = async () => {
      const res = await signedFetch(server, {
        method: "GET",
        path: objectPath("cfg-bucket"),
        query: [["notification", ""]],
      });
      assertEquals(res.status, 200);
      return await res.text();
    };
    const empty = await get();
    assert(/<NotificationConfiguration[^>]*><\/NotificationConfiguration>$/.test(empty), empty);

    const good = webhookConfig([{
      id: "w1",
      url: `${receiver.url}/x`,
      events: ["store:ObjectCreated:Put"],
      prefix: "img/",
      suffix: ".jpg",
      token: "tok",
    }]);
    assertEquals((await putConfig(server, "cfg-bucket", good)).status, 200);
    const stored = await get();
    assertEquals(xmlValue(stored, "Id"), "w1");
    assertEquals(xmlValue(stored, "Url"), `${receiver.url}/x`);
    assertEquals(xmlValues(stored, "Event"), ["store:ObjectCreated:Put"]);
    assertEquals(xmlValues(stored, "Value"), ["img/", ".jpg"]);
    assert(!stored.includes("tok"), "the auth token is never shown");

    const arn = (service: string, id = "Q1", kind = "webhook") =>
      `arn:store:${service}:us-east-1:${id}:${kind}`;
    const bad: [string, string, number, string][] = [
      ["not xml", "<NotificationConfiguration><Queue", 400, "MalformedXML"],
      ["wrong root", "<Foo></Foo>", 400, "MalformedXML"],
      [
        "lambda",
        "<NotificationConfiguration><LambdaFunctionConfiguration><Event>store:ObjectCreated:*</Event></LambdaFunctionConfiguration></NotificationConfiguration>",
        501,
        "NotImplemented",
      ],
      [
        "cloud function",
        "<NotificationConfiguration><CloudFunctionConfiguration/></NotificationConfiguration>",
        501,
        "NotImplemented",
      ],
      [
        "unknown event",
        webhookConfig([{ id: "a", url: receiver.url, events: ["store:ObjectCreated:Nope"] }]),
        400,
        "InvalidArgument",
      ],
      [
        "planned event",
        webhookConfig([{ id: "a", url: receiver.url, events: ["s3:ObjectRestore:*"] }]),
        400,
        "InvalidArgument",
      ],
      [
        "no event",
        `<NotificationConfiguration><WebhookConfiguration><Url>${receiver.url}</Url></WebhookConfiguration></NotificationConfiguration>`,
        400,
        "MalformedXML",
      ],
      [
        "ftp url",
        webhookConfig([{ id: "a", url: "ftp://127.0.0.1/x", events: ["store:ObjectCreated:*"] }]),
        400,
        "InvalidArgument",
      ],
      [
        "url outside the allow-list",
        webhookConfig([{ id: "a", url: "http://10.1.2.3/x", events: ["store:ObjectCreated:*"] }]),
        400,
        "InvalidArgument",
      ],
      [
        "overlap",
        webhookConfig([
          { id: "a", url: receiver.url, events: ["store:ObjectCreated:*"], prefix: "a" },
          { id: "b", url: receiver.url, events: ["store:ObjectCreated:Put"], prefix: "ab" },
        ]),
        400,
        "InvalidArgument",
      ],
      [
        "duplicate id",
        webhookConfig([
          { id: "a", url: receiver.url, events: ["store:ObjectCreated:*"] },
          { id: "a", url: receiver.url, events: ["store:ObjectRemoved:*"] },
        ]),
        400,
        "InvalidArgument",
      ],
      [
        "bad filter name",
        webhookConfig([{ id: "a", url: receiver.url, events: ["store:ObjectCreated:*"] }])
          .replace(
            "</Event>",
            "</Event><Filter><S3Key><FilterRule><Name>middle</Name><Value>x</Value></FilterRule></S3Key></Filter>",
          ),
        400,
        "InvalidArgument",
      ],
      ...[
        arn("sqs", "NOPE"),
        arn("sqs", "Q1", "amqp"),
        arn("sns"),
        "arn:store:sqs:eu-west-1:Q1:webhook",
        "arn:other:sqs:us-east-1:Q1:webhook",
        "not-an-arn",
      ].map((a): [string, string, number, string] => [
        `queue arn ${a}`,
        `<NotificationConfiguration><QueueConfiguration><Queue>${a}</Queue><Event>store:ObjectCreated:*</Event></QueueConfiguration></NotificationConfiguration>`,
        400,
        "InvalidArgument",
      ]),
    ];
    for (const [name, body, status, code] of bad) {
      const res = await putConfig(server, "cfg-bucket", body);
      const text = await res.text();
      assertEquals(res.status, status, `${name}: ${text}`);
      assertEquals(xmlValue(text, "Code"), code, name);
      assertEquals(await get(), stored, `${name} changed nothing`);
    }
    // Removing the configuration: an empty document.
    assertEquals(
      (await putConfig(server, "cfg-bucket", "<NotificationConfiguration/>")).status,
      200,
    );
    assertEquals(await get(), empty);
  } finally {
    await server.stop();
    await receiver.stop();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("notify config: SDK queue and topic ARNs of environment targets, amz records", async () => {
  const receiver = new WebhookReceiver().start();
  const server = await startServer({
    env: {
      STORE_NOTIFY_WEBHOOK_Q1_URL: `${receiver.url}/queue`,
      STORE_NOTIFY_WEBHOOK_T1_URL: `${receiver.url}/topic`,
      STORE_NOTIFY_WEBHOOK_T1_AUTH_TOKEN: "env-token",
    },
  });
  const s3 = s3Client(server);
  try {
    await call(server, "PUT", objectPath("sdk-bucket"));
    await s3.send(
      new PutBucketNotificationConfigurationCommand({
        Bucket: "sdk-bucket",
        NotificationConfiguration: {
          QueueConfigurations: [{
            Id: "q",
            QueueArn: "arn:aws:sqs:us-east-1:Q1:webhook",
            Events: ["s3:ObjectCreated:*"],
            Filter: { Key: { FilterRules: [{ Name: "prefix", Value: "in/" }] } },
          }],
          TopicConfigurations: [{
            Id: "t",
            TopicArn: "arn:aws:sns:us-east-1:T1:webhook",
            Events: ["s3:ObjectRemoved:*"],
          }],
        },
      }),
    );
    const got = await s3.send(
      new GetBucketNotificationConfigurationCommand({ Bucket: "sdk-bucket" }),
    );
    assertEquals(got.QueueConfigurations?.[0].QueueArn, "arn:aws:sqs:us-east-1:Q1:webhook");
    assertEquals(got.QueueConfigurations?.[0].Events, ["s3:ObjectCreated:*"]);
    assertEquals(got.QueueConfigurations?.[0].Filter?.Key?.FilterRules?.[0].Value, "in/");
    assertEquals(got.TopicConfigurations?.[0].TopicArn, "arn:aws:sns:us-east-1:T1:webhook");
    await s3.send(new PutObjectCommand({ Bucket: "sdk-bucket", Key: "in/1", Body: "x" }));
    await s3.send(new PutObjectCommand({ Bucket: "sdk-bucket", Key: "out/1", Body: "x" }));
    await call(server, "DELETE", objectPath("sdk-bucket", "out/1"));
    await receiver.until(() => receiver.records().length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    const queue = receiver.records("/queue");
    const topic = receiver.records("/topic");
    assertEquals(queue.map((r) => [r.eventName, r.s3.object.key]), [[
      "s3:ObjectCreated:Put",
      "in%2F1",
    ]]);
    assertEquals(queue[0].eventSource, "aws:s3");
    assertEquals(queue[0].s3.bucket.arn, "arn:aws:s3:::sdk-bucket");
    assert("x-amz-request-id" in queue[0].responseElements, "amz request id");
    assertEquals(topic.map((r) => [r.eventName, r.s3.configurationId]), [[
      "s3:ObjectRemoved:Delete",
      "t",
    ]]);
    const tests = receiver.received.filter((r) => r.body.includes('"s3:TestEvent"'));
    assertEquals(tests.length, 2, "one test event per destination");
    assertEquals(JSON.parse(tests[0].body).Service, "Amazon S3");
    assert(
      receiver.received.filter((r) => r.path === "/topic").every((r) =>
        r.authorization === "Bearer env-token"
      ),
      "the environment target's token",
    );

    const admin = await fetch(`${server.url}/admin/notify/targets`, {
      headers: { authorization: `Basic ${btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`)}` },
    });
    const listing = await admin.json();
    assertEquals(listing.total, 2);
    const q1 = listing.targets.find((t: { id: string }) => t.id === "Q1");
    assertEquals(q1.kind, "webhook");
    assertEquals(q1.arn, {
      store: "arn:store:sqs:us-east-1:Q1:webhook",
      amz: "arn:aws:sqs:us-east-1:Q1:webhook",
    });
    assertEquals(q1.healthy, true);
    assertEquals(q1.queue_depth, 0);
    assert(q1.delivered >= 2, "delivered count");
    const anonymous = await fetch(`${server.url}/admin/notify/targets`);
    assertEquals(anonymous.status, 401);
    await anonymous.body?.cancel();
  } finally {
    s3.destroy();
    await server.stop();
    await receiver.stop();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});
