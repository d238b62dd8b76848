// Object replication. Every object change queued in the metadata (ObjectReplicationQueue: a
// version or delete marker written here, a version removed here) is sent to every node that is
// alive, in queue order from that node's own cursor, as one signed call each:
//
//   POST /cluster/object?meta=<hex SHA-256 of the X-Cluster-Object header>
//   X-Cluster-Object: <base64 of the change's JSON: op, bucket, key, versionId, version, ...>
//   Authorization: CLUSTER-HMAC-SHA256 ... Body=<hex SHA-256 of the object's bytes> ...
//
// The signature covers the path and query, so the metadata through its digest, and the bytes
// through their SHA-256, which the sender computes in a first streaming pass over the stored
// object and the receiver recomputes as the bytes stream into storage: a body that does not
// match is refused before its version commits. Nothing is held in memory whole on either side.
// The receiver writes through the object layer as REPLICA (same version id, never queued again).
// An SSE-C version, which no node can decrypt, travels as its chunks are stored (stored_body.ts).
import { backlogOf } from "./backoff.ts";
import { NodeRounds } from "./node_rounds.ts";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { ApiError } from "../api/json.ts";
import { currentAudit } from "../audit/scope.ts";
import { S3Error } from "../http/errors.ts";
import { log } from "../log.ts";
import type { MetaStore, ObjectChange, ObjectVersion, OutboxEvent } from "../meta/store.ts";
import { replicationEvent } from "../events/outbox.ts";
import {
  parseParts,
  parseStamps,
  stampedParts,
  type VersionParts,
} from "../meta/version_stamps.ts";
import { type ObjectLayer, single } from "../object/layer.ts";
import type { CallOptions } from "./client.ts";
import { streamToNode } from "./client.ts";
import { refused, requestTarget } from "./inbound.ts";
import type { Membership } from "./membership.ts";
import { type ReplicationConfig, ruleFor } from "./rules.ts";
import { sameHex, sha256Hex } from "./signature.ts";
import { storedBody, unframeStored } from "./stored_body.ts";
import type { SseRecord } from "../object/sse.ts";
import {
  NotReplicable,
  parseWireEncryption,
  type ReplicaKeys,
  type WireEncryption,
} from "./object_keys.ts";

export const OBJECT_HEADER = "x-cluster-object";
/** The header's bytes at most (user metadata and tags are bounded well below). */
const HEADER_LIMIT = 64 * 1024;
const BATCH = 100;
/** Changes of different keys sent to one node at once (one key's stay in order). */
const PARALLEL = 8;
/** How often the changes every node has received are deleted from the queue (node.ts: 5 heartbeats). */
const PRUNE_MS = 10_000;
/** How long the tombstone of a removed version is kept (STORE_CLUSTER_TOMBSTONE_TTL). */
const TOMBSTONE_TTL_MS = 7 * 86_400_000;

/** A version as it travels: everything but where its bytes are and its replication status. */
export type WireVersion = Omit<
  ObjectVersion,
  "data" | "replication" | "bucket" | "key" | "versionId"
>;

export interface ObjectMessage {
  /** A version written or removed, or a later change of its tags, ACL or Object Lock. */
  op: "put" | "delete" | "tags" | "acl" | "lock";
  bucket: string;
  key: string;
  versionId: string;
  /** The version written (put only). */
  version?: WireVersion;
  /**
   * How the version was encrypted at its source: its bytes travel decrypted, or as stored for
   * SSE-C (stored_body.ts).
   */
  encryption?: WireEncryption;
  /**
   * When the version was removed at its source (delete; absent from older senders): a receiver
   * keeps a copy written after it, and keeps its time in the tombstone (src/meta/removal_time.ts).
   */
  deletedAt?: number;
  /** The removal's requester could bypass governance retention (delete; only when true). */
  bypassGovernance?: true;
  /**
   * The version's stamped parts now (tags, ACL, retention, legal hold: the later changes, each
   * with its stamp; for tags, acl and lock). The receiver takes those newer than its own.
   */
  parts?: VersionParts;
}

