// User replication: every user change queued in the metadata (UserReplicationQueue) is sent, as
// the user's stamped state then, to every node that is alive, from that node's own cursor, as
// bucket changes are (replication.ts). A user's secret never travels sealed with this node's
// master key (the others cannot open it) nor in the clear: it is opened here and sealed again
// with a key derived from the cluster secret, and the receiver seals it with its own master key.
import { createHash } from "node:crypto";
import { validateBucketAccess } from "../api/admin_input.ts";
import { MasterKey } from "../auth/master_key.ts";
import { SecretSealer } from "../auth/secrets.ts";
import { log } from "../log.ts";
import type { UserReplicationQueue } from "../meta/store.ts";
import type { UserChange, UserState } from "../meta/user_stamps.ts";
import { backlogOf, NodeBackoff } from "./backoff.ts";
import type { Membership } from "./membership.ts";
import type { Deliver } from "./replication.ts";

const BATCH_CHANGES = 100;

/** Seals secrets for the trip between nodes with a key only holders of the cluster secret have. */
export function wireSealer(clusterSecret: string): SecretSealer {
  const key = createHash("sha256").update(`store-cluster-users:${clusterSecret}`).digest();
  return new SecretSealer(new MasterKey(new Uint8Array(key)));
}

/** The sealing context of a secret on the wire: bound to the user and its access key. */
const wireContext = (id: string, accessKey: string) => `cluster-user:${id}:${accessKey}`;

export class UserReplicator {
  readonly #backoff = new NodeBackoff("User replication");
  #busy = new Map<string, Promise<void>>();
  #timer?: ReturnType<typeof setTimeout>;
  #stopped = false;
  #nextPrune = 0;
  #pruning?: Promise<void>;

  constructor(
    readonly queue: UserReplicationQueue,
    readonly membership: Membership,
    readonly deliver: Deliver,
    /** This node's sealer (its master key) and the cluster's (see wireSealer). */
    readonly sealer: SecretSealer,
    readonly wire: SecretSealer,
    readonly pollMs = 100,
    readonly pruneMs = 10_000,
  ) {}

  start(): void {
    this.#nextPrune = Date.now() + this.pruneMs;
    const round = () => {
      if (this.#stopped) return;
      const now = Date.now();
      if (now >= this.#nextPrune && !this.#pruning) {
        this.#nextPrune = now + this.pruneMs;
        this.#pruning = this.#prune().finally(() => this.#pruning = undefined);
      }
      for (const m of this.membership.view(now)) {
        if (m.state !== "alive" || this.#busy.has(m.id)) continue;
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

  /** Deleted users' rows every node has received leave the queue (as for buckets). */
  async #prune(): Promise<void> {
    try {
      const nodes = this.membership.view().map((m) => m.id);
      for (const node of nodes) await this.queue.setUserReplicationCursor(node, 0);
      await this.queue.pruneUserChanges(nodes);
    } catch (err) {
      log("warn", "Pruning the user-change queue failed", {
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }

  async backlog(node: string): Promise<{ depth: number; lagMs: number }> {
    return backlogOf(
      await this.queue.userReplicationBacklog(await this.queue.userReplicationCursor(node)),
    );
  }

  /** A change as it travels: the secret sealed for the wire, never with this node's key. */
  #toWire(c: UserChange): Record<string, unknown> {
    const { seq: _seq, queuedAt: _queuedAt, key, ...state } = c;
    if (!key) return state;
    let secret: string;
    try {
      secret = this.sealer.open(key.value.sealedSecret, c.id);
    } catch (err) {
      // Cannot happen with an intact database: the key part stays here, the rest travels.
      log("warn", "A user's secret does not open; its key is not replicated", {
        user: c.id,
        error: String(err),
      });
      return state;
    }
    const { accessKey, keyCreatedAt } = key.value;
    return {
      ...state,
      key: {
        stamp: key.stamp,
        value: {
          accessKey,
          keyCreatedAt,
          secret: this.wire.seal(secret, wireContext(c.id, accessKey)),
        },
      },
    };
  }

  async #catchUp(node: string, url: string): Promise<void> {
    try {
      while (!this.#stopped) {
        const cursor = await this.queue.userReplicationCursor(node);
        const pending = await this.queue.userChanges(cursor, BATCH_CHANGES);
        if (pending.length === 0) break;
        await this.deliver(url, { type: "users", changes: pending.map((c) => this.#toWire(c)) });
        await this.queue.setUserReplicationCursor(node, pending[pending.length - 1].seq);
        this.#backoff.succeeded(node);
      }
    } catch (err) {
      this.#backoff.failed(node, err);
    } finally {
      this.#busy.delete(node);
    }
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function stampOf(v: unknown): { ms: number; node: string } | undefined {
  if (!isObject(v)) return undefined;
  if (!Number.isSafeInteger(v.ms) || (v.ms as number) < 0) return undefined;
  if (typeof v.node !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(v.node)) return undefined;
  return { ms: v.ms as number, node: v.node };
}

/** A stamped part whose value `parse` accepts; null when malformed, undefined when absent. */
function part<T>(v: unknown, parse: (value: unknown) => T | undefined) {
  if (v === undefined) return undefined;
  if (!isObject(v)) return null;
  const stamp = stampOf(v.stamp);
  const value = parse(v.value);
  return stamp && value !== undefined ? { stamp, value } : null;
}

const shortString = (v: unknown, max: number) =>
  typeof v === "string" && v.length <= max ? v : undefined;

/**
 * A user state from a message with its secret sealed again with this node's master key, or
 * undefined when it is malformed (or its secret does not open with the cluster's key).
 */
export function parseUserState(
  value: unknown,
  sealer: SecretSealer,
  wire: SecretSealer,
): UserState | undefined {
  if (!isObject(value)) return undefined;
  const id = value.id;
  if (typeof id !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(id)) return undefined;
  const record = part(value.record, (v) => {
    if (v === null) return null;
    if (!isObject(v) || !Number.isSafeInteger(v.createdAt)) return undefined;
    const name = shortString(v.name, 256);
    const description = shortString(v.description, 4096);
    const email = shortString(v.email, 1024);
    if (!name || description === undefined || email === undefined) return undefined;
    return { name, description, email, createdAt: v.createdAt as number };
  });
  const enabled = part(value.enabled, (v) => typeof v === "boolean" ? v : undefined);
  const access = part(value.access, (v) => {
    try {
      return validateBucketAccess(v);
    } catch {
      return undefined;
    }
  });
  const key = part(value.key, (v) => {
    if (!isObject(v) || !Number.isSafeInteger(v.keyCreatedAt)) return undefined;
    const accessKey = shortString(v.accessKey, 128);
    if (!accessKey || typeof v.secret !== "string") return undefined;
    try {
      const secret = wire.open(v.secret, wireContext(id, accessKey));
      return {
        accessKey,
        keyCreatedAt: v.keyCreatedAt as number,
        sealedSecret: sealer.seal(secret, id),
      };
    } catch {
      return undefined;
    }
  });
  if (record === null || enabled === null || access === null || key === null) return undefined;
  return { id, record, enabled, access, key };
}
