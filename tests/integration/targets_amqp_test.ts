// The AMQP target against a real RabbitMQ: events published to a topic exchange are read back from
// a durable queue bound to it; confirmed messages survive a broker restart.
import { type Channel, type ChannelModel, connect } from "amqplib";
import { AmqpTarget } from "../../src/events/targets/amqp.ts";
import { createRabbitMq } from "../services/rabbitmq.ts";
import { assert } from "./assert.ts";
import {
  assertDeliveredInOrder,
  assertRejectsWithin,
  eventMessage,
  OUTAGE_BOUND_MS,
  readUntil,
  reportMeasurements,
  sendSequentially,
  sizeOf,
  TEST_LIMITS,
} from "./targets_helpers.ts";

const EXCHANGE = "store-events";
const QUEUE = "object-events";

/** A consumer connection that declares the exchange, the queue and the binding. */
async function consumer(url: string) {
  const model: ChannelModel = await connect(url);
  model.on("error", () => {});
  const channel: Channel = await model.createChannel();
  await channel.assertExchange(EXCHANGE, "topic", { durable: true });
  await channel.assertQueue(QUEUE, { durable: true });
  await channel.bindQueue(QUEUE, EXCHANGE, "objects.#");
  const taken: string[] = [];
  /** Takes whatever the queue holds now; returns everything taken so far. */
  const take = async (queue = QUEUE) => {
    for (;;) {
      const msg = await channel.get(queue, { noAck: true });
      if (!msg) return taken;
      taken.push(msg.content.toString());
    }
  };
  return { channel, taken, take, close: () => model.close().catch(() => {}) };
}

Deno.test("AMQP target", async (t) => {
  const rabbit = await createRabbitMq();
  await rabbit.start();
  let reader = await consumer(rabbit.url);
  const targets: AmqpTarget[] = [];
  const open = (exchange: string, routingKey: string) => {
    const target = new AmqpTarget({
      id: `a${targets.length}`,
      url: rabbit.url,
      exchange,
      routingKey,
      limits: TEST_LIMITS,
    });
    targets.push(target);
    return target;
  };
  const target = open(EXCHANGE, "objects.created");
  try {
    await t.step("publishes each message to the exchange, confirmed, in order", async () => {
      const latencies = await sendSequentially(target, 0, 200);
      assertDeliveredInOrder(await readUntil(() => reader.take(), 200), 0, 200);
      reportMeasurements("RabbitMQ", rabbit.startupsMs, rabbit.prepareMs, latencies);
    });

    await t.step("the default exchange routes to the queue named by the routing key", async () => {
      reader.taken.length = 0;
      await open("", QUEUE).send(eventMessage(300));
      assertDeliveredInOrder(await readUntil(() => reader.take(), 1), 300, 1);
    });

    await t.step("a message no queue is bound for is not counted as delivered", async () => {
      const message = await assertRejectsWithin(
        open(EXCHANGE, "unbound.key").send(eventMessage(400)),
        2_000,
      );
      assert(/no queue is bound/.test(message), message);
    });

    await t.step("a missing exchange is named in the failure", async () => {
      const message = await assertRejectsWithin(
        open("no-such-exchange", "x").send(eventMessage(500)),
        2_000,
      );
      assert(/no-such-exchange/.test(message), message);
    });

    await t.step("a frozen broker: a send waiting for its confirm rejects on time", async () => {
      reader.taken.length = 0;
      await rabbit.freeze(true);
      try {
        const message = await assertRejectsWithin(
          target.send(eventMessage(900)),
          OUTAGE_BOUND_MS,
          "RabbitMQ frozen, send",
        );
        assert(/timed out/.test(message), message);
      } finally {
        await rabbit.freeze(false);
      }
      // Thawed, the broker may still take the message it never confirmed (at-least-once), and
      // the next send works on a new connection.
      await target.send(eventMessage(901));
      const sizes = (await readUntil(() => reader.take(), 2, 5_000)).map(sizeOf);
      assert(sizes.includes(901), `delivered ${sizes}`);
      reader.taken.length = 0;
    });

    await t.step(
      "a send while RabbitMQ is down rejects in bounded time; works once it is back",
      async () => {
        reader.taken.length = 0;
        // Confirmed before the outage and not yet consumed: these must survive the restart.
        await sendSequentially(target, 600, 5);
        await reader.close();
        await rabbit.stop();
        await assertRejectsWithin(
          target.send(eventMessage(1000)),
          OUTAGE_BOUND_MS,
          "RabbitMQ down, first send",
        );
        await assertRejectsWithin(
          target.send(eventMessage(1001)),
          OUTAGE_BOUND_MS,
          "RabbitMQ down, next send",
        );
        await rabbit.start();
        reader = await consumer(rabbit.url);
        await sendSequentially(target, 605, 5);
        assertDeliveredInOrder(await readUntil(() => reader.take(), 10), 600, 10);
        console.log(
          `[measure] RabbitMQ start-ups (first, after restart): ${rabbit.startupsMs.join(", ")} ms`,
        );
      },
    );

    await t.step("close releases the connection; later sends reject", async () => {
      for (const each of targets) await each.close();
      const message = await assertRejectsWithin(target.send(eventMessage(2000)), 100);
      assert(/closed/.test(message), message);
    });
  } finally {
    for (const each of targets) await each.close();
    await reader.close();
    await rabbit.dispose();
  }
});
