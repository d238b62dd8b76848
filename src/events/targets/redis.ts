// Redis target: each message body (the event's JSON text) is appended to a list with RPUSH; send
// resolves on Redis's reply. Consumers take events in order with LPOP/BLPOP (or LMOVE for a
// reliable queue); LRANGE reads them without taking them.
// The client library is loaded with the first connection: a server without such a target
// never loads it (README, Memory).
import type { RedisClientType } from "@redis/client";
import type { EventMessage, NotificationTarget } from "../target.ts";
import { DEFAULT_LIMITS, LazyConnection, type TimeLimits } from "./connection.ts";

export interface RedisSettings {
  id: string;
  /** redis:// or rediss://, with password and database number when needed. */
  url: string;
  /** The list the events are appended to. */
  key: string;
  limits?: TimeLimits;
}

export class RedisTarget implements NotificationTarget {
  readonly kind = "redis" as const;
  readonly id: string;
  #settings: RedisSettings;
  #connection: LazyConnection<RedisClientType>;

  constructor(settings: RedisSettings) {
    const url = new URL(settings.url);
    if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
      throw new Error(`A Redis URL must be redis or rediss, got ${url.protocol}`);
    }
    if (!settings.key) throw new Error("A Redis target needs a key");
    this.id = settings.id;
    this.#settings = settings;
    const limits = settings.limits ?? DEFAULT_LIMITS;
    this.#connection = new LazyConnection(`Redis target ${settings.id}`, {
      open: async (lost) => {
        // No client-side reconnection or offline queue: a send in an outage fails at once and
        // the next send opens a fresh connection.
        const { createClient } = await import("@redis/client");
        const client: RedisClientType = createClient({
          url: settings.url,
          disableOfflineQueue: true,
          socket: { reconnectStrategy: false, connectTimeout: limits.connectMs },
        });
        client.on("error", () => lost());
        client.on("end", () => lost());
        await client.connect();
        return client;
      },
      release: (client) => {
        try {
          client.destroy();
        } catch {
          // Already closed.
        }
        return Promise.resolve();
      },
    }, limits);
  }

  send(message: EventMessage): Promise<void> {
    return this.#connection.run(async (client) => {
      await client.rPush(this.#settings.key, message.body);
    });
  }

  close(): Promise<void> {
    return this.#connection.close();
  }
}
