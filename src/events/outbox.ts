// What a write records in the outbox: the event's name and the facts its records are built from
// (src/events/record.ts), independent of dialect, configuration and destination.
import type { ObjectVersion, OutboxEvent } from "../meta/store.ts";
import type { EventName } from "./names.ts";

/** Who caused a change: carried from the request (or the lifecycle worker) to the outbox. */
export interface EventOrigin {
  /** Principal id of the caller; the bucket owner for lifecycle actions. */
  principal: string;
  sourceIp: string;
  requestId: string;
  /** Set by the lifecycle worker: deletions become LifecycleExpiration events. */
  lifecycle?: boolean;
  /** Set by the transformation workers: their outputs start no transformation (no loops). */
  transform?: boolean;
}

/** The facts kept with an event (JSON in the outbox row). */
export interface EventDetail {
  principal: string;
  sourceIp: string;
  requestId: string;
  /** Principal id of the bucket's owner. */
  owner: string;
  size?: number;
  /** Unquoted ETag. */
  etag?: string;
  /** Omitted for the "null" version (versioning never enabled or suspended). */
  versionId?: string;
  /** Epoch milliseconds when the change was made. */
  time: number;
  /** Replication events: which node's outcome this is. */
  replication?: ReplicationFacts;
}

/** A replication outcome: one version (or removal of one) and one other node. */
export interface ReplicationFacts {
  status: "COMPLETED" | "FAILED";
  /** The node the change went to. */
  node: string;
  /** Put: a version or delete marker written; delete: a version removed. */
  operation: "put" | "delete";
  /** The bucket the change was written into there (a rule's destination, else the same). */
  destinationBucket: string;
  /** Why the node refused it, for FAILED. */
  reason?: string;
}

/** The outbox row of a replication outcome learned by the node that wrote the change. */
export function replicationEvent(
  target: { bucket: string; key: string; versionId: string },
  version: Pick<ObjectVersion, "size" | "etag" | "deleteMarker"> | undefined,
  facts: ReplicationFacts,
  ctx: { self: string; owner: string },
): OutboxEvent {
  const name = facts.status === "COMPLETED"
    ? "Replication:OperationCompletedReplication"
    : "Replication:OperationFailedReplication";
  const detail: EventDetail = {
    principal: `node:${ctx.self}`,
    sourceIp: "",
    requestId: crypto.randomUUID(),
    owner: ctx.owner,
    time: Date.now(),
    replication: facts,
  };
  if (version && !version.deleteMarker) {
    detail.size = version.size;
    detail.etag = version.etag.replace(/^"|"$/g, "");
  }
  if (target.versionId !== "null") detail.versionId = target.versionId;
  return { bucket: target.bucket, key: target.key, name, detail: JSON.stringify(detail) };
}

/** The outbox row of an event about `version` (its key, size, ETag and version id). */
export function objectEvent(
  name: EventName,
  version: Pick<ObjectVersion, "bucket" | "key" | "versionId" | "size" | "etag" | "deleteMarker">,
  ctx: { origin: EventOrigin; owner: string },
): OutboxEvent {
  const detail: EventDetail = {
    principal: ctx.origin.principal,
    sourceIp: ctx.origin.sourceIp,
    requestId: ctx.origin.requestId,
    owner: ctx.owner,
    time: Date.now(),
  };
  if (!version.deleteMarker && name !== "ObjectRemoved:Delete") {
    detail.size = version.size;
    detail.etag = version.etag.replace(/^"|"$/g, "");
  }
  if (version.versionId !== "null") detail.versionId = version.versionId;
  return { bucket: version.bucket, key: version.key, name, detail: JSON.stringify(detail) };
}

/** The event name of a deletion: a removal or a delete marker, by a request or by lifecycle. */
export function removalEvent(origin: EventOrigin, marker: boolean): EventName {
  const family = origin.lifecycle ? "LifecycleExpiration" : "ObjectRemoved";
  return `${family}:${marker ? "DeleteMarkerCreated" : "Delete"}` as EventName;
}
