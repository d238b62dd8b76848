// Users and bearer tokens in SQLite (part of SqliteMetaStore).
import type { SQLInputValue, StatementSync } from "node:sqlite";
import { DuplicateError, type TokenRecord, type UserRecord } from "./store.ts";

type Row = Record<string, SQLInputValue>;

export function toUser(row: Row): UserRecord {
  return {
    id: row.id as string,
    name: row.name as string,
    description: row.description as string,
    email: row.email as string,
    accessKey: row.access_key as string,
    sealedSecret: row.sealed_secret as string,
    enabled: row.enabled === 1,
    createdAt: row.created_at as number,
    keyCreatedAt: row.key_created_at as number,
    bucketAccess: JSON.parse(row.bucket_access as string),
  };
}

export function toToken(row: Row): TokenRecord {
  return {
    hash: row.hash as string,
    userId: row.user_id as string,
    createdAt: row.created_at as number,
    expiresAt: row.expires_at as number,
    ...(row.access_key !== null && row.access_key !== undefined
      ? { accessKey: row.access_key as string }
      : {}),
  };
}

export class SqliteUsers {
  constructor(
    readonly stmt: (sql: string) => StatementSync,
    readonly tx: <T>(fn: () => T) => T,
  ) {}

  #checkUnique(user: UserRecord): void {
    const byName = this.stmt("SELECT id FROM users WHERE name = ?").get(user.name) as
      | Row
      | undefined;
    if (byName && byName.id !== user.id) throw new DuplicateError("name");
    const byKey = this.stmt("SELECT id FROM users WHERE access_key = ?").get(user.accessKey) as
      | Row
      | undefined;
    if (byKey && byKey.id !== user.id) throw new DuplicateError("access_key");
  }

  create(user: UserRecord): void {
    this.tx(() => {
      this.#checkUnique(user);
      this.stmt(
        "INSERT INTO users (id, name, description, email, access_key, sealed_secret, enabled, " +
          "created_at, key_created_at, bucket_access) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      ).run(
        user.id,
        user.name,
        user.description,
        user.email,
        user.accessKey,
        user.sealedSecret,
        user.enabled ? 1 : 0,
        user.createdAt,
        user.keyCreatedAt,
        JSON.stringify(user.bucketAccess),
      );
    });
  }

  get(
    by: { accessKey: string } | { id: string } | { name: string },
  ): Promise<UserRecord | undefined> {
    const [column, value] = "accessKey" in by
      ? ["access_key", by.accessKey]
      : "id" in by
      ? ["id", by.id]
      : ["name", by.name];
    const row = this.stmt(`SELECT * FROM users WHERE ${column} = ?`).get(value) as Row | undefined;
    return Promise.resolve(row ? toUser(row) : undefined);
  }

  list(): Promise<UserRecord[]> {
    return Promise.resolve(
      (this.stmt("SELECT * FROM users ORDER BY name").all() as Row[]).map(toUser),
    );
  }

  update(user: UserRecord): boolean {
    return this.tx(() => {
      this.#checkUnique(user);
      const result = this.stmt(
        "UPDATE users SET name = ?, description = ?, email = ?, access_key = ?, sealed_secret = ?, " +
          "enabled = ?, key_created_at = ?, bucket_access = ? WHERE id = ?",
      ).run(
        user.name,
        user.description,
        user.email,
        user.accessKey,
        user.sealedSecret,
        user.enabled ? 1 : 0,
        user.keyCreatedAt,
        JSON.stringify(user.bucketAccess),
        user.id,
      );
      return result.changes === 1;
    });
  }

  delete(id: string): boolean {
    return this.tx(() => {
      this.stmt("DELETE FROM tokens WHERE user_id = ?").run(id);
      return this.stmt("DELETE FROM users WHERE id = ?").run(id).changes === 1;
    });
  }

  createToken(token: TokenRecord): void {
    this.stmt("DELETE FROM tokens WHERE expires_at < ?").run(Date.now());
    this.stmt(
      "INSERT INTO tokens (hash, user_id, created_at, expires_at, access_key) " +
        "VALUES (?, ?, ?, ?, ?)",
    ).run(token.hash, token.userId, token.createdAt, token.expiresAt, token.accessKey ?? null);
  }

  getToken(hash: string): Promise<TokenRecord | undefined> {
    const row = this.stmt("SELECT * FROM tokens WHERE hash = ?").get(hash) as Row | undefined;
    return Promise.resolve(row ? toToken(row) : undefined);
  }

  deleteToken(hash: string): boolean {
    return this.stmt("DELETE FROM tokens WHERE hash = ?").run(hash).changes === 1;
  }

  deleteUserTokens(userId: string): void {
    this.stmt("DELETE FROM tokens WHERE user_id = ?").run(userId);
  }
}
