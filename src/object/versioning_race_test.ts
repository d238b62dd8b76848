// A PUT whose body is still streaming when its bucket's versioning is enabled: its version id was
// chosen as "null" by the state before, and committing it would replace the null version that
// versioning keeps. It is refused, retryably, and nothing is replaced.
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { S3Error } from "../http/errors.ts";
import { withTestLayer } from "./test_layer.ts";

const OWNER = "owner-id";

Deno.test("a PUT streaming across 'versioning Enabled' is refused and keeps the null version", async () => {
  await withTestLayer(async (layer) => {
    await layer.meta.createBucket({
      name: "b",
      owner: OWNER,
      createdAt: Date.now(),
      region: "us-east-1",
      versioning: "",
      objectLock: false,
    });
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
