// How the PostgreSQL store runs statements: transactions retried on serialization failures and
// deadlocks (concurrent writers on several nodes), and connection failures turned into
// MetaUnavailableError (503 ServiceUnavailable) so a request never half-commits and the pool
// reconnects by itself when PostgreSQL is back.
import { MetaUnavailableError } from "../store.ts";
import type { Q, Sql } from "./connect.ts";

/** Attempts of a transaction that PostgreSQL aborted for a conflict (40001, 40P01). */
const CONFLICT_ATTEMPTS = 8;

/** Client-side codes of postgres.js and the socket layer that mean "no connection". */
const CONNECTION_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/** Whether `err` says PostgreSQL cannot be reached or is shutting down / starting up. */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof MetaUnavailableError) return true;
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== "string") {
    return err instanceof Deno.errors.ConnectionRefused ||
      err instanceof Deno.errors.ConnectionReset;
  }
  // SQLSTATE class 08: connection exception; 57P01-57P03: shutdown, crash, starting up;
  // class 53: insufficient resources (too many connections, disk full).
  return CONNECTION_CODES.has(code) || code.startsWith("08") || /^57P0[123]$/.test(code) ||
    code.startsWith("53");
}

function unavailable(err: unknown): unknown {
  if (!isUnavailable(err) || err instanceof MetaUnavailableError) return err;
  const detail = err instanceof Error ? err.message : String(err);
  return new MetaUnavailableError(`The metadata database is unavailable: ${detail}`, {
    cause: err,
  });
}

function isConflict(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === "40001" || code === "40P01";
}

/** A read outside any transaction. */
export async function read<T>(sql: Sql, fn: (q: Q) => Promise<T>): Promise<T> {
  try {
    return await fn(sql);
  } catch (err) {
    throw unavailable(err);
  }
}

/**
 * A read of several statements that must see one moment: a read-only transaction at REPEATABLE
 * READ, whose statements all see the snapshot its first one took. (Outside a transaction each
 * statement sees the changes committed before it, so a row and its stamps read one after the other
 * can come from either side of another transaction's commit.)
 */
export async function snapshot<T>(sql: Sql, fn: (q: Q) => Promise<T>): Promise<T> {
  try {
    return await sql.begin("isolation level repeatable read read only", (tx) => fn(tx)) as T;
  } catch (err) {
    throw unavailable(err);
  }
}

/** `fn` in one transaction, run again (from scratch) when PostgreSQL aborts it for a conflict. */
export async function transaction<T>(sql: Sql, fn: (tx: Q) => Promise<T>): Promise<T> {
  for (let attempt = 1;; attempt++) {
    try {
      return await sql.begin((tx) => fn(tx)) as T;
    } catch (err) {
      if (isConflict(err) && attempt < CONFLICT_ATTEMPTS) {
        await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
        continue;
      }
      throw unavailable(err);
    }
  }
}
