// Event records: the protocol's event message structure (`{"Records": [...]}`), built from an
// outbox row for one destination (its configuration id and the dialect it was written in).
import type { Dialect } from "../http/dialect.ts";
import type { StoredEvent } from "../meta/store.ts";
import { spellEvent, TEST_EVENT } from "./names.ts";
import type { EventDetail } from "./outbox.ts";

/**
 * Event structure versions: 2.3 for lifecycle, ACL and tagging events, 2.2 for replication
 * events, 2.1 for the others.
 */
function eventVersion(name: string): string {
  if (name.startsWith("Replication:")) return "2.2";
  return /^(LifecycleExpiration|ObjectAcl|ObjectTagging):/.test(name) ? "2.3" : "2.1";
}

/** Object keys are URL-encoded in records (spaces as `+`, as form encoding does). */
export function encodeKey(key: string): string {
  return encodeURIComponent(key).replace(/%20/g, "+");
}

/** The sequencer: the outbox sequence number as fixed-width hex (orders the events of a key). */
export function sequencer(seq: number): string {
  return seq.toString(16).toUpperCase().padStart(16, "0");
}

export interface RecordContext {
  dialect: Dialect;
  region: string;
  /** The configuration's Id (s3.configurationId). */
  configurationId: string;
}

/** One record of the protocol's event message. */
export function eventRecord(event: StoredEvent, ctx: RecordContext): Record<string, unknown> {
  const d = JSON.parse(event.detail) as EventDetail;
  const object: Record<string, unknown> = { key: encodeKey(event.key) };
  if (d.size !== undefined) object.size = d.size;
  if (d.etag !== undefined) object.eTag = d.etag;
  if (d.versionId !== undefined) object.versionId = d.versionId;
  object.sequencer = sequencer(event.seq);
  const replication = d.replication ? { replicationEventData: replicationData(d) } : {};
  return {
    eventVersion: eventVersion(event.name),
    eventSource: ctx.dialect.eventSource,
    awsRegion: ctx.region,
    eventTime: new Date(d.time).toISOString(),
    eventName: spellEvent(ctx.dialect, event.name),
    userIdentity: { principalId: d.principal },
    requestParameters: { sourceIPAddress: d.sourceIp },
    responseElements: {
      [`${ctx.dialect.headerPrefix}request-id`]: d.requestId,
      [`${ctx.dialect.headerPrefix}id-2`]: d.requestId,
    },
    s3: {
      s3SchemaVersion: "1.0",
      configurationId: ctx.configurationId,
      bucket: {
        name: event.bucket,
        ownerIdentity: { principalId: d.owner },
        arn: ctx.dialect.resourceArnPrefix + event.bucket,
      },
      object,
    },
    ...replication,
  };
}

/** What a replication event says beyond the object: the node, its outcome and why it failed. */
function replicationData(d: EventDetail): Record<string, unknown> {
  const r = d.replication!;
  return {
    replicationStatus: r.status,
    destinationNode: r.node,
    destinationBucket: r.destinationBucket,
    s3Operation: r.operation === "put" ? "OBJECT_PUT" : "OBJECT_DELETE",
    requestTime: new Date(d.time).toISOString(),
    ...(r.reason === undefined ? {} : { failureReason: r.reason }),
  };
}

/** The message body for one destination: the record, or the test event. */
export function eventMessage(event: StoredEvent, ctx: RecordContext): string {
  if (event.name === TEST_EVENT) {
    const d = JSON.parse(event.detail) as EventDetail;
    return JSON.stringify({
      Service: ctx.dialect.eventService,
      Event: spellEvent(ctx.dialect, TEST_EVENT),
      Time: new Date(d.time).toISOString(),
      Bucket: event.bucket,
      RequestId: d.requestId,
      HostId: d.requestId,
    });
  }
  return JSON.stringify({ Records: [eventRecord(event, ctx)] });
}
