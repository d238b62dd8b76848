// A WHERE clause built from optional filters: each given value adds its condition and argument.
import type { SQLInputValue } from "node:sqlite";

export class Where {
  readonly #conditions: string[] = [];
  readonly args: SQLInputValue[] = [];

  /** `sql` holds one `?` per value; nothing is added when the first value is undefined. */
  add(sql: string, ...values: (SQLInputValue | undefined)[]): this {
    if (values[0] === undefined) return this;
    this.#conditions.push(sql);
    this.args.push(...(values as SQLInputValue[]));
    return this;
  }

  get sql(): string {
    return this.#conditions.join(" AND ");
  }
}
