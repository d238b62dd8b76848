// A node of the cluster: joins through its seeds, sends heartbeats (with its member list) to
// every node it knows, and answers the signed calls of the others under /cluster/.
import { ApiError, apiErrorResponse, jsonResponse, pathSegments } from "../api/json.ts";
import { currentAudit } from "../audit/scope.ts";
import { log } from "../log.ts";
import { S3Error } from "../http/errors.ts";
import { callNode, type CallOptions } from "./client.ts";
import {
  callJson,
  signedAnswer,
  type VerifiedCall,
  verifyCall,
  verifySignature,
} from "./inbound.ts";
import {
  type Forgotten,
  forgottenList,
  Membership,
  type MemberView,
  type NodeRef,
  nodeRef,
  startedOf,
} from "./membership.ts";
import { NonceCache } from "./nonces.ts";
import type { ClusterConfig } from "./settings.ts";
import { WINDOW_MS } from "./signature.ts";
import type { BucketState, MetaStore } from "../meta/store.ts";
import type { ObjectLayer } from "../object/layer.ts";
import { BucketReplicator, type Deliver, parseBucketState } from "./replication.ts";
import type { NodeRounds } from "./node_rounds.ts";
import { ObjectReplicator, receiveObject } from "./objects.ts";
import type { ReplicaKeys } from "./object_keys.ts";
import { AntiEntropy, type AntiEntropyStatus } from "./anti_entropy.ts";
import { AntiEntropyAnswers } from "./anti_entropy_answer.ts";
import { SharedMeta } from "./shared_meta.ts";
import { sharedHoldingsOf } from "../meta/shared_holdings.ts";
import type { SecretSealer } from "../auth/secrets.ts";
import { parseUserState, UserReplicator, wireSealer } from "./users.ts";
import { parseRecordState, RecordReplicator } from "./records.ts";

/** Bytes a join, heartbeat or ping body may have; a message (bucket states) may have more. */
const BODY_LIMIT = 64 * 1024;
const MESSAGE_LIMIT = 8 * 1024 * 1024;
/** Nonces remembered at most (a few hundred calls a second across the window). */
const NONCE_LIMIT = 200_000;
/** How long a stopping node waits for the others to take note. */
const LEAVE_TIMEOUT_MS = 2000;

export interface ClusterStatus {
  enabled: true;
  node: NodeRef;
  nodes: (MemberView & {
    self: boolean;
    queueDepth?: number;
    lagMs?: number;
    objectQueueDepth?: number;
    objectLagMs?: number;
    userQueueDepth?: number;
    userLagMs?: number;
    recordQueueDepth?: number;
    recordLagMs?: number;
  })[];
  antiEntropy: AntiEntropyStatus;
}

type Route = (call: VerifiedCall, json: Record<string, unknown>) => unknown;

interface RouteSpec {
  method: string;
  run: Route;
  /** Routine routes (heartbeats, pings) leave no audit entry when they succeed. */
  routine?: boolean;
  bodyLimit?: number;
}

export class ClusterNode {
  readonly membership: Membership;
  #nonces = new NonceCache(WINDOW_MS, NONCE_LIMIT);
  #timer?: ReturnType<typeof setTimeout>;
  #stopped = false;
  /** URLs with a join or heartbeat on its way. */
  #calling = new Set<string>();
  /** Seeds that answered a join; later rounds reach them by their advertised URLs. */
  #joinedSeeds = new Set<string>();
  #routes: Record<string, RouteSpec>;
  #replicator: BucketReplicator;
  #objects: ObjectReplicator;
  /** Set when the metadata is in PostgreSQL, which other nodes may share (shared_meta.ts). */
  readonly shared?: SharedMeta;
  #users: UserReplicator;
  #records: RecordReplicator;
  /** The four senders above, which start, stop and skip alike. */
  #senders: NodeRounds[];
  /** This node's secret sealer, and the cluster's for secrets between nodes (users.ts). */
  #sealer: SecretSealer;
  #wire: SecretSealer;
  /** When this process started: a node forgotten comes back only with a later start. */
  readonly #started = Date.now();
  /** Anti-entropy passes (src/cluster/anti_entropy.ts); `antiEntropy.runNow()` runs one. */
  readonly antiEntropy: AntiEntropy;
  /** The member list as last saved (JSON), and the save on its way (one at a time). */
  #savedList = "";
  #saving: Promise<void> = Promise.resolve();
  /** Called when a directory access mapping from another node was taken (the LDAP cache). */
  mappingsChanged?: () => void;

