// The member list as this node sees it. Nodes are learned from seeds and from the lists other
// nodes send with their heartbeats; health is judged only from direct contact (a heartbeat or
// join received from the node, or its signed answer to ours), never from hearsay.

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

  constructor(readonly self: NodeRef, readonly timing: Timing) {}

  /** Direct contact with a node: it is alive at this URL, and no other node is at that URL. */
  heardFrom(ref: NodeRef, now = Date.now()): void {
    if (ref.id === this.self.id) return;
    for (const [id, m] of this.#members) {
      // A node restarted under a new id at the same address replaces the old entry.
      if (m.url === ref.url && id !== ref.id) this.#members.delete(id);
    }
    const known = this.#members.get(ref.id);
    if (!known && this.#members.size >= MAX_MEMBERS) return;
    this.#members.set(ref.id, {
      ...ref,
      lastHeartbeat: now,
      learnedAt: known?.learnedAt ?? now,
    });
  }

  /** Nodes named in another node's list: unknown ones are added (their URLs are not trusted
   * over what direct contact showed). Returns how many were new. */
  learn(refs: NodeRef[], now = Date.now()): number {
    let added = 0;
    for (const ref of refs) {
      if (ref.id === this.self.id || ref.url === this.self.url || this.#members.has(ref.id)) {
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
