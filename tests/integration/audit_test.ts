// The audit log end to end: what is recorded, verification, tampering with the SQLite file
// (changed, deleted, inserted, reordered entries), concurrent writers, pruning, export.
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  PutBucketLifecycleConfigurationCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { adminApi, createUser } from "./access_helpers.ts";
import { assert, assertEquals, assertMatch } from "./assert.ts";
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  s3Client,
  startServer,
  type TestServer,
  withServer,
} from "./server.ts";

const AUTH = { authorization: "Basic " + btoa(`${ADMIN_USER}:${ADMIN_PASSWORD}`) };

interface Entry {
  seq: number;
  principal: string;
  operation: string;
  bucket: string;
  key: string;
  version_id: string;
  status: number;
  error_code: string;
  bytes: number;
  hash: string;
}

interface Report {
  ok: boolean;
  entries: number;
  head_seq: number;
  head_hash: string;
  anchor_seq: number;
  first_bad_seq: number | null;
  reason?: string;
}

async function entries(server: TestServer, query = ""): Promise<Entry[]> {
  const out: Entry[] = [];
  let after = 0;
  for (;;) {
    const sep = query === "" ? "" : "&";
    const res = await fetch(`${server.url}/admin/audit?${query}${sep}after_seq=${after}&limit=50`, {
      headers: AUTH,
    });
    assertEquals(res.status, 200);
    const page = await res.json() as { entries: Entry[]; next_after_seq: number | null };
    out.push(...page.entries);
    if (page.next_after_seq === null) return out;
    after = page.next_after_seq;
  }
}

async function verify(server: TestServer, query = ""): Promise<Report> {
  const res = await fetch(`${server.url}/admin/audit/verify${query}`, { headers: AUTH });
  assertEquals(res.status, 200);
  return await res.json();
}

async function exported(server: TestServer): Promise<string> {
  const res = await fetch(`${server.url}/admin/audit/export`, { headers: AUTH });
  assertEquals(res.status, 200);
  assertEquals(res.headers.get("content-type"), "application/x-ndjson");
  return await res.text();
}

async function verifyFile(server: TestServer, text: string): Promise<Response> {
  return await fetch(`${server.url}/admin/audit/verify`, {
    method: "POST",
    headers: AUTH,
    body: text,
  });
}

async function copyDir(from: string, to: string): Promise<void> {
  const out = await new Deno.Command("cp", { args: ["-a", from + "/.", to] }).output();
  assert(out.success, new TextDecoder().decode(out.stderr));
}

Deno.test("audit log: what is recorded", async () => {
  await withServer(async (server) => {
    const admin = s3Client(server);
    await admin.send(new CreateBucketCommand({ Bucket: "audited" }));
    await admin.send(new PutObjectCommand({ Bucket: "audited", Key: "a/b.txt", Body: "12345" }));
    await admin.send(new DeleteObjectCommand({ Bucket: "audited", Key: "a/b.txt" }));
    // Reads that succeed are not recorded; a denied read is.
    const read = await fetch(`${server.url}/audited/a/b.txt`);
    await read.body?.cancel();
    assertEquals(read.status, 403);
    const put = await fetch(`${server.url}/audited/x`, { method: "PUT", body: "x" });
    await put.body?.cancel();
    assertEquals(put.status, 403);
    const user = await createUser(server, "auditee");
    const good = await fetch(`${server.url}/api/v1/tokens`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ access_key: user.accessKey, secret_key: user.secret }),
    });
    await good.body?.cancel();
    assertEquals(good.status, 201);
    const bad = await fetch(`${server.url}/api/v1/tokens`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ access_key: user.accessKey, secret_key: "wrong" }),
    });
    await bad.body?.cancel();
    assertEquals(bad.status, 401);
    const badAdmin = await fetch(`${server.url}/admin/users`, {
      headers: { authorization: "Basic " + btoa(`${ADMIN_USER}:nope`) },
    });
    await badAdmin.body?.cancel();
    assertEquals(badAdmin.status, 401);

    const all = await entries(server);
    const find = (op: string, status?: number) =>
      all.filter((e) => e.operation === op && (status === undefined || e.status === status));
    assertEquals(find("CreateBucket").length, 1);
    const [created] = find("PutObject", 200);
    assertEquals(
      [created.principal, created.bucket, created.key, created.bytes],
      [`admin:${ADMIN_USER}`, "audited", "a/b.txt", 5],
    );
    assertEquals(find("DeleteObject").length, 1);
    const denied = find("PutObject", 403);
    assertEquals(denied.length, 1);
    assertEquals([denied[0].principal, denied[0].error_code], ["anonymous", "AccessDenied"]);
    assertEquals(find("GetObject", 403).length, 1);
    assertEquals(find("GetObject", 200).length, 0, "successful reads are not recorded");
    assertEquals(find("Admin:POST users").length, 1);
    assertEquals(find("IssueToken", 200)[0].principal, "user:auditee", "written with the token");
    assertEquals(find("IssueToken", 401)[0].error_code, "invalid_credentials");
    assertEquals(find("Admin:GET users", 401)[0].principal, "anonymous");
    // Sequence numbers are consecutive; filters narrow.
    all.forEach((e, i) => assertEquals(e.seq, i + 1));
    const onBucket = await entries(server, "bucket=audited&status=200");
    assert(onBucket.every((e) => e.bucket === "audited" && e.status === 200));
    assertEquals(onBucket.length, 3);
    assertEquals((await entries(server, "principal=anonymous")).length, 3);
    assertEquals((await entries(server, "key_prefix=a%2F")).length, 3);
    assertEquals(await entries(server, `since=${new Date(Date.now() + 60_000).toISOString()}`), []);

    const report = await verify(server);
    assert(report.ok, JSON.stringify(report));
    assertEquals(report.first_bad_seq, null);

    for (const q of ["limit=0", "limit=abc", "after_seq=-1", "since=yesterday", "status=42"]) {
      const res = await fetch(`${server.url}/admin/audit?${q}`, { headers: AUTH });
      await res.body?.cancel();
      assertEquals(res.status, 400, q);
    }
    const wrong = await fetch(`${server.url}/admin/audit/export`, {
      method: "POST",
      headers: AUTH,
    });
    await wrong.body?.cancel();
    assertEquals(wrong.status, 405);
    const anon = await fetch(`${server.url}/admin/audit/verify`);
    await anon.body?.cancel();
    assertEquals(anon.status, 401);
  });
});

