// The layer's reads of a version that was deleted or replaced after it was looked up (a handler
// awaits between the two): a GET gets a retryable error, never a body shorter than promised; a
// copy sharing the source's chunks gets NoSuchKey, never an object without its bytes; the stored
// chunks a node sends, and a replica received short, fail rather than commit a short version; a
// scrub or heal that read a chunk's record before it was freed neither reports it lost nor writes
// its shards back.
import { assert, assertBytesEqual, assertEquals } from "../../tests/integration/assert.ts";
import { S3Error } from "../http/errors.ts";
import { type ObjectLayer, VersionGoneError } from "./layer.ts";
import { createTestBucket, withTestLayer } from "./test_layer.ts";

const OWNER = "owner-id";
const MiB = 1024 * 1024;

function withLayer(
  fn: (layer: ObjectLayer, dir: string) => Promise<void>,
  layout = { dataShards: 1, parityShards: 0 },
): Promise<void> {
  return withTestLayer(async (layer, dir) => {
    await createTestBucket(layer.meta, "b", { owner: OWNER });
    await fn(layer, dir);
  }, { layout, dedup: true, prefix: "layer-read-" });
}

function put(layer: ObjectLayer, key: string, bytes: Uint8Array) {
  return layer.putObject({
    bucket: "b",
    key,
    body: (async function* () {
      yield bytes;
    })(),
    contentType: "application/octet-stream",
    userMeta: {},
    headers: {},
    owner: OWNER,
  });
}

async function bodyOf(stream: ReadableStream<Uint8Array> | Uint8Array): Promise<Uint8Array> {
  if (stream instanceof Uint8Array) return stream;
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function refused(opening: Promise<unknown>, what: string): Promise<void> {
  try {
    await opening;
  } catch (err) {
    assert(err instanceof S3Error, `${what}: ${err}`);
    assertEquals([err.code, err.status, err.headers["retry-after"]], [
      "ServiceUnavailable",
      503,
      "1",
    ]);
    return;
  }
  throw new Error(`${what}: opened`);
}

Deno.test("opening a version deleted or replaced since it was looked up is refused, retryably", async () => {
  await withLayer(async (layer) => {
    const bytes = crypto.getRandomValues(new Uint8Array(65536)).slice();
    const big = new Uint8Array(3 * MiB + 5);
    for (let at = 0; at < big.length; at += bytes.length) {
      big.set(bytes.subarray(0, big.length - at), at);
    }

    await put(layer, "k", big);
    const looked = await layer.headObject("b", "k");
    const whole = await layer.openObject(looked);
    assertBytesEqual(await bodyOf(whole.body), big, "the version as it is");
    const ranged = await layer.openObject(looked, { offset: MiB - 3, length: MiB + 6 });
    assertBytesEqual(await bodyOf(ranged.body), big.subarray(MiB - 3, 2 * MiB + 3), "a range");

    await layer.deleteObject("b", "k", { owner: OWNER });
    await refused(layer.openObject(looked), "deleted");
    await refused(layer.openObject(looked, { offset: 5, length: 10 }), "deleted, a range");

    await put(layer, "k", big);
    const before = await layer.headObject("b", "k");
    await put(layer, "k", big.slice().reverse());
    await refused(layer.openObject(before), "replaced");
    const now = await layer.openObject(await layer.headObject("b", "k"));
    assertBytesEqual(await bodyOf(now.body), big.slice().reverse(), "the version now");
  });
});

Deno.test("a copy, a replica sent and a replica received do not carry a version that went", async () => {
  await withLayer(async (layer) => {
    const big = new Uint8Array(65536 * 40 + 3);
    for (let at = 0; at < big.length; at += 65536) {
      crypto.getRandomValues(big.subarray(at, at + 65536));
    }
    await put(layer, "src", big);
    const src = await layer.headObject("b", "src");
    await layer.deleteObject("b", "src", { owner: OWNER });
    try {
      await layer.copyObject({
        source: src,
        bucket: "b",
        key: "dst",
        owner: OWNER,
        shareChunks: true,
      });
      throw new Error("copied");
    } catch (err) {
      assert(err instanceof S3Error && err.code === "NoSuchKey", `copy: ${err}`);
    }
    await layer.headObject("b", "dst").then(
      () => {
        throw new Error("the copy was committed");
      },
      (err) => assert(err instanceof S3Error && err.code === "NoSuchKey", `${err}`),
    );

    try {
      for await (const _ of layer.storedChunks(src)) {
        throw new Error("a chunk of a version that went");
      }
      throw new Error("sent nothing, without an error");
    } catch (err) {
      assert(err instanceof VersionGoneError, `stored chunks: ${err}`);
    }

    const { data: _data, ...received } = src;
    try {
      await layer.putStoredReplica(
        { ...received, key: "replica" },
        "{}",
        (async function* () {})(),
      );
      throw new Error("a short replica committed");
    } catch (err) {
      assert(err instanceof VersionGoneError, `replica: ${err}`);
    }
    await layer.headObject("b", "replica").then(
      () => {
        throw new Error("the replica was committed");
      },
      (err) => assert(err instanceof S3Error && err.code === "NoSuchKey", `${err}`),
    );
  });
});

/** Shard files under the drive at `dir`. */
async function shardFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const sub of Deno.readDir(`${dir}/chunks`)) {
    for await (const f of Deno.readDir(`${dir}/chunks/${sub.name}`)) found.push(f.name);
  }
  return found;
}

Deno.test("verifying a chunk freed since its record was read: skipped, never lost, never healed back", async () => {
  await withLayer(async (layer, dir) => {
    const store = layer.chunks;
    const bytes = crypto.getRandomValues(new Uint8Array(60_000));
    const body = new Uint8Array(100_000);
    body.set(bytes);
    body.set(bytes.subarray(0, 40_000), 60_000);

    // Freed and its files removed after the scrub listed it: not reported lost.
    await put(layer, "k", body);
    const first = await layer.headObject("b", "k");
    assert(first.data.kind === "chunks");
    const [{ chunk: listed }] = await layer.meta.versionChunks(first.data.vid);
    await layer.deleteObject("b", "k", { owner: OWNER });
    await store.reclaimer.drained();
    assertEquals(await shardFiles(dir), []);
    const gone = await store.verify(listed);
    assertEquals([gone.gone, gone.lost, gone.bad], [true, false, []]);

    // A shard missing, and the chunk freed before its files are removed: the check writes
    // nothing back, and the chunk's files go when it ends.
    await put(layer, "k", body.slice().reverse());
    const second = await layer.headObject("b", "k");
    assert(second.data.kind === "chunks");
    const [{ chunk: rec }] = await layer.meta.versionChunks(second.data.vid);
    const files = await shardFiles(dir);
    assertEquals(files.length, 3);
    await Deno.remove(`${dir}/chunks/${rec.id.slice(0, 2)}/${rec.id}.0`);
    const [outcome] = await layer.meta.deleteObjects([
      { bucket: "b", key: "k", versionId: second.versionId },
    ]);
    assert(outcome.ok);
    const health = await store.verify(rec);
    assertEquals([health.gone, health.healed], [true, []]);
    assertEquals(await shardFiles(dir), [], "the freed chunk's shards, removed and not healed");
  }, { dataShards: 2, parityShards: 1 });
});
