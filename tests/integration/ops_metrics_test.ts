// GET /metrics: the Prometheus text format (checked by a strict parser), access with the admin
// credentials or STORE_METRICS_TOKEN only, and counters that move as requests run: requests by
// operation and status, latency histograms, bytes in and out, objects and bytes stored.
import { assert, assertEquals } from "./assert.ts";
import { parsePrometheus, value } from "./prometheus_parser.ts";
import { ADMIN_PASSWORD, ADMIN_USER, randomBytes, type TestServer, withServer } from "./server.ts";
import { createBucket, del, get, putOk } from "./storage_helpers.ts";

const TOKEN = "metrics-token-0123456789";

async function scrape(server: TestServer, auth = `Bearer ${TOKEN}`) {
  const res = await fetch(`${server.url}/metrics`, { headers: { authorization: auth } });
  const text = await res.text();
  assertEquals(res.status, 200, text);
  assert(res.headers.get("content-type")!.startsWith("text/plain; version=0.0.4"));
  return parsePrometheus(text);
}

Deno.test("metrics: format, access and counters that move", async () => {
  await withServer(async (server) => {
    // Access: the token, the admin's Basic credentials; nothing else.
    const basic = "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`);
    const before = await scrape(server, basic);
    for (const auth of [undefined, `Bearer wrong-token-0123456789`, "Basic " + btoa("x:y")]) {
      const res = await fetch(`${server.url}/metrics`, {
        headers: auth ? { authorization: auth } : {},
      });
      assertEquals(res.status, 401, `metrics with ${auth}`);
      assertEquals((await res.json()).error.code, "unauthorized");
    }
    const post = await fetch(`${server.url}/metrics`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assertEquals(post.status, 405);
    await post.body?.cancel();

    // Every family the issue asks for is there.
    for (
      const name of [
        "store_requests_total",
        "store_request_duration_seconds",
        "store_received_bytes_total",
        "store_sent_bytes_total",
        "store_objects",
        "store_object_bytes",
        "store_drive_online",
        "store_drive_free_bytes",
        "store_drive_errors_total",
        "store_heal_shards_healed_total",
        "store_scrubs_total",
        "store_queue_depth",
        "store_open_connections",
        "store_heap_used_bytes",
        "store_event_loop_delay_seconds",
      ]
    ) assert(before.has(name), `family ${name}`);
    assertEquals(value(before, "store_objects"), 0);
    assertEquals(value(before, "store_drive_online", { state: "online" }), 1);
    assert(value(before, "store_drive_free_bytes") > 0, "free space is reported");
    assert(value(before, "store_heap_used_bytes") > 0, "heap is reported");
    // At least the scrape's own connection.
    assert(value(before, "store_open_connections") >= 1, "open connections are reported");

    await createBucket(server, "metered");
    const small = randomBytes(1000);
    const large = randomBytes(200_000);
    await putOk(server, "metered", "small", small);
    await putOk(server, "metered", "large", large);
    for (let i = 0; i < 3; i++) assertEquals((await get(server, "metered", "small")).status, 200);
    assertEquals((await get(server, "metered", "missing")).status, 404);

    const after = await scrape(server);
    const ops = (operation: string, status: string) =>
      value(after, "store_requests_total", { operation, status });
    assertEquals(ops("PutObject", "200"), 2);
    assertEquals(ops("GetObject", "200"), 3);
    assertEquals(ops("GetObject", "404"), 1);
    assertEquals(ops("CreateBucket", "200"), 1);
    assertEquals(
      value(after, "store_request_duration_seconds_count", { operation: "GetObject" }),
      4,
    );
    assert(value(after, "store_request_duration_seconds_sum", { operation: "PutObject" }) > 0);
    assertEquals(
      value(after, "store_received_bytes_total", { operation: "PutObject" }),
      small.byteLength + large.byteLength,
    );
    assert(
      value(after, "store_sent_bytes_total", { operation: "GetObject" }) >= 3 * small.byteLength,
      "bytes out counted",
    );
    assertEquals(value(after, "store_objects"), 2);
    assertEquals(value(after, "store_object_bytes"), small.byteLength + large.byteLength);
    assert(value(after, "store_chunks") >= 1, "the large object is chunked");

    // Deletes lower the stored totals; the counters only grow.
    assertEquals(await del(server, "metered", "large"), 204);
    const later = await scrape(server);
    assertEquals(value(later, "store_objects"), 1);
    assertEquals(value(later, "store_object_bytes"), small.byteLength);
    assertEquals(value(later, "store_chunks"), 0);
    assertEquals(
      value(later, "store_requests_total", { operation: "DeleteObject", status: "204" }),
      1,
    );
  }, { env: { STORE_METRICS_TOKEN: TOKEN, STORE_CHUNK_SIZE: String(64 * 1024) } });
});

Deno.test("metrics: without STORE_METRICS_TOKEN a bearer token is refused", async () => {
  await withServer(async (server) => {
    const res = await fetch(`${server.url}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assertEquals(res.status, 401);
    await res.body?.cancel();
  });
});

Deno.test("metrics parser: rejects what Prometheus would", () => {
  const bad = [
    "store_x 1", // no newline at the end
    "# TYPE store_x counter\nstore_y 1\n", // sample outside its family
    "# TYPE store_x counter\nstore_x{a=b} 1\n", // unquoted label
    "# TYPE store_x counter\nstore_x one\n", // not a number
    '# TYPE store_x histogram\nstore_x_bucket{le="1"} 1\nstore_x_sum 1\nstore_x_count 1\n',
  ];
  for (const text of bad) {
    let threw = false;
    try {
      parsePrometheus(text);
    } catch {
      threw = true;
    }
    assert(threw, `parser rejects ${JSON.stringify(text)}`);
  }
});
