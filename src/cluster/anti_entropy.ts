// Anti-entropy: a periodic pass that compares what this node holds with every other node that is
// alive and sends what they lack, to repair what the replication queues missed (a node that
// joined after the changes were pruned, changes lost with a queue). Per pass:
//
// 1. Buckets: the other node lists the digest of each bucket state it holds (the stamps of its
//    parts); states that differ from this node's are sent as the bucket queue sends them (the
//    receiver keeps the newer part of each).
// 2. Objects, one bucket at a time, one node at a time: this node cuts its versions (in key
//    order) into ranges of about SEGMENT versions and asks the other node for the digests of the
//    same ranges, FANOUT ranges per call (anti_entropy_digest.ts); only ranges whose digests
//    differ are listed again, LEAF versions per call, asking which the other node lacks (or holds
//    with older later changes of tags, ACL or lock: the stamps count in the digests); those the
//    bucket's replication rules send there are sent through the object sender, one call each
//    (the version, or its stamped parts as a later-change call carries them).
//
// Nothing is deleted on the other node: what it holds and this one lacks it sends in its own pass.
// But a version this node holds that the other removed after this copy was written (its tombstone,
// kept for STORE_CLUSTER_TOMBSTONE_TTL) is removed here instead of sent back: a removal the queue
// lost is not undone.
// Reads of the local listing are throttled to `rate` versions a second, so a pass over a big
// bucket does not starve requests; memory stays a few ranges' digests and one leaf of versions.
import { log } from "../log.ts";
import type { BucketState, MetaStore } from "../meta/store.ts";
import { listRange, type Segment, segments, type VersionFacts } from "./anti_entropy_digest.ts";
import { stateDigest } from "./anti_entropy_answer.ts";
import type { Membership, MemberView } from "./membership.ts";
import type { Outcome } from "./objects.ts";
import { wire } from "./replication.ts";
import { type ReplicationConfig, ruleFor } from "./rules.ts";

/** Versions per compared range, ranges per digests call, versions per have call. */
const SEGMENT = 256;
const FANOUT = 16;
const LEAF = 200;
/** Versions read from the local listing per query. */
const PAGE = 1000;
/** Bucket states read per query and sent per message. */
const BUCKET_BATCH = 100;
/** Versions sent to one node at once. */
const PARALLEL = 4;

export interface VersionTarget {
  bucket: string;
  key: string;
  versionId: string;
}

export interface AntiEntropyDeps {
  meta: MetaStore;
  membership: Membership;
  /** A signed call to another node's POST /cluster/anti-entropy; its JSON answer. */
  ask: (url: string, body: unknown) => Promise<Record<string, unknown>>;
  /** Bucket states to another node, as the bucket queue sends them (POST /cluster/message). */
  sendBuckets: (url: string, states: BucketState[]) => Promise<unknown>;
  /**
   * One version to another node through the object sender (throws when it is to be retried):
   * the version itself, or (`parts`) its stamped later changes, as a later-change call sends them.
   */
  sendVersion: (
    node: string,
    url: string,
    target: VersionTarget,
    what: "version" | "parts",
  ) => Promise<Outcome>;
  /**
   * Removes this node's copy of a version the other node removed after that copy was written (a
   * removal its queue lost): "kept" when this node's Object Lock keeps it.
   */
  dropVersion: (target: VersionTarget, deletedAt: number) => Promise<"deleted" | "kept">;
  /** Nodes not compared with: those sharing this node's metadata database hold the same rows. */
  skip?: (node: string) => boolean;
}

export interface AntiEntropyOptions {
  /** Milliseconds between the end of a pass and the start of the next; undefined: no schedule. */
  intervalMs?: number;
  /** Local versions read per second at most; 0: unlimited. */
  rate: number;
}

/** What one pass did. */
export interface PassReport {
  startedAt: number;
  endedAt?: number;
  /** The nodes compared with (alive when the pass started). */
  nodes: string[];
  /** Buckets compared (each with every node). */
  buckets: number;
  /** Local versions read (the listing, and again the ranges that differed). */
  versionsCompared: number;
  /** Ranges whose digests differed. */
  rangesDiffering: number;
  /** Bucket states sent. */
  bucketStatesSent: number;
  /** Versions sent and accepted. */
  repaired: number;
  /** Versions removed here because the other node had removed them (its tombstone). */
  deleted: number;
  /** Versions that could not be sent, nodes or buckets given up on for the pass. */
  failed: number;
  error?: string;
}

