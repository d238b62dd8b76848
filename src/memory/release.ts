// Giving memory back after a load. Buffers a load leaves behind are garbage that V8 frees only
// at its next full collection, and glibc keeps what was freed in its heaps; an idle server
// would hold the peak of its last load until then. Once the server has been quiet for a moment
// after some activity (no request started, no transfer holding buffers), this drops the buffers
// kept for reuse, runs one full collection and then malloc_trim(0), which hands glibc's free
// pages back to the system.
// At most once per `minIntervalMs`, and only when the RSS grew since the last release (a request
// now and then costs no collection); never during a load, so it costs its throughput nothing.
import { collectGarbage } from "./gc.ts";

/** How long after a release the RSS is watched for its lowest (see settleUntil). */
const SETTLE_MS = 3000;

export interface ReleaseOptions {
  /** Activity so far (e.g. requests started); a change means the server was not quiet. */
  activity(): number;
  /** Whether a transfer holds buffers now (a long download starts no requests). */
  busy(): boolean;
  /** Empties caches of buffers first (they would be kept alive otherwise). */
  dropKept?: () => void;
  /** How long the server must be quiet first. */
  quietMs: number;
  /** The least time between two releases. */
  minIntervalMs: number;
  /** Released only when the RSS grew by this much since the last release (or `soon` was called). */
  minGrowthBytes: number;
  /** Told after each release: how long it took, and the RSS before and after. */
  onRelease?: (info: { ms: number; rssBefore: number; rssAfter: number }) => void;
}

export interface MemoryRelease {
  /** Releases run so far. */
  readonly count: number;
  /** Releases at the next quiet moment, however much the RSS grew (e.g. workers stopped). */
  soon(): void;
  stop(): void;
}

/** Starts watching for quiet moments; see the module comment. */
export function startMemoryRelease(opts: ReleaseOptions): MemoryRelease {
  const trim = mallocTrim();
  let seen = opts.activity();
  let changedAt = performance.now();
  let releasedAt = -Infinity;
  // Start-up leaves garbage too: the first quiet moment releases it.
  let dirty = true;
  let count = 0;
  let forced = false;
  let rssAfter = 0;
  /**
   * Until when the RSS is watched after a release: right after one it is still falling (freed
   * pages leave over the next moments), and growth is counted from the lowest it reaches, not
   * from where it stood when the release ended (else the next load's garbage, below that, would
   * never count as growth).
   */
  let settleUntil = -Infinity;
  const tick = () => {
    const now = performance.now();
    if (now < settleUntil) rssAfter = Math.min(rssAfter, Deno.memoryUsage().rss);
    const activity = opts.activity();
    if (activity !== seen || opts.busy()) {
      seen = activity;
      changedAt = now;
      dirty = true;
      return;
    }
    if (!dirty || now - changedAt < opts.quietMs || now - releasedAt < opts.minIntervalMs) return;
    const rssBefore = Deno.memoryUsage().rss;
    dirty = false;
    if (!forced && rssBefore < rssAfter + opts.minGrowthBytes) return;
    forced = false;
    releasedAt = now;
    opts.dropKept?.();
    collectGarbage();
    trim?.();
    count++;
    rssAfter = Deno.memoryUsage().rss;
    settleUntil = performance.now() + SETTLE_MS;
    opts.onRelease?.({ ms: performance.now() - now, rssBefore, rssAfter });
  };
  const timer = setInterval(tick, Math.max(10, Math.floor(opts.quietMs / 4)));
  Deno.unrefTimer(timer);
  return {
    get count() {
      return count;
    },
    soon: () => {
      dirty = true;
      forced = true;
    },
    stop: () => clearInterval(timer),
  };
}

/** glibc's malloc_trim(0) through FFI; undefined without FFI permission or glibc. */
function mallocTrim(): (() => void) | undefined {
  if (Deno.build.os !== "linux") return undefined;
  try {
    if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return undefined;
    const libc = Deno.dlopen("libc.so.6", {
      malloc_trim: { parameters: ["usize"], result: "i32" },
    });
    return () => void libc.symbols.malloc_trim(0n);
  } catch {
    return undefined;
  }
}
