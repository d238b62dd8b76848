// The cluster's Prometheus families: other nodes by state, and per node the bucket changes not
// yet delivered and how long the oldest has waited, and the same for object changes, users, and
// users' tokens and shares.
import type { Exposition } from "../ops/prometheus.ts";
import type { NodeState } from "./membership.ts";
import type { ClusterNode } from "./node.ts";

const STATES: NodeState[] = ["alive", "suspect", "dead", "joining"];

export async function renderClusterMetrics(out: Exposition, cluster: ClusterNode): Promise<void> {
  const { nodes, antiEntropy } = await cluster.status();
  const others = nodes.filter((n) => !n.self);
  out.family("store_cluster_nodes", "gauge", "Other nodes of the cluster by their state here.");
  for (const state of STATES) {
    out.sample("store_cluster_nodes", others.filter((n) => n.state === state).length, { state });
  }
  out.family(
    "store_cluster_replication_queue_depth",
    "gauge",
    "Buckets with changes not yet delivered to the node.",
  );
  for (const n of others) {
    out.sample("store_cluster_replication_queue_depth", n.queueDepth ?? 0, { node: n.id });
  }
  out.family(
    "store_cluster_replication_lag_seconds",
    "gauge",
    "How long the oldest change not yet delivered to the node has waited.",
  );
  for (const n of others) {
    out.sample("store_cluster_replication_lag_seconds", (n.lagMs ?? 0) / 1000, { node: n.id });
  }
  out.family(
    "store_cluster_object_queue_depth",
    "gauge",
    "Object changes not yet delivered to the node.",
  );
  for (const n of others) {
    out.sample("store_cluster_object_queue_depth", n.objectQueueDepth ?? 0, { node: n.id });
  }
  out.family(
    "store_cluster_object_lag_seconds",
    "gauge",
    "How long the oldest object change not yet delivered to the node has waited.",
  );
  for (const n of others) {
    out.sample("store_cluster_object_lag_seconds", (n.objectLagMs ?? 0) / 1000, { node: n.id });
  }
  out.family(
    "store_cluster_anti_entropy_repaired_total",
    "counter",
    "Versions anti-entropy passes sent to nodes that lacked them.",
  );
  out.sample("store_cluster_anti_entropy_repaired_total", antiEntropy.repairedTotal);
  out.family(
    "store_cluster_anti_entropy_deleted_total",
    "counter",
    "Versions anti-entropy passes removed here because another node had removed them.",
  );
  out.sample("store_cluster_anti_entropy_deleted_total", antiEntropy.deletedTotal);
  out.family(
    "store_cluster_anti_entropy_versions_compared_total",
    "counter",
    "Local versions anti-entropy passes read to compare with the other nodes.",
  );
  out.sample(
    "store_cluster_anti_entropy_versions_compared_total",
    antiEntropy.versionsComparedTotal,
  );
  out.family("store_cluster_anti_entropy_passes_total", "counter", "Anti-entropy passes run.");
  out.sample("store_cluster_anti_entropy_passes_total", antiEntropy.passes);
  const queues = [
    ["user", "Users", (n: typeof others[0]) => [n.userQueueDepth, n.userLagMs]],
    ["record", "Bearer tokens and shares", (n: typeof others[0]) => [
      n.recordQueueDepth,
      n.recordLagMs,
    ]],
  ] as const;
  for (const [name, what, of] of queues) {
    out.family(
      `store_cluster_${name}_queue_depth`,
      "gauge",
      `${what} with changes not yet delivered to the node.`,
    );
    for (const n of others) {
      out.sample(`store_cluster_${name}_queue_depth`, of(n)[0] ?? 0, { node: n.id });
    }
    out.family(
      `store_cluster_${name}_lag_seconds`,
      "gauge",
      `How long the oldest change of ${what.toLowerCase()} not yet delivered to the node has waited.`,
    );
    for (const n of others) {
      out.sample(`store_cluster_${name}_lag_seconds`, (of(n)[1] ?? 0) / 1000, { node: n.id });
    }
  }
}
