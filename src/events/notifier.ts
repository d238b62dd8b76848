// Event notifications: one outbox consumer per environment target (every bucket whose
// configuration names its ARN) and one per bucket webhook rule, the bucket configurations they
// route by, the bounded backlog, and pruning of the outbox.
import type { DialectName } from "../http/dialect.ts";
import { DIALECTS } from "../http/dialect.ts";
import { log } from "../log.ts";
import type { MetaStore, StoredEvent } from "../meta/store.ts";
import { Consumer, type RoutedMessage } from "./consumer.ts";
import {
  type NotifyConfig,
  type NotifyRule,
  readStoredConfig,
  ruleWants,
  targetConsumer,
  webhookConsumer,
} from "./notify_config.ts";
import { spellEvent, TEST_EVENT } from "./names.ts";
import type { EventOrigin } from "./outbox.ts";
import { eventMessage, eventRecord } from "./record.ts";
import type { Signal } from "./signal.ts";
import type { NotificationTarget, TargetKind } from "./target.ts";
import { WebhookTarget } from "./targets/webhook.ts";
import { type WebhookAllowList, webhookRefusal } from "./webhook_allow.ts";
import { KeyedLock } from "../keyed_lock.ts";

/** How often the backlog limit is enforced and old events are pruned. */
const PRUNE_INTERVAL_MS = 30_000;
/** How long a webhook host's allow-list verdict is reused. */
const ALLOW_CACHE_MS = 60_000;
/** Records one webhook request may carry when a backlog has built up. */
const WEBHOOK_BATCH = 100;

export interface NotifierOptions {
  meta: MetaStore;
  region: string;
  /** Targets opened from STORE_NOTIFY_<KIND>_<ID>_* (src/events/env_targets.ts). */
  targets: NotificationTarget[];
  allow: WebhookAllowList;
  /** Events a consumer may trail behind the newest one (STORE_NOTIFY_QUEUE_LIMIT). */
  queueLimit: number;
  /** How long delivered events stay for the change feed, ms (STORE_FEED_RETENTION). */
  retentionMs: number;
  /** Cap of the retry delay, ms (STORE_NOTIFY_RETRY_MAX). */
  retryMaxMs: number;
  /** Fired by the object layer after each commit that recorded events. */
  wake: Signal;
}

/** A consumer's row of GET /admin/notify/targets. */
export interface TargetStatus {
  kind: TargetKind;
  id: string;
  arn?: Record<DialectName, string>;
  bucket?: string;
  url?: string;
  healthy: boolean;
  queue_depth: number;
  cursor: number;
  delivered: number;
  failures: number;
  last_error?: string;
  last_error_at?: string;
  last_delivery_at?: string;
}

