// The console's sign-in sessions, held in memory: a random id in an HttpOnly cookie, a CSRF token
// every change must echo, an idle and an absolute expiry. A restart signs everybody out.

/** Most sessions kept: memory stays bounded whoever signs in. */
export const MAX_SESSIONS = 10_000;

/**
 * Who a session belongs to, looked up again on every request: a key by its access key, a directory
 * user by name (its groups cached for STORE_LDAP_CACHE_TTL, `known` used while the directory is
 * down).
 */
export type SessionOwner =
  | { kind: "key"; accessKey: string }
  | { kind: "ldap"; username: string; known: { dn: string; groups: string[] } };

export interface ConsoleSession {
  id: string;
  csrf: string;
  owner: SessionOwner;
  createdAt: number;
  lastSeen: number;
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
    .replace(/=+$/, "");
}

export class ConsoleSessions {
  readonly #sessions = new Map<string, ConsoleSession>();

  constructor(
    readonly opts: { idleMs: number; maxAgeMs: number; now?: () => number; max?: number },
  ) {}

  #now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  #expired(s: ConsoleSession, now: number): boolean {
    return now - s.lastSeen >= this.opts.idleMs || now - s.createdAt >= this.opts.maxAgeMs;
  }

  create(owner: SessionOwner): ConsoleSession {
    const now = this.#now();
    this.#makeRoom(now);
    const session = {
      id: randomToken(),
      csrf: randomToken(),
      owner,
      createdAt: now,
      lastSeen: now,
    };
    this.#sessions.set(session.id, session);
    return session;
  }

  /** The live session of an id, its idle clock restarted; expired ones are dropped. */
  touch(id: string): ConsoleSession | undefined {
    const session = this.#sessions.get(id);
    if (!session) return undefined;
    const now = this.#now();
    if (this.#expired(session, now)) {
      this.#sessions.delete(id);
      return undefined;
    }
    session.lastSeen = now;
    // Re-inserted so the map stays in last-seen order for #makeRoom.
    this.#sessions.delete(id);
    this.#sessions.set(id, session);
    return session;
  }

  /** When the session ends at the latest (ms), whatever its activity. */
  endsAt(session: ConsoleSession): number {
    return session.createdAt + this.opts.maxAgeMs;
  }

  end(id: string): void {
    this.#sessions.delete(id);
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Drops expired sessions from the least recently seen end, then the oldest while full. */
  #makeRoom(now: number): void {
    const max = this.opts.max ?? MAX_SESSIONS;
    for (const [id, session] of this.#sessions) {
      if (this.#sessions.size < max && !this.#expired(session, now)) break;
      this.#sessions.delete(id);
    }
  }
}
