// The narrow seam between event delivery and the systems that receive events. Every notification
// target (webhook, AMQP, NATS, MQTT, Redis, PostgreSQL) implements it; delivery (retries, backoff,
// ordering, cursors) lives above it and never knows which system it talks to.

export type TargetKind = "webhook" | "amqp" | "nats" | "mqtt" | "redis" | "postgres";

/** One event message as delivered: the protocol's `{"Records": [...]}` JSON text. */
export interface EventMessage {
  /** The JSON text sent as the message body. */
  body: string;
  /** The object key the event is about (routing, message keys, ordering per key). */
  key: string;
  /** The event name in the configuration's dialect, e.g. `s3:ObjectCreated:Put`. */
  eventName: string;
}

export interface NotificationTarget {
  readonly kind: TargetKind;
  /** The id of `STORE_NOTIFY_<KIND>_<ID>_*`, or of a webhook configuration. */
  readonly id: string;
  /**
   * Delivers one message. Resolves once the receiving system has accepted it (a broker's
   * confirmation, a 2xx answer, a committed row); rejects on any failure, so the caller retries.
   */
  send(message: EventMessage): Promise<void>;
  /** Releases connections; later sends reject. */
  close(): Promise<void>;
}
