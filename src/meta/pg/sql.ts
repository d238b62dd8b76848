// What the PostgreSQL store's modules run their statements on: the pool, or the handle of a
// transaction (`sql.begin`) so a module's writes join the transaction of the change they belong
// to. Statements that must hold a lock until commit take a transaction handle only.
import type postgres from "postgres";

export type Queryable = postgres.Sql | postgres.TransactionSql;
export type Tx = postgres.TransactionSql;

/** A BIGINT column's value as a number (postgres.js returns int8 as a string by default). */
export function num(v: unknown): number {
  return typeof v === "number" ? v : Number(v);
}

/** A NULL column as undefined. */
export function opt<T>(v: T | null): T | undefined {
  return v === null ? undefined : v;
}

/** A unique constraint's name when `err` is its violation (SQLSTATE 23505). */
export function uniqueViolation(err: unknown): string | undefined {
  const e = err as { code?: string; constraint_name?: string };
  return e?.code === "23505" ? e.constraint_name ?? "" : undefined;
}