export interface AntiEntropyStatus {
  intervalMs: number | null;
  rate: number;
  running: boolean;
  passes: number;
  /** Since the process started. */
  repairedTotal: number;
  deletedTotal: number;
  versionsComparedTotal: number;
  current?: PassReport;
  last?: PassReport;
}

class Stopped extends Error {}
/** The other node has no such bucket (yet): its bucket state is sent first, compared next pass. */
class NoBucket extends Error {}

/** Spaces reads so they average `rate` a second (0: no limit). */
class Throttle {
  #at = 0;
  constructor(readonly rate: number, readonly stopped: () => boolean) {}

  async take(n: number): Promise<void> {
    if (this.stopped()) throw new Stopped();
    if (this.rate <= 0 || n === 0) return;
    const now = Date.now();
    this.#at = Math.max(this.#at, now) + (n * 1000) / this.rate;
    const wait = this.#at - now;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (this.stopped()) throw new Stopped();
  }
}

const facts = (v: VersionFacts): VersionFacts => ({
  key: v.key,
  versionId: v.versionId,
  etag: v.etag,
  deleteMarker: v.deleteMarker,
  lastModified: v.lastModified,
  ...(v.stamps && Object.keys(v.stamps).length > 0 ? { stamps: v.stamps } : {}),
});

/**
 * A version to repair: sent to a node (it lacks it, or its later changes), or removed here (the
 * node removed it after this copy was written, at `at`).
 */
interface Repair {
  v: VersionFacts;
  what: "version" | "parts" | "removed";
  at?: number;
}

export class AntiEntropy {
  #timer?: ReturnType<typeof setTimeout>;
  #stopped = false;
  #running?: Promise<PassReport>;
  #current?: PassReport;
  #last?: PassReport;
  #passes = 0;
  #repairedTotal = 0;
  #deletedTotal = 0;
  #comparedTotal = 0;
  #throttle: Throttle;

  constructor(readonly deps: AntiEntropyDeps, readonly options: AntiEntropyOptions) {
    this.#throttle = new Throttle(options.rate, () => this.#stopped);
  }

  start(): void {
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running?.catch(() => {});
  }

