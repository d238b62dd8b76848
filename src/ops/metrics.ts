// Metrics in the Prometheus text format (GET /metrics). Request counts, latencies and bytes are
// observed as requests finish (observeRequest, called once by the protocol handler); everything
// else is read at scrape time from what the parts already keep: usage counters maintained by the
// metadata, drive states, heal and scrub totals, queue depths, and the process's own numbers.
import type { ClusterNode } from "../cluster/node.ts";
import { renderClusterMetrics } from "../cluster/metrics.ts";
import { statfs } from "node:fs/promises";
import type { MetaStore } from "../meta/store.ts";
import type { Notifier } from "../events/notifier.ts";
import type { DriveMonitor } from "../storage/drive_monitor.ts";
import type { Healer } from "../storage/healer.ts";
import type { Scrubber } from "../workers/scrubber.ts";
import { Exposition, Histogram } from "./prometheus.ts";
import { type RequestTotals, TotalsHistory } from "./metrics_history.ts";

/** Seconds: from a fast inline GET to a large upload. */
const LATENCY_BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const LOOP_BOUNDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
/** How often the event loop is sampled for delay. */
const LOOP_SAMPLE_MS = 100;

export interface RequestObservation {
  operation: string;
  status: number;
  seconds: number;
  bytesIn: number;
  bytesOut: number;
}

export interface MetricSources {
  meta: MetaStore;
  monitor: DriveMonitor;
  healer: Healer;
  scrubber: Scrubber;
  notifier: Notifier;
  /** Membership and replication backlog, in cluster mode. */
  cluster?: ClusterNode;
  /** The buffer budgets and memory releases (README, Memory). */
  memory?: () => MemoryGauges;
  /** Freed chunks whose shard files are removed after the request answered. */
  reclaimer?: { readonly pending: number; readonly removed: number };
}

export interface MemoryGauges {
  writeBufferBytes: number;
  writeBufferWaits: number;
  readBufferBytes: number;
  readPiecesReused: number;
  releases: number;
}

export class Metrics {
  readonly #requests = new Map<string, number>();
  readonly #latency = new Map<string, Histogram>();
  readonly #bytesIn = new Map<string, number>();
  readonly #bytesOut = new Map<string, number>();
  readonly #loop = new Histogram(LOOP_BOUNDS);
  #loopMax = 0;
  #openConnections: () => number = () => 0;
  readonly #timer: ReturnType<typeof setInterval>;
  /** The request totals of the last hour, for the web console's charts. */
  readonly history = new TotalsHistory();