const LATER_CHANGES = new Set(["tags", "acl", "lock"]);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isStringMap = (v: unknown) =>
  isObject(v) && Object.values(v).every((x) => typeof x === "string");

/** The change in a verified call's header, or undefined when it is malformed. */
export function parseObjectMessage(value: unknown): ObjectMessage | undefined {
  if (!isObject(value)) return undefined;
  const { op, bucket, key, versionId, version } = value;
  const encryption = parseWireEncryption(value.encryption);
  if (encryption === false) return undefined;
  if (op !== "put" && op !== "delete" && !LATER_CHANGES.has(op as string)) return undefined;
  if (typeof bucket !== "string" || typeof key !== "string" || typeof versionId !== "string") {
    return undefined;
  }
  if (bucket === "" || key === "" || versionId === "") return undefined;
  if (op === "delete") {
    const { deletedAt, bypassGovernance } = value;
    if (deletedAt !== undefined && !Number.isSafeInteger(deletedAt)) return undefined;
    if (bypassGovernance !== undefined && bypassGovernance !== true) return undefined;
    return {
      op,
      bucket,
      key,
      versionId,
      ...(deletedAt === undefined ? {} : { deletedAt: deletedAt as number }),
      ...(bypassGovernance ? { bypassGovernance } : {}),
    };
  }
  if (op !== "put") {
    const parts = parseParts(value.parts);
    return parts ? { op: op as ObjectMessage["op"], bucket, key, versionId, parts } : undefined;
  }
  if (!isObject(version)) return undefined;
  const v = version;
  const ok = typeof v.deleteMarker === "boolean" && Number.isSafeInteger(v.size) &&
    (v.size as number) >= 0 && typeof v.etag === "string" &&
    Number.isSafeInteger(v.lastModified) && typeof v.contentType === "string" &&
    isStringMap(v.userMeta) && isStringMap(v.headers) && typeof v.owner === "string" &&
    (v.acl === undefined || typeof v.acl === "string") &&
    (v.tags === undefined || isStringMap(v.tags)) &&
    (v.parts === undefined || (Array.isArray(v.parts) && v.parts.every(Number.isSafeInteger))) &&
    (v.checksum === undefined || isObject(v.checksum)) &&
    (v.retention === undefined ||
      (isObject(v.retention) && ["GOVERNANCE", "COMPLIANCE"].includes(v.retention.mode as string) &&
        Number.isSafeInteger(v.retention.until))) &&
    (v.legalHold === undefined || typeof v.legalHold === "boolean") && v.sse === undefined &&
    (v.stamps === undefined || parseStamps(v.stamps) !== undefined);
  if (!ok) return undefined;
  return {
    op,
    bucket,
    key,
    versionId,
    version: v as unknown as WireVersion,
    ...(encryption ? { encryption } : {}),
  };
}

