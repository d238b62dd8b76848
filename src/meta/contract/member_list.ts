// A node's saved member list (clustering): replaced whole, read back as saved, kept apart per
// node (nodes sharing a PostgreSQL database each have their own). Run against SQLite
// (sqlite_cluster_test.ts) and PostgreSQL (pg/ports_test.ts).
import { assertEquals } from "../../../tests/integration/assert.ts";
import type { Opener } from "./replication.ts";

type Test = (name: string, fn: () => Promise<void>) => void;

export function memberListCases(test: Test, open: Opener): void {
  test("member list: saved whole, read back, one per node", async () => {
    const store = await open({ clusterNode: "a" });
    assertEquals(await store.loadClusterMembers("a"), { members: [], forgotten: [] });
    const first = {
      members: [{ id: "b", url: "http://b:9000" }, { id: "c", url: "http://c:9000" }],
      forgotten: [{ id: "old", at: 1234 }],
    };
    await store.saveClusterMembers("a", first);
    await store.saveClusterMembers("z", { members: [{ id: "a", url: "http://a" }], forgotten: [] });
    assertEquals(await store.loadClusterMembers("a"), first);
    // c forgotten, old back: the list replaces the one saved.
    const second = {
      members: [{ id: "b", url: "http://b:9001" }, { id: "old", url: "http://old" }],
      forgotten: [{ id: "c", at: 5678 }],
    };
    await store.saveClusterMembers("a", second);
    assertEquals(await store.loadClusterMembers("a"), second);
    assertEquals(await store.loadClusterMembers("z"), {
      members: [{ id: "a", url: "http://a" }],
      forgotten: [],
    });
    await store.saveClusterMembers("a", { members: [], forgotten: [] });
    assertEquals(await store.loadClusterMembers("a"), { members: [], forgotten: [] });
    await store.close();
  });
}
