// Transformation jobs in a MetaStore: a job commits with its write or not at all, claims take due
// jobs oldest first and one at a time, outcomes, requeueing after a crash, and paged listing; and
// the named keys of the local key management. Run against SQLite (sqlite_jobs_test.ts) and
// PostgreSQL (pg/ports_test.ts).
import { assertEquals } from "../../../tests/integration/assert.ts";
import { DuplicateError, type MetaStore, type NewJob, type ObjectVersion } from "../store.ts";

type Test = (name: string, fn: () => Promise<void>) => void;

/** Registers the cases with `test`, each on a fresh store from `open`. */
export function jobAndKeyCases(test: Test, open: () => Promise<MetaStore>): void {
  function version(key: string): ObjectVersion {
    return {
      bucket: "b",
      key,
      versionId: "null",
      deleteMarker: false,
      size: 1,
      etag: '"x"',
      lastModified: 0,
      contentType: "image/png",
      userMeta: {},
      headers: {},
      owner: "o",
      data: { kind: "inline", bytes: new Uint8Array([1]) },
    };
  }

  function job(id: string, bucket = "b"): NewJob {
    return { id, bucket, key: id, spec: "{}", requester: "o", createdAt: 1000 };
  }

  async function store(): Promise<MetaStore> {
    const meta = await open();
    await meta.createBucket({
      name: "b",
      owner: "o",
      createdAt: 0,
      region: "r",
      versioning: "",
      objectLock: false,
    });
    return meta;
  }

  test("jobs: committed with their write, none with a refused one", async () => {
    const meta = await store();
    await meta.putObjectVersion(version("a"), [], { jobs: [job("j1"), job("j2")] });
    const refused = meta.putObjectVersion(version("a"), [], {
      guard: () => {
        throw new Error("precondition failed");
      },
      jobs: [job("j3")],
    });
    await refused.then(() => Promise.reject(new Error("not refused")), () => {});
    await meta.putObjectVersion({ ...version("x"), bucket: "nope" }, [], { jobs: [job("j4")] })
      .catch(() => {});
    const jobs = await meta.listJobs({ limit: 10 });
    assertEquals(jobs.map((j) => [j.id, j.state, j.attempts]), [["j1", "queued", 0], [
      "j2",
      "queued",
      0,
    ]]);
    await meta.close();
  });

  test("jobs: claims, outcomes, backoff, requeue after a crash, paging", async () => {
    const meta = await store();
    for (const id of ["a", "b", "c"]) await meta.createJob(job(id));
    const first = await meta.claimJob(2000);
    assertEquals([first?.id, first?.state, first?.attempts], ["a", "running", 1]);
    assertEquals((await meta.claimJob(2000))?.id, "b");
    await meta.finishJob("a", {
      state: "done",
      outputBucket: "b",
      outputKey: "out/a",
      outputVersionId: "null",
    });
    // Backing off: not due until 10000.
    await meta.finishJob("b", { state: "queued", runAt: 10_000, error: "disk busy" });
    assertEquals((await meta.claimJob(3000))?.id, "c");
    assertEquals(await meta.claimJob(3000), undefined);
    // "c" was running when the server stopped: queued again, claimed with its attempt counted.
    assertEquals(await meta.requeueRunningJobs(), 1);
    // Due first: "b" (since 10000), then "c" (since the requeue).
    const retried = await meta.claimJob(Date.now());
    assertEquals([retried?.id, retried?.attempts, retried?.error], ["b", 2, "disk busy"]);
    const again = await meta.claimJob(Date.now());
    assertEquals([again?.id, again?.attempts], ["c", 2]);
    await meta.finishJob("b", { state: "failed", error: "gave up" });
    const a = await meta.getJob("a");
    assertEquals([a?.state, a?.outputKey, a?.error], ["done", "out/a", undefined]);
    assertEquals((await meta.listJobs({ state: "failed", limit: 10 })).map((j) => j.id), ["b"]);
    const page = await meta.listJobs({ bucket: "b", limit: 2 });
    assertEquals(page.map((j) => j.id), ["a", "b"]);
    const rest = await meta.listJobs({ bucket: "b", after: page[1].seq, limit: 2 });
    assertEquals(rest.map((j) => j.id), ["c"]);
    assertEquals(await meta.listJobs({ bucket: "other", limit: 2 }), []);
    // Pruning removes ended jobs last changed before the cut, never queued or running ones.
    await meta.createJob(job("d"));
    assertEquals(await meta.pruneJobs(Date.now() + 1), 2);
    assertEquals((await meta.listJobs({ limit: 10 })).map((j) => [j.id, j.state]), [
      ["c", "running"],
      ["d", "queued"],
    ]);
    await meta.close();
  });

  test("kms keys: created once, listed by id, updated, unknown ones absent", async () => {
    const meta = await open();
    const version = { version: 1, sealed: "v1:AAAA", createdAt: 1 };
    const key = { id: "k2", description: "two", enabled: true, createdAt: 1, versions: [version] };
    await meta.createKmsKey(key);
    await meta.createKmsKey({ ...key, id: "k1", description: "one" });
    let duplicate: unknown;
    await meta.createKmsKey(key).catch((err) => duplicate = err);
    assertEquals(duplicate instanceof DuplicateError, true);
    assertEquals((await meta.listKmsKeys()).map((k) => k.id), ["k1", "k2"]);
    const rotated = { ...key, enabled: false, versions: [version, { ...version, version: 2 }] };
    assertEquals(await meta.updateKmsKey(rotated), true);
    assertEquals(await meta.getKmsKey("k2"), rotated);
    assertEquals(await meta.updateKmsKey({ ...key, id: "nope" }), false);
    assertEquals(await meta.getKmsKey("nope"), undefined);
    await meta.close();
  });
}
