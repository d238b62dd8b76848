// Named encryption keys of the local key management (src/kms/) in SQLite: one row per key, its
// versions (each sealed under the master key) as a JSON array, the newest last.
import type { SQLInputValue, StatementSync } from "node:sqlite";
import { DuplicateError, type KmsKeyRecord } from "./store.ts";

type Prepare = (sql: string) => StatementSync;
type Row = Record<string, SQLInputValue>;

function toKey(r: Row): KmsKeyRecord {
  return {
    id: r.id as string,
    description: r.description as string,
    enabled: r.enabled === 1,
    createdAt: r.created_at as number,
    versions: JSON.parse(r.versions as string),
  };
}

export class SqliteKms {
  constructor(readonly stmt: Prepare) {}

  list(): KmsKeyRecord[] {
    return (this.stmt("SELECT * FROM kms_keys ORDER BY id").all() as Row[]).map(toKey);
  }

  get(id: string): KmsKeyRecord | undefined {
    const row = this.stmt("SELECT * FROM kms_keys WHERE id = ?").get(id) as Row | undefined;
    return row ? toKey(row) : undefined;
  }

  create(k: KmsKeyRecord): void {
    if (this.get(k.id)) throw new DuplicateError("id");
    this.stmt(
      "INSERT INTO kms_keys (id, description, enabled, created_at, versions) VALUES (?, ?, ?, ?, ?)",
    ).run(k.id, k.description, k.enabled ? 1 : 0, k.createdAt, JSON.stringify(k.versions));
  }

  /** Replaces the state and versions of an existing key; false when there is none. */
  update(k: KmsKeyRecord): boolean {
    const result = this.stmt(
      "UPDATE kms_keys SET description = ?, enabled = ?, versions = ? WHERE id = ?",
    ).run(k.description, k.enabled ? 1 : 0, JSON.stringify(k.versions), k.id);
    return Number(result.changes) > 0;
  }
}
