// STORE_ACCESS_LOG=on: one JSON line per request (time, request id, client address, principal,
// operation, bucket, key, status, bytes in and out, duration), to STORE_ACCESS_LOG_FILE (opened
// again on SIGHUP, for rotation) or to stdout. Query strings (presigned signatures) stay out.
import { join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import { presign, signedFetch } from "./signer.ts";
import { ADMIN_PASSWORD, ADMIN_USER, randomBytes, type TestServer, withServer } from "./server.ts";

type Line = Record<string, unknown>;

async function linesOf(file: string, atLeast: number): Promise<Line[]> {
  const deadline = Date.now() + 10_000;
  while (true) {
    const text = await Deno.readTextFile(file).catch(() => "");
    const lines = text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Line);
    if (lines.length >= atLeast) return lines;
    if (Date.now() > deadline) throw new Error(`${lines.length} of ${atLeast} lines: ${text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function find(lines: Line[], requestId: string | null): Line {
  const line = lines.find((l) => l.requestId === requestId);
  assert(line, `no line for request ${requestId}: ${JSON.stringify(lines)}`);
  return line;
}

async function request(server: TestServer, r: Parameters<typeof signedFetch>[1]) {
  const res = await signedFetch(server, { dialect: "amz", ...r });
  await res.arrayBuffer();
  return { status: res.status, id: res.headers.get("x-amz-request-id") };
}

Deno.test("access log: one line per request with its facts, to a file reopened on SIGHUP", async () => {
  const dir = await Deno.makeTempDir({ prefix: "store-access-" });
  const file = join(dir, "access.log");
  try {
    await withServer(async (server) => {
      const body = randomBytes(1000);
      const made = await request(server, { method: "PUT", path: "/logged" });
      const put = await request(server, { method: "PUT", path: "/logged/a/b.bin", body });
      const get = await request(server, { method: "GET", path: "/logged/a/b.bin" });
      const missing = await request(server, { method: "GET", path: "/logged/none" });
      const anonymous = await fetch(`${server.url}/logged/a/b.bin`);
      await anonymous.arrayBuffer();
      const url = await presign(server, {
        method: "GET",
        path: "/logged/a/b.bin",
        dialect: "amz",
        expires: 60,
      });
      const presigned = await fetch(url);
      await presigned.arrayBuffer();
      const admin = await fetch(`${server.url}/admin/users`, {
        headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) },
      });
      await admin.arrayBuffer();
      assertEquals([made.status, put.status, get.status, missing.status], [200, 200, 200, 404]);

      const lines = await linesOf(file, 7);
      assertEquals(lines.length, 7, JSON.stringify(lines));
      const p = find(lines, put.id);
      assertEquals(
        [p.operation, p.bucket, p.key, p.status, p.bytesIn, p.principal, p.remote, p.method],
        ["PutObject", "logged", "a/b.bin", 200, 1000, ADMIN_USER, "127.0.0.1", "PUT"],
      );
      assert(typeof p.ms === "number" && p.ms >= 0, `duration: ${p.ms}`);
      assert(!Number.isNaN(Date.parse(String(p.time))), `time: ${p.time}`);
      const g = find(lines, get.id);
      assertEquals([g.operation, g.status, g.bytesOut, g.bytesIn], ["GetObject", 200, 1000, 0]);
      assertEquals(find(lines, made.id).operation, "CreateBucket");
      const m = find(lines, missing.id);
      assertEquals([m.operation, m.key, m.status], ["GetObject", "none", 404]);
      const a = find(lines, anonymous.headers.get("x-store-request-id"));
      assertEquals([a.principal, a.status], ["anonymous", 403]);
      const signed = lines.find((l) =>
        l.path === "/logged/a/b.bin" && l.requestId !== get.id &&
        l.status === 200
      );
      assert(signed, "the presigned GET is logged");
      assert(!JSON.stringify(lines).includes("Signature"), "query strings are not logged");
      const ad = lines.find((l) => l.path === "/admin/users");
      assertEquals([ad?.status, ad?.operation, ad?.method], [200, null, "GET"]);

      // Rotation: the file is moved away, SIGHUP, and the next line starts a new file.
      await Deno.rename(file, `${file}.1`);
      Deno.kill(server.pid, "SIGHUP");
      const deadline = Date.now() + 10_000;
      let after: Line[] = [];
      while (after.length === 0 && Date.now() < deadline) {
        const r = await request(server, { method: "HEAD", path: "/logged/a/b.bin" });
        assertEquals(r.status, 200);
        after = await linesOf(file, 0);
        if (after.length === 0) await new Promise((r) => setTimeout(r, 100));
      }
      assert(after.length > 0, "no line in the reopened file");
      assertEquals([after.at(-1)!.operation, after.at(-1)!.bytesOut], ["HeadObject", 0]);
    }, { env: { STORE_ACCESS_LOG: "on", STORE_ACCESS_LOG_FILE: file } });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("access log: to stdout without a file; off by default", async () => {
  await withServer(async (server) => {
    const r = await request(server, { method: "GET", path: "/" });
    assertEquals(r.status, 200);
    const deadline = Date.now() + 10_000;
    while (!server.logs().includes(`"requestId":"${r.id}"`) && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 50));
    }
    const line = server.logs().split("\n").find((l) => l.includes(`"requestId":"${r.id}"`));
    assert(line, `no stdout line:\n${server.logs()}`);
    assertEquals(JSON.parse(line).operation, "ListBuckets");
  }, { env: { STORE_ACCESS_LOG: "on" } });
  await withServer(async (server) => {
    const r = await request(server, { method: "GET", path: "/" });
    await new Promise((res) => setTimeout(res, 200));
    assert(!server.logs().includes(`"requestId":"${r.id}"`), "logged although off");
  });
});
