// PgEvents against a real PostgreSQL: order, bounds, cursors, pruning, and several nodes
// appending at once while a consumer follows the log with a cursor.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import type { OutboxEvent } from "../store.ts";
import { EVENTS_DDL, PgEvents } from "./events.ts";
import { pool, startCluster } from "./test_db.ts";

const ev = (bucket: string, key: string): OutboxEvent => ({
  bucket,
  key,
  name: "ObjectCreated:Put",
  detail: `{"k":"${key}"}`,
});

Deno.test("PgEvents", async (t) => {
  const cluster = await startCluster();
  const events = new PgEvents();
  try {
    await t.step("append in order, read by bucket and page, bounds and counts", async () => {
      const { sql } = await cluster.database(EVENTS_DDL);
      assertEquals(await events.bounds(sql), { head: 0, oldest: undefined });
      assertEquals(await events.append(sql, []), 0);
      assertEquals(await events.append(sql, [ev("a", "1"), ev("b", "2")], 1000), 2);
      assertEquals(await events.append(sql, [ev("a", "3")], 2000), 3);
      const all = await events.read(sql, 0, 10);
      assertEquals(all.map((e) => [e.seq, e.bucket, e.key, e.at]), [
        [1, "a", "1", 1000],
        [2, "b", "2", 1000],
        [3, "a", "3", 2000],
      ]);
      assertEquals(all[0].detail, '{"k":"1"}');
      assertEquals((await events.read(sql, 1, 1)).map((e) => e.seq), [2]);
      assertEquals((await events.read(sql, 0, 10, "a")).map((e) => e.seq), [1, 3]);
      assertEquals(await events.count(sql, 0), 3);
      assertEquals(await events.count(sql, 1, "a"), 1);
      assertEquals(await events.bounds(sql), { head: 3, oldest: 1 });
    });

    await t.step(
      "pruning keeps the head; a rolled-back append gives its numbers back",
      async () => {
        const { sql } = await cluster.database(EVENTS_DDL);
        await events.append(sql, [ev("a", "1"), ev("a", "2")], 1000);
        await events.append(sql, [ev("a", "3")], 5000);
        assertEquals(await events.prune(sql, 3, 2000), 2);
        assertEquals(await events.bounds(sql), { head: 3, oldest: 3 });
        assertEquals(await events.prune(sql, 3, 9000), 1);
        assertEquals(await events.bounds(sql), { head: 3, oldest: undefined });
        await sql.begin(async (tx) => {
          await events.append(tx, [ev("a", "x")]);
          throw new Error("rollback");
        }).catch(() => {});
        assertEquals(await events.append(sql, [ev("a", "4")]), 4);
      },
    );

    await t.step("cursors: set, overwrite, list in consumer order, delete", async () => {
      const { sql } = await cluster.database(EVENTS_DDL);
      assertEquals(await events.getCursor(sql, "x"), undefined);
      await events.setCursor(sql, "b", 5);
      await events.setCursor(sql, "a", 1);
      await events.setCursor(sql, "b", 7);
      assertEquals(await events.getCursor(sql, "b"), 7);
      assertEquals(await events.listCursors(sql), [{ consumer: "a", seq: 1 }, {
        consumer: "b",
        seq: 7,
      }]);
      await events.deleteCursor(sql, "a");
      assertEquals(await events.listCursors(sql), [{ consumer: "b", seq: 7 }]);
    });

    await t.step(
      "three nodes append in parallel transactions: gap-free, and a follower misses nothing",
      async () => {
        const { sql, url } = await cluster.database(EVENTS_DDL);
        const nodes = [pool(url, 6), pool(url, 6), pool(url, 6)];
        const total = 600;
        let done = false;
        const seen: number[] = [];
        // The follower reads after its cursor as a consumer does; a seq committed below one it
        // has already passed would be skipped for good.
        const follower = (async () => {
          let cursor = 0;
          while (!done || cursor < total) {
            const page = await events.read(sql, cursor, 50);
            for (const e of page) seen.push(e.seq);
            if (page.length) cursor = page[page.length - 1].seq;
            else await new Promise((r) => setTimeout(r, 1));
          }
        })();
        try {
          await Promise.all(
            Array.from({ length: total / 2 }, (_, i) =>
              nodes[i % 3].begin(async (tx) => {
                await events.append(tx, [ev("b", `${i}a`), ev("b", `${i}b`)]);
                // Work after the append while the head stays locked.
                await tx`SELECT pg_sleep(0.001)`;
              })),
          );
          done = true;
          await follower;
          assertEquals(seen, Array.from({ length: total }, (_, i) => i + 1));
          const all = await events.read(sql, 0, total + 1);
          // The two events of one append are adjacent.
          for (let i = 0; i < total; i += 2) {
            assertEquals(all[i].key.replace(/a$/, ""), all[i + 1].key.replace(/b$/, ""));
          }
          assertEquals((await events.bounds(sql)).head, total);
        } finally {
          done = true;
          for (const n of nodes) await n.end({ timeout: 1 });
        }
        assert(seen.length === total);
      },
    );
  } finally {
    await cluster.dispose();
  }
});