  /** Runs a pass now, or joins the one running; resolves with its report. */
  runNow(): Promise<PassReport> {
    if (!this.#running) {
      clearTimeout(this.#timer);
      this.#running = this.#pass().finally(() => {
        this.#running = undefined;
        this.#schedule();
      });
    }
    return this.#running;
  }

  status(): AntiEntropyStatus {
    return {
      intervalMs: this.options.intervalMs ?? null,
      rate: this.options.rate,
      running: this.#running !== undefined,
      passes: this.#passes,
      repairedTotal: this.#repairedTotal,
      deletedTotal: this.#deletedTotal,
      versionsComparedTotal: this.#comparedTotal,
      ...(this.#current ? { current: { ...this.#current } } : {}),
      ...(this.#last ? { last: { ...this.#last } } : {}),
    };
  }

  #schedule(): void {
    if (this.#stopped || this.options.intervalMs === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.runNow().catch(() => {}), this.options.intervalMs);
  }

  async #pass(): Promise<PassReport> {
    const peers = this.deps.membership.view().filter((m) =>
      m.state === "alive" && !this.deps.skip?.(m.id)
    );
    const report: PassReport = {
      startedAt: Date.now(),
      nodes: peers.map((p) => p.id),
      buckets: 0,
      versionsCompared: 0,
      rangesDiffering: 0,
      bucketStatesSent: 0,
      repaired: 0,
      deleted: 0,
      failed: 0,
    };
    this.#current = report;
    try {
      // Nodes that fail a call are left alone for the rest of the pass.
      const reachable: MemberView[] = [];
      for (const peer of peers) {
        if (await this.#peerStep(report, peer, () => this.#syncBuckets(report, peer))) {
          reachable.push(peer);
        }
      }
      for await (const bucket of this.#liveBuckets()) {
        if (reachable.length === 0) break;
        report.buckets++;
        for (const peer of [...reachable]) {
          const ok = await this.#peerStep(
            report,
            peer,
            () => this.#compareBucket(report, bucket, peer),
          );
          if (!ok) reachable.splice(reachable.indexOf(peer), 1);
        }
      }
    } catch (err) {
      report.error = err instanceof Stopped ? "stopped" : String(err);
      if (!(err instanceof Stopped)) {
        log("warn", "Anti-entropy pass failed", { error: report.error });
      }
    } finally {
      report.endedAt = Date.now();
      this.#current = undefined;
      this.#last = report;
      this.#passes++;
    }
    const changed = report.repaired + report.deleted + report.bucketStatesSent;
    log(changed > 0 ? "info" : "debug", "Anti-entropy pass", {
      ...report,
    });
    return report;
  }

  /** Runs one step with a node; false (and logged) when the node failed a call. */
  async #peerStep(report: PassReport, peer: MemberView, step: () => Promise<void>) {
    try {
      await step();
      return true;
    } catch (err) {
      if (err instanceof Stopped) throw err;
      report.failed++;
      log("warn", "Anti-entropy with a node failed; trying again next pass", {
        node: peer.id,
        error: err instanceof Error ? err.message : String(err),
      });
      return false;
    }
  }

  /** Names of the buckets that exist here, from the bucket queue (which holds every bucket). */
  async *#liveBuckets(): AsyncGenerator<string> {
    for await (const state of this.#bucketStates()) {
      if (state.record?.value) yield state.bucket;
    }
  }

  async *#bucketStates(): AsyncGenerator<BucketState & { seq: number }> {
    let after = 0;
    while (true) {
      const page = await this.deps.meta.bucketChanges(after, BUCKET_BATCH);
      for (const change of page) yield { ...wire(change), seq: change.seq };
      if (page.length < BUCKET_BATCH) return;
      after = page[page.length - 1].seq;
    }
  }

  /** Sends the bucket states whose digests differ on the other node (or that it lacks). */
  async #syncBuckets(report: PassReport, peer: MemberView): Promise<void> {
    const theirs = new Map<string, string>();
    for (let after: number | null = 0; after !== null;) {
      const answer = await this.deps.ask(peer.url, { op: "buckets", after });
      for (const b of answer.buckets as { bucket: string; d: string }[]) theirs.set(b.bucket, b.d);
      after = answer.next as number | null;
    }
    let batch: BucketState[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      await this.deps.sendBuckets(peer.url, batch);
      report.bucketStatesSent += batch.length;
      batch = [];
    };
    for await (const { seq: _seq, ...state } of this.#bucketStates()) {
      if (theirs.get(state.bucket) === stateDigest(state)) continue;
      batch.push(state);
      if (batch.length === BUCKET_BATCH) await flush();
    }
    await flush();
  }

  async #compareBucket(report: PassReport, bucket: string, peer: MemberView): Promise<void> {
    const doc = await this.deps.meta.getBucketConfig(bucket, "replication");
    const rules = doc === undefined ? undefined : JSON.parse(doc) as ReplicationConfig;
    const read = (n: number) => {
      report.versionsCompared += n;
      this.#comparedTotal += n;
      return this.#throttle.take(n);
    };
    let batch: Segment[] = [];
    try {
      const all = listRange(this.deps.meta, bucket, { after: "", upTo: null }, PAGE, read);
      for await (const segment of segments(all, SEGMENT)) {
        batch.push(segment);
        if (batch.length < FANOUT && segment.upTo !== null) continue;
        await this.#compareSegments(report, bucket, peer, batch, rules, read);
        batch = [];
      }
    } catch (err) {
      if (!(err instanceof NoBucket)) throw err;
      log("debug", "Anti-entropy: a node has no such bucket yet", { node: peer.id, bucket });
    }
  }

  async #compareSegments(
    report: PassReport,
    bucket: string,
    peer: MemberView,
    batch: Segment[],
    rules: ReplicationConfig | undefined,
    read: (n: number) => Promise<void>,
  ): Promise<void> {
    const answer = await this.deps.ask(peer.url, {
      op: "digests",
      bucket,
      after: batch[0].after,
      bounds: batch.map((s) => s.upTo),
    });
    if (answer.exists !== true) throw new NoBucket();
    const digests = answer.digests as { n: number; x: string }[];
    for (const [i, segment] of batch.entries()) {
      const theirs = digests[i];
      if (theirs && theirs.n === segment.digest.n && theirs.x === segment.digest.x) continue;
      report.rangesDiffering++;
      let leaf: VersionFacts[] = [];
      // The range holds n versions here: one more read finds its end.
      const page = Math.min(PAGE, segment.digest.n + 1);
      for await (const v of listRange(this.deps.meta, bucket, segment, page, read)) {
        leaf.push(facts(v));
        if (leaf.length < LEAF) continue;
        await this.#repairLeaf(report, bucket, peer, leaf, rules);
        leaf = [];
      }
      if (leaf.length > 0) await this.#repairLeaf(report, bucket, peer, leaf, rules);
    }
  }

  /**
   * Asks which of `leaf` the node lacks (or holds with older later changes), and sends those the
   * bucket's rules send there.
   */
  async #repairLeaf(
    report: PassReport,
    bucket: string,
    peer: MemberView,
    leaf: VersionFacts[],
    rules: ReplicationConfig | undefined,
  ): Promise<void> {
    const lacking = await this.#lacking(peer, bucket, leaf);
    const send: Repair[] = [];
    // With rules, a version goes into its rule's destination bucket there, which is asked next.
    const elsewhere = new Map<string, VersionFacts[]>();
    for (const r of lacking) {
      if (!rules) {
        if (r.what === "removed") await this.#remove(report, bucket, r);
        else send.push(r);
        continue;
      }
      // Removals of a version are not replicated under rules: a copy removed there is sent again.
      if (r.what === "removed") r.what = "version";
      const destination = await this.#destination(bucket, r.v, rules);
      if (destination === bucket) send.push(r);
      else if (destination !== undefined) {
        elsewhere.set(destination, [...(elsewhere.get(destination) ?? []), r.v]);
      }
    }
    for (const [destination, versions] of elsewhere) {
      const there = await this.#lacking(peer, destination, versions).catch((err) => {
        if (err instanceof NoBucket) return [];
        throw err;
      });
      send.push(
        ...there.map((r): Repair => ({ ...r, what: r.what === "parts" ? "parts" : "version" })),
      );
    }
    for (let i = 0; i < send.length; i += PARALLEL) {
      const outcomes = await Promise.allSettled(
        send.slice(i, i + PARALLEL).map(({ v, what }) =>
          this.deps.sendVersion(
            peer.id,
            peer.url,
            { bucket, key: v.key, versionId: v.versionId },
            what === "parts" ? "parts" : "version",
          )
        ),
      );
      for (const outcome of outcomes) {
        if (outcome.status === "fulfilled" && outcome.value === "delivered") {
          report.repaired++;
          this.#repairedTotal++;
        } else if (outcome.status === "rejected" || outcome.value === "failed") {
          report.failed++;
        }
      }
      if (this.#stopped) throw new Stopped();
    }
  }

  /** Removes this node's copy of a version the other node removed (Object Lock may keep it). */
  async #remove(report: PassReport, bucket: string, r: Repair): Promise<void> {
    const target = { bucket, key: r.v.key, versionId: r.v.versionId };
    if (await this.deps.dropVersion(target, r.at!) === "deleted") {
      report.deleted++;
      this.#deletedTotal++;
    } else report.failed++;
  }

  /**
   * The versions of `versions` the node lacks in `bucket`, those it holds with older later changes,
   * and those it removed after this node's copy was written (none while it is busy).
   */
  async #lacking(peer: MemberView, bucket: string, versions: VersionFacts[]): Promise<Repair[]> {
    const answer = await this.deps.ask(peer.url, { op: "have", bucket, versions });
    if (answer.exists !== true) throw new NoBucket();
    if (answer.busy === true) {
      log("debug", "Anti-entropy: a node has many changes on their way here; no repair yet", {
        node: peer.id,
        bucket,
      });
      return [];
    }
    const pick = (list: unknown, what: Repair["what"]): Repair[] =>
      (Array.isArray(list) ? list as number[] : [])
        .map((i) => versions[i])
        .filter((v) => v !== undefined)
        .map((v) => ({ v, what }));
    const removed = (Array.isArray(answer.gone) ? answer.gone as { i: number; at: number }[] : [])
      .filter((g) => versions[g.i] !== undefined && Number.isSafeInteger(g.at))
      .map((g): Repair => ({ v: versions[g.i], what: "removed", at: g.at }));
    return [...pick(answer.missing, "version"), ...pick(answer.stale, "parts"), ...removed];
  }

  /**
   * Where the bucket's rules send a version: its rule's destination bucket, or undefined when
   * none does (no Enabled rule, a marker the rule leaves out). Under rules only the versions
   * written on this node are repaired from it, as only they are replicated from it: a replica
   * received here is its source's to repair (and may have been deleted there on purpose).
   */
  async #destination(bucket: string, v: VersionFacts, rules: ReplicationConfig) {
    const version = await this.deps.meta.getObjectVersion(bucket, v.key, v.versionId);
    if (!version || version.replication === "REPLICA") return undefined;
    const rule = ruleFor(rules, { key: v.key, tags: version.tags });
    if (!rule || (version.deleteMarker && !rule.deleteMarkers)) return undefined;
    return rule.destination;
  }
}
