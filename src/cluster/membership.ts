// The member list as this node sees it. Nodes are learned from seeds, from the lists other
// nodes send with their heartbeats and from the list this node saved before a restart; health is
// judged only from direct contact (a heartbeat or join received from the node, or its signed
// answer to ours), never from hearsay.
import type { SavedMembers } from "../meta/store.ts";

export interface NodeRef {
  id: string;
  url: string;
}

/** `joining`: known from another node's list, not heard from directly yet. */
export type NodeState = "alive" | "suspect" | "dead" | "joining";

export interface MemberView extends NodeRef {
  state: NodeState;
  /** Last direct contact (ms since the epoch), undefined when never. */
  lastHeartbeat?: number;
}

interface Member extends NodeRef {
  lastHeartbeat?: number;
  /** When its process started, as it said in its last direct contact. */
  started?: number;
  learnedAt: number;
  /** Said it was stopping: dead until it is heard from again. */
  left?: boolean;
}

export interface Timing {
  suspectMs: number;
  deadMs: number;
}

const NODE_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** Nodes one node keeps track of at most; more named in lists are ignored. */
export const MAX_MEMBERS = 256;

/** A node forgotten by an administrator, and when (ms). */
export interface Forgotten {
  id: string;
  at: number;
}

/** The start time a node gives with its reference (`node.started`), if any. */
export function startedOf(value: unknown): number | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { started } = value as Record<string, unknown>;
  return Number.isSafeInteger(started) ? started as number : undefined;
}

/** Forgotten nodes from a message (malformed entries left out). */
export function forgottenList(value: unknown): Forgotten[] {
  if (!Array.isArray(value)) return [];
  return value.filter((f): f is Forgotten =>
    typeof f === "object" && f !== null && typeof f.id === "string" && NODE_ID.test(f.id) &&
    Number.isSafeInteger(f.at)
  ).slice(0, MAX_MEMBERS);
}

/** A node reference from a message, or undefined when it is not a well-formed one. */
export function nodeRef(value: unknown): NodeRef | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { id, url } = value as Record<string, unknown>;
  if (typeof id !== "string" || !NODE_ID.test(id) || typeof url !== "string") return undefined;
  try {
    const parsed = new URL(url);
    if (!["http:", "https:"].includes(parsed.protocol) || parsed.origin !== url) return undefined;
  } catch {
    return undefined;
  }
  return { id, url };
}

export class Membership {
  #members = new Map<string, Member>();
  /** Nodes forgotten, with when: kept out of the list until they start again after that. */
  #forgotten = new Map<string, number>();

  constructor(readonly self: NodeRef, readonly timing: Timing) {}

  /**
   * Direct contact with a node: it is alive at this URL, and no other node is at that URL. False
   * (nothing changes) when the node was forgotten and has not started again since (`started`,
   * its process start as it says, must be after the forget).
   */
  heardFrom(ref: NodeRef, now = Date.now(), started?: number): boolean {
    if (ref.id === this.self.id) return false;
    const forgottenAt = this.#forgotten.get(ref.id);
    if (forgottenAt !== undefined) {
      if (started === undefined || started <= forgottenAt) return false;
      this.#forgotten.delete(ref.id);
    }
    for (const [id, m] of this.#members) {
      // A node restarted under a new id at the same address replaces the old entry.
      if (m.url === ref.url && id !== ref.id) this.#members.delete(id);
    }
    const known = this.#members.get(ref.id);
    if (!known && this.#members.size >= MAX_MEMBERS) return false;
    this.#members.set(ref.id, {
      ...ref,
      lastHeartbeat: now,
      learnedAt: known?.learnedAt ?? now,
      started: started ?? known?.started,
    });
    return true;
  }

  /**
   * Forgets a node (forgotten at `at`): it leaves the list, and other nodes' lists do not bring it
   * back; only its own call with a later start does. False when nothing changed (already
   * forgotten then, or it has started again since).
   */
  forget(id: string, at: number): boolean {
    if (id === this.self.id) return false;
    const m = this.#members.get(id);
    if (m?.started !== undefined && m.started > at) return false;
    const before = this.#forgotten.get(id);
    if (!m && before !== undefined && before >= at) return false;
    this.#members.delete(id);
    this.#forgotten.delete(id);
    this.#forgotten.set(id, Math.max(before ?? 0, at));
    // Bounded like the list: the oldest forget goes first.
    if (this.#forgotten.size > MAX_MEMBERS) {
      this.#forgotten.delete(this.#forgotten.keys().next().value!);
    }
    return true;
  }

  /** What is kept across a restart: the other nodes known and the nodes forgotten. */
  saved(): SavedMembers {
    return {
      members: [...this.#members.values()].map(({ id, url }) => ({ id, url })),
      forgotten: this.forgotten(),
    };
  }

  /**
   * The list saved before a restart: its nodes are known (not heard from yet: `joining`, then
   * `dead` if they stay silent) and its forgotten nodes stay out until they start again.
   */
  restore(saved: SavedMembers, now = Date.now()): void {
    for (const { id, at } of saved.forgotten.slice(0, MAX_MEMBERS)) {
      if (id !== this.self.id) this.#forgotten.set(id, Math.max(this.#forgotten.get(id) ?? 0, at));
    }
    this.learn(saved.members, now);
  }

  /** The nodes forgotten, sent with heartbeats so nodes that were away learn of them too. */
  forgotten(): Forgotten[] {
    return [...this.#forgotten].map(([id, at]) => ({ id, at }));
  }

  isForgotten(id: string): boolean {
    return this.#forgotten.has(id);
  }

  /** Nodes named in another node's list: unknown ones are added (their URLs are not trusted
   * over what direct contact showed). Returns how many were new. */
  learn(refs: NodeRef[], now = Date.now()): number {
    let added = 0;
    for (const ref of refs) {
      if (
        ref.id === this.self.id || ref.url === this.self.url || this.#members.has(ref.id) ||
        this.#forgotten.has(ref.id)
      ) {
        continue;
      }
      if (this.#members.size >= MAX_MEMBERS) break;
      if ([...this.#members.values()].some((m) => m.url === ref.url)) continue;
      this.#members.set(ref.id, { ...ref, learnedAt: now });
      added++;
    }
    return added;
  }

  /** A node said it is stopping. */
  leaving(id: string): void {
    const m = this.#members.get(id);
    if (m) m.left = true;
  }

  state(m: Omit<Member, "id" | "url">, now = Date.now()): NodeState {
    if (m.left) return "dead";
    if (m.lastHeartbeat === undefined) {
      return now - m.learnedAt >= this.timing.deadMs ? "dead" : "joining";
    }
    const silent = now - m.lastHeartbeat;
    if (silent >= this.timing.deadMs) return "dead";
    if (silent >= this.timing.suspectMs) return "suspect";
    return "alive";
  }

  /** Every other node in id order, with its state now. */
  view(now = Date.now()): MemberView[] {
    return [...this.#members.values()]
      .sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
      .map((m) => ({
        id: m.id,
        url: m.url,
        state: this.state(m, now),
        lastHeartbeat: m.lastHeartbeat,
      }));
  }

  /** The list sent to other nodes: this node and every node it knows. */
  refs(): NodeRef[] {
    return [this.self, ...[...this.#members.values()].map(({ id, url }) => ({ id, url }))];
  }

  /** Whether some known node (or this one) is at that URL. */
  knowsUrl(url: string): boolean {
    return url === this.self.url || [...this.#members.values()].some((m) => m.url === url);
  }
}