  constructor(
    readonly config: ClusterConfig,
    readonly queue: MetaStore,
    readonly layer: ObjectLayer,
    readonly keys: ReplicaKeys,
    sealer: SecretSealer,
  ) {
    this.#sealer = sealer;
    this.#wire = wireSealer(config.secret);
    this.membership = new Membership(
      { id: config.nodeId, url: config.advertiseUrl },
      { suspectMs: config.suspectMs, deadMs: config.deadMs },
    );
    const callOptions = () => this.#callOptions(Math.max(5000, config.heartbeatMs * 2));
    const message: Deliver = (url, body) =>
      callNode(url, "/cluster/message", { ...callOptions(), body });
    // Every queue is pruned each five heartbeats: after a restart, the member list is whole again
    // by then.
    const pruneMs = config.heartbeatMs * 5;
    this.#replicator = new BucketReplicator(queue, this.membership, message, undefined, pruneMs);
    this.#objects = new ObjectReplicator(
      queue,
      layer,
      keys,
      this.membership,
      callOptions,
      undefined,
      undefined,
      pruneMs,
      config.tombstoneTtlMs,
    );
    this.#users = new UserReplicator(
      queue,
      this.membership,
      message,
      sealer,
      this.#wire,
      undefined,
      pruneMs,
    );
    this.#records = new RecordReplicator(
      queue,
      this.membership,
      message,
      sealer,
      this.#wire,
      undefined,
      pruneMs,
    );
    this.#senders = [this.#replicator, this.#objects, this.#users, this.#records];
    const holdings = sharedHoldingsOf(queue);
    if (holdings) {
      const shared = new SharedMeta(
        holdings,
        queue,
        layer.chunks,
        this.membership,
        () => this.#callOptions(Math.max(10_000, config.heartbeatMs * 2)),
      );
      this.shared = shared;
      layer.chunks.resolver = shared;
      // Nodes sharing the database share the rows: nothing to send them; to the others, one of
      // the nodes sharing it sends (they share the queues and cursors too).
      const skip = (node: string) => shared.isShared(node) || !shared.sendsToOthers();
      for (const sender of this.#senders) sender.skip = skip;
    }
    const answers = new AntiEntropyAnswers(queue);
    this.antiEntropy = new AntiEntropy({
      meta: queue,
      membership: this.membership,
      ask: (url, body) =>
        callNode(url, "/cluster/anti-entropy", { ...this.#callOptions(60_000), body }),
      sendBuckets: (url, changes) =>
        callNode(url, "/cluster/message", {
          ...this.#callOptions(60_000),
          body: { type: "buckets", changes },
        }),
      sendVersion: (node, url, target, what) => this.#objects.repair(node, url, target, what),
      dropVersion: (target, deletedAt) => this.#dropVersion(target, deletedAt),
      skip: (node) =>
        this.shared ? this.shared.isShared(node) || !this.shared.sendsToOthers() : false,
    }, { intervalMs: config.antiEntropyMs, rate: config.antiEntropyRate });
    this.#routes = {
      join: { method: "POST", run: (call, json) => this.#joined(call, json) },
      heartbeat: {
        method: "POST",
        run: (call, json) => this.#heartbeat(call, json),
        routine: true,
      },
      ping: {
        method: "GET",
        run: () => ({ node: this.membership.self, time: Date.now() }),
        routine: true,
      },
      message: {
        method: "POST",
        run: (call, json) => this.#message(call, json),
        bodyLimit: MESSAGE_LIMIT,
      },
      "anti-entropy": {
        method: "POST",
        run: (call, json) => answers.answer(call.node, json),
        routine: true,
        bodyLimit: MESSAGE_LIMIT,
      },
    };
  }

  /** Starts with the member list saved before (its nodes get heartbeats before any seed answers). */
  async start(): Promise<void> {
    try {
      const saved = await this.queue.loadClusterMembers(this.config.nodeId);
      this.membership.restore(saved);
      this.#savedList = JSON.stringify(this.membership.saved());
      log("info", "Cluster member list loaded", {
        members: saved.members.length,
        forgotten: saved.forgotten.length,
      });
    } catch (err) {
      log("warn", "Loading the saved member list failed", { error: String(err) });
    }
    log("info", "Cluster node started", {
      node: this.config.nodeId,
      url: this.config.advertiseUrl,
      seeds: this.config.seeds,
    });
    this.#tick();
    const senders = () => {
      if (this.#stopped) return;
      for (const sender of this.#senders) sender.start();
      this.shared?.start();
      this.antiEntropy.start();
    };
    // The nodes sharing the database are known before anything is sent.
    if (!this.shared) return senders();
    this.shared.register().catch((err) =>
      log("warn", "Registering in the shared metadata failed", { error: String(err) })
    ).finally(senders);
  }

  /** Stops heartbeats and tells the nodes that are alive that this one is going. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#saveMembers();
    await Promise.all([
      ...this.#senders.map((sender) => sender.stop()),
      this.antiEntropy.stop(),
      this.shared?.stop(),
    ]);
    const alive = this.membership.view().filter((m) => m.state === "alive");
    await Promise.allSettled(
      alive.map((m) =>
        callNode(m.url, "/cluster/message", {
          ...this.#callOptions(LEAVE_TIMEOUT_MS),
          body: { type: "leave", node: this.membership.self },
        })
      ),
    );
  }

  /** This node's view, with the bucket changes each other node has yet to receive. */
  async status(): Promise<ClusterStatus> {
    const self = { ...this.membership.self, state: "alive" as const, lastHeartbeat: Date.now() };
    const others = await Promise.all(
      this.membership.view().map(async (m) => {
        const { depth, lagMs } = await this.#replicator.backlog(m.id);
        const objects = await this.#objects.backlog(m.id);
        const users = await this.#users.backlog(m.id);
        const records = await this.#records.backlog(m.id);
        return {
          ...m,
          self: false,
          queueDepth: depth,
          lagMs,
          objectQueueDepth: objects.depth,
          objectLagMs: objects.lagMs,
          userQueueDepth: users.depth,
          userLagMs: users.lagMs,
          recordQueueDepth: records.depth,
          recordLagMs: records.lagMs,
        };
      }),
    );
    return {
      enabled: true,
      node: this.membership.self,
      nodes: [{ ...self, self: true }, ...others],
      antiEntropy: this.antiEntropy.status(),
    };
  }

  /**
   * Forgets a node that is gone for good (DELETE /admin/cluster/nodes/{id}): it leaves the member
   * list here and, told now or through heartbeats later, on every other node; its cursors are
   * released so the queues prune again. Refused for this node and for a node that is alive.
   */
  async forget(id: string): Promise<{ forgotten: Forgotten; told: string[] }> {
    if (id === this.membership.self.id) {
      throw new ApiError(409, "node_is_self", "A node cannot forget itself.");
    }
    const member = this.membership.view().find((m) => m.id === id);
    if (member?.state === "alive") {
      throw new ApiError(409, "node_alive", "The node is alive: stop it before forgetting it.");
    }
    const at = Date.now();
    if (!member && !this.membership.isForgotten(id)) {
      // Not in the list (e.g. since a restart here) but perhaps still holding the queues.
      if (!(await this.queue.forgetReplicationNode(id))) {
        throw new ApiError(404, "no_such_node", "No node of that id is known here.");
      }
    }
    this.membership.forget(id, at);
    // Kept before the answer: a restart of this node right after does not undo it.
    await this.#saveMembers();
    await this.queue.forgetReplicationNode(id);
    await this.shared?.forget(id);
    log("info", "Cluster node forgotten", { node: id });
    const forgotten = { id, at };
    const alive = this.membership.view().filter((m) => m.state === "alive");
    const answers = await Promise.allSettled(
      alive.map((m) =>
        callNode(m.url, "/cluster/message", {
          ...this.#callOptions(Math.max(5000, this.config.heartbeatMs * 2)),
          body: { type: "forget", node: this.membership.self, forgotten: [forgotten] },
        })
      ),
    );
    return {
      forgotten,
      told: alive.filter((_, i) => answers[i].status === "fulfilled").map((m) => m.id),
    };
  }

  /** Forgets the nodes another node forgot; their cursors here are released too. */
  async #learnForgotten(value: unknown): Promise<void> {
    for (const { id, at } of forgottenList(value)) {
      if (!this.membership.forget(id, at)) continue;
      log("info", "Cluster node forgotten", { node: id, at: new Date(at).toISOString() });
      try {
        await this.queue.forgetReplicationNode(id);
        await this.shared?.forget(id);
      } catch (err) {
        log("warn", "Releasing a forgotten node's cursors failed", {
          node: id,
          error: String(err),
        });
      }
    }
  }

  /** Answers a call under /cluster/ (signed JSON) or refuses it (JSON error). */
  async handle(req: Request): Promise<Response> {
    const scope = currentAudit();
    const requestId = scope?.requestId ?? crypto.randomUUID();
    try {
      const [name, ...rest] = pathSegments(req.url, "/cluster");
      const route = rest.length === 0 && Object.hasOwn(this.#routes, name)
        ? this.#routes[name]
        : undefined;
      if (scope) scope.operation = `Cluster:${name ?? ""}`;
      if (name === "object" && rest.length === 0) return await this.#object(req);
      if (name === "chunk" && rest.length === 0) return await this.#chunk(req);
      if (!route) throw new ApiError(404, "not_found", "No such cluster route.");
      if (req.method !== route.method) {
        throw new ApiError(405, "method_not_allowed", `Use ${route.method}.`);
      }
      const call = await verifyCall(req, {
        secret: this.config.secret,
        nonces: this.#nonces,
        bodyLimit: route.bodyLimit ?? BODY_LIMIT,
      });
      if (scope) scope.principal = `node:${call.node}`;
      const json = route.method === "GET" ? {} : callJson(call);
      const value = await route.run(call, json);
      if (scope && route.routine) scope.routine = true;
      return signedAnswer(this.config.secret, call.nonce, 200, value);
    } catch (err) {
      return apiErrorResponse(err, requestId);
    }
  }

  /**
   * An object change from another node (src/cluster/objects.ts): its bytes stream into storage
   * and are checked against their signed digest before the version commits. Answers, refusals
   * included, are signed once the call is verified, so the sender can trust the status.
   */
  async #object(req: Request): Promise<Response> {
    if (req.method !== "POST") {
      req.body?.cancel().catch(() => {});
      throw new ApiError(405, "method_not_allowed", "Use POST.");
    }
    const call = await verifySignature(req, { secret: this.config.secret, nonces: this.#nonces });
    const scope = currentAudit();
    if (scope) scope.principal = `node:${call.node}`;
    if (this.shared?.isShared(call.node)) {
      // The sender's rows are these rows: nothing to write, and its bytes come by fetch. Not
      // taken (the sender retries, and skips this node once it sees it shares the database), so
      // the sender does not move this node's cursor, which is this node's own follower's.
      await req.body?.cancel().catch(() => {});
      if (scope) scope.errorCode = "shared_metadata";
      return signedAnswer(this.config.secret, call.nonce, 503, {
        error: {
          code: "shared_metadata",
          message: "This node shares the sender's metadata database: nothing to replicate.",
        },
      });
    }
    try {
      await receiveObject(req, this.layer, this.keys, call.body);
      if (scope) scope.routine = true;
      return signedAnswer(this.config.secret, call.nonce, 200, { ok: true });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (scope) scope.errorCode = err.code;
      return signedAnswer(this.config.secret, call.nonce, err.status, {
        error: { code: err.code, message: err.message },
      });
    }
  }

  /**
   * GET /cluster/chunk?id=: the stored bytes of a chunk this node holds, for a node sharing the
   * metadata (signed like every answer, refusals included).
   */
  async #chunk(req: Request): Promise<Response> {
    if (req.method !== "GET") {
      req.body?.cancel().catch(() => {});
      throw new ApiError(405, "method_not_allowed", "Use GET.");
    }
    const call = await verifyCall(req, {
      secret: this.config.secret,
      nonces: this.#nonces,
      bodyLimit: 0,
    });
    const scope = currentAudit();
    if (scope) scope.principal = `node:${call.node}`;
    const id = new URL(req.url).searchParams.get("id") ?? "";
    try {
      if (!this.shared || !id) throw new ApiError(404, "chunk_not_here", "No such chunk here.");
      const res = await this.shared.serve(id, this.config.secret, call.nonce);
      if (scope) scope.routine = true;
      return res;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (scope) scope.errorCode = err.code;
      return signedAnswer(this.config.secret, call.nonce, err.status, {
        error: { code: err.code, message: err.message },
      });
    }
  }

  /**
   * Removes this node's copy of a version another node removed (anti-entropy found its
   * tombstone there): as a replicated deletion, Object Lock checked, and not a copy written after
   * the removal. "kept" when this node's Object Lock keeps it.
   */
  async #dropVersion(
    t: { bucket: string; key: string; versionId: string },
    deletedAt: number,
  ): Promise<"deleted" | "kept"> {
    try {
      await this.layer.deleteReplica(t.bucket, t.key, t.versionId, { deletedAt });
      return "deleted";
    } catch (err) {
      if (!(err instanceof S3Error)) throw err;
      log("warn", "A version removed on another node is kept here", {
        ...t,
        code: err.code,
        reason: err.message,
      });
      return "kept";
    }
  }

  #callOptions(timeoutMs: number): CallOptions {
    return { secret: this.config.secret, node: this.config.nodeId, timeoutMs };
  }

  /** The sender of a join or heartbeat: it must name itself as it signed. */
  #sender(call: VerifiedCall, json: Record<string, unknown>): NodeRef {
    const ref = nodeRef(json.node);
    if (!ref) throw new ApiError(400, "invalid_node", "The body must name the node: {id, url}.");
    if (ref.id !== call.node) {
      throw new ApiError(400, "node_mismatch", "The body names another node than the signature.");
    }
    return ref;
  }

  /** This node as it names itself in joins, heartbeats and answers (with its start). */
  #me() {
    return { ...this.membership.self, started: this.#started };
  }

  #answer() {
    return {
      node: this.#me(),
      members: this.membership.refs(),
      forgotten: this.membership.forgotten(),
    };
  }

  /** Direct contact from a caller; a node forgotten that has not started again is refused. */
  #heard(ref: NodeRef, json: Record<string, unknown>): void {
    if (this.membership.heardFrom(ref, Date.now(), startedOf(json.node))) return;
    throw new ApiError(
      410,
      "node_forgotten",
      "This node was forgotten by the cluster; restart it to join again.",
    );
  }

  #joined(call: VerifiedCall, json: Record<string, unknown>) {
    const ref = this.#sender(call, json);
    this.#heard(ref, json);
    log("info", "Cluster node joined", { node: ref.id, url: ref.url });
    return this.#answer();
  }

  async #heartbeat(call: VerifiedCall, json: Record<string, unknown>) {
    this.#heard(this.#sender(call, json), json);
    this.#learn(json.members);
    await this.#learnForgotten(json.forgotten);
    return this.#answer();
  }

  async #message(call: VerifiedCall, json: Record<string, unknown>) {
    if (json.type === "buckets") return await this.#applyBuckets(call, json.changes);
    if (json.type === "users") return await this.#applyUsers(json.changes);
    if (json.type === "records") return await this.#applyRecords(json.changes);
    if (json.type === "forget") {
      this.#sender(call, json);
      await this.#learnForgotten(json.forgotten);
      return { ok: true };
    }
    if (json.type === "leave") {
      this.#sender(call, json);
      this.membership.leaving(call.node);
      log("info", "Cluster node left", { node: call.node });
      return { ok: true };
    }
    throw new ApiError(400, "unknown_message", "Unknown cluster message type.");
  }

  /** Bucket states from another node, applied in order (each in its own transaction). */
  async #applyBuckets(call: VerifiedCall, changes: unknown) {
    if (!Array.isArray(changes)) {
      throw new ApiError(400, "invalid_message", "A buckets message needs a changes array.");
    }
    // A node sharing the database changed these very rows.
    if (this.shared?.isShared(call.node)) {
      const scope = currentAudit();
      if (scope) scope.routine = true;
      return { applied: 0, stale: changes.length, kept: 0 };
    }
    const states = changes.map(parseBucketState);
    if (states.some((s) => s === undefined)) {
      throw new ApiError(400, "invalid_message", "A bucket change is malformed.");
    }
    // Started together, in order: the group commit applies them in one transaction (one fsync),
    // each in its own savepoint.
    const results = await Promise.all(
      (states as BucketState[]).map((state) => this.queue.applyBucketState(state)),
    );
    // Each applied change has its own audit entry; the message itself needs none (most messages
    // that come back around are all stale).
    const scope = currentAudit();
    if (scope) scope.routine = true;
    const outcomes = { applied: 0, stale: 0, kept: 0 };
    results.forEach((outcome, i) => {
      outcomes[outcome]++;
      if (outcome === "kept") {
        log("warn", "A replicated bucket deletion was not applied: the bucket holds data here", {
          bucket: (states[i] as BucketState).bucket,
          from: call.node,
        });
      }
    });
    return outcomes;
  }

  /** User states from another node, each merged in its own transaction (in one group commit). */
  async #applyUsers(changes: unknown) {
    const states = Array.isArray(changes)
      ? changes.map((c) => parseUserState(c, this.#sealer, this.#wire))
      : [undefined];
    if (states.some((s) => s === undefined)) {
      throw new ApiError(400, "invalid_message", "A user change is malformed.");
    }
    const results = await Promise.all(
      states.map((state) => this.queue.applyUserState(state!)),
    );
    const scope = currentAudit();
    if (scope) scope.routine = true;
    const outcomes = { applied: 0, stale: 0, conflict: 0 };
    results.forEach((outcome, i) => {
      outcomes[outcome]++;
      if (outcome === "conflict") {
        log("warn", "A replicated user was not taken: its name or key belongs to an older user", {
          user: states[i]!.id,
        });
      }
    });
    return outcomes;
  }

  /** Tokens, shares, sessions and mappings from another node, each taken when newer. */
  async #applyRecords(changes: unknown) {
    const states = Array.isArray(changes)
      ? changes.map((c) => parseRecordState(c, this.#sealer, this.#wire))
      : [undefined];
    if (states.some((s) => s === undefined)) {
      throw new ApiError(
        400,
        "invalid_message",
        "A token, share, session or mapping is malformed.",
      );
    }
    const results = await Promise.all(states.map((s) => this.queue.applyRecordState(s!)));
    if (states.some((s, i) => s!.kind === "mapping" && results[i] === "applied")) {
      this.mappingsChanged?.();
    }
    const scope = currentAudit();
    if (scope) scope.routine = true;
    return {
      applied: results.filter((r) => r === "applied").length,
      stale: results.filter((r) => r === "stale").length,
    };
  }

  #learn(members: unknown): void {
    if (!Array.isArray(members)) return;
    const refs = members.map(nodeRef).filter((r): r is NodeRef => r !== undefined);
    const added = this.membership.learn(refs);
    if (added > 0) log("info", "Cluster nodes learned", { added });
  }

  /** Saves the member list when it changed since the last save. */
  #saveMembers(): Promise<void> {
    this.#saving = this.#saving.then(async () => {
      const list = this.membership.saved();
      const json = JSON.stringify(list);
      if (json === this.#savedList) return;
      try {
        await this.queue.saveClusterMembers(this.config.nodeId, list);
        this.#savedList = json;
      } catch (err) {
        log("warn", "Saving the member list failed", { error: String(err) });
      }
    });
    return this.#saving;
  }

  /**
   * One round: join through seeds not known yet, heartbeat every known node. Rounds start every
   * heartbeat interval whatever the calls of the last one do; a node whose call is still on its
   * way is skipped, so one that does not answer never delays the heartbeats to the others.
   */
  #tick(): void {
    if (this.#stopped) return;
    void this.#saveMembers();
    const timeoutMs = Math.max(1000, this.config.heartbeatMs);
    for (const url of this.config.seeds) {
      if (this.#joinedSeeds.has(url) || this.membership.knowsUrl(url)) continue;
      this.#once(url, async () => {
        const joined = await this.#exchange(url, "/cluster/join", { node: this.#me() }, timeoutMs);
        if (joined) this.#joinedSeeds.add(url);
      });
    }
    for (const m of this.membership.view()) {
      this.#once(m.url, () =>
        this.#exchange(
          m.url,
          "/cluster/heartbeat",
          {
            node: this.#me(),
            members: this.membership.refs(),
            forgotten: this.membership.forgotten(),
          },
          timeoutMs,
        ).then(() => {}));
    }
    this.#timer = setTimeout(() => this.#tick(), this.config.heartbeatMs);
  }

  /** Runs a call to `url` unless one is still on its way. */
  #once(url: string, call: () => Promise<void>): void {
    if (this.#calling.has(url)) return;
    this.#calling.add(url);
    call().finally(() => this.#calling.delete(url));
  }

  /**
   * A join or heartbeat: the signed answer proves the node alive (at the URL it advertises) and
   * brings its list. Whether it answered.
   */
  async #exchange(url: string, path: string, body: unknown, timeoutMs: number): Promise<boolean> {
    try {
      const answer = await callNode(url, path, { ...this.#callOptions(timeoutMs), body });
      const ref = nodeRef(answer.node);
      if (!ref) {
        log("warn", "Cluster node answered without naming itself", { url });
        return false;
      }
      // A node forgotten here that still answers (its old process) is not taken back.
      if (!this.membership.heardFrom(ref, Date.now(), startedOf(answer.node))) return false;
      this.#learn(answer.members);
      await this.#learnForgotten(answer.forgotten);
      return true;
    } catch (err) {
      log("debug", "Cluster call failed", { url, path, error: String(err) });
      return false;
    }
  }
}

/** The /cluster/ routes when clustering is off. */
export function clusterOff(req: Request): Response {
  req.body?.cancel().catch(() => {});
  return jsonResponse(404, {
    error: { code: "cluster_disabled", message: "Clustering is not configured on this node." },
  });
}