  constructor(readonly sources: MetricSources) {
    let expected = performance.now() + LOOP_SAMPLE_MS;
    this.#timer = setInterval(() => {
      const now = performance.now();
      const late = Math.max(0, now - expected) / 1000;
      this.#loop.observe(late);
      this.#loopMax = Math.max(this.#loopMax, late);
      expected = now + LOOP_SAMPLE_MS;
      this.history.offer(Date.now(), () => this.totals());
    }, LOOP_SAMPLE_MS);
  }

  /** Every request so far: how many, bytes in and out, seconds spent. */
  totals(): RequestTotals {
    const sum = (values: Iterable<number>) => [...values].reduce((a, b) => a + b, 0);
    return {
      requests: sum(this.#requests.values()),
      received: sum(this.#bytesIn.values()),
      sent: sum(this.#bytesOut.values()),
      seconds: sum([...this.#latency.values()].map((h) => h.sum)),
    };
  }

  /** Where the open-connection count comes from (the listener starts after the metrics). */
  countConnections(open: () => number): void {
    this.#openConnections = open;
  }

  observe(o: RequestObservation): void {
    const key = `${o.operation}\n${o.status}`;
    this.#requests.set(key, (this.#requests.get(key) ?? 0) + 1);
    let h = this.#latency.get(o.operation);
    if (!h) this.#latency.set(o.operation, h = new Histogram(LATENCY_BOUNDS));
    h.observe(o.seconds);
    this.#bytesIn.set(o.operation, (this.#bytesIn.get(o.operation) ?? 0) + o.bytesIn);
    this.#bytesOut.set(o.operation, (this.#bytesOut.get(o.operation) ?? 0) + o.bytesOut);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async render(): Promise<string> {
    const out = new Exposition();
    this.#renderRequests(out);
    const { meta, monitor, healer, scrubber, notifier } = this.sources;
    const usage = await meta.usage();
    out.single(
      "store_objects",
      "gauge",
      "Object versions stored (delete markers excluded).",
      usage.objects,
    )
      .single("store_object_bytes", "gauge", "Bytes of the object versions stored.", usage.bytes)
      .single("store_chunks", "gauge", "Chunks stored.", usage.chunks)
      .single(
        "store_shard_bytes",
        "gauge",
        "Bytes of shards on the drives, parity included.",
        usage.shardBytes,
      );
    const reclaimer = this.sources.reclaimer;
    if (reclaimer) {
      out.single(
        "store_chunks_reclaim_pending",
        "gauge",
        "Freed chunks whose shard files are still to be removed.",
        reclaimer.pending,
      ).single(
        "store_chunks_reclaimed_total",
        "counter",
        "Freed chunks whose shard files were removed.",
        reclaimer.removed,
      );
    }
    await renderDrives(out, monitor);
    const heal = healer.status();
    out.single(
      "store_heal_running",
      "gauge",
      "1 while a drive heal runs.",
      heal.state === "running" ? 1 : 0,
    )
      .single(
        "store_heal_drive_heals_total",
        "counter",
        "Drive heals finished.",
        healer.totals.driveHeals,
      )
      .single(
        "store_heal_chunks_checked_total",
        "counter",
        "Chunks checked by heals.",
        healer.totals.chunksChecked,
      )
      .single(
        "store_heal_shards_healed_total",
        "counter",
        "Shards rebuilt by heals.",
        healer.totals.healedShards,
      )
      .single(
        "store_heal_errors_total",
        "counter",
        "Shards heals could not rebuild.",
        healer.totals.errors,
      )
      .single(
        "store_heal_progress_ratio",
        "gauge",
        "Progress of the running or last drive heal.",
        heal.percent / 100,
      )
      .single(
        "store_heal_queue_dropped_total",
        "counter",
        "Damaged chunks left to the scrub (queue full).",
        heal.queue.dropped,
      );
    const scrub = scrubber.current();
    out.single("store_scrubs_total", "counter", "Scrubs finished.", scrubber.runs())
      .single(
        "store_scrub_running",
        "gauge",
        "1 while a scrub runs.",
        scrub?.state === "running" ? 1 : 0,
      )
      .single(
        "store_scrub_chunks_done",
        "gauge",
        "Chunks verified by the running or last scrub.",
        scrub?.chunksDone ?? 0,
      )
      .single(
        "store_scrub_bad_shards",
        "gauge",
        "Bad shards found by the running or last scrub.",
        scrub?.badShards ?? 0,
      )
      .single(
        "store_scrub_healed_shards",
        "gauge",
        "Shards healed by the running or last scrub.",
        scrub?.healedShards ?? 0,
      );
    const targets = await notifier.status();
    out.family("store_queue_depth", "gauge", "Work waiting in background queues.")
      .sample("store_queue_depth", healer.queueDepth(), { queue: "heal" })
      .sample("store_queue_depth", targets.reduce((n, t) => n + t.queue_depth, 0), {
        queue: "events",
      });
    out.single(
      "store_open_connections",
      "gauge",
      "Client connections open right now (STORE_MAX_CONNECTIONS caps them).",
      this.#openConnections(),
    );
    const mem = Deno.memoryUsage();
    out.single("store_heap_used_bytes", "gauge", "V8 heap in use.", mem.heapUsed)
      .single("store_heap_total_bytes", "gauge", "V8 heap reserved.", mem.heapTotal)
      .single("store_resident_memory_bytes", "gauge", "Resident set size of the process.", mem.rss)
      .single(
        "store_external_memory_bytes",
        "gauge",
        "Memory outside the V8 heap that it accounts for (ArrayBuffers).",
        mem.external,
      )
      .family(
        "store_event_loop_delay_seconds",
        "histogram",
        "Lateness of a 100 ms timer: how long the event loop was blocked.",
      )
      .histogram("store_event_loop_delay_seconds", this.#loop)
      .single(
        "store_event_loop_delay_max_seconds",
        "gauge",
        "Longest event-loop delay since the last scrape.",
        this.#loopMax,
      );
    this.#loopMax = 0;
    const gauges = this.sources.memory?.();
    if (gauges) {
      out.single(
        "store_write_buffer_bytes",
        "gauge",
        "Upload chunk buffers held, in use or kept (STORE_WRITE_BUFFER_MAX bounds them).",
        gauges.writeBufferBytes,
      ).single(
        "store_write_buffer_waits_total",
        "counter",
        "Times an upload waited for a chunk buffer because the budget was spent.",
        gauges.writeBufferWaits,
      ).single(
        "store_read_buffer_bytes",
        "gauge",
        "Decoded object data GETs hold (STORE_READ_BUFFER_MAX bounds it).",
        gauges.readBufferBytes,
      ).single(
        "store_read_pieces_reused_total",
        "counter",
        "Pieces GETs read into a buffer of an earlier piece, already sent, instead of a new one.",
        gauges.readPiecesReused,
      ).single(
        "store_memory_releases_total",
        "counter",
        "Times memory was given back after a load (STORE_MEMORY_RELEASE_MS).",
        gauges.releases,
      );
    }
    if (this.sources.cluster) await renderClusterMetrics(out, this.sources.cluster);
    return out.text();
  }

  #renderRequests(out: Exposition): void {
    out.family("store_requests_total", "counter", "Protocol requests by operation and status.");
    for (const [key, n] of this.#requests) {
      const [operation, status] = key.split("\n");
      out.sample("store_requests_total", n, { operation, status });
    }
    out.family(
      "store_request_duration_seconds",
      "histogram",
      "Protocol request latency by operation.",
    );
    for (const [operation, h] of this.#latency) {
      out.histogram("store_request_duration_seconds", h, { operation });
    }
    out.family("store_received_bytes_total", "counter", "Request body bytes by operation.");
    for (const [operation, n] of this.#bytesIn) {
      out.sample("store_received_bytes_total", n, { operation });
    }
    out.family("store_sent_bytes_total", "counter", "Response body bytes by operation.");
    for (const [operation, n] of this.#bytesOut) {
      out.sample("store_sent_bytes_total", n, { operation });
    }
  }
}

async function renderDrives(out: Exposition, monitor: DriveMonitor): Promise<void> {
  const drives = monitor.list();
  out.family("store_drive_online", "gauge", "1 when the drive is used, 0 when offline or missing.");
  for (const d of drives) {
    out.sample("store_drive_online", d.state === "online" ? 1 : 0, {
      drive: d.path,
      state: d.state,
    });
  }
  out.family("store_drive_errors_total", "counter", "I/O errors of shard reads and writes.");
  for (const d of drives) out.sample("store_drive_errors_total", d.errors, { drive: d.path });
  out.family("store_drive_needs_heal", "gauge", "1 while the drive waits for (or is in) a heal.");
  for (const d of drives) {
    out.sample("store_drive_needs_heal", d.needsHeal ? 1 : 0, { drive: d.path });
  }
  const sizes: { path: string; free: number; total: number }[] = [];
  for (const d of drives) {
    if (d.state === "missing") continue;
    try {
      const fs = await statfs(d.path);
      sizes.push({ path: d.path, free: fs.bavail * fs.bsize, total: fs.blocks * fs.bsize });
    } catch { /* an unreadable drive has no size; its errors and state say why */ }
  }
  out.family("store_drive_free_bytes", "gauge", "Space available on the drive's file system.");
  for (const s of sizes) out.sample("store_drive_free_bytes", s.free, { drive: s.path });
  out.family("store_drive_total_bytes", "gauge", "Size of the drive's file system.");
  for (const s of sizes) out.sample("store_drive_total_bytes", s.total, { drive: s.path });
}

/** The body bytes of a request or response as its Content-Length tells (0 when streamed). */
export function declaredLength(headers: Headers): number {
  const n = Number(headers.get("content-length") ?? 0);
  return Number.isFinite(n) && n > 0 ? n : 0;
}
