// Failed sign-ins (admin Basic, token issuing) counted per client address in a bounded table:
// after `maxFailures` failures within `windowMs` a client is refused until its window ends.

/** Most client entries kept: memory stays bounded whatever the number of attacking addresses. */
export const MAX_TRACKED_CLIENTS = 10_000;

interface Entry {
  failures: number;
  /** When the entry's window started (ms). */
  since: number;
}

/**
 * The client an address counts as: an IPv4 address itself (also when IPv4-mapped), an IPv6
 * address by its /64 network, which one host commonly holds whole.
 */
export function clientOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (!address.includes(":")) return address;
  const [head, tail] = address.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = tail === undefined
    ? left
    : [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, "")).join(":") +
    "::/64";
}

export class SignInLimiter {
  readonly #entries = new Map<string, Entry>();

  constructor(
    readonly opts: {
      maxFailures: number;
      windowMs: number;
      maxClients?: number;
      now?: () => number;
    },
  ) {}

  #now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /** The live entry of a client (expired entries are dropped). */
  #entry(client: string, now: number): Entry | undefined {
    const entry = this.#entries.get(client);
    if (entry && now - entry.since >= this.opts.windowMs) {
      this.#entries.delete(client);
      return undefined;
    }
    return entry;
  }

  /** Seconds until `address` may try again; 0 when it may now. */
  retryAfter(address: string): number {
    const now = this.#now();
    const entry = this.#entry(clientOf(address), now);
    if (!entry || entry.failures < this.opts.maxFailures) return 0;
    return Math.max(1, Math.ceil((entry.since + this.opts.windowMs - now) / 1000));
  }

  failed(address: string): void {
    const now = this.#now();
    const client = clientOf(address);
    const entry = this.#entry(client, now);
    if (entry) {
      entry.failures++;
      return;
    }
    this.#makeRoom(now);
    this.#entries.set(client, { failures: 1, since: now });
  }

  /** A successful sign-in clears the client's failures. */
  succeeded(address: string): void {
    this.#entries.delete(clientOf(address));
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * Drops expired entries and, while the table is full, the oldest ones. Entries are inserted in
   * the order their windows start, so both sit at the front of the map: amortised O(1).
   */
  #makeRoom(now: number): void {
    const max = this.opts.maxClients ?? MAX_TRACKED_CLIENTS;
    for (const [client, entry] of this.#entries) {
      if (this.#entries.size < max && now - entry.since < this.opts.windowMs) break;
      this.#entries.delete(client);
    }
  }
}
