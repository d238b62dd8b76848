// Per-node retry schedule of the replication senders: after a failed round a node waits 0.5 s,
// doubling to 60 s, before the next; a success forgets its failures.
import { log } from "../log.ts";

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 60_000;

export class NodeBackoff {
  readonly #retry = new Map<string, { failures: number; until: number }>();

  /** `what` names the replication in the log line of a failure ("Object replication", ...). */
  constructor(readonly what: string) {}

  /** Whether the node is still waiting after a failure at `now`. */
  waiting(node: string, now: number): boolean {
    return (this.#retry.get(node)?.until ?? 0) > now;
  }

  succeeded(node: string): void {
    this.#retry.delete(node);
  }

  /** Schedules the node's next try and logs the failure (a warning the first time). */
  failed(node: string, err: unknown): void {
    const failures = (this.#retry.get(node)?.failures ?? 0) + 1;
    const wait = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** (failures - 1));
    this.#retry.set(node, { failures, until: Date.now() + wait });
    log(failures === 1 ? "warn" : "debug", `${this.what} to a node failed; retrying`, {
      node,
      failures,
      retryMs: wait,
      error: err instanceof Error ? err.message : String(err),
    });
  }
}

/** A queue's backlog for a node as GET /admin/cluster shows it. */
export function backlogOf(b: { depth: number; oldest?: number }): { depth: number; lagMs: number } {
  return { depth: b.depth, lagMs: b.oldest === undefined ? 0 : Math.max(0, Date.now() - b.oldest) };
}
