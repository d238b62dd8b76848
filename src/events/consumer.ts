// One consumer of the outbox: reads events after its own cursor, turns them into messages for
// its target, delivers them and moves the cursor past what was delivered. Events of one key are
// delivered one after another in log order; different keys go in parallel. A failure stops its
// key's chain; the cursor stops just before the earliest failed event, the consumer backs off
// (capped exponential) and retries from there, so delivery is at least once and never skips.
import type { EventLog, StoredEvent } from "../meta/store.ts";
import { log } from "../log.ts";
import type { EventMessage, NotificationTarget } from "./target.ts";
import type { Signal } from "./signal.ts";

/** Events read per round. */
const BATCH = 256;
/** Key chains delivered at the same time. */
const PARALLEL = 16;
/** First retry delay; doubled on each failed round up to the cap. */
const BACKOFF_BASE_MS = 200;
/** How long an idle consumer waits for a wake-up before looking again anyway. */
const IDLE_POLL_MS = 2_000;
/**
 * How long a moved cursor may stay unsaved. Saving is a metadata commit; doing it after every
 * small batch would add a sync per group commit of writes. A crash within this window only
 * means the events are delivered again (delivery is at least once anyway).
 */
const CURSOR_SAVE_MS = 250;

/** A message for the target; `record` set when it carries one event record (batchable). */
export interface RoutedMessage extends EventMessage {
  record?: Record<string, unknown>;
}

export interface ConsumerOptions {
  /** The cursor's name (src/events/notify_config.ts). */
  name: string;
  target: NotificationTarget;
  /** Only this bucket's events (a bucket's webhook); every bucket's when undefined. */
  bucket?: string;
  /** The messages one event gives this consumer (none when no rule wants it). */
  route(event: StoredEvent): Promise<RoutedMessage[]>;
  /**
   * Records one message may carry (webhooks: several records in one `Records` array, sent one
   * message after another, so the order of every key holds). Undefined: one record a message,
   * key chains in parallel.
   */
  batchRecords?: number;
  /** Checked before each send; a reason makes the attempt fail (the webhook allow-list). */
  precheck?(): Promise<string | undefined>;
  log: EventLog;
  wake: Signal;
  /** Cap of the retry delay, in milliseconds. */
  retryMaxMs: number;
}

export interface ConsumerStats {
  cursor: number;
  delivered: number;
  failures: number;
  healthy: boolean;
  lastError?: string;
  lastErrorAt?: number;
  lastDeliveryAt?: number;
}

export class Consumer {
  readonly stats: ConsumerStats = { cursor: 0, delivered: 0, failures: 0, healthy: true };
  #running = false;
  #loop?: Promise<void>;
  #attempt = 0;
  #stopping = new AbortController();
  /** The cursor as last saved. */
  #saved = 0;
  #saveTimer?: ReturnType<typeof setTimeout>;

  constructor(readonly opts: ConsumerOptions) {}

  get name(): string {
    return this.opts.name;
  }

  /** Starts delivering from the stored cursor (or `initial` when the consumer is new). */
  async start(initial: number): Promise<void> {
    const stored = await this.opts.log.getCursor(this.name);
    this.stats.cursor = stored ?? initial;
    this.#saved = this.stats.cursor;
    if (stored === undefined) await this.opts.log.setCursor(this.name, initial);
    this.#running = true;
    this.#loop = this.#run();
  }

