// Operations support of SqliteMetaStore: usage counters (kept by triggers), the readiness probe,
// drive heal flags, online snapshots and the integrity check.
import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite";
import type { GroupCommit } from "./group_commit.ts";
import type { Usage } from "./store.ts";

type Row = Record<string, SQLInputValue>;

export class SqliteOps {
  constructor(
    readonly db: DatabaseSync,
    readonly stmt: (sql: string) => StatementSync,
    readonly batch: GroupCommit,
  ) {}

  usage(): Usage {
    const row = this.stmt("SELECT * FROM usage WHERE id = 1").get() as Row | undefined;
    return {
      objects: Number(row?.objects ?? 0),
      bytes: Number(row?.bytes ?? 0),
      chunks: Number(row?.chunks ?? 0),
      shardBytes: Number(row?.shard_bytes ?? 0),
    };
  }

  /** A committed write through the normal write path: proves the metadata is writable. */
  probe(): Promise<void> {
    return this.batch.run(() => {
      this.stmt(
        "INSERT INTO health_probe (id, at) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET at = ?",
      ).run(Date.now(), Date.now());
    });
  }

  setNeedsHeal(driveId: number, needed: boolean): Promise<void> {
    return this.batch.run(() => {
      this.stmt("UPDATE drives SET needs_heal = ? WHERE id = ?").run(needed ? 1 : 0, driveId);
    });
  }

  drivesNeedingHeal(): number[] {
    return (this.stmt("SELECT id FROM drives WHERE needs_heal = 1 ORDER BY id").all() as Row[])
      .map((r) => r.id as number);
  }

  /**
   * A consistent copy of the database at `path` (VACUUM INTO reads one snapshot; writes queued
   * meanwhile commit after it). The target must not exist.
   */
  snapshot(path: string): void {
    this.batch.flush();
    this.stmt("VACUUM INTO ?").run(path);
  }

  /** PRAGMA quick_check: "ok" or the problems found. */
  quickCheck(): string[] {
    return (this.db.prepare("PRAGMA quick_check").all() as Row[]).map((r) =>
      String(Object.values(r)[0])
    );
  }
}
