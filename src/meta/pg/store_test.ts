// PgMetaStore against a real PostgreSQL: migrations under concurrency, versions and chunk counts,
// listings in byte order with prefix skipping, multipart, audit entries in the change's
// transaction, the integrity check, and the snapshot refusal.
import postgres from "postgres";
import { assert, assertEquals } from "../../../tests/integration/assert.ts";
import { createPostgres } from "../../../tests/services/postgres.ts";
import { newScope, runAudited } from "../../audit/scope.ts";
import type { ChunkRecord, ObjectVersion, VersionChunk } from "../store.ts";
import { MIGRATIONS } from "./schema.ts";
import { PgMetaStore } from "./store.ts";

function version(key: string, over: Partial<ObjectVersion> = {}): ObjectVersion {
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

function chunk(id: string): ChunkRecord {
  return {
    id,
    plainSize: 10,
    storedSize: 10,
    compression: "none",
    encrypted: false,
    dataShards: 1,
    parityShards: 1,
    drives: [1, 2],
  };
}

function chunked(ids: string[]): VersionChunk[] {
  return ids.map((id, i) => ({ chunk: chunk(id), offset: i * 10, size: 10 }));
}

Deno.test("PgMetaStore on a real PostgreSQL", async (t) => {
  const pg = await createPostgres();
  await pg.start();
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
  let n = 0;
  const fresh = async () => {
    const name = `s${++n}`;
    await admin.unsafe(`CREATE DATABASE ${name}`);
    return pg.url.replace(/\/postgres$/, `/${name}`);
  };
  const open: PgMetaStore[] = [];
  const store = async (url?: string) => {
    const meta = await PgMetaStore.open({ url: url ?? await fresh(), pool: 4 });
    open.push(meta);
    return meta;
  };
  const withBucket = async () => {
    const meta = await store();
    await meta.createBucket({
      name: "b",
      owner: "o",
      createdAt: 0,
      region: "r",
      versioning: "",
      objectLock: false,
    });
    return meta;
  };
  try {
    await t.step("nodes starting at once migrate once, under the advisory lock", async () => {
      const url = await fresh();
      await Promise.all([store(url), store(url), store(url), store(url)]);
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      const [row] = await sql`SELECT version FROM schema_version`;
      const count = await sql`SELECT count(*)::int AS n FROM schema_version`;
      await sql.end();
      assertEquals([row.version, count[0].n], [MIGRATIONS.length, 1]);
    });

    await t.step("versions, chunk counts, freed chunks, usage", async () => {
      const meta = await withBucket();
      await meta.putObjectVersion(version("a", { size: 20 }), chunked(["c1", "c2"]));
      await meta.putObjectVersion(version("b", { size: 20 }), chunked(["c2", "c2"]));
      const counts = async () =>
        (await meta.listChunks("", 10)).map((c) => c.id).join() +
        ` ${JSON.stringify(await meta.usage())}`;
      assertEquals(await counts(), 'c1,c2 {"objects":2,"bytes":40,"chunks":2,"shardBytes":40}');
      // Replacing "a" frees c1 only; c2 is still used by "b".
      const r = await meta.putObjectVersion(version("a", { size: 1 }));
      assertEquals(r.displaced.map((v) => v.key), ["a"]);
      assertEquals(r.freed.map((c) => c.id), ["c1"]);
      const [out] = await meta.deleteObjects([{ bucket: "b", key: "b", versionId: "null" }]);
      assert(out.ok);
      assertEquals(out.freed.map((c) => c.id), ["c2"]);
      assertEquals(await meta.quickCheck(), ["ok"]);
      assertEquals(await meta.getObjectVersion("b", "a\0b"), undefined);
      const got = await meta.getObjectVersion("b", "a");
      assertEquals(got?.data, { kind: "inline", bytes: new Uint8Array([1]) });
    });

    await t.step("a guard refusal and a locked version roll back alone", async () => {
      const meta = await withBucket();
      await meta.putObjectVersion(version("k"));
      let refused = false;
      await meta.putObjectVersion(version("k"), [], {
        guard: () => {
          throw new Error("precondition");
        },
      }).catch(() => refused = true);
      assert(refused);
      const outcomes = await meta.deleteObjects([
        {
          bucket: "b",
          key: "k",
          versionId: "null",
          guard: () => {
            throw new Error("locked");
          },
        },
        { marker: version("m", { versionId: "v1", deleteMarker: true }) },
      ]);
      assertEquals(outcomes.map((o) => o.ok), [false, true]);
      assertEquals((await meta.getObjectVersion("b", "k"))?.key, "k");
      assertEquals((await meta.getObjectVersion("b", "m"))?.deleteMarker, true);
    });

    await t.step("listings: byte order, delimiter, markers, versions", async () => {
      const meta = await withBucket();
      const keys = ["a/1", "a/2", "a/3", "b", "c/x/1", "c/y", "d", "é", "Z", "~"];
      for (let i = 0; i < 100; i++) keys.push(`p/${String(i).padStart(3, "0")}`);
      for (const k of keys) await meta.putObjectVersion(version(k));
      const all: string[] = [];
      let after = "";
      for (;;) {
        const page = await meta.listObjects("b", { prefix: "", delimiter: "/", after, maxKeys: 2 });
        all.push(...page.objects.map((o) => o.key), ...page.commonPrefixes);
        if (!page.isTruncated) break;
        after = page.lastReturned!;
      }
      assertEquals(all, ["Z", "a/", "b", "c/", "d", "p/", "~", "é"]);
      const flat = await meta.listObjects("b", {
        prefix: "p/",
        delimiter: "",
        after: "",
        maxKeys: 3,
      });
      assertEquals(flat.objects.map((o) => o.key), ["p/000", "p/001", "p/002"]);
      await meta.setBucketVersioning("b", "Enabled");
      await meta.putObjectVersion(version("d", { versionId: "v2" }));
      await meta.putObjectVersion(version("d", { versionId: "v3", deleteMarker: true }));
      const v = await meta.listVersions("b", {
        prefix: "d",
        delimiter: "",
        keyMarker: "",
        versionIdMarker: "",
        maxKeys: 10,
      });
      assertEquals(v.versions.map((e) => `${e.versionId}:${e.isLatest}:${e.deleteMarker}`), [
        "v3:true:true",
        "v2:false:false",
        "null:false:false",
      ]);
      const cur = await meta.listObjects("b", {
        prefix: "d",
        delimiter: "",
        after: "",
        maxKeys: 5,
      });
      assertEquals(cur.objects.length, 0);
    });

    await t.step("multipart: parts, completion moves chunk references", async () => {
      const meta = await withBucket();
      const upload = {
        bucket: "b",
        key: "big",
        uploadId: "u1",
        initiated: 1,
        owner: "o",
        contentType: "",
        userMeta: {},
        headers: {},
      };
      await meta.createUpload(upload);
      await meta.putPart(
        "u1",
        { partNumber: 1, etag: '"1"', size: 20, lastModified: 1 },
        chunked([
          "p1",
          "p2",
        ]),
      );
      const replaced = await meta.putPart(
        "u1",
        { partNumber: 2, etag: '"2"', size: 10, lastModified: 1 },
        chunked(["p3"]),
      );
      assertEquals(replaced?.freed, []);
      const again = await meta.putPart(
        "u1",
        { partNumber: 2, etag: '"2b"', size: 10, lastModified: 2 },
        chunked(["p4"]),
      );
      assertEquals(again?.freed.map((c) => c.id), ["p3"]);
      assertEquals((await meta.listParts("u1", 0, 10)).map((p) => p.etag), ['"1"', '"2b"']);
      const done = await meta.completeUpload(
        upload,
        [{ partNumber: 1, etag: '"1"' }, { partNumber: 2, etag: '"2b"' }],
        version("big", { size: 30 }),
      );
      assertEquals(done?.freed, []);
      const got = await meta.getObjectVersion("b", "big");
      assert(got?.data.kind === "chunks");
      const vc = await meta.versionChunks(got.data.vid);
      assertEquals(vc.map((c) => `${c.chunk.id}@${c.offset}`), ["p1@0", "p2@10", "p4@20"]);
      assertEquals(await meta.getUploadById("u1"), undefined);
      assertEquals((await meta.getCompletedUpload("u1"))?.key, "big");
      assertEquals(
        await meta.putPart("u1", { partNumber: 1, etag: "", size: 0, lastModified: 0 }, []),
        undefined,
      );
      assertEquals(await meta.quickCheck(), ["ok"]);
    });

    await t.step(
      "a change in an audit scope commits its entry in the same transaction",
      async () => {
        const meta = await withBucket();
        const scope = newScope({ requestId: "r1", operation: "PutObject", bucket: "b" });
        await runAudited(scope, () => meta.putObjectVersion(version("x", { size: 5 })));
        await runAudited(scope, () =>
          meta.putObjectVersion(version("x"), [], {
            guard: () => {
              throw new Error("refused");
            },
          }).catch(() => {}));
        const entries = await meta.queryAudit({ afterSeq: 0, limit: 10 });
        assertEquals(entries.map((e) => [e.requestId, e.key, e.bytes]), [["r1", "x", 5]]);
        assertEquals(scope.recorded, 1);
      },
    );

    await t.step("drive ids: stable per identity, new ones without gaps", async () => {
      const meta = await store();
      const first = await meta.driveId("u1", "/d1");
      assertEquals(await meta.driveId("u1", "/d1-moved"), first);
      assertEquals(await meta.driveId("u1", "/d1-moved"), first);
      assertEquals(await meta.driveId("u2", "/d2"), first + 1);
      assertEquals(await meta.driveAt("/d1-moved"), "u1");
    });

    await t.step("chunk claims hold across servers: no collection under a claim", async () => {
      const url = await fresh();
      const [a, b] = [await store(url), await store(url)];
      const removed: string[] = [];
      const remove = (what: string) => () => Promise.resolve(void removed.push(what));
      await b.claimChunk("x");
      await a.collectChunk("x", remove("x by a"));
      assertEquals(removed, [], "b's claim keeps x");
      await b.releaseChunk("x", remove("x by b"));
      assertEquals(removed, ["x by b"], "the last claim gone and no row: removed");
      await a.claimChunk("y");
      await b.claimChunk("y");
      await a.releaseChunk("y", remove("y by a"));
      await b.releaseChunk("y", remove("y by b"));
      assertEquals(removed, ["x by b", "y by b"]);
      // A chunk a version refers to is never removed, claimed or not.
      await a.createBucket({
        name: "b",
        owner: "o",
        createdAt: 0,
        region: "r",
        versioning: "",
        objectLock: false,
      });
      await a.claimChunk("z");
      await a.putObjectVersion(version("k"), chunked(["z"]));
      await a.releaseChunk("z", remove("z"));
      await b.collectChunk("z", remove("z"));
      assertEquals(removed.length, 2);
      // A claim made while another server removes the chunk waits for the removal to finish.
      const order: string[] = [];
      const collecting = a.collectChunk("w", async () => {
        await new Promise((r) => setTimeout(r, 300));
        order.push("removed");
      });
      await new Promise((r) => setTimeout(r, 50));
      await b.claimChunk("w");
      order.push("claimed");
      await collecting;
      assertEquals(order, ["removed", "claimed"]);
    });

    await t.step("snapshot is refused: PostgreSQL is backed up with its own tools", async () => {
      const meta = await withBucket();
      let message = "";
      await meta.snapshot("/tmp/x.db").catch((err) => message = err.message);
      assert(message.includes("pg_dump"), message);
    });
  } finally {
    for (const meta of open) await meta.close();
    await admin.end();
    await pg.dispose();
  }
});
