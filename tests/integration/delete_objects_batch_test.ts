// DeleteObjects runs as one metadata transaction (issue 13): a batch with mixed outcomes (keys
// denied by policy, locked versions, missing versions, delete markers, chunked objects) reports
// each key exactly, and its event rows and audit entries match the changes it made, one each.
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { assertEquals } from "./assert.ts";
import {
  as,
  createBucket,
  createUser,
  deleteOutcome,
  expectStatus,
  md5Base64,
  objectPath,
  policyWords,
  setPolicy,
} from "./access_helpers.ts";
import { ADMIN_PASSWORD, ADMIN_USER, type TestServer, withServer } from "./server.ts";
import { type RawRequest, xmlValue } from "./signer.ts";

const AUTH = { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) };

function deleteRequest(bucket: string, targets: { key: string; versionId?: string }[]) {
  const body = `<Delete>${
    targets.map((t) =>
      `<Object><Key>${t.key}</Key>${
        t.versionId ? `<VersionId>${t.versionId}</VersionId>` : ""
      }</Object>`
    ).join("")
  }</Delete>`;
  return {
    method: "POST",
    path: objectPath(bucket),
    query: [["delete", ""]],
    headers: { "content-md5": md5Base64(body), "content-type": "application/xml" },
    body,
  } satisfies RawRequest;
}

/** Event rows of the bucket's outbox after `after`: "name key". */
function events(server: TestServer, bucket: string, after: number): string[] {
  const db = new DatabaseSync(join(server.dataDir, "meta.db"), { readOnly: true });
  try {
    const rows = db.prepare(
      "SELECT name, key FROM event_log WHERE bucket = ? AND seq > ? ORDER BY seq",
    )
      .all(bucket, after) as { name: string; key: string }[];
    return rows.map((r) => `${r.name} ${r.key}`);
  } finally {
    db.close();
  }
}

function eventHead(server: TestServer): number {
  const db = new DatabaseSync(join(server.dataDir, "meta.db"), { readOnly: true });
  try {
    const row = db.prepare("SELECT coalesce(max(seq), 0) AS seq FROM event_log").get() as {
      seq: number;
    };
    return row.seq;
  } finally {
    db.close();
  }
}

/** Audit entries of DeleteObjects requests on the bucket: "key version_id". */
async function auditedDeletes(server: TestServer, bucket: string): Promise<string[]> {
  const res = await fetch(`${server.url}/admin/audit?bucket=${bucket}&limit=500`, {
    headers: AUTH,
  });
  assertEquals(res.status, 200);
  const page = await res.json() as {
    entries: { operation: string; key: string; version_id: string; status: number }[];
  };
  return page.entries.filter((e) => e.operation === "DeleteObjects")
    .map((e) => `${e.key} ${e.version_id} ${e.status}`);
}

