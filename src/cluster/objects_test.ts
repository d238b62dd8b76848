// The object sender against a stand-in receiver: what it sends (the bytes under their signed
// SHA-256, the metadata under the signed query), and how answers end a version's replication.
import { Buffer } from "node:buffer";
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { eventually } from "../../tests/integration/cluster_helpers.ts";
import { SqliteMetaStore } from "../meta/sqlite.ts";
import { type Encryption, ObjectLayer, single } from "../object/layer.ts";
import { ChunkStore } from "../storage/chunk_store.ts";
import { openDrives } from "../storage/drives.ts";
import { Membership } from "./membership.ts";
import { ObjectReplicator } from "./objects.ts";
import { storedFrames, unframeStored } from "./stored_body.ts";
import { ReplicaKeys } from "./object_keys.ts";
import { MasterKey } from "../auth/master_key.ts";
import { Kms } from "../kms/kms.ts";
import { SseKeys } from "../object/sse.ts";
import { ANSWER_HEADER, parseCallSignature, sha256Hex, signAnswer } from "./signature.ts";

const SECRET = "objects-test-secret-0123456789abcdef";

interface Received {
  bytes: Uint8Array;
  sha256: string;
  signed: string;
  message: Record<string, unknown>;
}

/** A receiver answering `answer()` (signed unless `unsigned`), recording what it got. */
function receiver(answer: () => { status: number; body: unknown; unsigned?: boolean }) {
  const got: Received[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const call = parseCallSignature(req.headers.get("authorization"))!;
    const bytes = new Uint8Array(await req.arrayBuffer());
    const header = req.headers.get("x-cluster-object")!;
    assertEquals(new URL(req.url).searchParams.get("meta"), sha256Hex(header));
    got.push({
      bytes,
      sha256: sha256Hex(bytes),
      signed: call.body,
      message: JSON.parse(Buffer.from(header, "base64").toString("utf8")),
    });
    const { status, body, unsigned } = answer();
    const text = new TextEncoder().encode(JSON.stringify(body));
    const headers: Record<string, string> = unsigned
      ? {}
      : { [ANSWER_HEADER]: signAnswer(SECRET, call.nonce, status, text) };
    return new Response(text, { status, headers });
  });
  const url = `http://127.0.0.1:${(server.addr as Deno.NetAddr).port}`;
  return { url, got, stop: () => server.shutdown() };
}

type Answer = () => { status: number; body: unknown; unsigned?: boolean };

