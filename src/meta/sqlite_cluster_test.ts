// The bucket-change queue on SQLite (cases in contract/replication.ts).
import { replicationCases } from "./contract/replication.ts";
import { objectReplicationCases } from "./contract/object_replication.ts";
import { SqliteMetaStore } from "./sqlite.ts";
import { userReplicationCases } from "./contract/user_replication.ts";
import { recordReplicationCases } from "./contract/record_replication.ts";
import { memberListCases } from "./contract/member_list.ts";

const files = new Map<string, string>();
globalThis.addEventListener("unload", () => {
  for (const path of files.values()) {
    for (const file of [path, `${path}-wal`, `${path}-shm`]) {
      try {
        Deno.removeSync(file);
      } catch { /* not made */ }
    }
  }
});

async function open({ clusterNode, data }: { clusterNode?: string; data?: string }) {
  if (data === undefined) return new SqliteMetaStore(":memory:", { clusterNode });
  let path = files.get(data);
  if (!path) {
    path = await Deno.makeTempFile({ suffix: ".db" });
    files.set(data, path);
  }
  return new SqliteMetaStore(path, { clusterNode });
}

replicationCases((name, fn) => Deno.test(`SQLite: ${name}`, fn), open);
objectReplicationCases((name, fn) => Deno.test(`SQLite: ${name}`, fn), open);
userReplicationCases((name, fn) => Deno.test(`SQLite: ${name}`, fn), open);
recordReplicationCases((name, fn) => Deno.test(`SQLite: ${name}`, fn), open);
memberListCases((name, fn) => Deno.test(`SQLite: ${name}`, fn), open);