type Tamper = (db: DatabaseSync, seq: number) => void;

const TAMPERING: Record<string, Tamper> = {
  changed: (db, seq) =>
    db.prepare("UPDATE audit_log SET principal = 'user:mallory' WHERE seq = ?").run(seq),
  deleted: (db, seq) => db.prepare("DELETE FROM audit_log WHERE seq = ?").run(seq),
  inserted: (db, seq) => {
    db.prepare("UPDATE audit_log SET seq = seq + 1000000 WHERE seq >= ?").run(seq);
    db.prepare("UPDATE audit_log SET seq = seq - 999999 WHERE seq >= 1000000").run();
    db.prepare(
      "INSERT INTO audit_log SELECT ?, at, request_id, 'user:mallory', source, operation, " +
        "bucket, key, version_id, status, error_code, bytes, detail, hash FROM audit_log " +
        "WHERE seq = ?",
    ).run(seq, seq + 1);
  },
  reordered: (db, seq) => {
    db.prepare("UPDATE audit_log SET seq = -1 WHERE seq = ?").run(seq);
    db.prepare("UPDATE audit_log SET seq = ? WHERE seq = ?").run(seq, seq + 1);
    db.prepare("UPDATE audit_log SET seq = ? WHERE seq = -1").run(seq + 1);
  },
};

Deno.test("audit log: verification finds the entry changed, deleted, inserted or reordered", async () => {
  const server = await startServer();
  const dataDir = server.dataDir;
  const copies: string[] = [];
  try {
    const admin = s3Client(server);
    await admin.send(new CreateBucketCommand({ Bucket: "tampered" }));
    for (let i = 0; i < 8; i++) {
      await admin.send(new PutObjectCommand({ Bucket: "tampered", Key: `k${i}`, Body: `v${i}` }));
    }
    const before = await verify(server);
    assert(before.ok);
    assertEquals(before.entries, 9);
    await server.stop();
    for (const [name, tamper] of Object.entries(TAMPERING)) {
      const dir = await Deno.makeTempDir({ prefix: "store-audit-" });
      copies.push(dir);
      await copyDir(dataDir, dir);
      const db = new DatabaseSync(join(dir, "meta.db"));
      tamper(db, 5);
      db.close();
      const copy = await startServer({ dataDir: dir });
      try {
        const report = await verify(copy);
        assertEquals(report.ok, false, name);
        assertEquals(report.first_bad_seq, 5, `${name}: ${JSON.stringify(report)}`);
        assertEquals(report.entries, 4, name);
        // The file export of the damaged chain fails the same way.
        const res = await verifyFile(copy, await exported(copy));
        const fileReport = await res.json() as Report;
        assertEquals([fileReport.ok, fileReport.first_bad_seq], [false, 5], name);
      } finally {
        await copy.stop();
      }
    }
    // A head recorded elsewhere exposes a chain rewritten from some entry on.
    const dir = await Deno.makeTempDir({ prefix: "store-audit-" });
    copies.push(dir);
    await copyDir(dataDir, dir);
    const copy = await startServer({ dataDir: dir });
    try {
      const ok = await verify(copy, `?head_seq=${before.head_seq}&head_hash=${before.head_hash}`);
      assert(ok.ok, JSON.stringify(ok));
      const forged = await verify(copy, `?head_seq=${before.head_seq}&head_hash=${"f".repeat(64)}`);
      assertEquals([forged.ok, forged.first_bad_seq], [false, before.head_seq]);
      const half = await fetch(`${copy.url}/admin/audit/verify?head_seq=3`, { headers: AUTH });
      await half.body?.cancel();
      assertEquals(half.status, 400);
    } finally {
      await copy.stop();
    }
  } finally {
    await server.stop();
    for (const d of [dataDir, ...copies]) await Deno.remove(d, { recursive: true }).catch(() => {});
  }
});

