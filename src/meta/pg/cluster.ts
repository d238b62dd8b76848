// The cluster's bucket-change queue in PostgreSQL (see ReplicationQueue in store.ts); behaves as
// src/meta/sqlite_cluster.ts. Writes run inside the caller's transaction. Each enqueue takes a
// transaction-scoped advisory lock, so queue positions commit in order: a sender that read up to
// seq N never misses a smaller seq committed later.
import { PgQueueCursors } from "./queue_cursors.ts";
import type {
  BucketChange,
  BucketConfigKind,
  BucketState,
  ChangeStamp,
  Stamped,
} from "../store.ts";
import { type BucketItem, newer } from "../sqlite_cluster.ts";
import { num, type Queryable, type Tx } from "./sql.ts";

export const CLUSTER_DDL = `
  CREATE TABLE cluster_changes (
    bucket TEXT COLLATE "C" PRIMARY KEY,
    seq BIGINT NOT NULL,
    queued_at BIGINT NOT NULL
  );
  CREATE UNIQUE INDEX cluster_changes_by_seq ON cluster_changes (seq);
  CREATE TABLE cluster_stamps (
    bucket TEXT COLLATE "C" NOT NULL,
    item TEXT NOT NULL,
    stamp_ms BIGINT NOT NULL,
    stamp_node TEXT NOT NULL,
    PRIMARY KEY (bucket, item)
  );
  CREATE TABLE cluster_cursors (
    node TEXT PRIMARY KEY,
    seq BIGINT NOT NULL
  );
`;

/** The advisory lock that orders queue positions (an arbitrary constant of this store). */
const QUEUE_LOCK = 0x53540c1;
/** The class of the per-name advisory locks (two-key form: class, hash of the bucket name). */
const NAME_LOCK = 0x5342;

type Row = Record<string, unknown>;

export class PgCluster extends PgQueueCursors {
  /** `node`: this node's id, the stamp of its own changes. */
  constructor(readonly node: string) {
    super("cluster_changes", "cluster_cursors");
  }

