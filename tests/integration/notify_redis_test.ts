// End to end through a broker target: the server configured with STORE_NOTIFY_REDIS_R1_*, a
// bucket's QueueConfiguration naming its ARN, records arriving in a real redis-server's list, and
// every event of 200 writes made while Redis was down arriving once it is back.
import { createHash } from "node:crypto";
import { createClient } from "@redis/client";
import { createRedis } from "../services/light.ts";
import { assertEquals } from "./assert.ts";
import { startServer } from "./server.ts";
import { objectPath } from "./signer.ts";
import { call, putConfig } from "./notify_helpers.ts";
import type { EventRecord } from "./webhook_receiver.ts";

Deno.test("notify: a Redis target receives the events of a queue configuration, also after an outage", async () => {
  const redis = await createRedis();
  await redis.start();
  const server = await startServer({
    env: {
      STORE_NOTIFY_REDIS_R1_URL: redis.url,
      STORE_NOTIFY_REDIS_R1_KEY: "bucket-events",
      STORE_NOTIFY_RETRY_MAX: "1",
    },
  });
  const reader = createClient({ url: redis.url });
  const records = async (): Promise<EventRecord[]> => {
    if (!reader.isOpen) await reader.connect();
    const bodies = await reader.lRange("bucket-events", 0, -1);
    return bodies.map((b) => JSON.parse(b)).flatMap((m) => m.Records ?? []);
  };
  const until = async (check: (r: EventRecord[]) => boolean) => {
    for (let i = 0; i < 300; i++) {
      const got = await records().catch(() => []);
      if (check(got)) return got;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("The events did not arrive in time");
  };
  try {
    await call(server, "PUT", objectPath("redis-events"));
    const res = await putConfig(
      server,
      "redis-events",
      "<NotificationConfiguration><QueueConfiguration><Id>to-redis</Id>" +
        "<Queue>arn:store:sqs:us-east-1:R1:redis</Queue><Event>store:ObjectCreated:*</Event>" +
        "<Event>store:ObjectRemoved:*</Event></QueueConfiguration></NotificationConfiguration>",
    );
    assertEquals(res.status, 200, await res.text());
    await call(server, "PUT", objectPath("redis-events", "one"), { body: "1" });
    await call(server, "DELETE", objectPath("redis-events", "one"));
    const first = await until((r) => r.length >= 2);
    assertEquals(first.map((r) => [r.eventName, r.s3.object.key, r.s3.configurationId]), [
      ["store:ObjectCreated:Put", "one", "to-redis"],
      ["store:ObjectRemoved:Delete", "one", "to-redis"],
    ]);

    await reader.destroy();
    await redis.stop();
    for (let i = 0; i < 200; i++) {
      await call(server, "PUT", objectPath("redis-events", `k${i % 20}`), { body: `v${i}` });
    }
    await redis.start();
    // Redis ran without persistence: the list holds what was delivered after the restart.
    const after = await until((r) => new Set(r.map((x) => x.s3.object.sequencer)).size >= 200);
    const md5 = (text: string) => createHash("md5").update(text).digest("hex");
    for (let k = 0; k < 20; k++) {
      // At least once: a retried round may repeat an event; first arrivals are in order.
      const etags = [
        ...new Set(after.filter((r) => r.s3.object.key === `k${k}`).map((r) => r.s3.object.eTag)),
      ];
      const expected = Array.from({ length: 10 }, (_, j) => md5(`v${k + 20 * j}`));
      assertEquals(etags, expected, `order of k${k}`);
    }
  } finally {
    if (reader.isOpen) await reader.destroy();
    await server.stop();
    await Deno.remove(server.dataDir, { recursive: true });
    await redis.dispose();
  }
});
