// STORE_CLUSTER_* -> the cluster part of the configuration. Clustering is off unless one of the
// identity settings is given; then the node id, its advertised URL and the shared secret are all
// required (seeds may be empty: the first node is found by the others).

export interface ClusterConfig {
  /** This node's name among the others (STORE_CLUSTER_NODE_ID). */
  nodeId: string;
  /** The origin other nodes reach this one at (STORE_CLUSTER_ADVERTISE_URL). */
  advertiseUrl: string;
  /** Origins of nodes to join through (STORE_CLUSTER_SEEDS); this node's own is left out. */
  seeds: string[];
  /** Shared HMAC key of every node (STORE_CLUSTER_SECRET, at least 32 characters). */
  secret: string;
  /** Milliseconds between heartbeats (STORE_CLUSTER_HEARTBEAT, seconds). */
  heartbeatMs: number;
  /** Silence after which a node is suspect (STORE_CLUSTER_SUSPECT_AFTER, seconds). */
  suspectMs: number;
  /** Silence after which a node is dead (STORE_CLUSTER_DEAD_AFTER, seconds). */
  deadMs: number;
  /** Between anti-entropy passes (STORE_CLUSTER_ANTI_ENTROPY); undefined: `off`. */
  antiEntropyMs?: number;
  /** Versions an anti-entropy pass reads a second at most (..._RATE); 0: no limit. */
  antiEntropyRate: number;
  /** How long the tombstone of a removed version is kept (STORE_CLUSTER_TOMBSTONE_TTL). */
  tombstoneTtlMs: number;
}

export class ClusterConfigError extends Error {}

type Env = (name: string) => string | undefined;

export const MIN_SECRET_LENGTH = 32;

/** An http(s) origin: scheme, host and port, nothing after. */
function originSetting(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ClusterConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  if (
    (url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password ||
    url.pathname !== "/" || url.search || url.hash
  ) {
    throw new ClusterConfigError(
      `${name} must be an http(s) URL of scheme, host and port only, got "${raw}"`,
    );
  }
  return url.origin;
}

function seconds(env: Env, name: string, fallback: number, max: number): number {
  const raw = env(name);
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    throw new ClusterConfigError(`${name} must be a whole number of seconds, 1 to ${max}`);
  }
  return Number(raw);
}

function timing(env: Env) {
  const heartbeat = seconds(env, "STORE_CLUSTER_HEARTBEAT", 2, 60);
  const suspect = seconds(env, "STORE_CLUSTER_SUSPECT_AFTER", 10, 3600);
  const dead = seconds(env, "STORE_CLUSTER_DEAD_AFTER", 60, 86400);
  if (suspect <= heartbeat) {
    throw new ClusterConfigError(
      "STORE_CLUSTER_SUSPECT_AFTER must be longer than STORE_CLUSTER_HEARTBEAT",
    );
  }
  if (dead <= suspect) {
    throw new ClusterConfigError(
      "STORE_CLUSTER_DEAD_AFTER must be longer than STORE_CLUSTER_SUSPECT_AFTER",
    );
  }
  return { heartbeatMs: heartbeat * 1000, suspectMs: suspect * 1000, deadMs: dead * 1000 };
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const MAX_INTERVAL_MS = 7 * 24 * 3_600_000;

/** `off`, or a duration: whole seconds, or a whole number with `s`, `m` or `h`. */
function antiEntropy(env: Env) {
  const raw = (env("STORE_CLUSTER_ANTI_ENTROPY") ?? "").trim().toLowerCase();
  const rawRate = env("STORE_CLUSTER_ANTI_ENTROPY_RATE") ?? "";
  if (rawRate !== "" && (!/^\d+$/.test(rawRate) || Number(rawRate) > 1_000_000)) {
    throw new ClusterConfigError(
      "STORE_CLUSTER_ANTI_ENTROPY_RATE must be a whole number of versions a second, " +
        "0 (no limit) to 1000000",
    );
  }
  const antiEntropyRate = rawRate === "" ? 5000 : Number(rawRate);
  if (raw === "off") return { antiEntropyRate };
  if (raw === "") return { antiEntropyMs: 10 * 60_000, antiEntropyRate };
  const match = /^(\d+)([smh]?)$/.exec(raw);
  const ms = match ? Number(match[1]) * UNIT_MS[match[2] || "s"] : 0;
  if (ms < 1000 || ms > MAX_INTERVAL_MS) {
    throw new ClusterConfigError(
      "STORE_CLUSTER_ANTI_ENTROPY must be off or a duration such as 600, 30s, 10m or 1h " +
        "(1 second to 7 days)",
    );
  }
  return { antiEntropyMs: ms, antiEntropyRate };
}

/**
 * How long a removed version's tombstone is kept: whole seconds, or a whole number with `m`, `h`
 * or `d`; 1 hour to 365 days, 7 days by default. A node away longer than this may send a version
 * deleted meanwhile back.
 */
function tombstoneTtl(env: Env) {
  const raw = (env("STORE_CLUSTER_TOMBSTONE_TTL") ?? "").trim().toLowerCase();
  if (raw === "") return { tombstoneTtlMs: 7 * UNIT_MS.d };
  const match = /^(\d+)([smhd]?)$/.exec(raw);
  const ms = match ? Number(match[1]) * UNIT_MS[match[2] || "s"] : 0;
  if (ms < UNIT_MS.h || ms > 365 * UNIT_MS.d) {
    throw new ClusterConfigError(
      "STORE_CLUSTER_TOMBSTONE_TTL must be a duration such as 7d, 48h or 86400 (1 hour to 365 days)",
    );
  }
  return { tombstoneTtlMs: ms };
}

export function loadClusterConfig(env: Env): ClusterConfig | undefined {
  const nodeId = env("STORE_CLUSTER_NODE_ID") || undefined;
  const advertise = env("STORE_CLUSTER_ADVERTISE_URL") || undefined;
  const rawSeeds = env("STORE_CLUSTER_SEEDS") || undefined;
  const secret = env("STORE_CLUSTER_SECRET") || undefined;
  const times = { ...timing(env), ...antiEntropy(env), ...tombstoneTtl(env) };
  if (!nodeId && !advertise && !rawSeeds && !secret) return undefined;
  if (!nodeId || !advertise || !secret) {
    throw new ClusterConfigError(
      "Clustering needs STORE_CLUSTER_NODE_ID, STORE_CLUSTER_ADVERTISE_URL and " +
        "STORE_CLUSTER_SECRET together (STORE_CLUSTER_SEEDS is optional)",
    );
  }
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(nodeId)) {
    throw new ClusterConfigError(
      "STORE_CLUSTER_NODE_ID must be 1-64 letters, digits, '.', '_' or '-'",
    );
  }
  if (secret.length < MIN_SECRET_LENGTH || secret.length > 1024) {
    throw new ClusterConfigError(
      `STORE_CLUSTER_SECRET must be ${MIN_SECRET_LENGTH} to 1024 characters long ` +
        "(e.g. openssl rand -hex 32)",
    );
  }
  const advertiseUrl = originSetting("STORE_CLUSTER_ADVERTISE_URL", advertise);
  const seeds = (rawSeeds ?? "").split(",").map((s) => s.trim()).filter((s) => s)
    .map((s) => originSetting("STORE_CLUSTER_SEEDS", s))
    .filter((s) => s !== advertiseUrl);
  return { nodeId, advertiseUrl, seeds: [...new Set(seeds)], secret, ...times };
}
