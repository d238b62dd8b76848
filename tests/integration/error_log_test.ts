// The error log end to end: a scrub finding and a failed request are recorded with their source,
// read with filters and paging, capped by STORE_ERROR_LOG_MAX and cleared; bad inputs.
import { CreateBucketCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { adminApi } from "./access_helpers.ts";
import { assert, assertEquals } from "./assert.ts";
import { s3Client, type TestServer, withServer } from "./server.ts";
import { damage, shardFiles } from "./storage_helpers.ts";

interface ErrorRow {
  id: number;
  level: string;
  source: string;
  message: string;
}

async function errors(server: TestServer, query = ""): Promise<ErrorRow[]> {
  const { status, json } = await adminApi(server, "GET", `/errors${query}`);
  assertEquals(status, 200, JSON.stringify(json));
  return json!.errors as ErrorRow[];
}

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("timed out");
}

Deno.test("error log: recorded, filtered, paged, capped, cleared", async () => {
  await withServer(async (server) => {
    const s3 = s3Client(server);
    await s3.send(new CreateBucketCommand({ Bucket: "scrubbed" }));
    // Three scrubs, each finding a damaged shard; one drive keeps one copy, so each is a lost
    // chunk: three errors.
    for (let i = 0; i < 3; i++) {
      await s3.send(
        new PutObjectCommand({ Bucket: "scrubbed", Key: `k${i}`, Body: "x".repeat(100_000 + i) }),
      );
      const files = await shardFiles([server.dataDir]);
      const [file] = files.filter((f) => !f.path.includes("healed")).slice(-1);
      await damage(file.path, "flip");
      await adminApi(server, "POST", "/scrub");
    }
    await until(async () => (await errors(server, "?source=scrub")).length >= 2);
    const scrubs = await errors(server, "?source=scrub&level=error");
    assert(scrubs.every((e) => e.message === "Scrub finished" && e.level === "error"));
    // STORE_ERROR_LOG_MAX=2: only the newest two rows are kept.
    const all = await errors(server);
    assertEquals(all.length, 2);
    const first = await errors(server, "?limit=1");
    assertEquals(first.length, 1);
    const next = await errors(server, `?limit=1&after_id=${first[0].id}`);
    assertEquals(next[0].id, all[1].id);
    assertEquals(await errors(server, "?level=warn"), []);
    assertEquals(await errors(server, "?source=lifecycle"), []);
    assertEquals(await errors(server, `?since=${new Date(Date.now() + 60_000).toISOString()}`), []);

    for (const q of ["?level=fatal", "?limit=0", "?since=later", "?after_id=x"]) {
      const res = await adminApi(server, "GET", `/errors${q}`);
      assertEquals(res.status, 400, q);
    }
    assertEquals((await adminApi(server, "POST", "/errors")).status, 405);
    const old = await adminApi(server, "DELETE", "/errors?older_than=2000-01-01T00:00:00Z");
    assertEquals(old.json!.deleted, 0);
    const cleared = await adminApi(server, "DELETE", "/errors");
    assertEquals(cleared.json!.deleted, 2);
    assertEquals(await errors(server), []);
  }, { env: { STORE_ERROR_LOG_MAX: "2", STORE_INLINE_MAX: "0" } });
});
