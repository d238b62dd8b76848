// MQTT target (Mosquitto and other MQTT 3.1.1/5 brokers): each message is published on a topic
// with the configured QoS. With QoS 1 send resolves on the broker's PUBACK, with QoS 2 on its
// PUBCOMP; with QoS 0 once the message is written to the connection (MQTT has no acceptance for
// QoS 0).
// The client library is loaded with the first connection: a server without such a target
// never loads it (README, Memory).
import type { MqttClient } from "mqtt";
import type { EventMessage, NotificationTarget } from "../target.ts";
import { DEFAULT_LIMITS, LazyConnection, type TimeLimits } from "./connection.ts";

export type MqttQos = 0 | 1 | 2;

export interface MqttSettings {
  id: string;
  /** mqtt:// or mqtts://, credentials in the URL when the broker needs them. */
  url: string;
  topic: string;
  qos: MqttQos;
  limits?: TimeLimits;
}

export class MqttTarget implements NotificationTarget {
  readonly kind = "mqtt" as const;
  readonly id: string;
  #settings: MqttSettings;
  #connection: LazyConnection<MqttClient>;

  constructor(settings: MqttSettings) {
    const url = new URL(settings.url);
    if (url.protocol !== "mqtt:" && url.protocol !== "mqtts:") {
      throw new Error(`An MQTT URL must be mqtt or mqtts, got ${url.protocol}`);
    }
    if (!settings.topic || /[+#]/.test(settings.topic)) {
      throw new Error("An MQTT topic is not empty and has no wildcards");
    }
    if (![0, 1, 2].includes(settings.qos)) throw new Error("MQTT QoS is 0, 1 or 2");
    this.id = settings.id;
    this.#settings = settings;
    const limits = settings.limits ?? DEFAULT_LIMITS;
    this.#connection = new LazyConnection(`MQTT target ${settings.id}`, {
      open: async (lost) => {
        // reconnectPeriod 0: the client would otherwise hold publishes until it is back.
        const { connectAsync } = await import("mqtt");
        const client = await connectAsync(settings.url, {
          reconnectPeriod: 0,
          connectTimeout: limits.connectMs,
          clean: true,
          clientId: `store-notify-${settings.id}-${crypto.randomUUID().slice(0, 8)}`,
        });
        client.on("close", () => lost());
        client.on("error", () => lost());
        client.on("offline", () => lost());
        return client;
      },
      release: async (client) => {
        await client.endAsync(true).catch(() => {});
      },
    }, limits);
  }

  send(message: EventMessage): Promise<void> {
    return this.#connection.run(async (client) => {
      await client.publishAsync(this.#settings.topic, message.body, { qos: this.#settings.qos });
    });
  }

  close(): Promise<void> {
    return this.#connection.close();
  }
}