  /** Moves the cursor forward past events that will not be delivered (the backlog limit). */
  skipTo(seq: number): void {
    if (seq > this.stats.cursor) this.stats.cursor = seq;
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.#stopping.abort();
    await this.#loop;
    clearTimeout(this.#saveTimer);
    await this.#save();
    await this.opts.target.close();
  }

  /** Sleeps `ms`, cut short by stop(). */
  #pause(ms: number): Promise<void> {
    const signal = this.#stopping.signal;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done);
    });
  }

  async #run(): Promise<void> {
    while (this.#running) {
      try {
        const generation = this.opts.wake.generation;
        const events = await this.opts.log.readEvents(this.stats.cursor, BATCH, this.opts.bucket);
        if (events.length === 0) {
          await this.opts.wake.wait(generation, IDLE_POLL_MS, this.#stopping.signal);
          continue;
        }
        const failed = await this.#deliver(events);
        const last = failed === undefined ? events[events.length - 1].seq : failed - 1;
        if (last > this.stats.cursor) {
          this.stats.cursor = last;
          this.#saveSoon();
        }
        if (failed !== undefined) await this.#backoff();
        else this.#attempt = 0;
      } catch (err) {
        this.#fail(err);
        await this.#backoff();
      }
    }
  }

  #saveSoon(): void {
    if (this.#saveTimer !== undefined) return;
    this.#saveTimer = setTimeout(() => {
      this.#saveTimer = undefined;
      this.#save().catch((err) => this.#fail(err));
    }, CURSOR_SAVE_MS);
  }

  async #save(): Promise<void> {
    const cursor = this.stats.cursor;
    if (cursor === this.#saved) return;
    await this.opts.log.setCursor(this.name, cursor);
    this.#saved = cursor;
  }

  async #backoff(): Promise<void> {
    const delay = Math.min(this.opts.retryMaxMs, BACKOFF_BASE_MS * 2 ** this.#attempt);
    this.#attempt = Math.min(this.#attempt + 1, 30);
    if (this.#running) await this.#pause(delay);
  }

  #fail(err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    this.stats.failures++;
    this.stats.healthy = false;
    // One line per failing round, not per event: an outage must not flood the log.
    if (this.stats.lastError !== message || Date.now() - (this.stats.lastErrorAt ?? 0) > 60_000) {
      log("warn", "Event delivery failed; will retry", {
        source: "notify",
        consumer: this.name,
        error: message,
        cursor: this.stats.cursor,
      });
    }
    this.stats.lastError = message;
    this.stats.lastErrorAt = Date.now();
  }

  /** Delivers a batch; the sequence number of the earliest failed event, if any. */
  #deliver(events: StoredEvent[]): Promise<number | undefined> {
    return this.opts.batchRecords ? this.#deliverGrouped(events) : this.#deliverByKey(events);
  }

  /** Events in log order, their records grouped into messages of up to batchRecords. */
  async #deliverGrouped(events: StoredEvent[]): Promise<number | undefined> {
    let records: Record<string, unknown>[] = [];
    let first: { seq: number; message: RoutedMessage } | undefined;
    const flush = async () => {
      if (!first) return;
      const body = JSON.stringify({ Records: records });
      await this.#transmit([{ ...first.message, body }], records.length);
      records = [];
      first = undefined;
    };
    let seq = 0;
    try {
      for (const event of events) {
        seq = event.seq;
        for (const message of await this.opts.route(event)) {
          if (!message.record) {
            await flush();
            await this.#transmit([message], 1);
            continue;
          }
          first ??= { seq: event.seq, message };
          records.push(message.record);
          if (records.length >= this.opts.batchRecords!) await flush();
        }
      }
      seq = first?.seq ?? seq;
      await flush();
      return undefined;
    } catch (err) {
      this.#fail(err);
      return first?.seq ?? seq;
    }
  }

  /** Events grouped by key: each key's in order, different keys in parallel. */
  async #deliverByKey(events: StoredEvent[]): Promise<number | undefined> {
    const chains = new Map<string, StoredEvent[]>();
    for (const e of events) {
      const chain = chains.get(e.key);
      if (chain) chain.push(e);
      else chains.set(e.key, [e]);
    }
    let earliestFailure: number | undefined;
    const queue = [...chains.values()];
    const worker = async () => {
      for (let chain = queue.shift(); chain; chain = queue.shift()) {
        for (const event of chain) {
          if (earliestFailure !== undefined && event.seq > earliestFailure) break;
          try {
            await this.#send(event);
          } catch (err) {
            this.#fail(err);
            earliestFailure = Math.min(earliestFailure ?? Infinity, event.seq);
            break;
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, queue.length) }, worker));
    return earliestFailure;
  }

  async #send(event: StoredEvent): Promise<void> {
    const messages = await this.opts.route(event);
    if (messages.length > 0) await this.#transmit(messages, messages.length);
  }

  async #transmit(messages: EventMessage[], records: number): Promise<void> {
    const refusal = await this.opts.precheck?.();
    if (refusal) throw new Error(refusal);
    for (const message of messages) await this.opts.target.send(message);
    this.stats.delivered += records;
    this.stats.healthy = true;
    this.stats.lastDeliveryAt = Date.now();
  }
}
