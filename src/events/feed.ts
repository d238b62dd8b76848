// Live streams of the outbox: the change feed (Server-Sent Events: `id:`, `event:`, `data:`) and
// the listen request `mc watch` sends (one JSON message per line). Each stream reads the outbox
// from its own position, so a reader never makes the log or other readers wait; a reader that
// stops taking data is cut off with a reason once its buffer is full instead of growing memory.
import type { Dialect } from "../http/dialect.ts";
import type { EventLog, StoredEvent } from "../meta/store.ts";
import { eventMatches, spellEvent, TEST_EVENT } from "./names.ts";
import { eventRecord } from "./record.ts";
import type { Signal } from "./signal.ts";

/** Events read from the outbox at a time. */
const BATCH = 256;

export interface FeedFilter {
  /** Only this bucket's events (the per-bucket channel). */
  bucket?: string;
  prefix?: string;
  suffix?: string;
  /** Unprefixed event names or families; every event when undefined. */
  events?: string[];
}

export interface FeedSource {
  log: EventLog;
  wake: Signal;
  /** Whether the reader may see this bucket's events (the access decision, cached). */
  mayRead(bucket: string): Promise<boolean>;
  /** Aborts when the server shuts down. */
  closing: AbortSignal;
}

export interface FeedSettings {
  framing: "sse" | "lines";
  dialect: Dialect;
  region: string;
  keepAliveMs: number;
  /** Bytes a reader may leave unread before it is cut off. */
  bufferBytes: number;
  /** Resume after this id (SSE only); live from now when undefined. */
  lastEventId?: number;
}

const encoder = new TextEncoder();

function wanted(event: StoredEvent, filter: FeedFilter): boolean {
  if (event.name === TEST_EVENT) return false;
  if (filter.prefix && !event.key.startsWith(filter.prefix)) return false;
  if (filter.suffix && !event.key.endsWith(filter.suffix)) return false;
  return !filter.events || filter.events.some((p) => eventMatches(p, event.name));
}

function frame(event: StoredEvent, settings: FeedSettings): string {
  const ctx = { dialect: settings.dialect, region: settings.region, configurationId: "feed" };
  const record = eventRecord(event, ctx);
  if (settings.framing === "lines") return `${JSON.stringify({ Records: [record] })}\n`;
  const name = spellEvent(settings.dialect, event.name);
  return `id: ${event.seq}\nevent: ${name}\ndata: ${JSON.stringify(record)}\n\n`;
}

function control(settings: FeedSettings, event: string, data: unknown): string {
  return settings.framing === "sse" ? `event: ${event}\ndata: ${JSON.stringify(data)}\n\n` : "";
}

/** Where a stream starts: after `lastEventId` when still retained, else now (with a reset). */
async function startPosition(
  log: EventLog,
  lastEventId: number | undefined,
): Promise<{ cursor: number; reset: boolean }> {
  const { head, oldest } = await log.eventBounds();
  if (lastEventId === undefined || lastEventId >= head) return { cursor: head, reset: false };
  if (oldest === undefined || oldest > lastEventId + 1) return { cursor: head, reset: true };
  return { cursor: lastEventId, reset: false };
}

export function openFeed(
  source: FeedSource,
  filter: FeedFilter,
  settings: FeedSettings,
): ReadableStream<Uint8Array> {
  const stop = new AbortController();
  const onClosing = () => stop.abort();
  source.closing.addEventListener("abort", onClosing);
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const run = new FeedRun(source, filter, settings, controller, stop.signal);
      run.loop().catch(() => {}).finally(() => {
        source.closing.removeEventListener("abort", onClosing);
        try {
          controller.close();
        } catch { /* already closed or cancelled */ }
      });
    },
    cancel() {
      stop.abort();
    },
  }, new ByteLengthQueuingStrategy({ highWaterMark: settings.bufferBytes }));
}

class FeedRun {
  #lastWrite = Date.now();

  constructor(
    readonly source: FeedSource,
    readonly filter: FeedFilter,
    readonly settings: FeedSettings,
    readonly out: ReadableStreamDefaultController<Uint8Array>,
    readonly stopped: AbortSignal,
  ) {}

  #write(text: string): void {
    if (text === "") return;
    this.out.enqueue(encoder.encode(text));
    this.#lastWrite = Date.now();
  }

  /** True when the reader has left more than its buffer unread: it is told why and cut off. */
  #overflowing(): boolean {
    if ((this.out.desiredSize ?? 1) > 0) return false;
    this.#write(control(this.settings, "error", {
      reason: `slow reader: more than ${this.settings.bufferBytes} bytes left unread`,
    }));
    return true;
  }

  async loop(): Promise<void> {
    const { log, wake } = this.source;
    const start = await startPosition(log, this.settings.lastEventId);
    let cursor = start.cursor;
    if (this.settings.framing === "sse") this.#write(": connected\n\n");
    if (start.reset) this.#reset(cursor);
    while (!this.stopped.aborted) {
      const generation = wake.generation;
      const events = await log.readEvents(cursor, BATCH, this.filter.bucket);
      if (events.length > 0 && events[0].seq > cursor + 1) {
        const { oldest } = await log.eventBounds();
        // Events this reader had not seen were pruned under it: say so, then go on.
        if (oldest !== undefined && oldest > cursor + 1) this.#reset(events[0].seq - 1);
      }
      for (const event of events) {
        cursor = event.seq;
        if (!wanted(event, this.filter) || !(await this.source.mayRead(event.bucket))) continue;
        this.#write(frame(event, this.settings));
        if (this.#overflowing()) return;
      }
      if (events.length === BATCH) continue;
      const idle = Date.now() - this.#lastWrite;
      await wake.wait(generation, Math.max(0, this.settings.keepAliveMs - idle), this.stopped);
      if (Date.now() - this.#lastWrite >= this.settings.keepAliveMs) {
        this.#write(this.settings.framing === "sse" ? ": keep-alive\n\n" : "{}\n");
        if (this.#overflowing()) return;
      }
    }
  }

  #reset(from: number): void {
    // The id line moves the client's Last-Event-ID past the gap.
    if (this.settings.framing === "sse") this.#write(`id: ${from}\n`);
    this.#write(control(this.settings, "reset", {
      reason: "events after the given id are no longer retained (STORE_FEED_RETENTION)",
      last_event_id: from,
    }));
  }
}
