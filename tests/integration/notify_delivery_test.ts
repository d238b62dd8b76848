// Delivery that loses nothing: a webhook that is down during a burst of writes gets every event
// once it is back, in order per key; a server killed with SIGKILL during a burst delivers the
// event of every acknowledged write after it restarts.
import { assert, assertEquals } from "./assert.ts";
import { startServer, type TestServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";
import { type EventRecord, WebhookReceiver } from "./webhook_receiver.ts";
import { call, putConfig, webhookConfig } from "./notify_helpers.ts";

const ENV = { STORE_NOTIFY_WEBHOOK_ALLOW: "127.0.0.1", STORE_NOTIFY_RETRY_MAX: "1" };

async function configure(server: TestServer, bucket: string, receiver: WebhookReceiver) {
  await call(server, "PUT", objectPath(bucket));
  const res = await putConfig(
    server,
    bucket,
    webhookConfig([{ id: "hook", url: `${receiver.url}/in`, events: ["store:ObjectCreated:*"] }]),
  );
  assertEquals(res.status, 200, await res.text());
  await receiver.until(() => receiver.received.length >= 1);
}

/** Per key, the ETags in the order they first arrived. */
function firstArrivals(records: EventRecord[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of records) {
    const list = out.get(r.s3.object.key) ?? [];
    if (!list.includes(r.s3.object.eTag!)) list.push(r.s3.object.eTag!);
    out.set(r.s3.object.key, list);
  }
  return out;
}

Deno.test("notify: a webhook down during 200 writes gets every event, in order per key", async () => {
  const receiver = new WebhookReceiver().start();
  const server = await startServer({ env: ENV });
  try {
    await configure(server, "outage-bucket", receiver);
    await receiver.down();
    const written = new Map<string, string[]>();
    // 50 keys written 4 times each, 8 requests at a time.
    const jobs = Array.from({ length: 200 }, (_, i) => ({ key: `k${i % 50}`, round: i }));
    for (let i = 0; i < jobs.length; i += 8) {
      await Promise.all(
        jobs.slice(i, i + 8).map(async ({ key, round }) => {
          const res = await call(server, "PUT", objectPath("outage-bucket", key), {
            body: `${key} round ${round}`,
          });
          const etag = res.headers.get("etag")!.replaceAll('"', "");
          written.set(key, [...(written.get(key) ?? []), etag]);
        }),
      );
    }
    await new Promise((r) => setTimeout(r, 1500)); // retries fail meanwhile
    assertEquals(receiver.records().length, 0);
    receiver.start();
    await receiver.until(() => {
      const got = firstArrivals(receiver.records());
      return [...written.values()].every((e) => e.length === 0) ||
        [...got.values()].reduce((n, l) => n + l.length, 0) >= 200;
    }, 30_000);
    const got = firstArrivals(receiver.records());
    for (const [key, etags] of written) assertEquals(got.get(key), etags, `order of ${key}`);
  } finally {
    await server.stop();
    await receiver.stop();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("notify: after SIGKILL during a write burst every acknowledged write's event arrives", async () => {
  const receiver = new WebhookReceiver().start();
  let server = await startServer({ env: ENV });
  const dataDir = server.dataDir;
  try {
    await configure(server, "crash-events", receiver);
    await receiver.down();
    const acked = new Set<string>();
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const key = `w${w}/${i}`;
        try {
          const res = await signedFetch(server, {
            method: "PUT",
            path: objectPath("crash-events", key),
            body: `body of ${key}`,
          });
          await res.body?.cancel();
          if (res.status === 200) acked.add(key);
        } catch {
          return; // the server is gone
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, w) => writer(w));
    while (acked.size < 150) await new Promise((r) => setTimeout(r, 10));
    await server.kill();
    stop = true;
    await Promise.all(writers);
    receiver.start();
    server = await startServer({ env: ENV, dataDir });
    await receiver.until(() => {
      const keys = new Set(receiver.records().map((r) => decodeURIComponent(r.s3.object.key)));
      return [...acked].every((k) => keys.has(k));
    }, 30_000);
    const keys = new Set(receiver.records().map((r) => decodeURIComponent(r.s3.object.key)));
    assert(acked.size >= 150, "a burst was acknowledged");
    for (const k of acked) assert(keys.has(k), `event of ${k}`);
  } finally {
    await server.stop();
    await receiver.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("notify: past STORE_NOTIFY_QUEUE_LIMIT a target loses its oldest events, with a warning", async () => {
  const receiver = new WebhookReceiver().start();
  const env = { ...ENV, STORE_NOTIFY_QUEUE_LIMIT: "10" };
  let server = await startServer({ env });
  const dataDir = server.dataDir;
  try {
    await configure(server, "limited-bucket", receiver);
    await receiver.down();
    for (let i = 0; i < 30; i++) {
      await call(server, "PUT", objectPath("limited-bucket", `k${i}`), { body: "x" });
    }
    await server.stop();
    // The limit is enforced at start-up (and every 30 seconds while running).
    server = await startServer({ env, dataDir });
    await new Promise((r) => setTimeout(r, 1000)); // the first attempts fail, then the limit holds
    receiver.start();
    await receiver.until(() => receiver.records().length >= 10);
    await new Promise((r) => setTimeout(r, 500));
    const keys = [...new Set(receiver.records().map((r) => r.s3.object.key))];

    assertEquals(keys, Array.from({ length: 10 }, (_, i) => `k${20 + i}`));
    assert(/over STORE_NOTIFY_QUEUE_LIMIT.*"dropped":20/.test(server.logs()), "the drop is logged");
  } finally {
    await server.stop();
    await receiver.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