Deno.test("audit log: concurrent writers keep one linear chain", async () => {
  await withServer(async (server) => {
    const admin = s3Client(server);
    await admin.send(new CreateBucketCommand({ Bucket: "busy" }));
    await Promise.all(
      Array.from(
        { length: 60 },
        (_, i) =>
          admin.send(new PutObjectCommand({ Bucket: "busy", Key: `k${i % 20}`, Body: `v${i}` })),
      ),
    );
    const puts = (await entries(server, "operation=PutObject")).filter((e) => e.status === 200);
    assertEquals(puts.length, 60, "one entry per committed PUT");
    const report = await verify(server);
    assert(report.ok, JSON.stringify(report));
    assertEquals(report.entries, report.head_seq);
  });
});

Deno.test("audit log: pruning through a checkpoint, export and file verification", async () => {
  await withServer(async (server) => {
    const admin = s3Client(server);
    await admin.send(new CreateBucketCommand({ Bucket: "pruned" }));
    for (let i = 0; i < 5; i++) {
      await admin.send(new PutObjectCommand({ Bucket: "pruned", Key: `k${i}`, Body: "x" }));
    }
    await new Promise((r) => setTimeout(r, 20));
    const cut = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await admin.send(new PutObjectCommand({ Bucket: "pruned", Key: "late", Body: "x" }));
    const { status, json } = await adminApi(server, "POST", "/audit/prune", { older_than: cut });
    assertEquals(status, 200);
    assertEquals(json!.pruned, 6);
    assertEquals(json!.anchor_seq, 6);
    const report = await verify(server);
    assert(report.ok, JSON.stringify(report));
    assertEquals(report.anchor_seq, 6);
    const left = await entries(server);
    assertEquals(left[0].seq, 7);
    assert(left.some((e) => e.operation === "AuditCheckpoint"));

    const text = await exported(server);
    const lines = text.trim().split("\n");
    assertEquals(JSON.parse(lines[0]).anchor.seq, 6);
    const fileOk = await (await verifyFile(server, text)).json() as Report;
    assert(fileOk.ok, JSON.stringify(fileOk));
    assertEquals(fileOk.entries, lines.length - 1);
    // An edited line in the file is found at its entry.
    const edited = JSON.parse(lines[2]);
    edited.bytes += 1;
    lines[2] = JSON.stringify(edited);
    const fileBad = await (await verifyFile(server, lines.join("\n"))).json() as Report;
    assertEquals([fileBad.ok, fileBad.first_bad_seq], [false, edited.seq]);
    // Without its anchor line the pruned file cannot start at the beginning.
    const noAnchor = await (await verifyFile(server, lines.slice(1).join("\n"))).json() as Report;
    assertEquals([noAnchor.ok, noAnchor.first_bad_seq], [false, 1]);
    for (const body of ["not json\n", '{"seq": "1"}\n', '{"anchor": {"seq": "x"}}\n']) {
      const res = await verifyFile(server, body);
      assertEquals(res.status, 400, body);
      assertMatch((await res.json()).error.code, /invalid_export/);
    }
    const badPrune = await adminApi(server, "POST", "/audit/prune", { older_than: "soon" });
    assertEquals(badPrune.status, 400);
  });
});

Deno.test("audit log: lifecycle expirations are recorded as the lifecycle's", async () => {
  await withServer(async (server) => {
    const admin = s3Client(server);
    await admin.send(new CreateBucketCommand({ Bucket: "expiring" }));
    await admin.send(new PutObjectCommand({ Bucket: "expiring", Key: "old/x", Body: "x" }));
    await admin.send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket: "expiring",
        LifecycleConfiguration: {
          Rules: [{
            ID: "r",
            Status: "Enabled",
            Filter: { Prefix: "old/" },
            Expiration: { Days: 1 },
          }],
        },
      }),
    );
    let expired: Entry[] = [];
    for (let i = 0; i < 40 && expired.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 250));
      expired = await entries(server, "principal=system:lifecycle");
    }
    assertEquals(expired.length, 1, JSON.stringify(expired));
    assertEquals([expired[0].operation, expired[0].bucket, expired[0].key], [
      "Lifecycle",
      "expiring",
      "old/x",
    ]);
    assert((await verify(server)).ok);
  }, { env: { STORE_LIFECYCLE_DAY: "1", STORE_LIFECYCLE_INTERVAL: "1" } });
});
