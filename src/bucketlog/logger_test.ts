// Access records go only to a target bucket of the logged bucket's owner: a target deleted and
// made again under its name by someone else receives none.
import { assertEquals } from "../../tests/integration/assert.ts";
import { MasterKey } from "../auth/master_key.ts";
import { SseKeys } from "../object/sse.ts";
import { createTestBucket, withTestLayer } from "../object/test_layer.ts";
import { BucketLogger } from "./logger.ts";

Deno.test("bucket logging: a target re-created by another owner gets no records", async () => {
  await withTestLayer(async (layer, dir) => {
    await createTestBucket(layer.meta, "src", { owner: "alice" });
    await createTestBucket(layer.meta, "logs", { owner: "alice" });
    await layer.meta.putBucketConfig(
      "src",
      "logging",
      JSON.stringify({ targetBucket: "logs", targetPrefix: "", keyFormat: "simple" }),
    );
    const logger = new BucketLogger({
      layer,
      sseKeys: new SseKeys(new MasterKey(crypto.getRandomValues(new Uint8Array(32)))),
      region: "us-east-1",
      intervalMs: 3_600_000,
      batchSize: 1000,
      spoolDir: `${dir}/spool`,
    });
    await logger.start();
    const record = (key: string) => (owner: string) => ({
      bucketOwner: owner,
      bucket: "src",
      time: new Date(),
      remoteIp: "127.0.0.1",
      requestId: "r",
      operation: "REST.GET.OBJECT",
      key,
      requestUri: `GET /src/${key} HTTP/1.1`,
      status: 200,
      totalMs: 1,
    });
    const logged = async () =>
      (await layer.listObjects("logs", { prefix: "", delimiter: "", after: "", maxKeys: 100 }))
        .objects.length;
    await logger.note("src", record("first"));
    await logger.flush("src");
    assertEquals(await logged(), 1, "delivered to alice's target");

    await logger.note("src", record("private-key-name"));
    // alice empties and deletes her target; mallory makes a bucket of that name.
    const page = await layer.listObjects("logs", {
      prefix: "",
      delimiter: "",
      after: "",
      maxKeys: 100,
    });
    for (const o of page.objects) await layer.deleteObject("logs", o.key, { owner: "alice" });
    assertEquals((await layer.meta.deleteBucket("logs")).outcome, "deleted");
    await createTestBucket(layer.meta, "logs", { owner: "mallory" });
    await logger.flush("src");
    assertEquals(await logged(), 0, "mallory's bucket got alice's access records");
    await logger.stop();
  }, { prefix: "bucketlog-" });
});
