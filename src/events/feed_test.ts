import { DIALECTS } from "../http/dialect.ts";
import type { EventLog, OutboxEvent, StoredEvent } from "../meta/store.ts";
import { openFeed } from "./feed.ts";
import { Signal } from "./signal.ts";

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** An outbox in memory: enough of EventLog for a feed. */
class MemoryLog implements Partial<EventLog> {
  events: StoredEvent[] = [];
  append(e: OutboxEvent): void {
    this.events.push({ ...e, seq: this.events.length + 1, at: Date.now() });
  }
  readEvents(after: number, limit: number): Promise<StoredEvent[]> {
    return Promise.resolve(this.events.filter((e) => e.seq > after).slice(0, limit));
  }
  eventBounds(): Promise<{ head: number; oldest?: number }> {
    return Promise.resolve({ head: this.events.length, oldest: this.events[0]?.seq });
  }
}

const detail = JSON.stringify({
  principal: "p",
  sourceIp: "",
  requestId: "r",
  owner: "o",
  time: 0,
});

Deno.test("feed: a reader that takes nothing is cut off with a reason, memory bounded", async () => {
  const log = new MemoryLog();
  const wake = new Signal();
  const closing = new AbortController();
  const stream = openFeed(
    {
      log: log as unknown as EventLog,
      wake,
      mayRead: () => Promise.resolve(true),
      closing: closing.signal,
    },
    {},
    {
      framing: "sse",
      dialect: DIALECTS.store,
      region: "r",
      keepAliveMs: 60_000,
      bufferBytes: 16 * 1024,
    },
  );
  // 2,000 events of ~700 bytes each: far more than the 16 KiB the reader may leave unread.
  for (let i = 0; i < 2000; i++) {
    log.append({ bucket: "b", key: `k${i}`, name: "ObjectCreated:Put", detail });
  }
  wake.fire();
  await new Promise((r) => setTimeout(r, 200));
  const text = await new Response(stream).text();
  assert(text.length < 64 * 1024, `buffered ${text.length} bytes`);
  assert(text.endsWith("\n\n") && text.includes("event: error"), "ends with an error event");
  assert(text.includes("slow reader"), "names the reason");
  closing.abort();
});

Deno.test("feed: a server shutdown ends open streams", async () => {
  const log = new MemoryLog();
  const closing = new AbortController();
  const stream = openFeed(
    {
      log: log as unknown as EventLog,
      wake: new Signal(),
      mayRead: () => Promise.resolve(true),
      closing: closing.signal,
    },
    {},
    {
      framing: "lines",
      dialect: DIALECTS.amz,
      region: "r",
      keepAliveMs: 60_000,
      bufferBytes: 1 << 20,
    },
  );
  setTimeout(() => closing.abort(), 50);
  assert((await new Response(stream).text()) === "", "nothing was written");
});
