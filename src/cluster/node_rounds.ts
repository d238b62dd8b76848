// The schedule every replication sender shares: every `pollMs` each node that is alive, not
// already being caught up, not waiting after a failure and not skipped is caught up from its own
// cursor; every `pruneMs` what every node has received is pruned. A failed catch-up backs the node
// off (0.5 s doubling to 60 s, backoff.ts).
import { log } from "../log.ts";
import { NodeBackoff } from "./backoff.ts";
import type { Membership } from "./membership.ts";

export abstract class NodeRounds {
  /** Nodes not to send to (they share this node's metadata database). */
  skip: (node: string) => boolean = () => false;
  protected readonly backoff: NodeBackoff;
  /** Nodes being caught up now, with the promise of that work. */
  readonly #busy = new Map<string, Promise<void>>();
  #timer?: ReturnType<typeof setTimeout>;
  #stopped = false;
  #nextPrune = 0;
  #pruning?: Promise<void>;

  constructor(
    /** What the log calls this replication ("Object replication", ...). */
    readonly what: string,
    readonly membership: Membership,
    readonly pollMs: number,
    readonly pruneMs: number,
  ) {
    this.backoff = new NodeBackoff(what);
  }

  protected get stopped(): boolean {
    return this.#stopped;
  }

  /** Sends what lies after the node's cursor until none is left; throws to back the node off. */
  protected abstract catchUp(node: string, url: string): Promise<void>;

  /**
   * Prunes what `nodes` (every node known) have all received. Each gets a cursor first (at 0
   * when it has received nothing), so a node known once holds the queue even after a restart.
   */
  protected abstract prune(nodes: string[]): Promise<void>;

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
        if (this.backoff.waiting(m.id, now)) continue;
        this.#busy.set(m.id, this.#catchUp(m.id, m.url));
      }
      this.#timer = setTimeout(round, this.pollMs);
    };
    round();
  }

  /** Stops sending; resolves when what is on its way has been answered. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await Promise.allSettled([...this.#busy.values(), this.#pruning]);
  }

  async #catchUp(node: string, url: string): Promise<void> {
    try {
      await this.catchUp(node, url);
    } catch (err) {
      this.backoff.failed(node, err);
    } finally {
      this.#busy.delete(node);
    }
  }

  async #prune(): Promise<void> {
    try {
      await this.prune(this.membership.view().map((m) => m.id));
    } catch (err) {
      log("warn", `${this.what}: pruning the queue failed`, {
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }
}
