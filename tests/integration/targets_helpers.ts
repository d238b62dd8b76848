// Shared by the notification-target tests: event messages shaped like the real ones, timing, and
// the checks every target must pass (order, concurrency, outage and recovery, close).
import type { EventMessage, NotificationTarget } from "../../src/events/target.ts";
import { assert, assertEquals } from "./assert.ts";

/** A message with the protocol's record shape; `n` makes each one distinct. */
export function eventMessage(n: number, eventName = "s3:ObjectCreated:Put"): EventMessage {
  const key = `photos/${n}.jpg`;
  const record = {
    eventVersion: "2.1",
    eventSource: "aws:s3",
    awsRegion: "us-east-1",
    eventTime: new Date(Date.UTC(2026, 0, 1, 0, 0, n % 60)).toISOString(),
    eventName: eventName.replace(/^s3:/, ""),
    s3: {
      s3SchemaVersion: "1.0",
      bucket: { name: "media", arn: "arn:aws:s3:::media" },
      object: {
        key: encodeURIComponent(key),
        size: n,
        sequencer: n.toString(16).padStart(16, "0"),
      },
    },
  };
  return { body: JSON.stringify({ Records: [record] }), key, eventName };
}

/** The object size of a delivered body (the `n` of eventMessage). */
export function sizeOf(body: string): number {
  return JSON.parse(body).Records[0].s3.object.size;
}

/** Sends `count` messages one after the other; returns per-send latencies in ms. */
export async function sendSequentially(
  target: NotificationTarget,
  first: number,
  count: number,
): Promise<number[]> {
  const latencies: number[] = [];
  for (let n = first; n < first + count; n++) {
    const began = performance.now();
    await target.send(eventMessage(n));
    latencies.push(performance.now() - began);
  }
  return latencies;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** One line the report quotes: the service's start-up times and the send latency. */
export function reportMeasurements(
  name: string,
  startupsMs: number[],
  prepareMs: number,
  latencies: number[],
): void {
  const p = (q: number) => percentile(latencies, q).toFixed(2);
  console.log(
    `[measure] ${name}: prepare ${prepareMs} ms, start-ups ${startupsMs.join(", ")} ms; ` +
      `send latency over ${latencies.length} sequential sends p50 ${p(50)} ms, p99 ${p(99)} ms`,
  );
}

/** Asserts that `promise` rejects, and within `withinMs`; returns the error message. */
export async function assertRejectsWithin(
  promise: Promise<unknown>,
  withinMs: number,
  measure?: string,
): Promise<string> {
  const began = performance.now();
  try {
    await promise;
  } catch (err) {
    const took = performance.now() - began;
    if (measure) console.log(`[measure] ${measure}: rejected after ${Math.round(took)} ms`);
    assert(took <= withinMs, `rejected only after ${Math.round(took)} ms (limit ${withinMs} ms)`);
    return err instanceof Error ? err.message : String(err);
  }
  throw new Error("expected a rejection");
}

/** Polls `read` until it returns `expected` items or the time is up; returns what it read. */
export async function readUntil<T>(
  read: () => Promise<T[]>,
  expected: number,
  timeoutMs = 10_000,
): Promise<T[]> {
  const deadline = Date.now() + timeoutMs;
  let items = await read();
  while (items.length < expected && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    items = await read();
  }
  return items;
}

/** Asserts the delivered bodies are exactly messages first..first+count-1, in order. */
export function assertDeliveredInOrder(bodies: string[], first: number, count: number): void {
  assertEquals(
    bodies.map(sizeOf),
    Array.from({ length: count }, (_, i) => first + i),
    "delivered messages",
  );
  assertEquals(JSON.parse(bodies[0]).Records[0].s3.bucket.name, "media");
}

/** Short limits so outage tests stay fast; the defaults are 5 s (connect) and 10 s (send). */
export const TEST_LIMITS = { connectMs: 2_000, sendMs: 2_000 };
/** A send during an outage must reject within both limits plus scheduling slack. */
export const OUTAGE_BOUND_MS = TEST_LIMITS.connectMs + TEST_LIMITS.sendMs + 1_000;
