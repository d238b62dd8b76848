// AMQP 0-9-1 target (RabbitMQ): each message is published to an exchange with a routing key on a
// channel in confirm mode, so send resolves only once the broker has confirmed the message. The
// message is `mandatory`: one that no queue accepts (no binding matches) comes back and the send
// fails, so an event is never counted as delivered while it went nowhere.
// The client library is loaded with the first connection: a server without such a target
// never loads it (README, Memory).
import type { ChannelModel, ConfirmChannel } from "amqplib";
import { Buffer } from "node:buffer";
import type { EventMessage, NotificationTarget } from "../target.ts";
import { DEFAULT_LIMITS, LazyConnection, reason, type TimeLimits } from "./connection.ts";

export interface AmqpSettings {
  id: string;
  /** amqp:// or amqps:// with credentials and vhost. */
  url: string;
  /** The exchange; "" is the default exchange, which routes to the queue named by routingKey. */
  exchange: string;
  routingKey: string;
  limits?: TimeLimits;
}

interface AmqpConnection {
  model: ChannelModel;
  channel: ConfirmChannel;
  /** Message ids the broker returned as unroutable (a return precedes its confirm). */
  returned: Set<string>;
}

export class AmqpTarget implements NotificationTarget {
  readonly kind = "amqp" as const;
  readonly id: string;
  #settings: AmqpSettings;
  #connection: LazyConnection<AmqpConnection>;
  #sequence = 0;

  constructor(settings: AmqpSettings) {
    const url = new URL(settings.url);
    if (url.protocol !== "amqp:" && url.protocol !== "amqps:") {
      throw new Error(`An AMQP URL must be amqp or amqps, got ${url.protocol}`);
    }
    if (!settings.routingKey && !settings.exchange) {
      throw new Error("An AMQP target needs an exchange or a routing key");
    }
    this.id = settings.id;
    this.#settings = settings;
    this.#connection = new LazyConnection(`AMQP target ${settings.id}`, {
      open: (lost) => this.#open(lost),
      release: async ({ model }) => {
        await model.close().catch(() => {});
      },
    }, settings.limits ?? DEFAULT_LIMITS);
  }

  send(message: EventMessage): Promise<void> {
    return this.#connection.run(({ channel, returned }) => {
      const messageId = `${this.id}-${++this.#sequence}`;
      return new Promise<void>((resolve, reject) => {
        channel.publish(
          this.#settings.exchange,
          this.#settings.routingKey,
          Buffer.from(message.body),
          {
            mandatory: true,
            persistent: true,
            contentType: "application/json",
            messageId,
            type: message.eventName,
          },
          (err: unknown) => {
            if (err) reject(new Error(`AMQP target ${this.id}: broker refused the message`));
            else if (returned.delete(messageId)) {
              reject(new Error(`AMQP target ${this.id}: no queue is bound for the message`));
            } else resolve();
          },
        );
      });
    });
  }

  close(): Promise<void> {
    return this.#connection.close();
  }

  async #open(lost: () => void): Promise<AmqpConnection> {
    const { connect } = await import("amqplib");
    const model = await connect(this.#settings.url);
    try {
      model.on("error", () => lost());
      model.on("close", () => lost());
      const channel = await model.createConfirmChannel();
      channel.on("error", () => lost());
      channel.on("close", () => lost());
      const returned = new Set<string>();
      channel.on("return", (msg) => {
        if (msg.properties.messageId) returned.add(String(msg.properties.messageId));
      });
      // A missing exchange closes the channel; checking here names the cause.
      if (this.#settings.exchange) {
        await channel.checkExchange(this.#settings.exchange).catch((err) => {
          throw new Error(`AMQP exchange ${this.#settings.exchange}: ${reason(err)}`);
        });
      }
      return { model, channel, returned };
    } catch (err) {
      await model.close().catch(() => {});
      throw err;
    }
  }
}
