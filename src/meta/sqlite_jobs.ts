// Transformation jobs in SQLite (src/transform/): rows inserted with the write that matched a
// rule (same transaction) or by the API, claimed one at a time by the workers.
import type { SQLInputValue, StatementSync } from "node:sqlite";
import type { JobOutcome, JobRecord, JobState, NewJob } from "./store.ts";

type Prepare = (sql: string) => StatementSync;
type Row = Record<string, SQLInputValue>;

function opt<T>(value: SQLInputValue): T | undefined {
  return value === null ? undefined : value as T;
}

function toJob(r: Row): JobRecord {
  return {
    seq: r.seq as number,
    id: r.id as string,
    bucket: r.bucket as string,
    key: r.key as string,
    versionId: opt(r.version_id),
    spec: r.spec as string,
    rule: opt(r.rule),
    requester: r.requester as string,
    createdAt: r.created_at as number,
    state: r.state as JobState,
    attempts: r.attempts as number,
    runAt: r.run_at as number,
    updatedAt: r.updated_at as number,
    error: opt(r.error),
    outputBucket: opt(r.output_bucket),
    outputKey: opt(r.output_key),
    outputVersionId: opt(r.output_version_id),
  };
}

export class SqliteJobs {
  constructor(readonly stmt: Prepare) {}

  /** Inserts a queued job; must run inside the caller's transaction. */
  insert(j: NewJob): void {
    this.stmt(
      "INSERT INTO transform_jobs (id, bucket, key, version_id, spec, rule, requester, " +
        "created_at, state, attempts, run_at, updated_at) " +
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', 0, ?, ?)",
    ).run(
      j.id,
      j.bucket,
      j.key,
      j.versionId ?? null,
      j.spec,
      j.rule ?? null,
      j.requester,
      j.createdAt,
      j.createdAt,
      j.createdAt,
    );
  }

  get(id: string): JobRecord | undefined {
    const row = this.stmt("SELECT * FROM transform_jobs WHERE id = ?").get(id) as Row | undefined;
    return row ? toJob(row) : undefined;
  }

  list(q: { bucket?: string; state?: JobState; after?: number; limit: number }): JobRecord[] {
    const where = ["seq > ?"];
    const args: SQLInputValue[] = [q.after ?? 0];
    if (q.bucket !== undefined) {
      where.push("bucket = ?");
      args.push(q.bucket);
    }
    if (q.state !== undefined) {
      where.push("state = ?");
      args.push(q.state);
    }
    const rows = this.stmt(
      `SELECT * FROM transform_jobs WHERE ${where.join(" AND ")} ORDER BY seq LIMIT ?`,
    ).all(...args, q.limit);
    return (rows as Row[]).map(toJob);
  }

  /** Whether a job is due (a read: idle workers look without taking the write lock). */
  due(now: number): boolean {
    return this.stmt(
      "SELECT 1 FROM transform_jobs WHERE state = 'queued' AND run_at <= ? LIMIT 1",
    ).get(now) !== undefined;
  }

  /** Must run inside a transaction: the select and the update are one step. */
  claim(now: number): JobRecord | undefined {
    const row = this.stmt(
      "SELECT seq FROM transform_jobs WHERE state = 'queued' AND run_at <= ? " +
        "ORDER BY run_at, seq LIMIT 1",
    ).get(now) as Row | undefined;
    if (!row) return undefined;
    this.stmt(
      "UPDATE transform_jobs SET state = 'running', attempts = attempts + 1, updated_at = ? " +
        "WHERE seq = ?",
    ).run(now, row.seq);
    return toJob(this.stmt("SELECT * FROM transform_jobs WHERE seq = ?").get(row.seq) as Row);
  }

  finish(id: string, o: JobOutcome, now: number): void {
    if (o.state === "done") {
      this.stmt(
        "UPDATE transform_jobs SET state = 'done', error = NULL, output_bucket = ?, " +
          "output_key = ?, output_version_id = ?, updated_at = ? WHERE id = ?",
      ).run(o.outputBucket, o.outputKey, o.outputVersionId, now, id);
    } else {
      this.stmt(
        "UPDATE transform_jobs SET state = ?, error = ?, run_at = ?, updated_at = ? WHERE id = ?",
      ).run(o.state, o.error, o.state === "queued" ? o.runAt : now, now, id);
    }
  }

  prune(before: number): number {
    return Number(
      this.stmt(
        "DELETE FROM transform_jobs WHERE state IN ('done', 'failed') AND updated_at < ?",
      ).run(before).changes,
    );
  }

  requeueRunning(now: number): number {
    return Number(
      this.stmt(
        "UPDATE transform_jobs SET state = 'queued', run_at = ?, updated_at = ? " +
          "WHERE state = 'running'",
      ).run(now, now).changes,
    );
  }
}
