import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { SqliteMetaStore } from "../meta/sqlite.ts";
import { firstMessage, nodeAWithB, nodeSealer, runUntil } from "./sender_test_helpers.ts";
import { parseUserState, UserReplicator, wireSealer } from "./users.ts";

const SECRET = "users-test-cluster-secret-0123456789abcdef";

Deno.test("a user's secret travels sealed with the cluster's key and is sealed again on arrival", async () => {
  const meta = new SqliteMetaStore(":memory:", { clusterNode: "a" });
  const here = nodeSealer();
  const secret = "plain-secret-0123456789abcdefghijklmnopq";
  await meta.createUser({
    id: "u1",
    name: "carol",
    description: "",
    email: "",
    accessKey: "STUSKEY1",
    sealedSecret: here.seal(secret, "u1"),
    enabled: true,
    createdAt: 1,
    keyCreatedAt: 1,
    bucketAccess: [{ bucket: "bk1", permission: "read" }],
  });
  const body = await firstMessage((deliver) =>
    new UserReplicator(meta, nodeAWithB(), deliver, here, wireSealer(SECRET), 10)
  );
  await meta.close();

  assert(!body.includes(secret), "no secret in the clear");
  const sealed = here.seal(secret, "u1");
  assert(!body.includes(sealed.split(":")[1]), "nothing sealed with this node's key");
  const [change] = (JSON.parse(body) as { changes: unknown[] }).changes;

  // Another node (its own master key, the same cluster secret) seals it with its own key.
  const there = nodeSealer();
  const state = parseUserState(change, there, wireSealer(SECRET))!;
  assertEquals(there.open(state.key!.value.sealedSecret, "u1"), secret);
  assertEquals(state.record?.value?.name, "carol");
  assertEquals(state.access?.value, [{ bucket: "bk1", permission: "read" }]);
  // Another cluster secret, or the sealed secret moved to another key or user: refused.
  assertEquals(parseUserState(change, there, wireSealer(SECRET + "x")), undefined);
  const moved = JSON.parse(JSON.stringify(change));
  moved.key.value.accessKey = "STUSKEY2";
  assertEquals(parseUserState(moved, there, wireSealer(SECRET)), undefined);
  assertEquals(parseUserState({ ...moved, id: "u2" }, there, wireSealer(SECRET)), undefined);
  // Malformed parts refuse the state.
  for (
    const bad of [
      { ...state, id: "bad id!" },
      { id: "u1", enabled: { stamp: { ms: 1, node: "a" }, value: "yes" } },
      {
        id: "u1",
        access: { stamp: { ms: 1, node: "a" }, value: [{ bucket: "bk1", permission: "all" }] },
      },
      { id: "u1", record: { stamp: { ms: -1, node: "a" }, value: null } },
    ]
  ) {
    assertEquals(parseUserState(bad, there, wireSealer(SECRET)), undefined, JSON.stringify(bad));
  }
});

Deno.test("user changes go in batches of about 1 MiB at most, from the node's cursor", async () => {
  const meta = new SqliteMetaStore(":memory:", { clusterNode: "a" });
  const here = nodeSealer();
  // About 65 KB of bucket access each: 40 users need three messages.
  const bucketAccess = Array.from({ length: 1000 }, (_, i) => ({
    bucket: `bucket-${String(i).padStart(4, "0")}-of-a-rather-long-name`,
    permission: "read" as const,
  }));
  for (let i = 0; i < 40; i++) {
    await meta.createUser({
      id: `u${i}`,
      name: `user${i}`,
      description: "",
      email: "",
      accessKey: `STUSKEY${i}`,
      sealedSecret: here.seal(`secret-${i}`, `u${i}`),
      enabled: true,
      createdAt: 1,
      keyCreatedAt: 1,
      bucketAccess,
    });
  }
  const sizes: number[] = [];
  const ids: string[] = [];
  const replicator = new UserReplicator(
    meta,
    nodeAWithB(),
    (_url, body) => {
      sizes.push(JSON.stringify(body).length);
      ids.push(...(body as { changes: { id: string }[] }).changes.map((c) => c.id));
      return Promise.resolve({});
    },
    here,
    wireSealer(SECRET),
    10,
  );
  await runUntil(replicator, () => ids.length === 40);
  assertEquals(await meta.userReplicationCursor("b"), 40);
  await meta.close();
  assertEquals(ids, Array.from({ length: 40 }, (_, i) => `u${i}`));
  assertEquals(sizes.length, 3, JSON.stringify(sizes));
  assert(sizes.every((n) => n < 1024 * 1024 + 64 * 1024), JSON.stringify(sizes));
});
