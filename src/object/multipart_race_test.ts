// CompleteMultipartUpload racing an UploadPart of a part it lists: the part's new upload commits
// first (its write queued in the group commit before the completion's), so the completion, which
// chose the parts from what was committed before, must not put the new part's bytes under the
// old part's size and ETag.
import { assert, assertEquals } from "../../tests/integration/assert.ts";
import { S3Error } from "../http/errors.ts";
import type { UploadRecord } from "../meta/store.ts";
import { completeUpload, MIN_PART_SIZE, newUploadId, uploadPart } from "./multipart.ts";
import { single } from "./layer.ts";
import { createTestBucket, reporting, withTestLayer } from "./test_layer.ts";

const OWNER = "owner-id";

Deno.test("a completion racing a new upload of a listed part answers InvalidPart and writes nothing", async () => {
  const race = reporting("putPart");
  await withTestLayer(async (layer) => {
    await createTestBucket(layer.meta, "b", { owner: OWNER });
    const upload: UploadRecord = {
      bucket: "b",
      key: "mp",
      uploadId: newUploadId(),
      initiated: Date.now(),
      owner: OWNER,
      contentType: "application/octet-stream",
      userMeta: {},
      headers: {},
    };
    await layer.meta.createUpload(upload);
    const fill = (n: number, byte: number) => new Uint8Array(n).fill(byte);
    const one = await uploadPart(layer, upload, {
      partNumber: 1,
      body: single(fill(MIN_PART_SIZE, 0x41)),
    });
    const two = await uploadPart(layer, upload, { partNumber: 2, body: single(fill(1000, 0x42)) });
    // Part 2 sent again with other bytes; its write is queued when the completion comes.
    race.arm();
    const again = uploadPart(layer, upload, { partNumber: 2, body: single(fill(400, 0x43)) });
    await race.called;
    const completing = completeUpload(layer, upload, [
      { partNumber: 1, etag: one.etag },
      { partNumber: 2, etag: two.etag },
    ]);
    const [reuploaded, completed] = await Promise.allSettled([again, completing]);
    assert(reuploaded.status === "fulfilled", "the new part 2");
    assert(completed.status === "rejected", "completed with a part replaced meanwhile");
    const err = completed.reason;
    assert(err instanceof S3Error && err.code === "InvalidPart", `${err}`);
    assertEquals(err.details.PartNumber, "2");
    assertEquals(await layer.meta.getObjectVersion("b", "mp"), undefined);
    // The upload stays; completed with the part as it is now, it holds the new bytes.
    const version = await completeUpload(layer, upload, [
      { partNumber: 1, etag: one.etag },
      { partNumber: 2, etag: reuploaded.value.etag },
    ]);
    assertEquals(version.size, MIN_PART_SIZE + 400);
    const { body } = await layer.openObject(await layer.headObject("b", "mp"));
    const bytes = new Uint8Array(await new Response(body as ReadableStream).arrayBuffer());
    assertEquals([bytes.length, bytes[MIN_PART_SIZE]], [MIN_PART_SIZE + 400, 0x43]);
  }, { wrapMeta: race.wrap, prefix: "multipart-race-" });
});
