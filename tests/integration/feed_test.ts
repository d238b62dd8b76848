// The change feed over Server-Sent Events: resumption with Last-Event-ID, filters, keep-alives,
// access (a user sees only buckets it may list), bearer tokens and presigned URLs, and `reset`
// past the retention window.
import { assert, assertEquals } from "./assert.ts";
import { startServer, type TestServer } from "./server.ts";
import { objectPath, presign, signedFetch } from "./signer.ts";
import { createUser } from "./access_helpers.ts";
import { call } from "./notify_helpers.ts";
import { SseReader } from "./sse_client.ts";

async function feed(
  server: TestServer,
  path: string,
  opts: {
    query?: [string, string][];
    headers?: Record<string, string>;
    user?: { accessKey: string; secret: string };
  } = {},
): Promise<SseReader> {
  const res = await signedFetch(server, {
    method: "GET",
    path,
    query: opts.query,
    headers: opts.headers,
    ...(opts.user ? { accessKey: opts.user.accessKey, secret: opts.user.secret } : {}),
  });
  assertEquals(res.status, 200, `GET ${path}`);
  assertEquals(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
  const reader = new SseReader(res);
  assertEquals((await reader.next())?.comment, "connected");
  return reader;
}

function keyOf(m: { data?: string }): string {
  return decodeURIComponent(JSON.parse(m.data!).s3.object.key);
}

Deno.test("feed: two clients, one resuming with Last-Event-ID, see every event once in order", async () => {
  const server = await startServer();
  try {
    await call(server, "PUT", objectPath("feed-one"));
    const all = await feed(server, "/feed");
    const bucket = await feed(server, "/feed/feed-one");
    for (let i = 0; i < 10; i++) {
      await call(server, "PUT", objectPath("feed-one", `k${i}`), { body: "x" });
    }
    const first = await bucket.events(10);
    await bucket.close();
    for (let i = 10; i < 25; i++) {
      await call(server, "PUT", objectPath("feed-one", `k${i}`), { body: "x" });
    }
    const resumed = await feed(server, "/feed/feed-one", {
      headers: { "last-event-id": first[9].id! },
    });
    const rest = await resumed.events(15);
    const seen = [...first, ...rest];
    assertEquals(seen.map(keyOf), Array.from({ length: 25 }, (_, i) => `k${i}`));
    const ids = seen.map((m) => Number(m.id));
    assert(ids.every((id, i) => i === 0 || id > ids[i - 1]), "ids grow");
    assertEquals(seen[0].event, "store:ObjectCreated:Put");
    const global = await all.events(25);
    assertEquals(global.map(keyOf), seen.map(keyOf));
    assertEquals(global.map((m) => m.id), seen.map((m) => m.id));
    // ?last_event_id= resumes too, and nothing arrives twice.
    const again = await feed(server, "/feed", { query: [["last_event_id", seen[20].id!]] });
    assertEquals((await again.events(4)).map(keyOf), ["k21", "k22", "k23", "k24"]);
    await call(server, "DELETE", objectPath("feed-one", "k0"));
    const del = (await again.events(1))[0];
    assertEquals([del.event, keyOf(del)], ["store:ObjectRemoved:Delete", "k0"]);
    for (const r of [all, resumed, again]) await r.close();
  } finally {
    await server.stop();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("feed: prefix, suffix and events filters; keep-alive comments", async () => {
  const server = await startServer({ env: { STORE_FEED_KEEPALIVE: "1" } });
  try {
    await call(server, "PUT", objectPath("feed-filter"));
    const filtered = await feed(server, "/feed/feed-filter", {
      query: [["prefix", "img/"], ["suffix", ".jpg"], ["events", "s3:ObjectRemoved:*"]],
    });
    for (const key of ["img/a.jpg", "img/b.png", "doc/c.jpg", "img/d.jpg"]) {
      await call(server, "PUT", objectPath("feed-filter", key), { body: "x" });
      await call(server, "DELETE", objectPath("feed-filter", key));
    }
    const got = await filtered.events(2);
    assertEquals(got.map((m) => [m.event, keyOf(m)]), [
      ["store:ObjectRemoved:Delete", "img/a.jpg"],
      ["store:ObjectRemoved:Delete", "img/d.jpg"],
    ]);
    const quiet = await filtered.next(3000);
    assertEquals(quiet?.comment, "keep-alive");
    await filtered.close();
    const bad = await signedFetch(server, {
      method: "GET",
      path: "/feed",
      query: [["events", "store:Nope"]],
    });
    assertEquals(bad.status, 400);
    await bad.body?.cancel();
  } finally {
    await server.stop();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("feed: a user sees only buckets it may list; tokens and presigned URLs", async () => {
  const server = await startServer();
  try {
    await call(server, "PUT", objectPath("feed-mine"));
    await call(server, "PUT", objectPath("feed-other"));
    const user = await createUser(server, "feeder", [{ bucket: "feed-mine", permission: "read" }]);
    const own = await feed(server, "/feed", { user });
    const denied = await signedFetch(server, {
      method: "GET",
      path: "/feed/feed-other",
      accessKey: user.accessKey,
      secret: user.secret,
    });
    assertEquals(denied.status, 403);
    await denied.body?.cancel();
    const anon = await fetch(`${server.url}/feed`);
    assertEquals(anon.status, 403);
    await anon.body?.cancel();
    const issued = await fetch(`${server.url}/api/v1/tokens`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ access_key: user.accessKey, secret_key: user.secret }),
    });
    const { token } = await issued.json();
    const byToken = await fetch(`${server.url}/feed`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assertEquals(byToken.status, 200);
    const tokenReader = new SseReader(byToken);
    const badToken = await fetch(`${server.url}/feed`, {
      headers: { authorization: "Bearer nope" },
    });
    assertEquals(badToken.status, 401);
    await badToken.body?.cancel();
    const url = await presign(server, {
      method: "GET",
      path: "/feed/feed-mine",
      expires: 60,
      accessKey: user.accessKey,
      secret: user.secret,
    });
    const byUrl = await fetch(url);
    assertEquals(byUrl.status, 200);
    const urlReader = new SseReader(byUrl);
    await call(server, "PUT", objectPath("feed-other", "secret"), { body: "x" });
    await call(server, "PUT", objectPath("feed-mine", "visible"), { body: "x" });
    for (const reader of [own, tokenReader, urlReader]) {
      const [m] = await reader.events(1);
      assertEquals(JSON.parse(m.data!).s3.bucket.name, "feed-mine");
      await reader.close();
    }
  } finally {
    await server.stop();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("feed: resuming from before the retention window gets an explicit reset", async () => {
  let server = await startServer();
  const dataDir = server.dataDir;
  try {
    await call(server, "PUT", objectPath("feed-old"));
    const reader = await feed(server, "/feed/feed-old");
    await call(server, "PUT", objectPath("feed-old", "a"), { body: "x" });
    const [m] = await reader.events(1);
    await reader.close();
    await call(server, "PUT", objectPath("feed-old", "b"), { body: "x" });
    await server.stop();
    // Retention 0: the restart prunes every event no consumer still needs.
    server = await startServer({ dataDir, env: { STORE_FEED_RETENTION: "0" } });
    const resumed = await feed(server, "/feed/feed-old", { headers: { "last-event-id": m.id! } });
    const reset = await resumed.next();
    assertEquals(reset?.event, "reset");
    assert(Number(reset?.id) > Number(m.id), "the reset moves the id past the gap");
    await call(server, "PUT", objectPath("feed-old", "c"), { body: "x" });
    assertEquals((await resumed.events(1)).map(keyOf), ["c"]);
    await resumed.close();
  } finally {
    await server.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
