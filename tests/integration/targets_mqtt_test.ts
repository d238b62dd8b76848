// The MQTT target against a real Mosquitto: a subscriber of the topic receives every event, at
// each QoS.
import { connectAsync, type MqttClient } from "mqtt";
import { type MqttQos, MqttTarget } from "../../src/events/targets/mqtt.ts";
import { createMosquitto } from "../services/light.ts";
import { assert, assertEquals } from "./assert.ts";
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

/** Subscribes (QoS 2) to `topic` and collects every message body it receives. */
async function subscriber(url: string, topic: string) {
  const client: MqttClient = await connectAsync(url, { reconnectPeriod: 0 });
  const bodies: string[] = [];
  client.on("message", (_topic, payload) => bodies.push(new TextDecoder().decode(payload)));
  await client.subscribeAsync(topic, { qos: 2 });
  return { bodies, close: () => client.endAsync(true) };
}

Deno.test("MQTT target", async (t) => {
  const mosquitto = await createMosquitto();
  await mosquitto.start();
  let sub = await subscriber(mosquitto.url, "store/events/#");
  const targets: MqttTarget[] = [];
  const open = (qos: MqttQos) => {
    const target = new MqttTarget({
      id: `m${qos}`,
      url: mosquitto.url,
      topic: `store/events/q${qos}`,
      qos,
      limits: TEST_LIMITS,
    });
    targets.push(target);
    return target;
  };
  try {
    for (const qos of [0, 1, 2] as const) {
      await t.step(`QoS ${qos}: publishes each message on the topic, in order`, async () => {
        sub.bodies.length = 0;
        const latencies = await sendSequentially(open(qos), 0, 200);
        assertDeliveredInOrder(await readUntil(() => Promise.resolve(sub.bodies), 200), 0, 200);
        reportMeasurements(
          `Mosquitto QoS ${qos}`,
          mosquitto.startupsMs,
          mosquitto.prepareMs,
          latencies,
        );
      });
    }

    await t.step("bad settings are refused before any connection", () => {
      const base = { id: "x", url: mosquitto.url, topic: "a", qos: 1 as MqttQos };
      for (const bad of [{ url: "http://127.0.0.1:1" }, { topic: "a/#" }, { qos: 3 as MqttQos }]) {
        let threw = false;
        try {
          new MqttTarget({ ...base, ...bad });
        } catch {
          threw = true;
        }
        assert(threw, `accepted ${JSON.stringify(bad)}`);
      }
    });

    await t.step("a frozen broker: a QoS 1 send rejects on the time limit", async () => {
      const target = targets[1];
      await mosquitto.freeze(true);
      try {
        const message = await assertRejectsWithin(
          target.send(eventMessage(900)),
          OUTAGE_BOUND_MS,
          "Mosquitto frozen, QoS 1 send",
        );
        assert(/timed out/.test(message), message);
      } finally {
        await mosquitto.freeze(false);
      }
    });

    await t.step(
      "a send while Mosquitto is down rejects in bounded time; works once it is back",
      async () => {
        await sub.close();
        await mosquitto.stop();
        const target = targets[1];
        await assertRejectsWithin(
          target.send(eventMessage(1000)),
          OUTAGE_BOUND_MS,
          "Mosquitto down, first send",
        );
        await assertRejectsWithin(
          target.send(eventMessage(1001)),
          OUTAGE_BOUND_MS,
          "Mosquitto down, next send",
        );
        await mosquitto.start();
        sub = await subscriber(mosquitto.url, "store/events/#");
        await target.send(eventMessage(1002));
        assertDeliveredInOrder(await readUntil(() => Promise.resolve(sub.bodies), 1), 1002, 1);
        assertEquals(mosquitto.startupsMs.length, 2);
      },
    );

    await t.step("close releases the connection; later sends reject", async () => {
      for (const target of targets) await target.close();
      const message = await assertRejectsWithin(targets[2].send(eventMessage(2000)), 100);
      assert(/closed/.test(message), message);
    });
  } finally {
    for (const target of targets) await target.close();
    await sub.close();
    await mosquitto.dispose();
  }
});
