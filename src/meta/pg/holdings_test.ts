// PgHoldings against a real PostgreSQL: holdings are flagged for collection when their chunk row
// goes (a trigger) or was not there when recorded, unflagged when the chunk is there, and a
// forgotten node's rows go.
import { assertEquals } from "../../../tests/integration/assert.ts";
import type { ChunkRecord } from "../store.ts";
import { CLUSTER_DDL } from "./cluster.ts";
import { HOLDINGS_DDL, PgHoldings } from "./holdings.ts";
import { startCluster } from "./test_db.ts";

// The columns of `chunks` the holdings look at (the store's table has more).
const CHUNKS_DDL = `CREATE TABLE chunks (id TEXT COLLATE "C" PRIMARY KEY, refcount INTEGER);`;

function rec(id: string, drives = [1]): ChunkRecord {
  return {
    id,
    plainSize: 100,
    storedSize: 60,
    compression: "zstd",
    encrypted: false,
    segmentSize: 65536,
    dataShards: 1,
    parityShards: 0,
    drives,
  };
}

Deno.test("PgHoldings", async (t) => {
  const cluster = await startCluster();
  try {
    const { sql } = await cluster.database([CHUNKS_DDL, CLUSTER_DDL, HOLDINGS_DDL].join("\n"));
    const h = new PgHoldings((fn) => fn(sql));
    const orphans = async (node: string) => (await h.orphanHoldings(node, 10)).map((r) => r.id);

    await t.step("registration, holdings round trip, holders", async () => {
      await h.registerNode("a", "http://a");
      await h.registerNode("b", "http://b0");
      await h.registerNode("b", "http://b");
      assertEquals(await h.sharedNodes(), [{ id: "a", url: "http://a" }, {
        id: "b",
        url: "http://b",
      }]);
      await sql`INSERT INTO chunks VALUES ('c1', 1)`;
      await h.recordHolding("a", rec("c1", [1]));
      await h.recordHolding("b", rec("c1", [7, 8]));
      assertEquals(await h.holding("b", "c1"), rec("c1", [7, 8]));
      assertEquals(await h.holding("b", "c2"), undefined);
      assertEquals((await h.holders("c1")).sort(), ["a", "b"]);
      assertEquals(await orphans("a"), []);
    });

    await t.step("a deleted chunk row flags every node's holding of it", async () => {
      await sql`DELETE FROM chunks WHERE id = 'c1'`;
      assertEquals(await orphans("a"), ["c1"]);
      assertEquals(await orphans("b"), ["c1"]);
      await h.dropHolding("a", "c1");
      assertEquals(await orphans("a"), []);
    });

    await t.step(
      "a holding recorded before its chunk commits is unflagged once it does",
      async () => {
        await h.recordHolding("a", rec("c3"));
        assertEquals(await orphans("a"), ["c3"]);
        await sql`INSERT INTO chunks VALUES ('c3', 1)`;
        assertEquals(await orphans("a"), []);
        // The chunk row made again after a deletion: the flag is cleared again.
        await sql`DELETE FROM chunks WHERE id = 'c3'`;
        await sql`INSERT INTO chunks VALUES ('c3', 1)`;
        assertEquals(await orphans("a"), []);
      },
    );

    await t.step("the full pass flags what was left unflagged", async () => {
      await h.recordHolding("a", rec("c4"));
      await sql`INSERT INTO chunks VALUES ('c4', 1)`;
      assertEquals(await orphans("a"), []);
      // Unflagged by hand, as a race between a deletion and an unflagging could leave it.
      await sql`DELETE FROM chunks WHERE id = 'c4'`;
      await sql`UPDATE chunk_holdings SET freed = false WHERE chunk_id = 'c4'`;
      assertEquals(await orphans("a"), []);
      await h.flagOrphans("a");
      assertEquals(await orphans("a"), ["c4"]);
    });

    await t.step("forgetting a node drops its registration and holdings", async () => {
      await h.forgetNode("b");
      assertEquals(await h.sharedNodes(), [{ id: "a", url: "http://a" }]);
      assertEquals(await h.holders("c1"), []);
      assertEquals(await orphans("a"), ["c4"]);
    });

    await t.step("the bucket queue's head", async () => {
      assertEquals(await h.bucketQueueHead(), 0);
      await sql`INSERT INTO cluster_changes (bucket, seq, queued_at) VALUES ('x', 7, 0)`;
      assertEquals(await h.bucketQueueHead(), 7);
    });
  } finally {
    await cluster.dispose();
  }
});