/** The bytes' SHA-256, checked as they stream into storage (a refusal before the commit). */
class Sha256Check {
  #hash = createHash("sha256");
  constructor(readonly expected: string) {}
  update(chunk: Uint8Array): void {
    this.#hash.update(chunk);
  }
  finish(): void {
    if (!sameHex(this.#hash.digest("hex"), this.expected)) {
      throw refused("cluster_bad_signature", "The body does not match its signed digest.");
    }
  }
}

/**
 * Applies one verified object call: the header must match the digest signed in the query, then
 * the change is written through the object layer. Protocol errors become JSON errors with their
 * status (NoSuchBucket: 404, retried by the sender until the bucket has replicated too).
 */
export async function receiveObject(
  req: Request,
  layer: ObjectLayer,
  keys: ReplicaKeys,
  signedBody: string,
): Promise<void> {
  const header = req.headers.get(OBJECT_HEADER) ?? "";
  const query = new URL(requestTarget(req.url), "http://x").searchParams.get("meta") ?? "";
  if (header.length > HEADER_LIMIT || !sameHex(sha256Hex(header), query)) {
    await req.body?.cancel().catch(() => {});
    throw refused("cluster_bad_signature", "The object header does not match its signed digest.");
  }
  let message: ObjectMessage | undefined;
  try {
    message = parseObjectMessage(JSON.parse(Buffer.from(header, "base64").toString("utf8")));
  } catch {
    message = undefined;
  }
  if (!message) {
    await req.body?.cancel().catch(() => {});
    throw new ApiError(400, "invalid_message", "The object change is malformed.");
  }
  const { op, bucket, key, versionId } = message;
  // The write's audit entry names what it wrote.
  const scope = currentAudit();
  if (scope) {
    scope.bucket = bucket;
    scope.key = key;
  }
  try {
    if (op !== "put") {
      await req.body?.cancel().catch(() => {});
      if (!sameHex(signedBody, sha256Hex(new Uint8Array(0)))) {
        throw refused("cluster_bad_signature", "A deletion or later change has no body.");
      }
    }
    if (op === "delete") {
      const { deletedAt, bypassGovernance } = message;
      try {
        await layer.deleteReplica(bucket, key, versionId, { deletedAt, bypassGovernance });
      } catch (err) {
        // A copy written here after the removal stays: the later of the two wins, on every node.
        if (!(err instanceof S3Error && err.code === "PreconditionFailed")) throw err;
      }
    } else if (op !== "put") {
      // A version not here (left out by rules, or refused) has nothing to change.
      await layer.mergeReplicaParts({ bucket, key, versionId }, message.parts!);
    } else {
      const version = { ...message.version!, bucket, key, versionId };
      const body = req.body ?? single(new Uint8Array(0));
      const wire = message.encryption;
      if (wire?.kind === "c") {
        // Sealed with the customer's key: kept as it is, under the same chunk ids.
        if (version.deleteMarker) {
          throw new ApiError(400, "invalid_message", "A marker has no key.");
        }
        const sse: SseRecord = { kind: "c", keyMd5: wire.keyMd5 };
        // Each chunk is read into one of the write buffers, as the bytes of any upload are.
        const chunks = unframeStored(body, version.size, [new Sha256Check(signedBody)], {
          take: (n) => layer.writeBuffers.take(n, false),
          give: (b) => layer.writeBuffers.give(b.buffer),
        });
        await layer.putStoredReplica(version, JSON.stringify(sse), chunks);
        return;
      }
      // Re-encrypted with this node's own keys (a KMS key id unknown here: KMS.NotFoundException).
      const encryption = version.deleteMarker ? undefined : await keys.replica(bucket, wire);
      await layer.putReplica(version, body, [new Sha256Check(signedBody)], encryption);
    }
  } catch (err) {
    if (err instanceof S3Error) throw new ApiError(err.status, err.code, err.message);
    throw err;
  }
}

/**
 * What one delivery came to: sent, refused for good, nothing to send (the version is gone), or
 * not to be replicated (no Enabled rule of the bucket's replication configuration takes it).
 */
export type Outcome = "delivered" | "failed" | "skipped" | "excluded";

/** A delivery's outcome, with what the source's replication event says of it. */
interface Delivery {
  outcome: Outcome;
  /** The version sent (puts). */
  version?: ObjectVersion;
  /** The bucket written into on the node. */
  destination?: string;
  /** Why the node refused it (failed). */
  reason?: string;
}

/** A refusal that will not change by retrying (anything else is retried with backoff). */
class PermanentRefusal extends Error {}

const outcome = (o: Outcome): Delivery => ({ outcome: o });

/** Statuses retried: the receiver's signature checks, a bucket not there yet, overload, faults. */
const RETRIED = new Set([403, 404, 408, 409, 429]);
/**
 * How long a node may answer NoSuchBucket to one change before it is FAILED: long enough for the
 * bucket's own replication to arrive (well under a second when the node is up), short enough that
 * a destination bucket deleted there does not hold the node's queue up for ever.
 */
const MISSING_BUCKET_MS = 120_000;

export class ObjectReplicator extends NodeRounds {
  /** `<node>:<seq>` of changes answered NoSuchBucket, with when that was first answered. */
  #missingSince = new Map<string, number>();