  async #stamps(q: Queryable, bucket: string): Promise<Map<string, ChangeStamp>> {
    const rows = await q`
      SELECT item, stamp_ms, stamp_node FROM cluster_stamps WHERE bucket = ${bucket}`;
    return new Map(rows.map((r) => [r.item as string, {
      ms: num(r.stamp_ms),
      node: r.stamp_node as string,
    }]));
  }

  async #stampItem(q: Queryable, bucket: string, item: string, stamp: ChangeStamp) {
    await q`
      INSERT INTO cluster_stamps (bucket, item, stamp_ms, stamp_node)
      VALUES (${bucket}, ${item}, ${stamp.ms}, ${stamp.node})
      ON CONFLICT (bucket, item) DO UPDATE SET stamp_ms = excluded.stamp_ms,
        stamp_node = excluded.stamp_node`;
  }

  /**
   * Serializes the creation of a bucket name here with merges of that name's state: a creation
   * holds no row lock a merge could wait for until its insert, and a merge that read the local
   * stamps before the creation committed would then take the new row over with an older state.
   */
  async lockName(tx: Tx, bucket: string): Promise<void> {
    await tx`SELECT pg_advisory_xact_lock(${NAME_LOCK}, hashtext(${bucket}))`;
  }

  /** Moves the bucket's row to the end of the queue. */
  async #enqueue(tx: Tx, bucket: string): Promise<void> {
    await tx`SELECT pg_advisory_xact_lock(${QUEUE_LOCK})`;
    await tx`
      INSERT INTO cluster_changes (bucket, seq, queued_at)
      VALUES (${bucket}, (SELECT coalesce(max(seq), 0) + 1 FROM cluster_changes), ${Date.now()})
      ON CONFLICT (bucket) DO UPDATE SET seq = excluded.seq, queued_at = excluded.queued_at`;
  }

  /** A change made here; its stamp comes after every earlier change of the bucket. */
  async changed(tx: Tx, bucket: string, items: BucketItem[]): Promise<void> {
    const stamps = [...(await this.#stamps(tx, bucket)).values()];
    const latest = Math.max(0, ...stamps.map((s) => s.ms));
    const stamp = { ms: Math.max(Date.now(), latest + 1), node: this.node };
    for (const item of items) await this.#stampItem(tx, bucket, item, stamp);
    await this.#enqueue(tx, bucket);
  }

  /** The bucket's stamped parts with their values now. */
  async #state(q: Queryable, bucket: string): Promise<BucketState> {
    const [row] = await q`SELECT * FROM buckets WHERE name = ${bucket}`;
    const docs = new Map(
      (await q`SELECT kind, value FROM bucket_configs WHERE bucket = ${bucket}`)
        .map((d) => [d.kind as string, d.value as string]),
    );
    const state: BucketState = { bucket, configs: {} };
    for (const [item, stamp] of await this.#stamps(q, bucket)) {
      if (item === "record") {
        state.record = {
          stamp,
          value: row
            ? { owner: row.owner as string, createdAt: num(row.created_at), region: row.region }
            : null,
        };
      } else if (!row) continue;
      else if (item === "versioning") {
        state.versioning = { stamp, value: row.versioning as "" | "Enabled" | "Suspended" };
      } else if (item === "objectLock") {
        state.objectLock = { stamp, value: Boolean(row.object_lock) };
      } else {
        const kind = item.slice("config:".length) as BucketConfigKind;
        state.configs[kind] = { stamp, value: docs.get(kind) ?? null };
      }
    }
    return state;
  }

  /** Stamps and queues every bucket with no stamp yet, its creation time as the stamp. */
  async queueUnstamped(tx: Tx): Promise<number> {
    const rows = await tx`
      SELECT name, created_at FROM buckets WHERE NOT EXISTS (SELECT 1 FROM cluster_stamps
        WHERE cluster_stamps.bucket = buckets.name AND item = 'record') ORDER BY name`;
    for (const row of rows) {
      const bucket = row.name as string;
      const stamp = { ms: num(row.created_at), node: this.node };
      const kinds = await tx`SELECT kind FROM bucket_configs WHERE bucket = ${bucket}`;
      const items = ["record", "versioning", "objectLock", ...kinds.map((k) => `config:${k.kind}`)];
      for (const item of items) await this.#stampItem(tx, bucket, item, stamp);
      await this.#enqueue(tx, bucket);
    }
    return rows.length;
  }

  async changes(q: Queryable, after: number, limit: number): Promise<BucketChange[]> {
    const rows = await q`
      SELECT * FROM cluster_changes WHERE seq > ${after} ORDER BY seq LIMIT ${limit}`;
    const out: BucketChange[] = [];
    for (const row of rows) {
      out.push({
        ...await this.#state(q, row.bucket as string),
        seq: num(row.seq),
        queuedAt: num(row.queued_at),
      });
    }
    return out;
  }

  /** Merges another node's state part by part, newer stamps winning; in the caller's transaction. */
  async apply(tx: Tx, s: BucketState): Promise<"applied" | "stale" | "kept"> {
    // Every local change of a bucket locks its row first (FOR UPDATE, FOR SHARE or an UPDATE),
    // a creation its name: waiting for them here means the stamps below include a change
    // committing meanwhile, which a stamp read before it would have let this older state
    // overwrite.
    await this.lockName(tx, s.bucket);
    await tx`SELECT 1 FROM buckets WHERE name = ${s.bucket} FOR UPDATE`;
    const local = await this.#stamps(tx, s.bucket);
    let applied = false;
    if (s.record && newer(s.record.stamp, local.get("record"))) {
      if (s.record.value === null) {
        const [busy] = await tx`
          SELECT EXISTS (SELECT 1 FROM versions WHERE bucket = ${s.bucket})
            OR EXISTS (SELECT 1 FROM uploads WHERE bucket = ${s.bucket}) AS busy`;
        if (busy.busy) return "kept";
        await tx`DELETE FROM bucket_configs WHERE bucket = ${s.bucket}`;
        await tx`DELETE FROM buckets WHERE name = ${s.bucket}`;
      } else {
        const r = s.record.value;
        await tx`
          INSERT INTO buckets (name, owner, created_at, region)
          VALUES (${s.bucket}, ${r.owner}, ${r.createdAt}, ${r.region})
          ON CONFLICT (name) DO UPDATE SET owner = excluded.owner,
            created_at = excluded.created_at, region = excluded.region`;
      }
      await this.#stampItem(tx, s.bucket, "record", s.record.stamp);
      applied = true;
    }
    // The other parts only apply to a bucket that exists here.
    const [exists] = await tx`SELECT 1 FROM buckets WHERE name = ${s.bucket}`;
    if (!exists) {
      if (applied) await this.#enqueue(tx, s.bucket);
      return applied ? "applied" : "stale";
    }
    const take = async <T>(
      item: string,
      part: Stamped<T> | undefined,
      set: (value: T) => Promise<unknown>,
    ) => {
      if (!part || !newer(part.stamp, local.get(item))) return;
      await set(part.value);
      await this.#stampItem(tx, s.bucket, item, part.stamp);
      applied = true;
    };
    await take(
      "versioning",
      s.versioning,
      (v) => tx`UPDATE buckets SET versioning = ${v} WHERE name = ${s.bucket}`,
    );
    await take(
      "objectLock",
      s.objectLock,
      (v) => tx`UPDATE buckets SET object_lock = ${v} WHERE name = ${s.bucket}`,
    );
    for (const [kind, part] of Object.entries(s.configs)) {
      await take(
        `config:${kind}`,
        part,
        (v) =>
          v === null
            ? tx`DELETE FROM bucket_configs WHERE bucket = ${s.bucket} AND kind = ${kind}`
            : tx`
            INSERT INTO bucket_configs (bucket, kind, value) VALUES (${s.bucket}, ${kind}, ${v})
            ON CONFLICT (bucket, kind) DO UPDATE SET value = excluded.value`,
      );
    }
    if (applied) await this.#enqueue(tx, s.bucket);
    return applied ? "applied" : "stale";
  }

  async prune(q: Queryable, nodes: string[]): Promise<number> {
    const upTo = await this.received(q, nodes);
    if (upTo === 0) return 0;
    const result = await q`
      DELETE FROM cluster_changes c WHERE c.seq <= ${upTo}
        AND c.seq < (SELECT max(seq) FROM cluster_changes)
        AND NOT EXISTS (SELECT 1 FROM buckets b WHERE b.name = c.bucket)`;
    return result.count;
  }
}
