// The PostgreSQL target against a real PostgreSQL: one row per event in a table the target
// creates, read back with SELECT.
import postgres from "postgres";
import { PostgresTarget } from "../../src/events/targets/postgres.ts";
import { createPostgres } from "../services/postgres.ts";
import { assert, assertEquals } from "./assert.ts";
import {
  assertDeliveredInOrder,
  assertRejectsWithin,
  eventMessage,
  OUTAGE_BOUND_MS,
  reportMeasurements,
  sendSequentially,
  TEST_LIMITS,
} from "./targets_helpers.ts";

Deno.test("PostgreSQL target", async (t) => {
  const pg = await createPostgres();
  await pg.start();
  let sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  const target = new PostgresTarget({
    id: "p1",
    url: pg.url,
    table: "store_events",
    limits: TEST_LIMITS,
  });
  const bodies = async (table = "store_events") =>
    (await sql`SELECT record::text AS r FROM ${sql(table)} ORDER BY id`).map((row) =>
      row.r as string
    );
  try {
    await t.step("creates the table and inserts one row per event, in order", async () => {
      const latencies = await sendSequentially(target, 0, 200);
      assertDeliveredInOrder(await bodies(), 0, 200);
      reportMeasurements("PostgreSQL", pg.startupsMs, pg.prepareMs, latencies);
    });

    await t.step(
      "each row holds the key, the event name, the event time and the record",
      async () => {
        const [row] = await sql`
        SELECT key, event_name, event_time, record->'Records'->0->'s3'->'object'->>'size' AS size
        FROM store_events ORDER BY id LIMIT 1 OFFSET 7`;
        assertEquals(row.key, "photos/7.jpg");
        assertEquals(row.event_name, "s3:ObjectCreated:Put");
        assertEquals((row.event_time as Date).toISOString(), "2026-01-01T00:00:07.000Z");
        assertEquals(row.size, "7");
      },
    );

    await t.step("a schema-qualified table is created in its schema", async () => {
      await sql`CREATE SCHEMA IF NOT EXISTS notify`;
      const other = new PostgresTarget({
        id: "p2",
        url: pg.url,
        table: "notify.events",
        limits: TEST_LIMITS,
      });
      try {
        await other.send(eventMessage(42));
        assertDeliveredInOrder(await bodies("notify.events"), 42, 1);
      } finally {
        await other.close();
      }
    });

    await t.step("table names that are not plain identifiers are refused", () => {
      for (const table of ["Events", "events; drop table x", "a.b.c", "1events", '"quoted"', ""]) {
        let threw = false;
        try {
          new PostgresTarget({ id: "bad", url: pg.url, table });
        } catch {
          threw = true;
        }
        assert(threw, `accepted table ${JSON.stringify(table)}`);
      }
    });

    await t.step(
      "a send while PostgreSQL is down rejects in bounded time; works once it is back",
      async () => {
        await sql.end({ timeout: 0 });
        await pg.stop();
        await assertRejectsWithin(
          target.send(eventMessage(1000)),
          OUTAGE_BOUND_MS,
          "PostgreSQL down, first send",
        );
        await assertRejectsWithin(
          target.send(eventMessage(1001)),
          OUTAGE_BOUND_MS,
          "PostgreSQL down, next send",
        );
        await pg.start();
        sql = postgres(pg.url, { max: 1, onnotice: () => {} });
        await target.send(eventMessage(1002));
        const all = await bodies();
        assertEquals(all.length, 201);
        assertDeliveredInOrder(all.slice(200), 1002, 1);
      },
    );

    await t.step("close releases the connection; later sends reject", async () => {
      await target.close();
      const message = await assertRejectsWithin(target.send(eventMessage(2000)), 100);
      assert(/closed/.test(message), message);
    });
  } finally {
    await target.close();
    await sql.end({ timeout: 0 });
    await pg.dispose();
  }
});
