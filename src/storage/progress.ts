// Progress of a walk over every chunk (a scrub, a drive heal), as GET /admin/scrub and
// GET /admin/heal show it.

export interface WalkProgress {
  state: "idle" | "running" | "finished";
  startedAt?: string;
  finishedAt?: string;
  chunksDone: number;
  /** Chunk records when the walk started (chunks written meanwhile may push done past it). */
  chunksTotal: number;
  /** Percent of chunksTotal walked. */
  percent: number;
  /** Shard bytes read or rewritten. */
  bytes: number;
  badShards: number;
  healedShards: number;
  /** Shard writes or reads that failed with an I/O error. */
  errors: number;
  lostChunks: string[];
  /** When the walk should end at the pace so far. */
  estimatedFinish?: string;
}

export function idleProgress(): WalkProgress {
  return {
    state: "idle",
    chunksDone: 0,
    chunksTotal: 0,
    percent: 0,
    bytes: 0,
    badShards: 0,
    healedShards: 0,
    errors: 0,
    lostChunks: [],
  };
}

export function startProgress(total: number): WalkProgress {
  return {
    ...idleProgress(),
    state: "running",
    startedAt: new Date().toISOString(),
    chunksTotal: total,
  };
}

/** Recomputes the percentage and the estimated finish after a chunk. */
export function advance(p: WalkProgress): void {
  p.chunksDone++;
  p.chunksTotal = Math.max(p.chunksTotal, p.chunksDone);
  p.percent = Math.floor((p.chunksDone / p.chunksTotal) * 1000) / 10;
  const started = Date.parse(p.startedAt!);
  const elapsed = Date.now() - started;
  const left = (elapsed / p.chunksDone) * (p.chunksTotal - p.chunksDone);
  p.estimatedFinish = new Date(Date.now() + left).toISOString();
}

export function finish(p: WalkProgress): void {
  p.state = "finished";
  p.finishedAt = new Date().toISOString();
  p.percent = 100;
  p.chunksTotal = Math.max(p.chunksTotal, p.chunksDone);
  p.estimatedFinish = p.finishedAt;
}
