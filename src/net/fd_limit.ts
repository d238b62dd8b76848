// The process's open-file limit and the connection cap derived from it.
//
// Deno raises the soft RLIMIT_NOFILE to the hard limit when it starts, so the soft limit read
// here is already as high as this process may go.

/** The soft limit on open files from /proc/self/limits; undefined where it cannot be read. */
export function openFileLimit(): number | undefined {
  try {
    const limits = Deno.readTextFileSync("/proc/self/limits");
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(limits);
    if (!m) return undefined;
    return m[1] === "unlimited" ? Number.MAX_SAFE_INTEGER : Number(m[1]);
  } catch {
    return undefined;
  }
}

/** Descriptors kept for everything but client sockets: metadata, shard files, workers. */
export const RESERVED_DESCRIPTORS = 64;

/**
 * Connections the server accepts at once by default: half the descriptor limit (each request may
 * open shard files besides its socket), at most 10,000; 1,000 when the limit is unknown.
 */
export function defaultMaxConnections(limit: number | undefined): number {
  if (limit === undefined) return 1000;
  return Math.max(1, Math.min(10_000, Math.floor(limit / 2)));
}

/** The highest cap that still leaves RESERVED_DESCRIPTORS free under `limit`. */
export function maxConnectionsFor(limit: number | undefined): number {
  if (limit === undefined) return Number.MAX_SAFE_INTEGER;
  return Math.max(1, limit - RESERVED_DESCRIPTORS);
}
