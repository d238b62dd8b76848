// Writes whose decisions, made when they started, no longer hold when they commit: a PUT still
// streaming when its bucket's versioning is enabled (its "null" id would replace the null version
// versioning keeps), and one whose bucket was deleted and made again by another owner meanwhile.
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { S3Error } from "../http/errors.ts";
import { createTestBucket, withTestLayer } from "./test_layer.ts";

const OWNER = "owner-id";

Deno.test("a PUT streaming across 'versioning Enabled' is refused and keeps the null version", async () => {
  await withTestLayer(async (layer) => {
    await createTestBucket(layer.meta, "b", { owner: OWNER });
    const put = (body: AsyncIterable<Uint8Array>) =>
      layer.putObject({
        bucket: "b",
        key: "k",
        body,
        contentType: "text/plain",
        userMeta: {},
        headers: {},
        owner: OWNER,
      });
    const before = await put((async function* () {
      yield new TextEncoder().encode("kept");
    })());
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    const streaming = put((async function* () {
      yield new TextEncoder().encode("late ");
      await gate;
      yield new TextEncoder().encode("write");
    })());
    await new Promise((r) => setTimeout(r, 20));
    await layer.meta.setBucketVersioning("b", "Enabled");
    release();
    try {
      await streaming;
      throw new Error("committed as the null version");
    } catch (err) {
      assert(err instanceof S3Error, `${err}`);
      assertEquals([err.code, err.status, err.headers["retry-after"]], [
        "ServiceUnavailable",
        503,
        "1",
      ]);
    }
    const kept = await layer.headObject("b", "k", "null");
    assertEquals([kept.etag, kept.size], [before.etag, 4]);
    // The retry takes the new state: a version of its own, the null version kept below it.
    const retried = await put((async function* () {
      yield new TextEncoder().encode("late write");
    })());
    assert(retried.versionId !== "null");
    assertEquals((await layer.headObject("b", "k")).versionId, retried.versionId);
    assertEquals((await layer.headObject("b", "k", "null")).etag, before.etag);
  }, { prefix: "versioning-race-" });
});

Deno.test("a PUT streaming across a delete and re-creation of its bucket answers NoSuchBucket", async () => {
  await withTestLayer(async (layer) => {
    const make = (owner: string, createdAt: number) =>
      createTestBucket(layer.meta, "b", { owner, createdAt });
    await make("alice", Date.now() - 1000);
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    const streaming = layer.putObject({
      bucket: "b",
      key: "k",
      body: (async function* () {
        yield new TextEncoder().encode("alice's ");
        await gate;
        yield new TextEncoder().encode("object");
      })(),
      contentType: "text/plain",
      userMeta: {},
      headers: {},
      owner: "alice",
    });
    await new Promise((r) => setTimeout(r, 20));
    await layer.meta.deleteBucket("b");
    await make("mallory", Date.now());
    release();
    try {
      await streaming;
      throw new Error("written into the bucket made again");
    } catch (err) {
      assert(err instanceof S3Error && err.code === "NoSuchBucket", `${err}`);
    }
    await layer.headObject("b", "k").then(
      () => {
        throw new Error("the object is in the new bucket");
      },
      (err) => assert(err instanceof S3Error && err.code === "NoSuchKey", `${err}`),
    );
  }, { prefix: "write-races-" });
});

Deno.test("a bucket document decided on a bucket deleted and made again by another owner is refused", async () => {
  await withTestLayer(async (layer) => {
    await createTestBucket(layer.meta, "b", { owner: "alice", createdAt: Date.now() - 1000 });
    const alices = await layer.requireBucket("b");
    await layer.meta.deleteBucket("b");
    await createTestBucket(layer.meta, "b", { owner: "mallory" });
    for (
      const change of [
        () => layer.setBucketConfig(alices, "policy", '{"Statement":[]}'),
        () => layer.removeBucketConfig(alices, "cors"),
      ]
    ) {
      await change().then(
        () => {
          throw new Error("changed the bucket made again");
        },
        (err) => assert(err instanceof S3Error && err.code === "NoSuchBucket", `${err}`),
      );
    }
    assertEquals(await layer.meta.getBucketConfig("b", "policy"), undefined);
    await layer.setBucketConfig(await layer.requireBucket("b"), "policy", "{}");
    assertEquals(await layer.meta.getBucketConfig("b", "policy"), "{}");
  }, { prefix: "write-races-" });
});