  constructor(
    readonly meta: MetaStore,
    readonly layer: ObjectLayer,
    readonly keys: ReplicaKeys,
    membership: Membership,
    readonly call: () => CallOptions,
    pollMs = 100,
    readonly missingBucketMs = MISSING_BUCKET_MS,
    pruneMs = PRUNE_MS,
    readonly tombstoneTtlMs = TOMBSTONE_TTL_MS,
  ) {
    super("Object replication", membership, pollMs, pruneMs);
  }

  protected async prune(nodes: string[]): Promise<void> {
    for (const node of nodes) await this.meta.setObjectReplicationCursor(node, 0);
    const pruned = await this.meta.pruneObjectChanges(nodes);
    if (pruned > 0) log("debug", "Object changes every node has received pruned", { pruned });
    const tombstones = await this.meta.pruneTombstones(Date.now() - this.tombstoneTtlMs);
    if (tombstones > 0) log("debug", "Tombstones of removed versions pruned", { tombstones });
  }

  /**
   * Sends one version (or marker) to one node now, outside the queue (anti-entropy repairs):
   * the same call, rules and encryption as a queued change; throws when it is to be retried.
   * With `parts`, its stamped later changes instead, as a later-change call (any of tags, acl and
   * lock carries every stamped part).
   */
  repair(
    node: string,
    url: string,
    target: { bucket: string; key: string; versionId: string },
    what: "version" | "parts" = "version",
  ): Promise<Outcome> {
    const op = what === "parts" ? "tags" : "put";
    return this.#deliver(node, url, { seq: 0, op, ...target, queuedAt: Date.now() })
      .then((d) => d.outcome);
  }

  /** Object changes not yet delivered to a node, and how long the oldest has waited. */
  async backlog(node: string): Promise<{ depth: number; lagMs: number }> {
    return backlogOf(
      await this.meta.objectReplicationBacklog(await this.meta.objectReplicationCursor(node)),
    );
  }

