// The lifecycle passes against a real object layer (SQLite, one temp drive) with tiny listing
// pages, so every walk crosses page boundaries, and a clock set by the test.
import { assertEquals } from "../../tests/integration/assert.ts";
import type { ObjectLayer } from "./layer.ts";
import type { MetaStore } from "../meta/store.ts";
import { reporting, withTestLayer } from "./test_layer.ts";
import { applyLifecycle, type LifecycleAction } from "./lifecycle_apply.ts";
import { parseLifecycleConfiguration } from "../api/lifecycle_xml.ts";
import { newUploadId } from "./multipart.ts";

const OWNER = "owner-id";

function withLayer(
  fn: (layer: ObjectLayer) => Promise<void>,
  wrapMeta?: (meta: MetaStore) => MetaStore,
): Promise<void> {
  return withTestLayer(fn, { prefix: "lifecycle-apply-", wrapMeta });
}

async function bucket(layer: ObjectLayer, name: string, versioned: boolean) {
  await layer.meta.createBucket({
    name,
    owner: OWNER,
    createdAt: Date.now(),
    region: "us-east-1",
    versioning: versioned ? "Enabled" : "",
    objectLock: false,
  });
  return await layer.requireBucket(name);
}

async function put(
  layer: ObjectLayer,
  name: string,
  key: string,
  body = "x",
  tags?: Record<string, string>,
): Promise<string> {
  const bytes = new TextEncoder().encode(body);
  const v = await layer.putObject({
    bucket: name,
    key,
    body: (async function* () {
      yield bytes;
    })(),
    contentType: "text/plain",
    userMeta: {},
    headers: {},
    owner: OWNER,
    tags,
  });
  return v.versionId;
}

function rules(inner: string) {
  return parseLifecycleConfiguration(
    `<LifecycleConfiguration>${inner}</LifecycleConfiguration>`,
  );
}

async function versionsOf(layer: ObjectLayer, name: string) {
  const page = await layer.meta.listVersions(name, {
    prefix: "",
    delimiter: "",
    keyMarker: "",
    versionIdMarker: "",
    maxKeys: 1000,
  });
  return page.versions.map((v) => `${v.key}:${v.deleteMarker ? "marker" : "version"}`);
}

/** A clock far enough ahead that every day count used below has passed. */
const later = () => ({ now: Date.now() + 60_000, dayMs: 1000, pageSize: 2 });

Deno.test("lifecycle pass: expiration on an unversioned bucket, with filters, across pages", async () => {
  await withLayer(async (layer) => {
    const b = await bucket(layer, "plain", false);
    for (const key of ["a/1", "a/2", "a/3", "a/4", "a/5", "b/1", "keep"]) {
      await put(layer, "plain", key);
    }
    await put(layer, "plain", "a/big", "y".repeat(100));
    const config = rules(
      `<Rule><Filter><And><Prefix>a/</Prefix><ObjectSizeLessThan>50</ObjectSizeLessThan></And>` +
        `</Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>` +
        `<Rule><Filter><Prefix>b/</Prefix></Filter><Status>Disabled</Status>` +
        `<Expiration><Days>1</Days></Expiration></Rule>`,
    );
    // Not yet due: nothing happens.
    const early = await applyLifecycle(layer, b, config, { now: Date.now(), dayMs: 60_000 });
    assertEquals(early.expired, 0);
    const actions: LifecycleAction[] = [];
    const counts = await applyLifecycle(layer, b, config, {
      ...later(),
      onAction: (a) => actions.push(a),
    });
    assertEquals(counts.expired, 5);
    assertEquals(await versionsOf(layer, "plain"), [
      "a/big:version",
      "b/1:version",
      "keep:version",
    ]);
    assertEquals(actions.map((a) => `${a.event} ${a.key}`), [
      "LifecycleExpiration:Delete a/1",
      "LifecycleExpiration:Delete a/2",
      "LifecycleExpiration:Delete a/3",
      "LifecycleExpiration:Delete a/4",
      "LifecycleExpiration:Delete a/5",
    ]);
  });
});

