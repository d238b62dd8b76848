// What the broker and database targets share: a connection opened lazily on the first send, shared
// by concurrent sends, dropped on any failure so the next send opens a fresh one (this is how a
// target recovers after the system restarts), and time limits so a send during an outage rejects
// instead of waiting for a system that is not there.

/** How long opening a connection may take. */
export const CONNECT_TIMEOUT_MS = 5_000;
/** How long one send may wait for the system's acceptance (a confirm, an ack, a committed row). */
export const SEND_TIMEOUT_MS = 10_000;

export interface TimeLimits {
  connectMs: number;
  sendMs: number;
}

export const DEFAULT_LIMITS: TimeLimits = {
  connectMs: CONNECT_TIMEOUT_MS,
  sendMs: SEND_TIMEOUT_MS,
};

/** Rejects with `what timed out` when `promise` has not settled within `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface ConnectionHooks<C> {
  /** Opens a connection; calls `lost` when the connection fails or closes later. */
  open(lost: () => void): Promise<C>;
  /** Releases a connection (it may already be broken); must not throw. */
  release(connection: C): Promise<void>;
}

/** One lazily opened connection at a time; see the module comment. */
export class LazyConnection<C> {
  #hooks: ConnectionHooks<C>;
  #limits: TimeLimits;
  #label: string;
  #current?: Promise<C>;
  #closed = false;

  constructor(label: string, hooks: ConnectionHooks<C>, limits: TimeLimits) {
    this.#label = label;
    this.#hooks = hooks;
    this.#limits = limits;
  }

  /**
   * Runs `use` on the open connection (opening it first if needed) within the send time limit.
   * On any failure the connection is dropped and released, and the error is rethrown.
   */
  async run<T>(use: (connection: C) => Promise<T>): Promise<T> {
    if (this.#closed) throw new Error(`${this.#label} is closed`);
    const current = this.#current ?? this.#open();
    let connection: C;
    try {
      connection = await current;
    } catch (err) {
      this.#drop(current);
      throw err;
    }
    try {
      return await withTimeout(use(connection), this.#limits.sendMs, `${this.#label}: send`);
    } catch (err) {
      this.#drop(current);
      throw err;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const current = this.#current;
    this.#current = undefined;
    if (current) await current.then((c) => this.#hooks.release(c), () => {});
  }

  #open(): Promise<C> {
    let self: Promise<C> | undefined = undefined;
    const lost = () => {
      if (self) this.#drop(self);
    };
    const opening = this.#hooks.open(lost);
    self = withTimeout(opening, this.#limits.connectMs, `${this.#label}: connect`);
    // A connection that arrives after its time limit is released, not leaked.
    self.catch(() => opening.then((c) => this.#hooks.release(c), () => {}));
    this.#current = self;
    return self;
  }

  /** Forgets `which` if it is still the current connection, and releases it. */
  #drop(which: Promise<C>): void {
    if (this.#current !== which) return;
    this.#current = undefined;
    which.then((c) => this.#hooks.release(c), () => {});
  }
}

/** The message of an error, for logs and error chains. */
export function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
