// The connection pool of the PostgreSQL metadata store (postgres.js). The URL's query carries
// sslmode (disable, prefer, require, verify-full) as libpq does; 64-bit integers (sizes, epoch
// milliseconds, sequence numbers) come back as JavaScript numbers, all below 2^53.
import postgres from "postgres";

/** Seconds a new connection may take before the request that needed it fails (503). */
const CONNECT_TIMEOUT_S = 5;

export type Sql = postgres.Sql;
/** A pool or a transaction: what queries run on. */
export type Q = postgres.Sql | postgres.TransactionSql;

export function openPool(url: string, size: number): Sql {
  return postgres(url, {
    max: size,
    connect_timeout: CONNECT_TIMEOUT_S,
    // Idle connections are closed: a PostgreSQL restart leaves no dead ones behind for long.
    idle_timeout: 60,
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