Deno.test("lifecycle pass: versioned bucket, noncurrent versions and expired delete markers", async () => {
  await withLayer(async (layer) => {
    const b = await bucket(layer, "vers", true);
    for (let i = 0; i < 5; i++) await put(layer, "vers", "doc", `v${i}`);
    await put(layer, "vers", "other", "o1");
    await put(layer, "vers", "other", "o2");
    await layer.deleteObject("vers", "gone", { owner: OWNER }); // a lone delete marker
    await put(layer, "vers", "old", "only");
    await layer.deleteObject("vers", "old", { owner: OWNER }); // marker over one version
    await put(layer, "vers", "zlast", "z");
    const config = rules(
      `<Rule><Filter/><Status>Enabled</Status><NoncurrentVersionExpiration>` +
        `<NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions>` +
        `</NoncurrentVersionExpiration></Rule>` +
        `<Rule><Filter><Prefix>o</Prefix></Filter><Status>Enabled</Status><NoncurrentVersionExpiration>` +
        `<NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>` +
        `<Rule><Filter/><Status>Enabled</Status><Expiration>` +
        `<ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`,
    );
    const counts = await applyLifecycle(layer, b, config, later());
    // doc keeps its current version and the two newest noncurrent ones; other and old lose
    // their noncurrent versions; the markers of gone and (now) old are left alone and removed.
    assertEquals(counts.noncurrentExpired, 4);
    assertEquals(counts.deleteMarkersRemoved, 2);
    assertEquals(counts.locked + counts.errors, 0);
    assertEquals(await versionsOf(layer, "vers"), [
      "doc:version",
      "doc:version",
      "doc:version",
      "other:version",
      "zlast:version",
    ]);
    // Expiration of current versions in a versioned bucket adds delete markers.
    const expire = rules(
      `<Rule><Filter><Prefix>zlast</Prefix></Filter><Status>Enabled</Status>` +
        `<Expiration><Days>1</Days></Expiration></Rule>`,
    );
    const second = await applyLifecycle(layer, b, expire, later());
    assertEquals(second.expired, 1);
    assertEquals((await versionsOf(layer, "vers")).slice(-2), ["zlast:marker", "zlast:version"]);
    // Run again: the marker is current, nothing is expired twice.
    assertEquals((await applyLifecycle(layer, b, expire, later())).expired, 0);
  });
});

Deno.test("lifecycle pass: incomplete multipart uploads", async () => {
  await withLayer(async (layer) => {
    const b = await bucket(layer, "mpu", false);
    for (const key of ["tmp/1", "tmp/2", "tmp/3", "keep/1"]) {
      await layer.meta.createUpload({
        bucket: "mpu",
        key,
        uploadId: newUploadId(),
        initiated: Date.now(),
        owner: OWNER,
        contentType: "",
        userMeta: {},
        headers: {},
      });
    }
    const config = rules(
      `<Rule><Filter><Prefix>tmp/</Prefix></Filter><Status>Enabled</Status>` +
        `<AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation>` +
        `</AbortIncompleteMultipartUpload></Rule>`,
    );
    assertEquals(
      (await applyLifecycle(layer, b, config, { now: Date.now(), dayMs: 60_000 })).uploadsAborted,
      0,
    );
    assertEquals((await applyLifecycle(layer, b, config, later())).uploadsAborted, 3);
    const left = await layer.meta.listUploads("mpu", {
      prefix: "",
      delimiter: "",
      keyMarker: "",
      uploadIdMarker: "",
      maxUploads: 10,
    });
    assertEquals(left.uploads.map((u) => u.key), ["keep/1"]);
  });
});

Deno.test("lifecycle pass: Tag and And-with-Tags filters act on tagged objects only", async () => {
  await withLayer(async (layer) => {
    const b = await bucket(layer, "tags", false);
    await put(layer, "tags", "a", "x", { expire: "yes" });
    await put(layer, "tags", "b", "x", { expire: "no" });
    await put(layer, "tags", "c", "x");
    await put(layer, "tags", "d", "x", { other: "1", expire: "yes" });
    await put(layer, "tags", "p/both", "x", { team: "a", env: "dev" });
    await put(layer, "tags", "p/one", "x", { team: "a" });
    await put(layer, "tags", "q/both", "x", { team: "a", env: "dev" });
    await put(layer, "tags", "late", "x");
    // Tags set after the write count: the pass reads them, not the listing.
    await layer.meta.setObjectTags({ bucket: "tags", key: "late", versionId: "null" }, {
      expire: "yes",
    });
    const config = rules(
      `<Rule><Filter><Tag><Key>expire</Key><Value>yes</Value></Tag></Filter>` +
        `<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>` +
        `<Rule><Filter><And><Prefix>p/</Prefix><Tag><Key>team</Key><Value>a</Value></Tag>` +
        `<Tag><Key>env</Key><Value>dev</Value></Tag></And></Filter>` +
        `<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`,
    );
    const counts = await applyLifecycle(layer, b, config, later());
    assertEquals(counts.expired, 4);
    assertEquals(await versionsOf(layer, "tags"), [
      "b:version",
      "c:version",
      "p/one:version",
      "q/both:version",
    ]);
  });
});

