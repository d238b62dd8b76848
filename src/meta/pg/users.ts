// Users and bearer tokens in PostgreSQL (part of the PostgreSQL MetaStore); behaves as
// src/meta/sqlite_users.ts.
import { DuplicateError, type TokenRecord, type UserRecord } from "../store.ts";
import { num, type Queryable, uniqueViolation } from "./sql.ts";

export const USERS_DDL = `
  CREATE TABLE users (
    id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL CONSTRAINT users_name_unique UNIQUE,
    description TEXT NOT NULL,
    email TEXT NOT NULL,
    access_key TEXT COLLATE "C" NOT NULL CONSTRAINT users_access_key_unique UNIQUE,
    sealed_secret TEXT NOT NULL,
    enabled BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    key_created_at BIGINT NOT NULL,
    bucket_access TEXT NOT NULL
  );
  -- Bearer tokens of the presigned-URL service, stored as SHA-256 of the token.
  CREATE TABLE tokens (
    hash TEXT COLLATE "C" PRIMARY KEY,
    user_id TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    access_key TEXT
  );
  CREATE INDEX tokens_by_user ON tokens (user_id);
  CREATE INDEX tokens_by_expiry ON tokens (expires_at);
`;

type Row = Record<string, unknown>;

export function toUser(row: Row): UserRecord {
  return {
    id: row.id as string,
    name: row.name as string,
    description: row.description as string,
    email: row.email as string,
    accessKey: row.access_key as string,
    sealedSecret: row.sealed_secret as string,
    enabled: row.enabled as boolean,
    createdAt: num(row.created_at),
    keyCreatedAt: num(row.key_created_at),
    bucketAccess: JSON.parse(row.bucket_access as string),
  };
}

export function toToken(row: Row): TokenRecord {
  return {
    hash: row.hash as string,
    userId: row.user_id as string,
    createdAt: num(row.created_at),
    expiresAt: num(row.expires_at),
    ...(row.access_key !== null && row.access_key !== undefined
      ? { accessKey: row.access_key as string }
      : {}),
  };
}

/** The field a unique violation is about, as DuplicateError names it. */
const DUPLICATE_FIELD: Record<string, string> = {
  users_name_unique: "name",
  users_access_key_unique: "access_key",
};

export class PgUsers {
  /**
   * Name first, then access key (as SQLite reports them); the unique constraints still catch a
   * writer on another node that commits between this check and the write.
   */
  async #checkUnique(q: Queryable, user: UserRecord): Promise<void> {
    const rows = await q`
      SELECT name = ${user.name} AS name_taken FROM users
      WHERE (name = ${user.name} OR access_key = ${user.accessKey}) AND id <> ${user.id}`;
    if (rows.some((r) => r.name_taken)) throw new DuplicateError("name");
    if (rows.length) throw new DuplicateError("access_key");
  }

  async #write<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const field = DUPLICATE_FIELD[uniqueViolation(err) ?? ""];
      throw field ? new DuplicateError(field) : err;
    }
  }

  /** Fails with DuplicateError when the name or access key is taken. */
  async create(q: Queryable, user: UserRecord): Promise<void> {
    await this.#checkUnique(q, user);
    await this.#write(() =>
      q`
      INSERT INTO users (id, name, description, email, access_key, sealed_secret, enabled,
        created_at, key_created_at, bucket_access)
      VALUES (${user.id}, ${user.name}, ${user.description}, ${user.email}, ${user.accessKey},
        ${user.sealedSecret}, ${user.enabled}, ${user.createdAt}, ${user.keyCreatedAt},
        ${JSON.stringify(user.bucketAccess)})`
    );
  }

  async get(
    q: Queryable,
    by: { accessKey: string } | { id: string } | { name: string },
  ): Promise<UserRecord | undefined> {
    const rows = "accessKey" in by
      ? await q`SELECT * FROM users WHERE access_key = ${by.accessKey}`
      : "id" in by
      ? await q`SELECT * FROM users WHERE id = ${by.id}`
      : await q`SELECT * FROM users WHERE name = ${by.name}`;
    return rows.length ? toUser(rows[0]) : undefined;
  }

  async list(q: Queryable): Promise<UserRecord[]> {
    return (await q`SELECT * FROM users ORDER BY name`).map(toUser);
  }

  /** Replaces the stored record (same id); false when the user does not exist. */
  async update(q: Queryable, user: UserRecord): Promise<boolean> {
    await this.#checkUnique(q, user);
    const result = await this.#write(() =>
      q`
      UPDATE users SET name = ${user.name}, description = ${user.description},
        email = ${user.email}, access_key = ${user.accessKey},
        sealed_secret = ${user.sealedSecret}, enabled = ${user.enabled},
        key_created_at = ${user.keyCreatedAt},
        bucket_access = ${JSON.stringify(user.bucketAccess)}
      WHERE id = ${user.id}`
    );
    return result.count === 1;
  }

  /** Removes the user and its tokens (one statement, atomic even on the pool). */
  async delete(q: Queryable, id: string): Promise<boolean> {
    const rows = await q`
      WITH t AS (DELETE FROM tokens WHERE user_id = ${id})
      DELETE FROM users WHERE id = ${id} RETURNING id`;
    return rows.length === 1;
  }

  /** Stores a token and drops the expired ones. */
  async createToken(q: Queryable, token: TokenRecord): Promise<void> {
    await q`DELETE FROM tokens WHERE expires_at < ${Date.now()}`;
    await q`
      INSERT INTO tokens (hash, user_id, created_at, expires_at, access_key)
      VALUES (${token.hash}, ${token.userId}, ${token.createdAt}, ${token.expiresAt},
        ${token.accessKey ?? null})`;
  }

  async getToken(q: Queryable, hash: string): Promise<TokenRecord | undefined> {
    const rows = await q`SELECT * FROM tokens WHERE hash = ${hash}`;
    return rows.length ? toToken(rows[0]) : undefined;
  }

  async deleteToken(q: Queryable, hash: string): Promise<boolean> {
    return (await q`DELETE FROM tokens WHERE hash = ${hash}`).count === 1;
  }

  async deleteUserTokens(q: Queryable, userId: string): Promise<void> {
    await q`DELETE FROM tokens WHERE user_id = ${userId}`;
  }
}
