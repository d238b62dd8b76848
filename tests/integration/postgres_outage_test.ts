// PostgreSQL going away under a server that keeps its metadata there: requests answer 503
// ServiceUnavailable in the protocol's XML (both dialects) and the admin API's JSON, quickly; a
// write cut off by the outage leaves nothing half done; when PostgreSQL is back the server
// recovers by itself (its pool reconnects), with no restart.
import { randomBytes } from "./server.ts";
import { assert, assertBytesEqual, assertEquals } from "./assert.ts";
import { chunkCounts, startPgMeta, startPgServer, stopServer } from "./postgres_meta_helpers.ts";
import { objectPath, signedFetch, xmlValue } from "./signer.ts";
import type { TestServer } from "./server.ts";

const BUCKET = "outage";

function put(server: TestServer, key: string, body: Uint8Array) {
  return signedFetch(server, { method: "PUT", path: objectPath(BUCKET, key), body });
}

function get(server: TestServer, key: string, dialect: "store" | "amz" = "store") {
  return signedFetch(server, { method: "GET", path: objectPath(BUCKET, key), dialect });
}

/** Retries `fn` until it answers 200 (the pool may still hold a connection PostgreSQL closed). */
async function untilOk(fn: () => Promise<Response>, ms: number): Promise<Response> {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await fn();
    if (res.status === 200 || Date.now() > deadline) return res;
    await res.body?.cancel();
    await new Promise((r) => setTimeout(r, 100));
  }
}

Deno.test("PostgreSQL outage: 503 ServiceUnavailable, no partial state, recovery", async (t) => {
  const meta = await startPgMeta();
  const url = await meta.database();
  const server = await startPgServer(url);
  const small = randomBytes(1000);
  const large = randomBytes(300 * 1024);
  try {
    const created = await signedFetch(server, { method: "PUT", path: objectPath(BUCKET) });
    assertEquals(created.status, 200);
    assertEquals((await put(server, "before-small", small)).status, 200);
    assertEquals((await put(server, "before-large", large)).status, 200);

    await t.step("backups are PostgreSQL's own: /admin/backup refuses", async () => {
      const res = await fetch(`${server.url}/admin/backup?download=true`, {
        method: "POST",
        headers: { authorization: `Basic ${btoa("testadmin:testadmin-secret-0123456789")}` },
      });
      const json = await res.json();
      assertEquals([res.status, json.error?.code], [409, "metadata_in_postgres"]);
      assert(json.error.message.includes("pg_dump"), json.error.message);
    });

    await t.step("PostgreSQL stopped: reads and writes answer 503 in XML and JSON", async () => {
      await meta.pg.stop();
      const started = performance.now();
      for (
        const [res, dialect] of [
          [await put(server, "during-small", small), "store"],
          [await put(server, "during-large", large), "store"],
          [await get(server, "before-small"), "store"],
          [await get(server, "before-large", "amz"), "amz"],
          [await signedFetch(server, { method: "GET", path: objectPath(BUCKET) }), "store"],
        ] as const
      ) {
        const body = await res.text();
        assertEquals(res.status, 503, body);
        assertEquals(xmlValue(body, "Code"), "ServiceUnavailable", body);
        assertEquals(res.headers.get("retry-after"), "1");
        assert(body.includes("metadata database is unavailable"), `${dialect}: ${body}`);
      }
      const admin = await fetch(`${server.url}/admin/users`, {
        headers: { authorization: `Basic ${btoa("testadmin:testadmin-secret-0123456789")}` },
      });
      const json = await admin.json();
      assertEquals([admin.status, json.error?.code], [503, "service_unavailable"]);
      const ms = performance.now() - started;
      assert(ms < 10_000, `six answers took ${ms} ms`);
      assert(server.logs().includes("Metadata database unavailable"));
    });

    await t.step("PostgreSQL back: the same server serves again, without a restart", async () => {
      await meta.pg.start();
      const res = await untilOk(() => get(server, "before-large"), 15_000);
      assertEquals(res.status, 200);
      assertBytesEqual(new Uint8Array(await res.arrayBuffer()), large);
      assertEquals((await put(server, "after", small)).status, 200);
      const again = await get(server, "after");
      assertBytesEqual(new Uint8Array(await again.arrayBuffer()), small);
    });

    await t.step("the refused writes left nothing: no versions, counts exact", async () => {
      for (const key of ["during-small", "during-large"]) {
        const res = await get(server, key);
        await res.body?.cancel();
        assertEquals(res.status, 404, key);
      }
      const sql = meta.query(url);
      const keys = await sql`SELECT key FROM versions ORDER BY key`;
      assertEquals(keys.map((r) => r.key), ["after", "before-large", "before-small"]);
      assert((await chunkCounts(sql)).exact, "reference counts equal the references");
    });

    await t.step(
      "an outage in the middle of concurrent writes: each is whole or absent",
      async () => {
        const bodies = Array.from({ length: 24 }, (_, i) => randomBytes(i % 2 ? 200 * 1024 : 500));
        const writes = bodies.map(async (body, i) => {
          await new Promise((r) => setTimeout(r, i * 15));
          // A write refused before its body was read may see its connection reset: not acknowledged.
          const res = await put(server, `burst/${i}`, body).catch(() => undefined);
          await res?.body?.cancel();
          return res?.status ?? 0;
        });
        await new Promise((r) => setTimeout(r, 120));
        await meta.pg.stop();
        const statuses = await Promise.all(writes);
        assert(statuses.every((s) => s === 200 || s === 503 || s === 0), statuses.join());
        assert(statuses.some((s) => s !== 200), `no write met the outage: ${statuses.join()}`);
        await meta.pg.start();
        await untilOk(() => get(server, "after"), 15_000);
        for (let i = 0; i < bodies.length; i++) {
          const res = await get(server, `burst/${i}`);
          if (statuses[i] === 200) assertEquals(res.status, 200, `burst/${i} was acknowledged`);
          // A write not acknowledged is absent, or whole if its commit landed as the link broke.
          if (res.status === 200) {
            assertBytesEqual(new Uint8Array(await res.arrayBuffer()), bodies[i]);
          } else {
            await res.body?.cancel();
            assertEquals(res.status, 404);
          }
        }
        assert((await chunkCounts(meta.query(url))).exact, "reference counts equal the references");
      },
    );
  } finally {
    await stopServer(server);
    await meta.dispose();
  }
  assert(!server.logs().includes("Uncaught"), server.logs());
});
