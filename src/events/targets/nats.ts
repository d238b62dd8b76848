// NATS target: each message is published on a subject and followed by a flush (a PING answered by
// the server's PONG), so send resolves once the server has processed the publish. Core NATS hands
// the message to the subject's current subscribers; nothing is stored for absent ones.
// The client library is loaded with the first connection: a server without such a target
// never loads it (README, Memory).
import type { NatsConnection } from "nats";
import type { EventMessage, NotificationTarget } from "../target.ts";
import { DEFAULT_LIMITS, LazyConnection, type TimeLimits } from "./connection.ts";

export interface NatsSettings {
  id: string;
  /** nats:// or tls://, credentials in the URL when the server needs them. */
  url: string;
  subject: string;
  limits?: TimeLimits;
}

const encoder = new TextEncoder();

export class NatsTarget implements NotificationTarget {
  readonly kind = "nats" as const;
  readonly id: string;
  #settings: NatsSettings;
  #connection: LazyConnection<NatsConnection>;

  constructor(settings: NatsSettings) {
    const url = new URL(settings.url);
    if (url.protocol !== "nats:" && url.protocol !== "tls:") {
      throw new Error(`A NATS URL must be nats or tls, got ${url.protocol}`);
    }
    if (!/^[^\s*>]+$/.test(settings.subject)) {
      throw new Error("A NATS subject has no spaces or wildcards");
    }
    this.id = settings.id;
    this.#settings = settings;
    const limits = settings.limits ?? DEFAULT_LIMITS;
    this.#connection = new LazyConnection(`NATS target ${settings.id}`, {
      open: async (lost) => {
        // The client's own reconnection would queue publishes during an outage; this target
        // reconnects on the next send instead, so a send in an outage fails at once.
        const { connect } = await import("nats");
        const nc = await connect({
          servers: settings.url,
          reconnect: false,
          timeout: limits.connectMs,
          name: `store-notify-${settings.id}`,
        });
        nc.closed().then(() => lost(), () => lost());
        return nc;
      },
      release: async (nc) => {
        await nc.close().catch(() => {});
      },
    }, limits);
  }

  send(message: EventMessage): Promise<void> {
    return this.#connection.run(async (nc) => {
      nc.publish(this.#settings.subject, encoder.encode(message.body));
      await nc.flush();
    });
  }

  close(): Promise<void> {
    return this.#connection.close();
  }
}
