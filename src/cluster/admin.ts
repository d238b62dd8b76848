// GET /admin/cluster: this node's view of the cluster, as the administration API shows it; and
// DELETE /admin/cluster/nodes/{id}: forgetting a node that is gone for good.
import { ApiError, jsonResponse } from "../api/json.ts";
import type { ClusterNode } from "./node.ts";
import type { AntiEntropyStatus, PassReport } from "./anti_entropy.ts";

export async function forgetNode(
  req: Request,
  cluster: ClusterNode | undefined,
  id: string,
): Promise<Response> {
  await req.body?.cancel().catch(() => {});
  if (req.method !== "DELETE") throw new ApiError(405, "method_not_allowed", "Use DELETE.");
  if (!cluster) {
    throw new ApiError(404, "cluster_disabled", "Clustering is not configured on this node.");
  }
  const { forgotten, told } = await cluster.forget(id);
  return jsonResponse(200, {
    forgotten: { id: forgotten.id, at: new Date(forgotten.at).toISOString() },
    told,
  });
}

export async function clusterView(
  cluster: ClusterNode | undefined,
): Promise<Record<string, unknown>> {
  if (!cluster) return { enabled: false, node: null, nodes: [], total: 0 };
  const status = await cluster.status();
  const now = Date.now();
  const nodes = status.nodes.map((n) => ({
    id: n.id,
    url: n.url,
    self: n.self,
    state: n.state,
    last_heartbeat: n.lastHeartbeat === undefined ? null : new Date(n.lastHeartbeat).toISOString(),
    seconds_since_heartbeat: n.lastHeartbeat === undefined
      ? null
      : Math.max(0, Math.round((now - n.lastHeartbeat) / 100) / 10),
    // Bucket changes this node has yet to deliver there, and how long the oldest has waited.
    ...(n.self ? {} : {
      queue_depth: n.queueDepth ?? 0,
      lag_seconds: Math.round((n.lagMs ?? 0) / 100) / 10,
      // Object changes likewise (src/cluster/objects.ts).
      object_queue_depth: n.objectQueueDepth ?? 0,
      object_lag_seconds: Math.round((n.objectLagMs ?? 0) / 100) / 10,
      // Users, and users' tokens and shares (src/cluster/users.ts, records.ts).
      user_queue_depth: n.userQueueDepth ?? 0,
      user_lag_seconds: Math.round((n.userLagMs ?? 0) / 100) / 10,
      record_queue_depth: n.recordQueueDepth ?? 0,
      record_lag_seconds: Math.round((n.recordLagMs ?? 0) / 100) / 10,
    }),
  }));
  return {
    enabled: true,
    node: status.node,
    nodes,
    total: nodes.length,
    anti_entropy: antiEntropyView(status.antiEntropy),
  };
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

/** A pass report as the administration API shows it. */
export function passView(p: PassReport): Record<string, unknown> {
  return {
    started_at: iso(p.startedAt),
    ended_at: iso(p.endedAt),
    nodes: p.nodes,
    buckets: p.buckets,
    versions_compared: p.versionsCompared,
    ranges_differing: p.rangesDiffering,
    bucket_states_sent: p.bucketStatesSent,
    repaired: p.repaired,
    deleted: p.deleted,
    failed: p.failed,
    ...(p.error ? { error: p.error } : {}),
  };
}

function antiEntropyView(s: AntiEntropyStatus): Record<string, unknown> {
  return {
    interval_seconds: s.intervalMs === null ? null : s.intervalMs / 1000,
    rate: s.rate,
    running: s.running,
    passes: s.passes,
    repaired_total: s.repairedTotal,
    deleted_total: s.deletedTotal,
    versions_compared_total: s.versionsComparedTotal,
    current_pass: s.current ? passView(s.current) : null,
    last_pass: s.last ? passView(s.last) : null,
  };
}