Deno.test("DeleteObjects: one batch, mixed outcomes, exact events and audit", async (t) => {
  await withServer(async (server) => {
    const owner = await createUser(server, "batch-owner");
    const req = as(server, owner, "amz");

    await t.step("versioned, locked, denied, missing and marker keys in one batch", async () => {
      const bucket = "batch-mixed";
      await expectStatus(
        await req({
          method: "PUT",
          path: objectPath(bucket),
          headers: { "x-amz-bucket-object-lock-enabled": "true" },
        }),
        200,
        "create lock bucket",
      );
      const until = new Date(Date.now() + 3600_000).toISOString();
      const put = async (key: string, headers: Record<string, string> = {}) => {
        const res = await req({ method: "PUT", path: objectPath(bucket, key), body: key, headers });
        await expectStatus(res, 200, `PUT ${key}`);
        return res.headers.get("x-amz-version-id")!;
      };
      const locked = await put("keep/locked", {
        "x-amz-object-lock-mode": "GOVERNANCE",
        "x-amz-object-lock-retain-until-date": until,
      });
      const open = await put("open/b");
      await put("open/c");
      const secret = await put("private/d");
      const w = policyWords("amz", bucket);
      await setPolicy(
        req,
        bucket,
        w.doc(
          w.deny(
            w.user(owner),
            [w.act("DeleteObject"), w.act("DeleteObjectVersion")],
            w.objArn("private/*"),
          ),
        ),
      );
      const before = eventHead(server);
      const body = await expectStatus(
        await req(deleteRequest(bucket, [
          { key: "keep/locked", versionId: locked },
          { key: "open/b", versionId: open },
          { key: "private/d", versionId: secret },
          { key: "open/c" },
          { key: "missing/x", versionId: open },
        ])),
        200,
        "DeleteObjects",
      );
      // deleteOutcome lists the Deleted entries first, then the errors.
      assertEquals(deleteOutcome(body), {
        "open/b": "Deleted",
        "open/c": "Deleted",
        "missing/x": "Deleted",
        "keep/locked": "AccessDenied",
        "private/d": "AccessDenied",
      });
      const marker = /<Deleted><Key>open\/c<\/Key>(.*?)<\/Deleted>/s.exec(body)?.[1] ?? "";
      assertEquals(xmlValue(marker, "DeleteMarker"), "true");
      const markerId = xmlValue(marker, "DeleteMarkerVersionId")!;
      // The store: the locked and denied versions stay, open/b's version is gone.
      for (
        const [key, versionId, status] of [
          ["keep/locked", locked, 200],
          ["private/d", secret, 200],
          ["open/b", open, 404],
        ] as const
      ) {
        const res = await req({
          method: "HEAD",
          path: objectPath(bucket, key),
          query: [["versionId", versionId]],
        });
        await res.body?.cancel();
        assertEquals(res.status, status, `HEAD ${key}`);
      }
      // One event per change, none for refusals or the missing version.
      assertEquals(events(server, bucket, before), [
        "ObjectRemoved:Delete open/b",
        "ObjectRemoved:DeleteMarkerCreated open/c",
      ]);
      assertEquals((await auditedDeletes(server, bucket)).sort(), [
        `open/b ${open} 200`,
        `open/c ${markerId} 200`,
      ]);
    });

    await t.step(
      "an unversioned batch of inline and chunked objects frees every chunk",
      async () => {
        const bucket = "batch-chunks";
        await createBucket(req, bucket);
        const keys = ["small/1", "small/2", "big/1", "big/2"];
        const big = "x".repeat(200 * 1024);
        for (const key of keys) {
          const body = key.startsWith("big/") ? big + key : key;
          await expectStatus(
            await req({ method: "PUT", path: objectPath(bucket, key), body }),
            200,
            `PUT ${key}`,
          );
        }
        const before = eventHead(server);
        const body = await expectStatus(
          await req(deleteRequest(bucket, [...keys, "never/was"].map((key) => ({ key })))),
          200,
          "DeleteObjects",
        );
        assertEquals(Object.values(deleteOutcome(body)), Array(5).fill("Deleted"));
        assertEquals(events(server, bucket, before), keys.map((k) => `ObjectRemoved:Delete ${k}`));
        assertEquals(
          (await auditedDeletes(server, bucket)).sort(),
          keys.map((k) => `${k} null 200`).sort(),
        );
        const db = new DatabaseSync(join(server.dataDir, "meta.db"), { readOnly: true });
        try {
          const usage = db.prepare("SELECT objects, chunks FROM usage WHERE id = 1").get() as {
            objects: number;
            chunks: number;
          };
          // batch-mixed keeps three versions and a delete marker (not an object).
          assertEquals({ objects: usage.objects, chunks: usage.chunks }, { objects: 3, chunks: 0 });
        } finally {
          db.close();
        }
        const res = await req({
          method: "GET",
          path: objectPath(bucket),
          query: [["list-type", "2"]],
        });
        const listing = await expectStatus(res, 200, "list");
        assertEquals(listing.includes("<Contents>"), false);
      },
    );
  });
});
