// Sends a state-based queue (buckets, users, tokens and shares) to every node that is alive, from
// that node's own cursor, in batches of at most 100 changes or about 1 MiB, retried with backoff;
// deleted or expired entries every node has received are pruned every `pruneMs`.
import { log } from "../log.ts";
import { backlogOf, NodeBackoff } from "./backoff.ts";
import type { Membership } from "./membership.ts";
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
  /** A change as it goes over the wire. */
  wire(change: C): unknown;
}

export class QueueSender<C extends { seq: number }> {
  readonly #backoff: NodeBackoff;
  #busy = new Map<string, Promise<void>>();
  #timer?: ReturnType<typeof setTimeout>;
  #stopped = false;
  #nextPrune = 0;
  #pruning?: Promise<void>;
  /** Nodes nothing is sent to (those sharing this node's metadata database hold the rows). */
  skip: (node: string) => boolean = () => false;

  constructor(
    readonly queue: SentQueue<C>,
    readonly membership: Membership,
    readonly deliver: Deliver,
    readonly pollMs = 100,
    readonly pruneMs = 10_000,
  ) {
    this.#backoff = new NodeBackoff(queue.what);
  }

  start(): void {
    // The first pruning waits a round, so the member list has been learned after a restart.
    this.#nextPrune = Date.now() + this.pruneMs;
    const round = () => {
      if (this.#stopped) return;
      const now = Date.now();
      if (now >= this.#nextPrune && !this.#pruning) {
        this.#nextPrune = now + this.pruneMs;
        this.#pruning = this.#prune().finally(() => this.#pruning = undefined);
      }
      for (const m of this.membership.view(now)) {
        if (m.state !== "alive" || this.#busy.has(m.id) || this.skip(m.id)) continue;
        if (this.#backoff.waiting(m.id, now)) continue;
        this.#busy.set(m.id, this.#catchUp(m.id, m.url));
      }
      this.#timer = setTimeout(round, this.pollMs);
    };
    round();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await Promise.allSettled([...this.#busy.values(), this.#pruning]);
  }

  /** Each node known gets a cursor first (0), so one known once holds the queue back. */
  async #prune(): Promise<void> {
    try {
      const nodes = this.membership.view().map((m) => m.id);
      for (const node of nodes) await this.queue.setCursor(node, 0);
      await this.queue.prune(nodes);
    } catch (err) {
      log("warn", `${this.queue.what}: pruning the queue failed`, {
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  async backlog(node: string): Promise<{ depth: number; lagMs: number }> {
    return backlogOf(await this.queue.backlog(await this.queue.cursor(node)));
  }

  async #catchUp(node: string, url: string): Promise<void> {
    try {
      while (!this.#stopped) {
        const cursor = await this.queue.cursor(node);
        const pending = await this.queue.changes(cursor, BATCH_CHANGES);
        if (pending.length === 0) break;
        // Up to the byte budget (at least one change), well under the receiver's message limit.
        const changes: unknown[] = [];
        let bytes = 0;
        for (const c of pending) {
          const wire = this.queue.wire(c);
          bytes += JSON.stringify(wire).length;
          if (bytes > BATCH_BYTES && changes.length > 0) break;
          changes.push(wire);
        }
        await this.deliver(url, { type: this.queue.type, changes });
        await this.queue.setCursor(node, pending[changes.length - 1].seq);
        this.#backoff.succeeded(node);
      }
    } catch (err) {
      this.#backoff.failed(node, err);
    } finally {
      this.#busy.delete(node);
    }
  }
}
