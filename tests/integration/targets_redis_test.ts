// The Redis target against a real redis-server: events appended to a list, read back with LRANGE.
import { createClient } from "@redis/client";
import { RedisTarget } from "../../src/events/targets/redis.ts";
import { createRedis } from "../services/light.ts";
import { assert, assertEquals } from "./assert.ts";
import {
  assertDeliveredInOrder,
  assertRejectsWithin,
  eventMessage,
  OUTAGE_BOUND_MS,
  reportMeasurements,
  sendSequentially,
  TEST_LIMITS,
} from "./targets_helpers.ts";

Deno.test("Redis target", async (t) => {
  const redis = await createRedis();
  await redis.start();
  const reader = createClient({ url: redis.url });
  const target = new RedisTarget({ id: "r1", url: redis.url, key: "events", limits: TEST_LIMITS });
  const lrange = async (key: string) => {
    if (!reader.isOpen) await reader.connect();
    return await reader.lRange(key, 0, -1);
  };
  try {
    await t.step("appends each message to the list, in order", async () => {
      const latencies = await sendSequentially(target, 0, 200);
      assertDeliveredInOrder(await lrange("events"), 0, 200);
      reportMeasurements("Redis", redis.startupsMs, redis.prepareMs, latencies);
    });

    await t.step("concurrent sends all arrive", async () => {
      await Promise.all(Array.from({ length: 50 }, (_, i) => target.send(eventMessage(200 + i))));
      const sizes = (await lrange("events")).slice(200).map((b) =>
        JSON.parse(b).Records[0].s3.object.size
      );
      assertEquals(sizes.sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => 200 + i));
    });

    await t.step("a frozen server: a send rejects on the time limit", async () => {
      await redis.freeze(true);
      try {
        const message = await assertRejectsWithin(
          target.send(eventMessage(900)),
          OUTAGE_BOUND_MS,
          "Redis frozen, send",
        );
        assert(/timed out/.test(message), message);
      } finally {
        await redis.freeze(false);
      }
    });

    await t.step(
      "a send while Redis is down rejects in bounded time; works once it is back",
      async () => {
        await reader.destroy();
        await redis.stop();
        await assertRejectsWithin(
          target.send(eventMessage(1000)),
          OUTAGE_BOUND_MS,
          "Redis down, first send",
        );
        await assertRejectsWithin(
          target.send(eventMessage(1001)),
          OUTAGE_BOUND_MS,
          "Redis down, next send",
        );
        await redis.start();
        await target.send(eventMessage(1002));
        // Redis ran without persistence, so the list holds only what came after the restart.
        assertDeliveredInOrder(await lrange("events"), 1002, 1);
      },
    );

    await t.step("close releases the connection; later sends reject", async () => {
      await target.close();
      const message = await assertRejectsWithin(target.send(eventMessage(2000)), 100);
      assert(/closed/.test(message), message);
    });
  } finally {
    await target.close();
    if (reader.isOpen) reader.destroy();
    await redis.dispose();
  }
});