async function withSender(
  answer: Answer,
  fn: (ctx: {
    layer: ObjectLayer;
    meta: SqliteMetaStore;
    got: Received[];
    keys: ReplicaKeys;
    put: (key: string, body: Uint8Array, encryption?: Encryption) => Promise<void>;
    status: (key: string) => Promise<string | undefined>;
  }) => Promise<void>,
  opts: {
    /** A third node "n3", answering so. */
    third?: Answer;
    /** What the sender sees of the metadata store. */
    senderMeta?: (meta: SqliteMetaStore) => SqliteMetaStore;
  } = {},
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "cluster-objects-" });
  const meta = new SqliteMetaStore(`${dir}/meta.db`, { clusterNode: "a" });
  const peer = receiver(answer);
  const third = opts.third ? receiver(opts.third) : undefined;
  let sender: ObjectReplicator | undefined;
  try {
    const drives = await openDrives([dir], {
      register: (uuid, path) => meta.driveId(uuid, path),
      knownAt: (path) => meta.driveAt(path),
    }, () => {});
    const chunks = new ChunkStore(meta, {
      drives,
      layout: { dataShards: 1, parityShards: 0 },
      compression: "off",
      dedup: false,
    });
    const layer = new ObjectLayer(meta, chunks, { inlineMax: 1024, chunkSize: 64 * 1024 });
    await meta.createBucket({
      name: "b",
      owner: "o",
      createdAt: 1,
      region: "r",
      versioning: "",
      objectLock: false,
    });
    const membership = new Membership(
      { id: "a", url: "http://127.0.0.1:1" },
      { suspectMs: 60_000, deadMs: 120_000 },
    );
    membership.heardFrom({ id: "n2", url: peer.url });
    if (third) membership.heardFrom({ id: "n3", url: third.url });
    const master = new MasterKey(crypto.getRandomValues(new Uint8Array(32)));
    const keys = new ReplicaKeys(meta, new SseKeys(master), new Kms(meta, master));
    sender = new ObjectReplicator(
      opts.senderMeta?.(meta) ?? meta,
      layer,
      keys,
      membership,
      () => ({ secret: SECRET, node: "a", timeoutMs: 5000 }),
      20,
      300,
      100,
    );
    sender.start();
    await fn({
      layer,
      meta,
      got: peer.got,
      keys,
      put: async (key, body, encryption) => {
        await layer.putObject({
          bucket: "b",
          key,
          body: single(body),
          contentType: "application/x-test",
          userMeta: { m: "1" },
          headers: {},
          owner: "o",
          encryption,
        });
      },
      status: async (key) => (await meta.getObjectVersion("b", key))?.replication,
    });
  } finally {
    await sender?.stop();
    await peer.stop();
    await third?.stop();
    await meta.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("object sender: streamed bytes under their signed SHA-256; COMPLETED when answered", async () => {
  await withSender(() => ({ status: 200, body: { ok: true } }), async ({ got, put, status }) => {
    const big = crypto.getRandomValues(new Uint8Array(60_000));
    const bytes = new Uint8Array(200_000);
    for (let i = 0; i < bytes.length; i += big.length) {
      bytes.set(big.subarray(0, bytes.length - i), i);
    }
    await put("k", bytes);
    await eventually("COMPLETED", () => status("k"), (s) => s === "COMPLETED", 10_000);
    assertEquals(got.length, 1);
    assertEquals(got[0].sha256, sha256Hex(bytes));
    assertEquals(got[0].signed, sha256Hex(bytes));
    const v = got[0].message.version as Record<string, unknown>;
    assertEquals([got[0].message.op, got[0].message.key, v.size, v.contentType, v.userMeta], [
      "put",
      "k",
      200_000,
      "application/x-test",
      { m: "1" },
    ]);
  });
});

Deno.test("object sender: an SSE-S3 version travels decrypted, its sealed key never", async () => {
  await withSender(
    () => ({ status: 200, body: { ok: true } }),
    async ({ got, keys, put, status }) => {
      const bytes = crypto.getRandomValues(new Uint8Array(5000));
      await put("enc", bytes, await keys.replica("b", { kind: "s3" }));
      await eventually("COMPLETED", () => status("enc"), (s) => s === "COMPLETED", 10_000);
      assertEquals(got[0].sha256, sha256Hex(bytes));
      assertEquals(got[0].signed, sha256Hex(bytes));
      assertEquals(got[0].message.encryption, { kind: "s3" });
      assertEquals((got[0].message.version as Record<string, unknown>).sse, undefined);
    },
  );
});

/** Whether `needle` occurs in `hay`. */
function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  return Buffer.from(hay).indexOf(Buffer.from(needle)) >= 0;
}

Deno.test("object sender: an SSE-C version travels as stored: no key, no plaintext", async () => {
  await withSender(
    () => ({ status: 200, body: { ok: true } }),
    async ({ got, keys, put, status }) => {
      const customer = crypto.getRandomValues(new Uint8Array(32));
      const { record, key } = await keys.sse.forNewObject({ kind: "c", key: customer, keyMd5: "" });
      // Three chunks of 64 KiB and a part of one.
      const bytes = new Uint8Array(150_000);
      for (let at = 0; at < bytes.length; at += 50_000) {
        crypto.getRandomValues(bytes.subarray(at, at + 50_000));
      }
      await put("ssec", bytes, { key: key!, record: JSON.stringify(record) });
      await eventually("COMPLETED", () => status("ssec"), (s) => s === "COMPLETED", 10_000);
      const sent = got[0];
      assertEquals(sent.signed, sent.sha256);
      assertEquals(sent.message.encryption, { kind: "c", keyMd5: record!.keyMd5 });
      assertEquals((sent.message.version as Record<string, unknown>).sse, undefined);
      assert(!JSON.stringify(sent.message).includes(Buffer.from(customer).toString("base64")));
      assert(!contains(sent.bytes, customer));
      for (let at = 0; at + 32 <= bytes.length; at += 4096) {
        assert(!contains(sent.bytes, bytes.subarray(at, at + 32)), `plaintext at ${at} sent`);
      }
      // The frames: every chunk sealed, the object's ranges in order.
      const chunks = [];
      for await (const c of unframeStored(single(sent.bytes), bytes.length, [])) chunks.push(c);
      assertEquals(chunks.map((c) => [c.offset, c.size, c.form.encrypted]), [
        [0, 65536, true],
        [65536, 65536, true],
        [131072, 18928, true],
      ]);
      // A version of one chunk goes as one piece (not a stream), framed the same.
      const small = bytes.subarray(0, 1000);
      await put("ssec-small", small, { key: key!, record: JSON.stringify(record) });
      await eventually("COMPLETED", () => status("ssec-small"), (s) => s === "COMPLETED", 10_000);
      assertEquals(got[1].signed, got[1].sha256);
      assert(!contains(got[1].bytes, small.subarray(0, 32)));
      const one = [];
      for await (const c of unframeStored(single(got[1].bytes), 1000, [])) one.push(c);
      assertEquals(one.map((c) => [c.offset, c.size, c.form.encrypted]), [[0, 1000, true]]);
    },
  );
});

