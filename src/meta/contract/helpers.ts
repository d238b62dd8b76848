// Records and small helpers shared by the MetaStore contract cases.
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import type {
  BucketRecord,
  ChunkRecord,
  MetaStore,
  ObjectVersion,
  OutboxEvent,
  UploadRecord,
} from "../store.ts";

export interface ContractCase {
  name: string;
  fn: (store: MetaStore) => Promise<void>;
}

export function bucket(name: string, over: Partial<BucketRecord> = {}): BucketRecord {
  return {
    name,
    owner: "o",
    createdAt: 1_700_000_000_000,
    region: "r",
    versioning: "",
    objectLock: false,
    ...over,
  };
}

export function version(key: string, over: Partial<ObjectVersion> = {}): ObjectVersion {
  return {
    bucket: "b",
    key,
    versionId: "null",
    deleteMarker: false,
    size: 1,
    etag: '"x"',
    lastModified: 0,
    contentType: "text/plain",
    userMeta: {},
    headers: {},
    owner: "o",
    data: { kind: "inline", bytes: new Uint8Array([1]) },
    ...over,
  };
}

export function chunk(id: string, over: Partial<ChunkRecord> = {}): ChunkRecord {
  return {
    id,
    plainSize: 10,
    storedSize: 10,
    compression: "none",
    encrypted: false,
    dataShards: 1,
    parityShards: 0,
    drives: [1],
    ...over,
  };
}

/** Chunk references of a version: 10 bytes each, in order. */
export function refs(...ids: string[]) {
  return ids.map((id, i) => ({ chunk: chunk(id), offset: i * 10, size: 10 }));
}

export const CHUNKED = { data: { kind: "chunks" as const, vid: 0 } };

export function event(key: string, bucketName = "b"): OutboxEvent {
  return { bucket: bucketName, key, name: "ObjectCreated:Put", detail: "{}" };
}

export function upload(key: string, uploadId: string, over: Partial<UploadRecord> = {}) {
  return {
    bucket: "b",
    key,
    uploadId,
    initiated: 1000,
    owner: "o",
    contentType: "",
    userMeta: {},
    headers: {},
    ...over,
  } as UploadRecord;
}

/** A store with bucket "b" (and the given keys as null versions). */
export async function withBucket(store: MetaStore, keys: string[] = []): Promise<MetaStore> {
  await store.createBucket(bucket("b"));
  for (const k of keys) await store.putObjectVersion(version(k));
  return store;
}

/** One version removed through a batch of one (as DeleteObjects and DELETE do). */
export async function removeVersion(
  store: MetaStore,
  bucketName: string,
  key: string,
  versionId: string,
  outbox?: (removed: ObjectVersion) => OutboxEvent | undefined,
) {
  const [outcome] = await store.deleteObjects([{ bucket: bucketName, key, versionId, outbox }]);
  if (!outcome.ok) throw outcome.error;
  return outcome;
}

/**
 * A value in a comparable form: keys sorted, undefined fields dropped, byte arrays (a Buffer from
 * one driver, a Uint8Array from another) as plain arrays.
 */
export function plain<T>(v: T): unknown {
  if (v instanceof Uint8Array) return { bytes: Array.from(v) };
  if (Array.isArray(v)) return v.map(plain);
  if (v === null || typeof v !== "object") return v;
  const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
  entries.sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  return Object.fromEntries(entries.map(([k, x]) => [k, plain(x)]));
}

export function assertSame(actual: unknown, expected: unknown, message?: string): void {
  assertEquals(plain(actual), plain(expected), message);
}

/** Awaits `p` and checks it rejected (with `type` when given); returns the error. */
export async function rejects(
  p: Promise<unknown>,
  type?: abstract new (...args: never[]) => Error,
): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    if (type) assert(err instanceof type, `expected ${type.name}, got ${err}`);
    return err;
  }
  throw new Error("expected a rejection");
}

export const ids = (chunks: { id: string }[]) => chunks.map((c) => c.id).sort();