  /** Sends what lies after the node's cursor, change by change, until none is left or one fails. */
  protected async catchUp(node: string, url: string): Promise<void> {
    while (!this.stopped) {
      const cursor = await this.meta.objectReplicationCursor(node);
      const pending = await this.meta.objectChanges(cursor, BATCH);
      if (pending.length === 0) break;
      for (let i = 0; i < pending.length && !this.stopped;) {
        const group: ObjectChange[] = [];
        const keys = new Set<string>();
        while (i < pending.length && group.length < PARALLEL) {
          const key = `${pending[i].bucket}/${pending[i].key}`;
          if (keys.has(key)) break;
          keys.add(key);
          group.push(pending[i++]);
        }
        const outcomes = await Promise.allSettled(group.map((c) => this.#deliver(node, url, c)));
        let done = 0;
        while (done < group.length && outcomes[done].status === "fulfilled") done++;
        // The cursor moves only past changes the node answered, in order: a crash before
        // re-sends them, and the receiver applies a change again to the same effect.
        if (done > 0) {
          const settled = group.slice(0, done);
          const deliveries = outcomes.slice(0, done).map((o) =>
            (o as PromiseFulfilledResult<Delivery>).value
          );
          // Refusals are FAILED before the cursor moves past them: another node's settle that
          // finds every cursor past a change marks it COMPLETED, and a status is final once set.
          await this.#markFailed(settled, deliveries);
          await this.meta.setObjectReplicationCursor(node, group[done - 1].seq);
          await this.#settle(node, settled, deliveries);
        }
        if (done < group.length) throw (outcomes[done] as PromiseRejectedResult).reason;
      }
      this.backoff.succeeded(node);
    }
  }

  /** The versions a node refused for good: FAILED (before its cursor moves past them). */
  async #markFailed(changes: ObjectChange[], deliveries: Delivery[]): Promise<void> {
    await Promise.all(changes.map((change, i) => {
      if (change.op !== "put" || deliveries[i].outcome !== "failed") return;
      const target = { bucket: change.bucket, key: change.key, versionId: change.versionId };
      return this.meta.setReplicationStatus(target, "FAILED");
    }));
  }

  /**
   * COMPLETED once every node known has received the change (refusals were marked FAILED
   * already). Each outcome of a version written or removed here is also an event in the outbox
   * (Replication:*), with the statuses in one group commit on SQLite.
   */
  async #settle(node: string, changes: ObjectChange[], deliveries: Delivery[]): Promise<void> {
    const cursors = await Promise.all(
      this.membership.view().map((m) => this.meta.objectReplicationCursor(m.id)),
    );
    const everywhere = Math.min(...cursors);
    const events = await this.#events(node, changes, deliveries);
    // Started together: the group commit writes them in one transaction.
    await Promise.all([
      ...changes.map((change, i) => {
        const { outcome } = deliveries[i];
        if (change.op !== "put" || outcome === "skipped" || outcome === "failed") return;
        const target = { bucket: change.bucket, key: change.key, versionId: change.versionId };
        if (outcome === "excluded") return this.meta.setReplicationStatus(target, null);
        if (everywhere >= change.seq) return this.meta.setReplicationStatus(target, "COMPLETED");
      }),
      events.length > 0 ? this.meta.appendEvents(events) : undefined,
    ]);
    if (events.length > 0) this.layer.committed.fire();
  }

  /** The replication events of delivered or refused writes and removals. */
  async #events(
    node: string,
    changes: ObjectChange[],
    deliveries: Delivery[],
  ): Promise<OutboxEvent[]> {
    const events: OutboxEvent[] = [];
    const owners = new Map<string, string>();
    for (const [i, change] of changes.entries()) {
      const d = deliveries[i];
      if (change.op !== "put" && change.op !== "delete") continue;
      if (d.outcome !== "delivered" && d.outcome !== "failed") continue;
      if (!owners.has(change.bucket)) {
        owners.set(change.bucket, (await this.meta.getBucket(change.bucket))?.owner ?? "");
      }
      events.push(replicationEvent(change, d.version, {
        status: d.outcome === "delivered" ? "COMPLETED" : "FAILED",
        node,
        operation: change.op,
        destinationBucket: d.destination ?? change.bucket,
        ...(d.reason === undefined ? {} : { reason: d.reason }),
      }, { self: this.membership.self.id, owner: owners.get(change.bucket)! }));
    }
    return events;
  }