Deno.test("stored body: a frame out of place, cut short or with a bad digest is refused; buffers come back", async () => {
  const frame = (offset: number, size: number, stored: Uint8Array) =>
    storedFrames((async function* () {
      yield {
        form: {
          id: "a".repeat(64),
          plainSize: size,
          storedSize: stored.length,
          compression: "none" as const,
          encrypted: true,
        },
        offset,
        size,
        stored,
      };
    })());
  const bytes = async (frames: AsyncIterable<Uint8Array>) => {
    const parts: Uint8Array[] = [];
    for await (const p of frames) parts.push(p);
    return new Uint8Array(Buffer.concat(parts));
  };
  const read = async (body: Uint8Array, size: number, digest = sha256Hex(body)) => {
    const check = {
      hash: [] as Uint8Array[],
      update(b: Uint8Array) {
        this.hash.push(b);
      },
      finish() {
        if (sha256Hex(new Uint8Array(Buffer.concat(this.hash))) !== digest) {
          throw new Error("digest");
        }
      },
    };
    // Every buffer taken is given back, whatever the outcome (the consumer releases each chunk).
    let out = 0;
    const buffers = {
      take: (n: number) => (out++, Promise.resolve(new Uint8Array(n))),
      give: () => void out--,
    };
    try {
      const chunks = [];
      for await (const c of unframeStored(single(body), size, [check], buffers)) {
        chunks.push(c);
        c.release?.();
      }
      return chunks.length === 1 ? "ok" : `${chunks.length} chunks`;
    } catch (err) {
      return (err as Error).message;
    } finally {
      assertEquals(out, 0);
    }
  };
  const good = await bytes(frame(0, 10, new Uint8Array(40)));
  assertEquals(await read(good, 10), "ok");
  assertEquals(await read(good, 11), "The stored chunks are not as long as the version.");
  assertEquals(await read(good, 10, sha256Hex(new Uint8Array(1))), "digest");
  assertEquals(await read(good.subarray(0, good.length - 1), 10, sha256Hex(good)), "digest");
  const misplaced = await bytes(frame(5, 10, new Uint8Array(40)));
  assertEquals(
    await read(misplaced, 15),
    "A stored chunk's header is malformed or out of place.",
  );
});

Deno.test("object sender: a deletion carries its time and whether it bypassed governance", async () => {
  await withSender(
    () => ({ status: 200, body: { ok: true } }),
    async ({ layer, meta, got, put }) => {
      await put("g", new Uint8Array([1]));
      await put("p", new Uint8Array([2]));
      await layer.deleteObject("b", "g", { owner: "o", bypassGovernance: true });
      await layer.deleteObject("b", "p", { owner: "o" });
      await eventually(
        "both deletions sent",
        () => Promise.resolve(got),
        (g) => g.filter((x) => x.message.op === "delete").length === 2,
      );
      const deletions = got.filter((g) => g.message.op === "delete").map((g) => g.message);
      const removedAt = async (key: string) =>
        await meta.versionTombstone({ bucket: "b", key, versionId: "null" });
      assertEquals(deletions, [
        {
          op: "delete",
          bucket: "b",
          key: "g",
          versionId: "null",
          deletedAt: await removedAt("g"),
          bypassGovernance: true,
        },
        { op: "delete", bucket: "b", key: "p", versionId: "null", deletedAt: await removedAt("p") },
      ]);
    },
  );
});

Deno.test("object sender: changes every node has received are pruned, the newest kept", async () => {
  await withSender(() => ({ status: 200, body: { ok: true } }), async ({ meta, put, status }) => {
    for (const key of ["p1", "p2", "p3"]) await put(key, new Uint8Array([1]));
    await eventually("COMPLETED", () => status("p3"), (s) => s === "COMPLETED", 10_000);
    const left = await eventually(
      "pruned",
      () => meta.objectChanges(0, 10),
      (c) => c.length === 1,
      10_000,
    );
    assertEquals([left[0].key, left[0].seq], ["p3", 3]);
  });
});

Deno.test("object sender: a permanent refusal is FAILED at once; the queue moves on", async () => {
  await withSender(
    () => ({ status: 400, body: { error: { code: "invalid_message", message: "no" } } }),
    async ({ meta, put, status }) => {
      await put("k1", new Uint8Array([1]));
      await put("k2", new Uint8Array([2]));
      await eventually(
        "both FAILED",
        async () => [await status("k1"), await status("k2")],
        (s) => s.join() === "FAILED,FAILED",
        10_000,
      );
      assertEquals(await meta.objectReplicationCursor("n2"), 2);
    },
  );
});