function iso(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

export class Notifier {
  readonly #configs = new Map<string, NotifyConfig | null>();
  readonly #consumers = new Map<string, Consumer>();
  /** Webhook consumers: the url and token they were built for. */
  readonly #webhooks = new Map<string, string>();
  readonly #allowCache = new Map<string, { at: number; refusal?: string }>();
  #pruneTimer?: ReturnType<typeof setInterval>;
  readonly #closing = new AbortController();
  /**
   * configure and forget run one at a time per bucket, so the cached configuration and the
   * webhook consumers follow the stored one. Two at once could end in either order (a commit is
   * answered when its flush ends, and flushes overlap), and leave the cache on the older
   * configuration, or a consumer of a deleted bucket running.
   */
  readonly #changing = new KeyedLock();

  constructor(readonly opts: NotifierOptions) {}

  hasTarget(kind: TargetKind, id: string): boolean {
    return this.opts.targets.some((t) => t.kind === kind && t.id === id);
  }

  /** The ARN of an environment target in a dialect (`arn:store:sqs:<region>:<id>:<kind>`). */
  arn(target: { kind: TargetKind; id: string }, dialect: DialectName, service = "sqs"): string {
    const partition = DIALECTS[dialect].arnPartition;
    return `arn:${partition}:${service}:${this.opts.region}:${target.id}:${target.kind}`;
  }

  async start(): Promise<void> {
    const { head } = await this.opts.meta.eventBounds();
    const wanted = new Set<string>();
    for (const target of this.opts.targets) {
      const consumer = this.#targetConsumer(target);
      wanted.add(consumer.name);
      await consumer.start(head);
    }
    for (let after = "";;) {
      const page = await this.opts.meta.listBucketConfigs("notification", after, 100);
      for (const { bucket, value } of page) {
        const config = readStoredConfig(value);
        this.#configs.set(bucket, config ?? null);
        for (const rule of config?.rules ?? []) {
          if (rule.kind !== "webhook") continue;
          wanted.add(webhookConsumer(bucket, rule.id));
          await this.#startWebhook(bucket, rule, head);
        }
      }
      if (page.length < 100) break;
      after = page[page.length - 1].bucket;
    }
    // Cursors of targets and rules that no longer exist would hold the outbox forever.
    for (const { consumer } of await this.opts.meta.listCursors()) {
      if (!wanted.has(consumer)) await this.opts.meta.deleteCursor(consumer);
    }
    await this.prune();
    this.#pruneTimer = setInterval(() => {
      this.prune().catch((err) => log("error", "Outbox pruning failed", { error: String(err) }));
    }, PRUNE_INTERVAL_MS);
  }

  /** Aborts when the server shuts down (open feeds end). */
  get closing(): AbortSignal {
    return this.#closing.signal;
  }

  async stop(): Promise<void> {
    this.#closing.abort();
    clearInterval(this.#pruneTimer);
    await Promise.all([...this.#consumers.values()].map((c) => c.stop()));
    this.#consumers.clear();
  }

  /** A bucket's configuration (cached; every change goes through configure or forget). */
  async config(bucket: string): Promise<NotifyConfig | undefined> {
    let config = this.#configs.get(bucket);
    if (config === undefined) {
      config = readStoredConfig(await this.opts.meta.getBucketConfig(bucket, "notification")) ??
        null;
      if (this.#configs.size > 10_000) this.#configs.clear();
      this.#configs.set(bucket, config);
    }
    return config ?? undefined;
  }

  /**
   * Stores a bucket's configuration (none removes it), starts and stops its webhook consumers
   * and records the test event every destination of the new configuration receives.
   */
  configure(
    bucket: string,
    config: NotifyConfig,
    origin: EventOrigin,
    asDecided: { createdAt?: number } = {},
  ): Promise<void> {
    return this.#changing.run(bucket, () => this.#configure(bucket, config, origin, asDecided));
  }

  async #configure(
    bucket: string,
    config: NotifyConfig,
    origin: EventOrigin,
    asDecided: { createdAt?: number },
  ): Promise<void> {
    const { head } = await this.opts.meta.eventBounds();
    if (config.rules.length === 0) {
      await this.opts.meta.deleteBucketConfig(bucket, "notification", asDecided);
    } else {
      await this.opts.meta.putBucketConfig(
        bucket,
        "notification",
        JSON.stringify(config),
        asDecided,
      );
    }
    this.#configs.set(bucket, config.rules.length > 0 ? config : null);
    const keep = new Set<string>();
    for (const rule of config.rules.filter((r) => r.kind === "webhook")) {
      const name = webhookConsumer(bucket, rule.id);
      keep.add(name);
      if (this.#webhooks.get(name) === webhookSignature(rule)) continue;
      await this.#stopConsumer(name);
      await this.#startWebhook(bucket, rule, head);
    }
    await this.#stopBucketWebhooks(bucket, keep);
    if (config.rules.length > 0) {
      const detail = { ...origin, owner: "", time: Date.now() };
      await this.opts.meta.appendEvents([
        { bucket, key: "", name: TEST_EVENT, detail: JSON.stringify(detail) },
      ]);
      this.opts.wake.fire();
    }
  }

  /** Forgets a deleted bucket: its cached configuration and its webhook consumers. */
  forget(bucket: string): Promise<void> {
    return this.#changing.run(bucket, async () => {
      this.#configs.delete(bucket);
      await this.#stopBucketWebhooks(bucket, new Set());
    });
  }

  async #stopBucketWebhooks(bucket: string, keep: Set<string>): Promise<void> {
    const prefix = webhookConsumer(bucket, "");
    for (const name of [...this.#consumers.keys()]) {
      if (name.startsWith(prefix) && !keep.has(name)) await this.#stopConsumer(name);
    }
  }

  async #stopConsumer(name: string): Promise<void> {
    const consumer = this.#consumers.get(name);
    this.#consumers.delete(name);
    this.#webhooks.delete(name);
    await consumer?.stop();
    await this.opts.meta.deleteCursor(name);
  }

  #targetConsumer(target: NotificationTarget): Consumer {
    const consumer = new Consumer({
      name: targetConsumer(target),
      target,
      route: (event) => this.#routeToTarget(target, event),
      batchRecords: target.kind === "webhook" ? WEBHOOK_BATCH : undefined,
      log: this.opts.meta,
      wake: this.opts.wake,
      retryMaxMs: this.opts.retryMaxMs,
    });
    this.#consumers.set(consumer.name, consumer);
    return consumer;
  }

  async #startWebhook(bucket: string, rule: NotifyRule, initial: number): Promise<void> {
    const name = webhookConsumer(bucket, rule.id);
    const url = new URL(rule.url!);
    const consumer = new Consumer({
      name,
      bucket,
      target: new WebhookTarget({ id: rule.id, url: rule.url!, authToken: rule.authToken }),
      route: (event) => this.#routeToWebhook(bucket, rule, event),
      batchRecords: WEBHOOK_BATCH,
      precheck: () => this.#allowed(url),
      log: this.opts.meta,
      wake: this.opts.wake,
      retryMaxMs: this.opts.retryMaxMs,
    });
    this.#consumers.set(name, consumer);
    this.#webhooks.set(name, webhookSignature(rule));
    await consumer.start(initial);
  }

  async #allowed(url: URL): Promise<string | undefined> {
    const cached = this.#allowCache.get(url.host);
    if (cached && Date.now() - cached.at < ALLOW_CACHE_MS) return cached.refusal;
    const refusal = await webhookRefusal(url, this.opts.allow);
    if (this.#allowCache.size > 1000) this.#allowCache.clear();
    this.#allowCache.set(url.host, { at: Date.now(), refusal });
    return refusal;
  }

  async #routeToTarget(target: NotificationTarget, event: StoredEvent): Promise<RoutedMessage[]> {
    const config = await this.config(event.bucket);
    if (!config) return [];
    const rules = config.rules.filter((r) =>
      r.target?.kind === target.kind && r.target.id === target.id
    );
    return this.#messages(config, rules, event);
  }

  async #routeToWebhook(
    bucket: string,
    rule: NotifyRule,
    event: StoredEvent,
  ): Promise<RoutedMessage[]> {
    const config = await this.config(bucket);
    const current = config?.rules.find((r) => r.kind === "webhook" && r.id === rule.id);
    if (!config || !current || webhookSignature(current) !== webhookSignature(rule)) return [];
    return this.#messages(config, [current], event);
  }

  #messages(config: NotifyConfig, rules: NotifyRule[], event: StoredEvent): RoutedMessage[] {
    const dialect = DIALECTS[config.dialect];
    const out: RoutedMessage[] = [];
    for (const rule of rules) {
      const ctx = { dialect, region: this.opts.region, configurationId: rule.id };
      const message = { key: event.key, eventName: spellEvent(dialect, event.name) };
      if (event.name === TEST_EVENT) {
        out.push({ ...message, body: eventMessage(event, ctx) });
      } else if (ruleWants(rule, event.name, event.key)) {
        const record = eventRecord(event, ctx);
        out.push({ ...message, record, body: JSON.stringify({ Records: [record] }) });
      }
    }
    return out;
  }

  /** Enforces the backlog limit, then removes events every consumer has passed. */
  async prune(): Promise<void> {
    const meta = this.opts.meta;
    const { head } = await meta.eventBounds();
    let upTo = head;
    for (const { consumer, seq } of await meta.listCursors()) {
      let cursor = seq;
      if (head - seq > this.opts.queueLimit) {
        cursor = head - this.opts.queueLimit;
        this.#consumers.get(consumer)?.skipTo(cursor);
        await meta.setCursor(consumer, cursor);
        log("warn", "Notification backlog over STORE_NOTIFY_QUEUE_LIMIT: oldest events dropped", {
          consumer,
          dropped: cursor - seq,
        });
      }
      upTo = Math.min(upTo, cursor);
    }
    await meta.pruneEvents(upTo, Date.now() - this.opts.retentionMs);
  }

  /** Every consumer with its health and backlog (GET /admin/notify/targets). */
  async status(): Promise<TargetStatus[]> {
    const out: TargetStatus[] = [];
    for (const consumer of this.#consumers.values()) {
      const { target, bucket } = consumer.opts;
      const s = consumer.stats;
      const row: TargetStatus = {
        kind: target.kind,
        id: target.id,
        healthy: s.healthy,
        queue_depth: await this.opts.meta.countEvents(s.cursor, bucket),
        cursor: s.cursor,
        delivered: s.delivered,
        failures: s.failures,
        last_error: s.lastError,
        last_error_at: iso(s.lastErrorAt),
        last_delivery_at: iso(s.lastDeliveryAt),
      };
      if (bucket === undefined) {
        row.arn = { store: this.arn(target, "store"), amz: this.arn(target, "amz") };
      } else {
        row.bucket = bucket;
        row.url = this.#webhooks.get(consumer.name)?.split("\n")[0];
      }
      out.push(row);
    }
    return out;
  }
}

function webhookSignature(rule: NotifyRule): string {
  return `${rule.url}\n${rule.authToken ?? ""}`;
}
