// Which node holds the bytes of which chunk, for the nodes of a cluster that share one metadata
// database (PostgreSQL only): the chunk rows are shared, the shard files are each node's own.
// A node records a holding when it has stored a chunk's shards on its own drives (written by a
// client's request or fetched from another node); a holding whose chunk row is gone is garbage
// of that node.
import type { ChunkRecord } from "./store.ts";

export interface SharedHoldings {
  /** Records that `node` (advertised at `url`) uses this database; refreshes its time. */
  registerNode(node: string, url: string): Promise<void>;
  /** The nodes that registered in this database, with the URLs they advertised. */
  sharedNodes(): Promise<{ id: string; url: string }[]>;
  /** `node` holds the chunk's shards on its drives, stored as `rec` says. */
  recordHolding(node: string, rec: ChunkRecord): Promise<void>;
  /** How `node` holds the chunk, if it does. */
  holding(node: string, id: string): Promise<ChunkRecord | undefined>;
  /** The nodes that hold the chunk. */
  holders(id: string): Promise<string[]>;
  /**
   * Holdings of `node` whose chunk no version refers to any more (or that were recorded before
   * their chunk committed and it never did).
   */
  orphanHoldings(node: string, limit: number): Promise<ChunkRecord[]>;
  dropHolding(node: string, id: string): Promise<void>;
  /**
   * Flags every holding of `node` whose chunk row is gone (a full pass, for what a race between
   * a deletion and the unflagging in orphanHoldings left unflagged).
   */
  flagOrphans(node: string): Promise<void>;
  /** A node forgotten by the cluster: its registration and holdings go. */
  forgetNode(node: string): Promise<void>;
  /** The last position of the bucket-change queue (0 when empty). */
  bucketQueueHead(): Promise<number>;
}

/** The store's holdings when its metadata can be shared by several nodes. */
export function sharedHoldingsOf(meta: unknown): SharedHoldings | undefined {
  const holdings = (meta as { sharedHoldings?: SharedHoldings }).sharedHoldings;
  return holdings && typeof holdings.recordHolding === "function" ? holdings : undefined;
}

/**
 * A chunk this node does not hold and no node that holds it answered (shared metadata): the read
 * answers 503 ServiceUnavailable with Retry-After.
 */
export class BytesUnavailableError extends Error {}
