// Sends a state-based queue (buckets, users, tokens and shares) to every node that is alive, from
// that node's own cursor, in batches of at most 100 changes or about 1 MiB, retried with backoff;
// deleted or expired entries every node has received are pruned every `pruneMs`.
import { backlogOf } from "./backoff.ts";
import type { Membership } from "./membership.ts";
import { NodeRounds } from "./node_rounds.ts";
import type { Deliver } from "./replication.ts";

/** Changes read per batch, and the JSON bytes a batch grows to before it is sent. */
const BATCH_CHANGES = 100;
const BATCH_BYTES = 1024 * 1024;

/** The queue a sender reads: its changes in order, and a cursor per node. */
export interface SentQueue<C extends { seq: number }> {
  /** The message type, e.g. "users". */
  type: string;
  /** What the log calls it, e.g. "User replication". */
  what: string;
  changes(after: number, limit: number): Promise<C[]>;
  cursor(node: string): Promise<number>;
  setCursor(node: string, seq: number): Promise<void>;
  backlog(after: number): Promise<{ depth: number; oldest?: number }>;
  prune(nodes: string[]): Promise<number>;
  /** A change as it goes over the wire; undefined: it stays here (logged by `wire`). */
  wire(change: C): unknown;
}

export class QueueSender<C extends { seq: number }> extends NodeRounds {
  constructor(
    readonly queue: SentQueue<C>,
    membership: Membership,
    readonly deliver: Deliver,
    pollMs = 100,
    pruneMs = 10_000,
  ) {
    super(queue.what, membership, pollMs, pruneMs);
  }

  protected async prune(nodes: string[]): Promise<void> {
    for (const node of nodes) await this.queue.setCursor(node, 0);
    await this.queue.prune(nodes);
  }

  async backlog(node: string): Promise<{ depth: number; lagMs: number }> {
    return backlogOf(await this.queue.backlog(await this.queue.cursor(node)));
  }

  protected async catchUp(node: string, url: string): Promise<void> {
    while (!this.stopped) {
      const cursor = await this.queue.cursor(node);
      const pending = await this.queue.changes(cursor, BATCH_CHANGES);
      if (pending.length === 0) break;
      // Up to the byte budget (at least one change), well under the receiver's message limit.
      const changes: unknown[] = [];
      let bytes = 0;
      let taken = 0;
      for (const c of pending) {
        const wire = this.queue.wire(c);
        if (wire !== undefined) {
          bytes += JSON.stringify(wire).length;
          if (bytes > BATCH_BYTES && changes.length > 0) break;
          changes.push(wire);
        }
        taken++;
      }
      if (changes.length > 0) await this.deliver(url, { type: this.queue.type, changes });
      await this.queue.setCursor(node, pending[taken - 1].seq);
      this.backoff.succeeded(node);
    }
  }
}
