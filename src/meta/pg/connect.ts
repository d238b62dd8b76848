// The connection pool of the PostgreSQL metadata store (postgres.js). The URL's query carries
// sslmode (disable, prefer, require, verify-full) as libpq does; 64-bit integers (sizes, epoch
// milliseconds, sequence numbers) come back as JavaScript numbers, all below 2^53.
import postgres from "postgres";
import { log } from "../../log.ts";

/** Seconds a new connection may take before the request that needed it fails (503). */
const CONNECT_TIMEOUT_S = 5;

export type Sql = postgres.Sql;
/** A pool or a transaction: what queries run on. */
export type Q = postgres.Sql | postgres.TransactionSql;

/**
 * postgres.js 3.4.9 can write a buffered message from a setImmediate callback after the
 * connection closed (porsager/postgres#1154, #1208; denoland/deno#34667): a TypeError when its
 * socket is already gone, or Deno's node:net "This socket has been ended by the other party" when
 * PostgreSQL ended it first (seen once when a test stopped PostgreSQL during concurrent writes).
 * Either is thrown from the timer, outside any query (surfacing as an uncaught error or an
 * unhandled rejection), and would end the process. The queries of that connection are rejected
 * (CONNECTION_CLOSED) as it closes, so the write is moot: these errors, and only these, are
 * logged and the server goes on.
 */
export function isMootWrite(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const moot = (err instanceof TypeError && err.message.includes("reading 'write'")) ||
    err.message === "This socket has been ended by the other party";
  return moot && /nextWrite[^\n]*postgres/.test(err.stack ?? "");
}

function ignoreWriteAfterClose(): void {
  if (guarded) return;
  guarded = true;
  const ignore = (event: Event, err: unknown) => {
    if (!isMootWrite(err)) return;
    event.preventDefault();
    log("warn", "A PostgreSQL connection closed while a write to it was queued (ignored)", {
      error: String(err),
    });
  };
  globalThis.addEventListener("error", (event) => ignore(event, event.error));
  globalThis.addEventListener("unhandledrejection", (event) => ignore(event, event.reason));
}
let guarded = false;

export function openPool(url: string, size: number): Sql {
  ignoreWriteAfterClose();
  return postgres(url, {
    max: size,
    connect_timeout: CONNECT_TIMEOUT_S,
    // Idle connections are closed: a PostgreSQL restart leaves no dead ones behind for long.
    idle_timeout: 60,
    // Seconds before the next connection attempt after failed ones (postgres.js grows this to
    // 20 s): kept short, so a request during an outage fails within about a second and the
    // server is back within a second of PostgreSQL.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
    onnotice: () => {},
    types: {
      bigint: {
        to: 20,
        from: [20],
        serialize: (x: number) => String(x),
        parse: (x: string) => Number(x),
      },
    },
    connection: { application_name: "store" },
  });
}
