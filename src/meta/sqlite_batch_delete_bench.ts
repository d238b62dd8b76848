// The metadata side of a 1,000-key DeleteObjects: SqliteMetaStore.deleteObjects with the event
// rows and the audit chain on, in memory (no WAL flush: the CPU of the statements and of the
// JavaScript around them). Each iteration first writes the versions its batch removes, outside the
// measured part. Run: deno bench -A src/meta/sqlite_batch_delete_bench.ts
import { newScope, runAudited } from "../audit/scope.ts";
import { SqliteMetaStore } from "./sqlite.ts";
import type { BatchDelete, ObjectVersion, OutboxEvent } from "./store.ts";
import { bucket, chunk, version as contractVersion } from "./contract/helpers.ts";

const KEYS = 1000;

async function store(versioning: "" | "Enabled"): Promise<SqliteMetaStore> {
  const meta = new SqliteMetaStore(":memory:");
  await meta.createBucket(bucket("b", { versioning }));
  return meta;
}

/** A 1 KiB version of `key` (the contract cases' record, sized as the end-to-end bench's). */
function version(key: string, versionId: string, data: ObjectVersion["data"]): ObjectVersion {
  return contractVersion(key, { versionId, size: 1024, lastModified: Date.now(), data });
}

function removedEvent(key: string, versionId: string): OutboxEvent {
  return {
    bucket: "b",
    key,
    name: "ObjectRemoved:Delete",
    detail: JSON.stringify({ key, versionId, size: 1024, sequencer: "0000000000000001" }),
  };
}

let round = 0;
/** The keys of the next batch (each iteration deletes keys of its own). */
function nextKeys(): string[] {
  round++;
  return Array.from({ length: KEYS }, (_, i) => `logs/${round}/${String(i).padStart(5, "0")}`);
}

/** Removals of the "null" version of each key, each with its event. */
function removals(keys: string[]): BatchDelete[] {
  return keys.map((key) => ({
    bucket: "b",
    key,
    versionId: "null",
    guard: () => {},
    outbox: (v: ObjectVersion) => removedEvent(v.key, v.versionId),
  }));
}

function deleteBatch(meta: SqliteMetaStore, items: BatchDelete[]) {
  return runAudited(
    newScope({ requestId: `r${round}`, source: "127.0.0.1" }),
    () => meta.deleteObjects(items),
  );
}

const plain = await store("");
Deno.bench("1,000 versions stored inline removed", async (b) => {
  const keys = nextKeys();
  const bytes = new Uint8Array(1024);
  await Promise.all(
    keys.map((key) => plain.putObjectVersion(version(key, "null", { kind: "inline", bytes }))),
  );
  b.start();
  await deleteBatch(plain, removals(keys));
  b.end();
});

Deno.bench("1,000 versions of one chunk each removed (chunks freed)", async (b) => {
  const keys = nextKeys();
  await Promise.all(
    keys.map((key, i) =>
      plain.putObjectVersion(version(key, "null", { kind: "chunks", vid: 0 }), [
        {
          chunk: chunk(`c-${round}-${i}`, { plainSize: 1024, storedSize: 1024 }),
          offset: 0,
          size: 1024,
        },
      ])
    ),
  );
  b.start();
  await deleteBatch(plain, removals(keys));
  b.end();
});

Deno.bench("100 versions of sixteen chunks each removed (64 MiB objects)", async (b) => {
  const keys = nextKeys().slice(0, 100);
  await Promise.all(
    keys.map((key, i) =>
      plain.putObjectVersion(
        version(key, "null", { kind: "chunks", vid: 0 }),
        Array.from({ length: 16 }, (_, n) => ({
          chunk: chunk(`c-${round}-${i}-${n}`),
          offset: n * 4_194_304,
          size: 4_194_304,
        })),
      )
    ),
  );
  b.start();
  await deleteBatch(plain, removals(keys));
  b.end();
});

const versioned = await store("Enabled");
Deno.bench("1,000 delete markers (versioning enabled)", async (b) => {
  const keys = nextKeys();
  const bytes = new Uint8Array(1024);
  await Promise.all(
    keys.map((key) =>
      versioned.putObjectVersion(version(key, crypto.randomUUID(), { kind: "inline", bytes }))
    ),
  );
  const items: BatchDelete[] = keys.map((key) => {
    const marker = {
      ...version(key, crypto.randomUUID(), { kind: "none" }),
      deleteMarker: true,
      size: 0,
      etag: "",
    };
    return { marker, outbox: removedEvent(key, marker.versionId) };
  });
  b.start();
  await deleteBatch(versioned, items);
  b.end();
});
