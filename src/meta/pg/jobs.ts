// Transformation jobs in PostgreSQL (src/transform/): rows inserted with the write that matched a
// rule (same transaction) or by the API; behaves as src/meta/sqlite_jobs.ts. Workers on several
// nodes claim with FOR UPDATE SKIP LOCKED, so no job runs twice at once.
import type { JobOutcome, JobRecord, JobState, NewJob } from "../store.ts";
import { num, opt, type Queryable } from "./sql.ts";

export const JOBS_DDL = `
  CREATE TABLE transform_jobs (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT COLLATE "C" NOT NULL UNIQUE,
    bucket TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    version_id TEXT,
    spec TEXT NOT NULL,
    rule TEXT,
    requester TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    run_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    error TEXT,
    output_bucket TEXT,
    output_key TEXT,
    output_version_id TEXT
  );
  CREATE INDEX transform_jobs_due ON transform_jobs (state, run_at, seq);
  CREATE INDEX transform_jobs_by_bucket ON transform_jobs (bucket, seq);
`;

type Row = Record<string, unknown>;

function toJob(r: Row): JobRecord {
  return {
    seq: num(r.seq),
    id: r.id as string,
    bucket: r.bucket as string,
    key: r.key as string,
    versionId: opt(r.version_id as string | null),
    spec: r.spec as string,
    rule: opt(r.rule as string | null),
    requester: r.requester as string,
    createdAt: num(r.created_at),
    state: r.state as JobState,
    attempts: num(r.attempts),
    runAt: num(r.run_at),
    updatedAt: num(r.updated_at),
    error: opt(r.error as string | null),
    outputBucket: opt(r.output_bucket as string | null),
    outputKey: opt(r.output_key as string | null),
    outputVersionId: opt(r.output_version_id as string | null),
  };
}

export class PgJobs {
  /** Inserts a queued job; inside the transaction of the write that enqueues it. */
  async insert(q: Queryable, j: NewJob): Promise<void> {
    await q`
      INSERT INTO transform_jobs (id, bucket, key, version_id, spec, rule, requester, created_at,
        state, attempts, run_at, updated_at)
      VALUES (${j.id}, ${j.bucket}, ${j.key}, ${j.versionId ?? null}, ${j.spec},
        ${j.rule ?? null}, ${j.requester}, ${j.createdAt}, 'queued', 0, ${j.createdAt},
        ${j.createdAt})`;
  }

  async get(q: Queryable, id: string): Promise<JobRecord | undefined> {
    const [row] = await q`SELECT * FROM transform_jobs WHERE id = ${id}`;
    return row ? toJob(row) : undefined;
  }

  async list(
    q: Queryable,
    f: { bucket?: string; state?: JobState; after?: number; limit: number },
  ): Promise<JobRecord[]> {
    const none = q``;
    const rows = await q`
      SELECT * FROM transform_jobs WHERE seq > ${f.after ?? 0}
        ${f.bucket !== undefined ? q`AND bucket = ${f.bucket}` : none}
        ${f.state !== undefined ? q`AND state = ${f.state}` : none}
      ORDER BY seq LIMIT ${f.limit}`;
    return rows.map(toJob);
  }

  /** Takes the oldest due queued job, running with one attempt more; one statement. */
  async claim(q: Queryable, now: number): Promise<JobRecord | undefined> {
    const [row] = await q`
      UPDATE transform_jobs SET state = 'running', attempts = attempts + 1, updated_at = ${now}
      WHERE seq = (
        SELECT seq FROM transform_jobs WHERE state = 'queued' AND run_at <= ${now}
        ORDER BY run_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED
      )
      RETURNING *`;
    return row ? toJob(row) : undefined;
  }

  async finish(q: Queryable, id: string, o: JobOutcome, now: number): Promise<void> {
    if (o.state === "done") {
      await q`
        UPDATE transform_jobs SET state = 'done', error = NULL, output_bucket = ${o.outputBucket},
          output_key = ${o.outputKey}, output_version_id = ${o.outputVersionId},
          updated_at = ${now}
        WHERE id = ${id}`;
      return;
    }
    const runAt = o.state === "queued" ? o.runAt : now;
    await q`
      UPDATE transform_jobs SET state = ${o.state}, error = ${o.error}, run_at = ${runAt},
        updated_at = ${now}
      WHERE id = ${id}`;
  }

  async prune(q: Queryable, before: number): Promise<number> {
    const result = await q`
      DELETE FROM transform_jobs WHERE state IN ('done', 'failed') AND updated_at < ${before}`;
    return result.count;
  }

  async requeueRunning(q: Queryable, now: number): Promise<number> {
    const result = await q`
      UPDATE transform_jobs SET state = 'queued', run_at = ${now}, updated_at = ${now}
      WHERE state = 'running'`;
    return result.count;
  }
}
