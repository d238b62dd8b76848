import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { SqliteMetaStore } from "../meta/sqlite.ts";
import { Membership } from "./membership.ts";
import { BucketReplicator, parseBucketState } from "./replication.ts";

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually(check: () => Promise<boolean> | boolean, ms = 3000) {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("Condition not reached");
    await wait(10);
  }
}

function bucket(name: string) {
  return {
    name,
    owner: "o",
    createdAt: 1,
    region: "r",
    versioning: "" as const,
    objectLock: false,
  };
}

Deno.test("changes go to alive nodes only, from their cursors; failures back off", async () => {
  const meta = new SqliteMetaStore(":memory:", { clusterNode: "a" });
  const members = new Membership({ id: "a", url: "http://a" }, {
    suspectMs: 60_000,
    deadMs: 120_000,
  });
  members.heardFrom({ id: "b", url: "http://b" });
  members.learn([{ id: "c", url: "http://c" }]); // joining: not sent to
  const sent: { url: string; buckets: string[] }[] = [];
  let failing = true;
  const replicator = new BucketReplicator(meta, members, (url, body) => {
    if (failing) return Promise.reject(new Error("down"));
    const changes = (body as { changes: { bucket: string }[] }).changes;
    sent.push({ url, buckets: changes.map((c) => c.bucket) });
    return Promise.resolve({});
  }, 10);
  await meta.createBucket(bucket("one"));
  await meta.createBucket(bucket("two"));
  replicator.start();
  await eventually(async () => (await replicator.backlog("b")).depth === 2);
  await wait(50);
  // First retry after 500 ms: nothing delivered yet, and the cursor did not move.
  assertEquals(sent, []);
  failing = false;
  await eventually(() => sent.length > 0);
  assertEquals(sent, [{ url: "http://b", buckets: ["one", "two"] }]);
  // The cursor moves once the node answered.
  await eventually(async () => (await meta.replicationCursor("b")) === 2);
  assertEquals((await replicator.backlog("b")).depth, 0);
  // A later change is sent alone; c (never heard from) got nothing.
  await meta.putBucketConfig("one", "cors", "[]");
  await eventually(() => sent.length === 2);
  assertEquals(sent[1], { url: "http://b", buckets: ["one"] });
  assert(sent.every((s) => s.url === "http://b"));
  const lag = await replicator.backlog("c");
  assertEquals(lag.depth, 2);
  assert(lag.lagMs >= 0);
  await replicator.stop();
  await meta.close();
});

Deno.test("bucket states from messages are checked part by part", () => {
  const stamp = { ms: 5, node: "a" };
  const good = {
    bucket: "my-bucket",
    record: { stamp, value: { owner: "o", createdAt: 1, region: "r" } },
    versioning: { stamp, value: "Enabled" as const },
    objectLock: { stamp, value: false },
    configs: { cors: { stamp, value: "[]" }, tagging: { stamp, value: null } },
  };
  assertEquals(parseBucketState(good), good);
  assertEquals(
    parseBucketState({ bucket: "gone-one", record: { stamp, value: null }, configs: {} }),
    {
      bucket: "gone-one",
      record: { stamp, value: null },
      versioning: undefined,
      objectLock: undefined,
      configs: {},
    },
  );
  for (
    const bad of [
      { ...good, bucket: "No_Such" },
      { ...good, configs: { "made-up": { stamp, value: "x" } } },
      { ...good, configs: { cors: { stamp, value: 3 } } },
      { ...good, versioning: { stamp, value: "On" } },
      { ...good, objectLock: { stamp: { ms: -1, node: "a" }, value: true } },
      { ...good, record: { stamp: { ms: 1, node: "a b" }, value: null } },
      { ...good, record: { stamp, value: { owner: "o" } } },
      { ...good, configs: undefined },
      null,
    ]
  ) assertEquals(parseBucketState(bad), undefined, JSON.stringify(bad));
});
