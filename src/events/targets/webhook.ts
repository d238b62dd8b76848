// Webhook target: each message is POSTed as JSON to a URL; any 2xx answer means it was accepted.
import type { EventMessage, NotificationTarget } from "../target.ts";

/** How long one delivery attempt may take before it counts as failed. */
const ATTEMPT_TIMEOUT_MS = 10_000;

export interface WebhookSettings {
  id: string;
  url: string;
  /** Sent as `Authorization: Bearer <token>` when set. */
  authToken?: string;
}

export class WebhookTarget implements NotificationTarget {
  readonly kind = "webhook" as const;
  readonly id: string;
  #url: string;
  #authToken?: string;
  #closed = false;

  constructor(settings: WebhookSettings) {
    const url = new URL(settings.url);
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new Error(`A webhook URL must be http or https, got ${url.protocol}`);
    }
    this.id = settings.id;
    this.#url = url.href;
    this.#authToken = settings.authToken;
  }

  async send(message: EventMessage): Promise<void> {
    if (this.#closed) throw new Error(`Webhook target ${this.id} is closed`);
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.#authToken) headers.authorization = `Bearer ${this.#authToken}`;
    // Redirects are not followed: a receiver must not be able to point the server elsewhere.
    const res = await fetch(this.#url, {
      method: "POST",
      headers,
      body: message.body,
      redirect: "manual",
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
    });
    await res.body?.cancel();
    if (res.status < 200 || res.status > 299) {
      throw new Error(`Webhook ${this.id} answered ${res.status}`);
    }
  }

  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }
}
