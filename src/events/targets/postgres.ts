// PostgreSQL target: each message becomes one row of a table (created when missing) holding the
// object key, the event name, the event time and the JSON record; send resolves once the INSERT
// has committed.
// The client library is loaded with the first connection: a server without such a target
// never loads it (README, Memory).
import type postgres from "postgres";
import type { EventMessage, NotificationTarget } from "../target.ts";
import { DEFAULT_LIMITS, LazyConnection, type TimeLimits } from "./connection.ts";

export interface PostgresSettings {
  id: string;
  /** postgres:// or postgresql:// with user, password, host, port and database. */
  url: string;
  /** `table` or `schema.table`: lower-case letters, digits and `_`, not starting with a digit. */
  table: string;
  limits?: TimeLimits;
}

const IDENTIFIER = "[a-z_][a-z0-9_]{0,62}";
const TABLE_NAME = new RegExp(`^${IDENTIFIER}(\\.${IDENTIFIER})?$`);

/** Whether a TABLE setting is an identifier this target accepts (see PostgresSettings.table). */
export function isValidTableName(name: string): boolean {
  return TABLE_NAME.test(name);
}

type Sql = ReturnType<typeof postgres>;

export class PostgresTarget implements NotificationTarget {
  readonly kind = "postgres" as const;
  readonly id: string;
  #table: string;
  #connection: LazyConnection<Sql>;

  constructor(settings: PostgresSettings) {
    const url = new URL(settings.url);
    if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
      throw new Error(`A PostgreSQL URL must be postgres or postgresql, got ${url.protocol}`);
    }
    if (!isValidTableName(settings.table)) {
      throw new Error(
        "A PostgreSQL table is lower-case letters, digits and _ (optionally schema.table)",
      );
    }
    this.id = settings.id;
    this.#table = settings.table;
    const limits = settings.limits ?? DEFAULT_LIMITS;
    this.#connection = new LazyConnection(`PostgreSQL target ${settings.id}`, {
      open: async () => {
        const { default: postgres } = await import("postgres");
        const sql = postgres(settings.url, {
          max: 1,
          connect_timeout: Math.max(1, Math.ceil(limits.connectMs / 1000)),
          idle_timeout: 300,
          onnotice: () => {},
        });
        try {
          await this.#createTable(sql);
        } catch (err) {
          await sql.end({ timeout: 0 }).catch(() => {});
          throw err;
        }
        return sql;
      },
      release: async (sql) => {
        await sql.end({ timeout: 0 }).catch(() => {});
      },
    }, limits);
  }

  send(message: EventMessage): Promise<void> {
    const eventTime = eventTimeOf(message.body);
    return this.#connection.run(async (sql) => {
      await sql`
        INSERT INTO ${sql(this.#table)} (event_time, event_name, key, record)
        VALUES (${eventTime}, ${message.eventName}, ${message.key}, ${message.body}::text::jsonb)`;
    });
  }

  close(): Promise<void> {
    return this.#connection.close();
  }

  async #createTable(sql: Sql): Promise<void> {
    await sql`
      CREATE TABLE IF NOT EXISTS ${sql(this.#table)} (
        id bigserial PRIMARY KEY,
        event_time timestamptz NOT NULL,
        event_name text NOT NULL,
        key text NOT NULL,
        record jsonb NOT NULL
      )`;
  }
}

/** The first record's eventTime, or now when the body has none. */
function eventTimeOf(body: string): Date {
  try {
    const time = JSON.parse(body)?.Records?.[0]?.eventTime;
    const parsed = typeof time === "string" ? new Date(time) : undefined;
    if (parsed && !isNaN(parsed.getTime())) return parsed;
  } catch {
    // Not JSON: the row still records when it was delivered.
  }
  return new Date();
}