  async #deliver(node: string, url: string, change: ObjectChange): Promise<Delivery> {
    const { op, bucket, key, versionId } = change;
    let version: ObjectVersion | undefined;
    let source: Awaited<ReturnType<ReplicaKeys["source"]>> = {};
    if (LATER_CHANGES.has(op)) {
      version = await this.meta.getObjectVersion(bucket, key, versionId);
      if (!version || version.deleteMarker) return outcome("skipped");
    }
    if (op === "put") {
      version = await this.meta.getObjectVersion(bucket, key, versionId);
      // Removed since: its deletion is further down the queue.
      if (!version) return outcome("skipped");
      try {
        source = await this.keys.source(version);
      } catch (err) {
        if (!(err instanceof NotReplicable)) throw err;
        log("warn", `An object is not replicated: ${err.message}`, { bucket, key, versionId });
        return { outcome: "failed", version, reason: err.message };
      }
    }
    const message: ObjectMessage = { op, bucket, key, versionId };
    if (op === "delete") {
      message.deletedAt = change.queuedAt;
      if (change.bypassGovernance) message.bypassGovernance = true;
    }
    if (source.encryption) message.encryption = source.encryption;
    const rules = await this.meta.getBucketConfig(bucket, "replication");
    if (rules !== undefined) {
      // With rules, a change goes only where an Enabled rule sends it; deletions of a version
      // are not replicated, and delete markers only where the rule says so (as the protocol has).
      if (!version) return outcome("excluded");
      const rule = ruleFor(JSON.parse(rules) as ReplicationConfig, { key, tags: version.tags });
      if (!rule || (version.deleteMarker && !rule.deleteMarkers)) return outcome("excluded");
      message.bucket = rule.destination;
    }
    if (LATER_CHANGES.has(op)) message.parts = stampedParts(version!);
    const bytes = op === "put" && version !== undefined && !version.deleteMarker;
    if (op === "put" && version) {
      const {
        data: _data,
        replication: _replication,
        sse: _sse,
        bucket: _b,
        key: _k,
        versionId: _v,
        ...wire
      } = version;
      message.version = wire;
    }
    const header = Buffer.from(JSON.stringify(message), "utf8").toString("base64");
    // SSE-C: the chunks as stored (this node cannot decrypt them); otherwise the plaintext.
    const asStored = source.encryption?.kind === "c";
    const open = async () =>
      asStored
        ? await storedBody(this.layer.storedChunks(version!))
        : (await this.layer.openObject(version!, undefined, source.key)).body;
    const sha256 = bytes ? await digestOf(await open()) : sha256Hex(new Uint8Array(0));
    const body = bytes ? await open() : new Uint8Array(0);
    try {
      const options = this.call();
      const { status, value } = await streamToNode(
        url,
        `/cluster/object?meta=${sha256Hex(header)}`,
        {
          ...options,
          // A slow link gets a minute plus a second per MiB.
          timeoutMs: Math.max(options.timeoutMs, 60_000 + (version?.size ?? 0) / 1024),
          body,
          sha256,
          headers: { [OBJECT_HEADER]: header, "x-store-replication-status": "REPLICA" },
        },
      );
      const missing = `${node}:${change.seq}`;
      if (status === 200) {
        this.#missingSince.delete(missing);
        return { outcome: "delivered", version, destination: message.bucket };
      }
      const error = (value.error ?? {}) as { code?: string; message?: string };
      if (status === 404 && error.code === "NoSuchBucket" && change.seq > 0) {
        const since = this.#missingSince.get(missing) ?? Date.now();
        this.#missingSince.set(missing, since);
        if (Date.now() - since > this.missingBucketMs) {
          this.#missingSince.delete(missing);
          log("warn", "A node has no bucket for a replicated object change", { node, bucket, key });
          throw new PermanentRefusal(`404 NoSuchBucket: no bucket ${message.bucket} there`);
        }
      }
      // A signed AccessDenied is the receiver's Object Lock keeping the version: final.
      const locked = status === 403 && error.code === "AccessDenied";
      if (status >= 500 || (RETRIED.has(status) && !locked)) {
        throw new Error(`${status} ${error.code ?? ""}: ${error.message ?? ""}`);
      }
      log("warn", "A node refused a replicated object change", {
        node,
        op,
        bucket,
        key,
        versionId,
        status,
        code: error.code,
        reason: error.message,
      });
      throw new PermanentRefusal(`${status} ${error.code ?? ""}: ${error.message ?? ""}`);
    } catch (err) {
      if (err instanceof PermanentRefusal) {
        return { outcome: "failed", version, destination: message.bucket, reason: err.message };
      }
      if (body instanceof ReadableStream) await body.cancel().catch(() => {});
      throw err;
    }
  }
}

/** The SHA-256 of a body, read as a stream. */
async function digestOf(body: ReadableStream<Uint8Array> | Uint8Array): Promise<string> {
  const hash = createHash("sha256");
  if (body instanceof Uint8Array) hash.update(body);
  else for await (const chunk of body) hash.update(chunk);
  return hash.digest("hex");
}