Deno.test("lifecycle pass: noncurrent versions with a Tag filter", async () => {
  await withLayer(async (layer) => {
    const b = await bucket(layer, "vtags", true);
    const old = await put(layer, "vtags", "doc", "v1", { scratch: "true" });
    await put(layer, "vtags", "doc", "v2");
    const kept = await put(layer, "vtags", "doc", "v3", { scratch: "false" });
    await put(layer, "vtags", "doc", "v4", { scratch: "true" });
    const config = rules(
      `<Rule><Filter><Tag><Key>scratch</Key><Value>true</Value></Tag></Filter>` +
        `<Status>Enabled</Status><NoncurrentVersionExpiration>` +
        `<NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>`,
    );
    const counts = await applyLifecycle(layer, b, config, later());
    // Only the noncurrent version tagged scratch=true goes; the current one stays current.
    assertEquals(counts.noncurrentExpired, 1);
    const left = await layer.meta.listVersions("vtags", {
      prefix: "",
      delimiter: "",
      keyMarker: "",
      versionIdMarker: "",
      maxKeys: 10,
    });
    assertEquals(left.versions.length, 3);
    assertEquals(left.versions.some((v) => v.versionId === old), false);
    assertEquals(left.versions.some((v) => v.versionId === kept), true);
  });
});

for (const versioned of [false, true]) {
  Deno.test(`lifecycle: an Expiration racing a PUT of the key leaves the new object (versioned: ${versioned})`, async () => {
    const race = reporting("putObjectVersion");
    await withLayer(async (layer) => {
      await bucket(layer, "b", versioned);
      await put(layer, "b", "k", "old");
      await new Promise((r) => setTimeout(r, 700));
      // The new PUT's commit is queued (not yet committed) when the lifecycle pass reads the key.
      race.arm();
      const fresh = put(layer, "b", "k", "new");
      await race.called;
      const config = rules(
        `<Rule><ID>r</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status>` +
          `<Expiration><Days>1</Days></Expiration></Rule>`,
      );
      const [, counts] = await Promise.all([
        fresh,
        applyLifecycle(layer, await layer.requireBucket("b"), config, {
          now: Date.now(),
          dayMs: 300,
        }),
      ]);
      assertEquals(counts.expired, 0, "expired (or covered) the object that replaced the due one");
      assertEquals((await layer.headObject("b", "k")).size, 3);
      assertEquals(
        await versionsOf(layer, "b"),
        versioned ? ["k:version", "k:version"] : ["k:version"],
      );
    }, race.wrap);
  });
}

Deno.test("lifecycle: a NoncurrentVersionExpiration racing a rollback keeps the version made current", async () => {
  // The rollback (a DELETE of the newest version) is queued right after the pass saw that the
  // old version is not current, before the pass's own removal.
  let rollback: (() => Promise<unknown>) | undefined;
  let started: Promise<unknown> | undefined;
  const wrap = (meta: MetaStore) =>
    new Proxy(meta, {
      get(target, name) {
        const value = Reflect.get(target, name, target);
        if (typeof value !== "function") return value;
        if (name !== "getObjectVersion") return value.bind(target);
        return async (...args: unknown[]) => {
          const seen = await value.apply(target, args);
          if (rollback && args[2] === undefined) {
            started = rollback();
            rollback = undefined;
          }
          return seen;
        };
      },
    });
  await withLayer(async (layer) => {
    await bucket(layer, "b", true);
    const first = await put(layer, "b", "k", "one");
    const second = await put(layer, "b", "k", "two");
    await new Promise((r) => setTimeout(r, 700));
    rollback = () => layer.deleteObject("b", "k", { versionId: second, owner: OWNER });
    const config = rules(
      `<Rule><ID>r</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status>` +
        `<NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays>` +
        `</NoncurrentVersionExpiration></Rule>`,
    );
    const counts = await applyLifecycle(layer, await layer.requireBucket("b"), config, {
      now: Date.now(),
      dayMs: 300,
    });
    await started;
    assertEquals(counts.noncurrentExpired, 0, "expired the version the rollback made current");
    assertEquals((await layer.headObject("b", "k")).versionId, first);
  }, wrap);
});
