// Named encryption keys of the local key management (src/kms/) in PostgreSQL: one row per key,
// its versions (each sealed under the master key) as a JSON array, the newest last; behaves as
// src/meta/sqlite_kms.ts.
import { DuplicateError, type KmsKeyRecord } from "../store.ts";
import { num, type Queryable, uniqueViolation } from "./sql.ts";

export const KMS_DDL = `
  CREATE TABLE kms_keys (
    id TEXT COLLATE "C" PRIMARY KEY,
    description TEXT NOT NULL,
    enabled BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    versions TEXT NOT NULL
  );
`;

type Row = Record<string, unknown>;

function toKey(r: Row): KmsKeyRecord {
  return {
    id: r.id as string,
    description: r.description as string,
    enabled: r.enabled as boolean,
    createdAt: num(r.created_at),
    versions: JSON.parse(r.versions as string),
  };
}

export class PgKms {
  async list(q: Queryable): Promise<KmsKeyRecord[]> {
    return (await q`SELECT * FROM kms_keys ORDER BY id`).map(toKey);
  }

  async get(q: Queryable, id: string): Promise<KmsKeyRecord | undefined> {
    const [row] = await q`SELECT * FROM kms_keys WHERE id = ${id}`;
    return row ? toKey(row) : undefined;
  }

  async create(q: Queryable, k: KmsKeyRecord): Promise<void> {
    try {
      await q`
        INSERT INTO kms_keys (id, description, enabled, created_at, versions)
        VALUES (${k.id}, ${k.description}, ${k.enabled}, ${k.createdAt},
          ${JSON.stringify(k.versions)})`;
    } catch (err) {
      if (uniqueViolation(err) !== undefined) throw new DuplicateError("id");
      throw err;
    }
  }

  /** Replaces the state and versions of an existing key; false when there is none. */
  async update(q: Queryable, k: KmsKeyRecord): Promise<boolean> {
    const result = await q`
      UPDATE kms_keys SET description = ${k.description}, enabled = ${k.enabled},
        versions = ${JSON.stringify(k.versions)}
      WHERE id = ${k.id}`;
    return result.count > 0;
  }
}
