// The NATS target against a real nats-server: a subscriber of the subject receives every event.
import { connect, type NatsConnection } from "nats";
import { NatsTarget } from "../../src/events/targets/nats.ts";
import { createNats } from "../services/light.ts";
import { assert } from "./assert.ts";
import {
  assertDeliveredInOrder,
  assertRejectsWithin,
  eventMessage,
  OUTAGE_BOUND_MS,
  readUntil,
  reportMeasurements,
  sendSequentially,
  TEST_LIMITS,
} from "./targets_helpers.ts";

/** Subscribes to `subject` and collects every message body it receives. */
async function subscriber(url: string, subject: string) {
  const nc: NatsConnection = await connect({ servers: url, reconnect: false });
  const bodies: string[] = [];
  const sub = nc.subscribe(subject);
  (async () => {
    for await (const m of sub) bodies.push(m.string());
  })();
  await nc.flush();
  return { bodies, close: () => nc.close() };
}

Deno.test("NATS target", async (t) => {
  const nats = await createNats();
  await nats.start();
  const target = new NatsTarget({
    id: "n1",
    url: nats.url,
    subject: "store.events",
    limits: TEST_LIMITS,
  });
  let sub = await subscriber(nats.url, "store.events");
  try {
    await t.step("publishes each message on the subject, in order", async () => {
      const latencies = await sendSequentially(target, 0, 200);
      assertDeliveredInOrder(await readUntil(() => Promise.resolve(sub.bodies), 200), 0, 200);
      reportMeasurements("NATS", nats.startupsMs, nats.prepareMs, latencies);
    });

    await t.step("a frozen server: a send rejects on the time limit", async () => {
      await nats.freeze(true);
      try {
        const message = await assertRejectsWithin(
          target.send(eventMessage(900)),
          OUTAGE_BOUND_MS,
          "NATS frozen, send",
        );
        assert(/timed out/.test(message), message);
      } finally {
        await nats.freeze(false);
      }
    });

    await t.step(
      "a send while NATS is down rejects in bounded time; works once it is back",
      async () => {
        await sub.close();
        await nats.stop();
        await assertRejectsWithin(
          target.send(eventMessage(1000)),
          OUTAGE_BOUND_MS,
          "NATS down, first send",
        );
        await assertRejectsWithin(
          target.send(eventMessage(1001)),
          OUTAGE_BOUND_MS,
          "NATS down, next send",
        );
        await nats.start();
        sub = await subscriber(nats.url, "store.events");
        await target.send(eventMessage(1002));
        assertDeliveredInOrder(await readUntil(() => Promise.resolve(sub.bodies), 1), 1002, 1);
      },
    );

    await t.step("close releases the connection; later sends reject", async () => {
      await target.close();
      const message = await assertRejectsWithin(target.send(eventMessage(2000)), 100);
      assert(/closed/.test(message), message);
    });
  } finally {
    await target.close();
    await sub.close();
    await nats.dispose();
  }
});