Deno.test("object sender: a version one node refused stays FAILED whatever order the nodes settle in", async () => {
  // The refusing node's FAILED is written slowly: with the cursor moved first, the accepting
  // node's settle saw every cursor past the change and marked it COMPLETED meanwhile (a status
  // is final once set), so FAILED was lost.
  const slowFailed = (meta: SqliteMetaStore) =>
    new Proxy(meta, {
      get(target, name) {
        const value = Reflect.get(target, name, target);
        if (name !== "setReplicationStatus") {
          return typeof value === "function" ? value.bind(target) : value;
        }
        return async (t: { bucket: string; key: string; versionId: string }, status: string) => {
          if (status === "FAILED") await new Promise((r) => setTimeout(r, 300));
          return await target.setReplicationStatus(t, status as "FAILED");
        };
      },
    });
  await withSender(
    () => ({ status: 400, body: { error: { code: "invalid_message", message: "no" } } }),
    async ({ put, status }) => {
      await put("k1", new Uint8Array([1]));
      await put("k2", new Uint8Array([2]));
      await eventually(
        "both settled",
        async () => [await status("k1"), await status("k2")],
        (s) => !s.includes("PENDING"),
        10_000,
      );
      assertEquals([await status("k1"), await status("k2")], ["FAILED", "FAILED"]);
    },
    { third: () => ({ status: 200, body: { ok: true } }), senderMeta: slowFailed },
  );
});

Deno.test("object sender: NoSuchBucket is retried, then FAILED after the grace period", async () => {
  await withSender(
    () => ({ status: 404, body: { error: { code: "NoSuchBucket", message: "not yet" } } }),
    async ({ meta, got, put, status }) => {
      await put("k", new Uint8Array([1]));
      await eventually("FAILED", () => status("k"), (s) => s === "FAILED", 10_000);
      assert(got.length >= 2, `retried: ${got.length} calls`);
      assertEquals(await meta.objectReplicationCursor("n2"), 1);
    },
  );
});

Deno.test("object sender: an unsigned answer is not trusted: PENDING, cursor kept", async () => {
  await withSender(
    () => ({ status: 200, body: { ok: true }, unsigned: true }),
    async ({ meta, got, put, status }) => {
      await put("k", new Uint8Array([1]));
      await eventually("sent twice", () => Promise.resolve(got.length), (n) => n >= 2, 10_000);
      assertEquals(await status("k"), "PENDING");
      assertEquals(await meta.objectReplicationCursor("n2"), 0);
      // Not received: kept, however often the queue is pruned (every 100 ms here).
      await new Promise((r) => setTimeout(r, 300));
      assertEquals((await meta.objectChanges(0, 10)).length, 1);
    },
  );
});

Deno.test("object sender: a signed 403 is retried, unless it is AccessDenied (Object Lock)", async () => {
  let answer = { status: 403, body: { error: { code: "cluster_expired", message: "clock" } } };
  await withSender(() => answer, async ({ meta, got, put, status }) => {
    await put("k", new Uint8Array([1]));
    await eventually("retried", () => Promise.resolve(got.length), (n) => n >= 2, 10_000);
    assertEquals(await status("k"), "PENDING");
    answer = {
      status: 403,
      body: { error: { code: "AccessDenied", message: "protected by object lock" } },
    };
    await eventually("FAILED", () => status("k"), (s) => s === "FAILED", 10_000);
    assertEquals(await meta.objectReplicationCursor("n2"), 1);
  });
});

Deno.test("object sender: outcomes are Replication events in the outbox, one per node", async () => {
  let answer = { status: 200, body: { ok: true } as unknown };
  await withSender(() => answer, async ({ meta, put, status }) => {
    await put("ok", new Uint8Array([1, 2]));
    await eventually("COMPLETED", () => status("ok"), (s) => s === "COMPLETED", 10_000);
    answer = { status: 400, body: { error: { code: "invalid_message", message: "no" } } };
    await put("bad", new Uint8Array([3]));
    await eventually("FAILED", () => status("bad"), (s) => s === "FAILED", 10_000);
    const events = await eventually(
      "two events",
      () => meta.readEvents(0, 100),
      (e) => e.filter((x) => x.name.startsWith("Replication:")).length === 2,
      10_000,
    );
    const replication = events.filter((e) => e.name.startsWith("Replication:"));
    assertEquals(replication.map((e) => [e.name, e.key]), [
      ["Replication:OperationCompletedReplication", "ok"],
      ["Replication:OperationFailedReplication", "bad"],
    ]);
    const [done, failed] = replication.map((e) => JSON.parse(e.detail));
    assertEquals(done.replication, {
      status: "COMPLETED",
      node: "n2",
      operation: "put",
      destinationBucket: "b",
    });
    assertEquals([done.size, done.owner, done.principal], [2, "o", "node:a"]);
    assertEquals(failed.replication.reason, "400 invalid_message: no");
  });
});
