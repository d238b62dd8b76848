// Image transformations against a real server: rules and their validation, thumbnails with the
// metadata stripped (JPEG with EXIF GPS), PNG, WebP and AVIF outputs, corrupt and truncated files,
// a pixel bomb, SSE-C sources, SSE-S3 outputs, a rule whose output matches its own input (no loop),
// paging, and permission refusals. Images are made by the test with sharp.
import {
  CreateBucketCommand,
  DeleteBucketEncryptionCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutBucketEncryptionCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { createHash } from "node:crypto";
import { adminApi, createUser, setBucketAccess } from "./access_helpers.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import { s3Client, withServer } from "./server.ts";
import {
  api,
  bearer,
  bucketSettled,
  exifJpeg,
  hasGpsTag,
  metadataOf,
  noisePng,
  png,
  settled,
} from "./transform_helpers.ts";

async function get(s3: S3Client, Bucket: string, Key: string): Promise<Uint8Array> {
  const res = await s3.send(new GetObjectCommand({ Bucket, Key }));
  return await res.Body!.transformToByteArray();
}

async function put(s3: S3Client, Bucket: string, Key: string, Body: Uint8Array) {
  await s3.send(new PutObjectCommand({ Bucket, Key, Body }));
}

Deno.test("image transformations", async (t) => {
  await withServer(async (server) => {
    const alice = await createUser(server, "alice");
    const bob = await createUser(server, "bob");
    const s3 = s3Client(server, { user: alice.accessKey, password: alice.secret });
    for (const Bucket of ["photos", "thumbs"]) {
      await s3.send(new CreateBucketCommand({ Bucket }));
    }
    const token = await bearer(server, alice);
    const bobToken = await bearer(server, bob);
    const rules = {
      rules: [
        {
          id: "thumb",
          prefix: "in/",
          suffix: ".jpg",
          actions: [
            { thumbnail: { width: 64, height: 64, fit: "inside" } },
            { strip_metadata: true },
            { convert: { format: "webp", quality: 70 } },
          ],
          output: { bucket: "thumbs", prefix: "t/" },
        },
        {
          // Its outputs (png-out/*.png) match its own prefix and suffix.
          id: "loop",
          suffix: ".png",
          actions: [{ thumbnail: { width: 10 } }],
          output: { prefix: "png-out/" },
        },
      ],
    };

    await t.step("rules: set, read back, validated with clear errors", async () => {
      const set = await api(server, token, "PUT", "/transforms/photos", rules);
      assertEquals(set.status, 200, JSON.stringify(set.json));
      assertEquals(set.json.rules[1].events, ["ObjectCreated:*"]);
      const read = await api(server, token, "GET", "/transforms/photos");
      assertEquals(read.json.rules.map((r: { id: string }) => r.id), ["thumb", "loop"]);
      const bad = async (body: unknown, pattern: RegExp) => {
        const r = await api(server, token, "PUT", "/transforms/thumbs", body);
        assertEquals([r.status, r.json.error.code], [400, "invalid_field"]);
        assertMatch(r.json.error.message, pattern);
      };
      const rule = { id: "r", actions: [{ strip_metadata: true }], output: { prefix: "o/" } };
      await bad({ rules: [] }, /rules must be a list of 1 to 100/);
      await bad(
        { rules: [{ ...rule, actions: [{ thumbnail: { width: 10, fit: "squash" } }] }] },
        /rules\[0\]\.actions\[0\]\.thumbnail\.fit must be one of cover/,
      );
      await bad(
        { rules: [{ ...rule, actions: [{ convert: { format: "bmp" } }] }] },
        /convert\.format must be one of webp, avif, jpeg, png/,
      );
      await bad({ rules: [{ ...rule, events: ["ObjectRemoved:*"] }] }, /events must list/);
      await bad({ rules: [rule, rule] }, /id r is used twice/);
      await bad({ rules: [{ ...rule, output: { prefix: "" } }] }, /write over its own input/);
      await bad({ rules: [{ ...rule, colour: "red" }] }, /unknown field colour/);
      const missing = await api(server, token, "PUT", "/transforms/thumbs", {
        rules: [{ ...rule, output: { bucket: "nowhere", prefix: "" } }],
      });
      assertEquals([missing.status, missing.json.error.code], [404, "no_such_bucket"]);
      assertEquals((await api(server, token, "GET", "/transforms/thumbs")).status, 404);
    });

    await t.step("rules: only the owner or the administrator, with a bearer token", async () => {
      const bobs = await api(server, bobToken, "PUT", "/transforms/photos", rules);
      assertEquals([bobs.status, bobs.json.error.code], [403, "access_denied"]);
      assertEquals((await api(server, bobToken, "GET", "/transforms/photos")).status, 403);
      assertEquals((await api(server, undefined, "GET", "/transforms/photos")).status, 401);
      const admin = await bearer(server);
      assertEquals((await api(server, admin, "GET", "/transforms/photos")).status, 200);
      // bob owns a bucket but may not write into alice's: his rule cannot point there.
      const bobS3 = s3Client(server, { user: bob.accessKey, password: bob.secret });
      await bobS3.send(new CreateBucketCommand({ Bucket: "bobs" }));
      const into = await api(server, bobToken, "PUT", "/transforms/bobs", {
        rules: [{ id: "x", actions: [{ strip_metadata: true }], output: { bucket: "thumbs" } }],
      });
      assertEquals(into.status, 403);
      assertMatch(into.json.error.message, /may not write to thumbs/);
    });

    await t.step("a JPEG with EXIF GPS: a WebP thumbnail without metadata", async () => {
      const jpeg = await exifJpeg(400, 200);
      const before = await metadataOf(jpeg);
      assert(before.exif && hasGpsTag(before.exif), "the source has GPS");
      assert(before.xmp, "the source has XMP");
      await put(s3, "photos", "in/a.jpg", jpeg);
      const [job] = await bucketSettled(server, token, "photos", 1);
      assertEquals(job.state, "done", JSON.stringify(job));
      assertEquals([job.rule, job.output.bucket, job.output.key], ["thumb", "thumbs", "t/a.webp"]);
      const head = await s3.send(new HeadObjectCommand({ Bucket: "thumbs", Key: "t/a.webp" }));
      assertEquals(head.ContentType, "image/webp");
      const out = await metadataOf(await get(s3, "thumbs", "t/a.webp"));
      // Orientation 6 applied first: the 400x200 picture stands upright, 32x64.
      assertEquals([out.format, out.width, out.height], ["webp", 32, 64]);
      assertEquals([out.exif, out.xmp, out.iptc, out.orientation], [
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
    });

    await t.step("strip only: the same JPEG upright, EXIF, GPS and XMP gone", async () => {
      const r = await api(server, token, "POST", "/jobs", {
        bucket: "photos",
        key: "in/a.jpg",
        actions: [{ strip_metadata: true }],
        output: { prefix: "clean/" },
      });
      assertEquals(r.status, 202, JSON.stringify(r.json));
      const job = await settled(server, token, r.json.id);
      assertEquals([job.state, job.output.key], ["done", "clean/in/a.jpg"]);
      const out = await metadataOf(await get(s3, "photos", "clean/in/a.jpg"));
      assertEquals([out.format, out.width, out.height, out.exif, out.xmp], [
        "jpeg",
        200,
        400,
        undefined,
        undefined,
      ]);
    });

    await t.step("outputs are versions like any write in a versioned bucket", async () => {
      await s3.send(
        new PutBucketVersioningCommand({
          Bucket: "thumbs",
          VersioningConfiguration: { Status: "Enabled" },
        }),
      );
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const r = await api(server, token, "POST", "/jobs", {
          bucket: "photos",
          key: "in/a.jpg",
          actions: [{ thumbnail: { width: 16 } }],
          output: { bucket: "thumbs", key: "v/a.jpg" },
        });
        const job = await settled(server, token, r.json.id);
        assertEquals(job.state, "done");
        ids.push(job.output.version_id);
      }
      const versions = await s3.send(
        new ListObjectVersionsCommand({ Bucket: "thumbs", Prefix: "v/" }),
      );
      assertEquals(versions.Versions?.map((v) => v.VersionId).sort(), [...ids].sort());
      assert(ids[0] !== ids[1] && ids[0] !== "null");
    });

    await t.step("PNG and AVIF outputs on request", async () => {
      for (const [format, expected] of [["png", "png"], ["avif", "heif"], ["jpeg", "jpeg"]]) {
        const r = await api(server, token, "POST", "/jobs", {
          bucket: "photos",
          key: "in/a.jpg",
          actions: [{ thumbnail: { width: 20, height: 20, fit: "cover" } }, {
            convert: { format, quality: 50 },
          }],
          output: { bucket: "thumbs", key: `req/a-${format}` },
        });
        assertEquals(r.status, 202, JSON.stringify(r.json));
        const job = await settled(server, token, r.json.id);
        assertEquals(job.state, "done", JSON.stringify(job));
        const out = await metadataOf(await get(s3, "thumbs", `req/a-${format}`));
        assertEquals([out.format, out.width, out.height], [expected, 20, 20]);
      }
    });

    await t.step("a rule whose output matches its own input runs once", async () => {
      await put(s3, "photos", "pic.png", await png(40, 30));
      const jobs = await bucketSettled(server, token, "photos", 3);
      const loop = jobs.filter((j) => j.rule === "loop");
      assertEquals(loop.length, 1);
      assertEquals([loop[0].state, loop[0].output.key], ["done", "png-out/pic.png"]);
      await new Promise((r) => setTimeout(r, 1500));
      const again = await bucketSettled(server, token, "photos", 3);
      assertEquals(again.filter((j) => j.rule === "loop").length, 1);
      const listed = await s3.send(new ListObjectsV2Command({ Bucket: "photos", Prefix: "png-" }));
      assertEquals(listed.Contents?.map((o) => o.Key), ["png-out/pic.png"]);
      const out = await metadataOf(await get(s3, "photos", "png-out/pic.png"));
      assertEquals([out.format, out.width], ["png", 10]);
    });

    await t.step("a corrupt and a truncated file fail their jobs, logged", async () => {
      await put(s3, "photos", "in/junk.jpg", new TextEncoder().encode("not a picture at all"));
      const jpeg = await exifJpeg(300, 300);
      await put(s3, "photos", "in/cut.jpg", jpeg.subarray(0, jpeg.length / 2));
      const jobs = await bucketSettled(server, token, "photos", 5);
      const junk = jobs.find((j) => j.key === "in/junk.jpg");
      const cut = jobs.find((j) => j.key === "in/cut.jpg");
      assertEquals([junk.state, junk.attempts, junk.output], ["failed", 1, null]);
      assertMatch(junk.error, /unsupported image format/);
      assertEquals(cut.state, "failed");
      assertMatch(cut.error, /premature end of JPEG|corrupt|truncated/i);
      const logged = await adminApi(server, "GET", "/errors?source=transform");
      const messages = (logged.json!.errors as { detail: { job: string } }[]).map((e) =>
        e.detail.job
      );
      assert(messages.includes(junk.id) && messages.includes(cut.id), JSON.stringify(logged));
    });

    await t.step(
      "SSE-C sources are skipped; SSE-S3 and SSE-KMS outputs stay encrypted",
      async () => {
        const key = crypto.getRandomValues(new Uint8Array(32));
        await s3.send(
          new PutObjectCommand({
            Bucket: "photos",
            Key: "secret/c.png",
            Body: await png(20, 20),
            SSECustomerAlgorithm: "AES256",
            SSECustomerKey: btoa(String.fromCharCode(...key)),
            SSECustomerKeyMD5: createHash("md5").update(key).digest("base64"),
          }),
        );
        const c = await api(server, token, "POST", "/jobs", {
          bucket: "photos",
          key: "secret/c.png",
          actions: [{ strip_metadata: true }],
          output: { prefix: "x/" },
        });
        const skipped = await settled(server, token, c.json.id);
        assertEquals(skipped.state, "failed");
        assertMatch(skipped.error, /skipped: .*customer key \(SSE-C\)/);
        await s3.send(
          new PutObjectCommand({
            Bucket: "photos",
            Key: "secret/s.png",
            Body: await png(20, 20),
            ServerSideEncryption: "AES256",
          }),
        );
        const s = await api(server, token, "POST", "/jobs", {
          bucket: "photos",
          key: "secret/s.png",
          actions: [{ convert: { format: "webp" } }],
          output: { prefix: "x/" },
        });
        assertEquals((await settled(server, token, s.json.id)).state, "done");
        const head = await s3.send(
          new HeadObjectCommand({ Bucket: "photos", Key: "x/secret/s.webp" }),
        );
        assertEquals(head.ServerSideEncryption, "AES256");
        // SSE-KMS (the default key): read with its data key, the output under the same key.
        await s3.send(
          new PutObjectCommand({
            Bucket: "photos",
            Key: "secret/k.png",
            Body: await png(20, 20),
            ServerSideEncryption: "aws:kms",
          }),
        );
        const k = await api(server, token, "POST", "/jobs", {
          bucket: "photos",
          key: "secret/k.png",
          actions: [{ convert: { format: "webp" } }],
          output: { prefix: "x/" },
        });
        assertEquals((await settled(server, token, k.json.id)).state, "done");
        const kms = await s3.send(
          new HeadObjectCommand({ Bucket: "photos", Key: "x/secret/k.webp" }),
        );
        assertEquals(kms.ServerSideEncryption, "aws:kms");
        const source = await s3.send(
          new HeadObjectCommand({ Bucket: "photos", Key: "secret/k.png" }),
        );
        assertEquals(kms.SSEKMSKeyId, source.SSEKMSKeyId);
        // An unencrypted source into a bucket with default encryption: the default applies.
        await s3.send(
          new PutObjectCommand({ Bucket: "photos", Key: "plain/p.png", Body: await png(8, 8) }),
        );
        await s3.send(
          new PutBucketEncryptionCommand({
            Bucket: "photos",
            ServerSideEncryptionConfiguration: {
              Rules: [{ ApplyServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }],
            },
          }),
        );
        const p = await api(server, token, "POST", "/jobs", {
          bucket: "photos",
          key: "plain/p.png",
          actions: [{ convert: { format: "webp" } }],
          output: { prefix: "x/" },
        });
        assertEquals((await settled(server, token, p.json.id)).state, "done");
        const defaulted = await s3.send(
          new HeadObjectCommand({ Bucket: "photos", Key: "x/plain/p.webp" }),
        );
        assertEquals(defaulted.ServerSideEncryption, "AES256");
        await s3.send(new DeleteBucketEncryptionCommand({ Bucket: "photos" }));
      },
    );

    await t.step("permissions: read on the source, write on the output", async () => {
      const job = {
        bucket: "photos",
        key: "in/a.jpg",
        actions: [{ strip_metadata: true }],
        output: { prefix: "bob/" },
      };
      const none = await api(server, bobToken, "POST", "/jobs", job);
      assertEquals([none.status, none.json.error.code], [403, "access_denied"]);
      assertMatch(none.json.error.message, /may not read photos\/in\/a\.jpg/);
      await setBucketAccess(server, bob, [{ bucket: "photos", permission: "read" }]);
      const readOnly = await api(server, bobToken, "POST", "/jobs", job);
      assertEquals(readOnly.status, 403);
      assertMatch(readOnly.json.error.message, /may not write photos\/bob\/in\/a\.jpg/);
      // With write access to the output too, the job runs.
      await setBucketAccess(server, bob, [{ bucket: "photos", permission: "readwrite" }]);
      const ok = await api(server, bobToken, "POST", "/jobs", job);
      assertEquals(ok.status, 202);
      assertEquals((await settled(server, bobToken, ok.json.id)).state, "done");
      await setBucketAccess(server, bob, []);
      // bob's own job stays his to see; alice's are missing to him, her bucket's list refused.
      assertEquals((await api(server, bobToken, "GET", `/jobs/${ok.json.id}`)).status, 200);
      const [first] = await bucketSettled(server, token, "photos", 1);
      assertEquals((await api(server, bobToken, "GET", `/jobs/${first.id}`)).status, 404);
      assertEquals((await api(server, bobToken, "GET", "/jobs?bucket=photos")).status, 403);
      assertEquals((await api(server, bobToken, "GET", "/jobs")).status, 400);
      assertEquals((await api(server, undefined, "POST", "/jobs", job)).status, 401);
      const missing = await api(server, token, "POST", "/jobs", { ...job, key: "in/none.jpg" });
      assertEquals([missing.status, missing.json.error.code], [404, "no_such_key"]);
      const loop = await api(server, token, "POST", "/jobs", {
        ...job,
        output: { key: "in/a.jpg" },
      });
      assertEquals(loop.status, 400);
      assertMatch(loop.json.error.message, /write over its own input/);
    });

    await t.step("listing: by state, paged", async () => {
      const failed = await api(server, token, "GET", "/jobs?bucket=photos&state=failed");
      assertEquals(failed.status, 200);
      assert(failed.json.jobs.length >= 3);
      assert(failed.json.jobs.every((j: { state: string }) => j.state === "failed"));
      const bad = await api(server, token, "GET", "/jobs?bucket=photos&state=stuck");
      assertEquals([bad.status, bad.json.error.code], [400, "invalid_field"]);
      const page = await api(server, token, "GET", "/jobs?bucket=photos&limit=2");
      assertEquals(page.json.jobs.length, 2);
      const next = await api(
        server,
        token,
        "GET",
        `/jobs?bucket=photos&limit=2&after=${page.json.next_after}`,
      );
      assert(next.json.jobs[0].id !== page.json.jobs[1].id);
    });

    await t.step("deleting the rules stops new jobs", async () => {
      const before = (await bucketSettled(server, token, "photos", 1)).length;
      assertEquals((await api(server, token, "DELETE", "/transforms/photos")).status, 204);
      await put(s3, "photos", "in/later.jpg", await exifJpeg(50, 50));
      await new Promise((r) => setTimeout(r, 500));
      assertEquals((await bucketSettled(server, token, "photos", 1)).length, before);
    });
  }, { env: { STORE_TRANSFORM_MAX_PIXELS: "4000000", STORE_ALLOW_INSECURE_SSE_C: "true" } });
});

Deno.test("a pixel bomb and an oversized source fail their jobs, not the server", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "bombs" }));
    const token = await bearer(server);
    // 3000 x 3000 white pixels: a 30 KiB PNG that decodes to 27 MB, over a 1 MP limit.
    const bomb = await png(3000, 3000);
    assert(bomb.length < 64 * 1024);
    await put(s3, "bombs", "b.png", bomb);
    const r = await api(server, token, "POST", "/jobs", {
      bucket: "bombs",
      key: "b.png",
      actions: [{ thumbnail: { width: 10 } }],
      output: { prefix: "t/" },
    });
    const job = await settled(server, token, r.json.id);
    assertEquals([job.state, job.attempts], ["failed", 1]);
    assertMatch(job.error, /more pixels than STORE_TRANSFORM_MAX_PIXELS allows \(1000000\)/);
    await put(s3, "bombs", "small.png", await png(100, 100));
    const ok = await api(server, token, "POST", "/jobs", {
      bucket: "bombs",
      key: "small.png",
      actions: [{ thumbnail: { width: 10 } }],
      output: { prefix: "t/" },
    });
    assertEquals((await settled(server, token, ok.json.id)).state, "done");
    // Over STORE_TRANSFORM_MAX_BYTES: refused before it is read.
    const noisy = await noisePng(300, 300);
    assert(noisy.length > 100_000);
    await put(s3, "bombs", "noisy.png", noisy);
    const big = await api(server, token, "POST", "/jobs", {
      bucket: "bombs",
      key: "noisy.png",
      actions: [{ thumbnail: { width: 10 } }],
      output: { prefix: "t/" },
    });
    const refused = await settled(server, token, big.json.id);
    assertEquals([refused.state, refused.attempts], ["failed", 1]);
    assertMatch(refused.error, /more than STORE_TRANSFORM_MAX_BYTES \(100000\)/);
  }, { env: { STORE_TRANSFORM_MAX_PIXELS: "1000000", STORE_TRANSFORM_MAX_BYTES: "100000" } });
});
