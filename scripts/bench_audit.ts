// Benchmark of the audit log:
// - verification: a chain of `--entries` entries is written to a temp meta.db, then verified by a
//   child process (as GET /admin/audit/verify does): entries/s and the child's peak RSS, which
//   stays flat however long the chain (pages of 5,000 entries);
// - the cost of auditing small PUTs: two servers, STORE_AUDIT=on and off, alternating rounds of
//   `--count` PUTs of `--size` bytes with `--concurrency` in flight: ops/s (medians) and server
//   CPU per PUT.
//
//   deno task bench:audit [--entries 200000] [--count 2000] [--rounds 5] [--concurrency 16]
//                         [--size 1024] [--verify-only | --puts-only]
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { SqliteMetaStore } from "../src/meta/sqlite.ts";
import { SqliteAudit } from "../src/meta/sqlite_audit.ts";
import { verifyStored } from "../src/audit/verify.ts";
import { objectPath } from "./bench_client.ts";
import { Client, peakRssOf, startLocalServer } from "./bench_run.ts";

function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}

const ENTRIES = flag("entries", 200_000);
const COUNT = flag("count", 2000);
const ROUNDS = flag("rounds", 5);
const CONCURRENCY = flag("concurrency", 16);
const SIZE = flag("size", 1024);
const MB = 1024 * 1024;

/** Writes the chain straight through the store's audit table, 50,000 entries a transaction. */
function buildChain(path: string, entries: number): number {
  new SqliteMetaStore(path).close(); // creates the schema
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL");
  const stmts = new Map<string, StatementSync>();
  const audit = new SqliteAudit((sql) => {
    let s = stmts.get(sql);
    if (!s) stmts.set(sql, s = db.prepare(sql));
    return s;
  });
  const started = performance.now();
  for (let done = 0; done < entries; done += 50_000) {
    db.exec("BEGIN");
    for (let i = done; i < Math.min(entries, done + 50_000); i++) {
      audit.append({
        requestId: `R${i}`,
        principal: "user:bench",
        source: "127.0.0.1",
        operation: "PutObject",
        bucket: "bench",
        key: `objects/${i}.bin`,
        versionId: "null",
        status: 200,
        errorCode: "",
        bytes: 1024,
        detail: "",
      });
    }
    db.exec("COMMIT");
  }
  db.close();
  return entries / ((performance.now() - started) / 1000);
}

/** The child: verifies the chain of `path`, prints one JSON line. */
async function verifyChild(path: string): Promise<void> {
  const meta = new SqliteMetaStore(path);
  const before = Deno.memoryUsage().rss;
  const started = performance.now();
  const report = await verifyStored(meta);
  const seconds = (performance.now() - started) / 1000;
  await meta.close();
  console.log(JSON.stringify({
    ok: report.ok,
    entries: report.entries,
    seconds,
    rssBefore: before,
    peak: await peakRssOf(Deno.pid),
  }));
}

async function benchVerify(): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "store-bench-audit-" });
  try {
    const path = `${dir}/meta.db`;
    const rate = buildChain(path, ENTRIES);
    const size = (await Deno.stat(path)).size;
    console.log(
      `chain: ${ENTRIES} entries written at ${rate.toFixed(0)} entries/s ` +
        `(meta.db ${(size / MB).toFixed(0)} MiB)`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL(import.meta.url).pathname, "--verify-child", path],
      stderr: "inherit",
    }).output();
    const r = JSON.parse(new TextDecoder().decode(out.stdout));
    console.log(
      `verify: ok=${r.ok}, ${r.entries} entries in ${r.seconds.toFixed(2)} s = ` +
        `${(r.entries / r.seconds).toFixed(0)} entries/s; child RSS before ` +
        `${(r.rssBefore / MB).toFixed(0)} MiB, peak ${(r.peak / MB).toFixed(0)} MiB`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** CPU time the process has used, in milliseconds (Linux: /proc/<pid>/stat, 100 ticks a second). */
function cpuMs(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
}

async function putMany(client: Client, prefix: string, count: number): Promise<number> {
  const body = { buffer: new Uint8Array(SIZE).fill(97), size: SIZE };
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < count) {
      const key = `${prefix}${next++}`;
      await client.ok({ method: "PUT", path: objectPath("bench", key), body }, `PUT ${key}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return count / ((performance.now() - started) / 1000);
}

async function benchPuts(): Promise<void> {
  const servers = {
    on: await startLocalServer("us-east-1", { STORE_AUDIT: "on" }),
    off: await startLocalServer("us-east-1", { STORE_AUDIT: "off" }),
  };
  const clients = {
    on: new Client(servers.on.endpoint, CONCURRENCY),
    off: new Client(servers.off.endpoint, CONCURRENCY),
  };
  try {
    const rates = { on: [] as number[], off: [] as number[] };
    const cpu = { on: 0, off: 0 };
    for (const side of ["on", "off"] as const) {
      await clients[side].ok({ method: "PUT", path: objectPath("bench") }, "create bucket");
      await putMany(clients[side], "warm/", 300);
    }
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating order, so both sides see the same load from the rest of the machine.
      for (const side of round % 2 === 0 ? ["off", "on"] as const : ["on", "off"] as const) {
        const before = cpuMs(servers[side].pid);
        rates[side].push(await putMany(clients[side], `r${round}/`, COUNT));
        cpu[side] += cpuMs(servers[side].pid) - before;
      }
    }
    const ratios = rates.off.map((v, i) => rates.on[i] / v);
    console.log(`small PUT (${SIZE} B, ${CONCURRENCY} in flight, ${ROUNDS}x${COUNT}, medians):`);
    for (const side of ["off", "on"] as const) {
      console.log(
        `  audit ${side.padEnd(3)}: ${median(rates[side]).toFixed(0)} ops/s   rounds ${
          rates[side].map((v) => v.toFixed(0))
        }`,
      );
    }
    console.log(
      `  overhead: ${((1 - median(ratios)) * 100).toFixed(1)}% (median of the rounds' pairs; ` +
        `pairs ${ratios.map((r) => ((1 - r) * 100).toFixed(0) + "%").join(" ")})`,
    );
    const perPut = (ms: number) => (ms * 1000 / (ROUNDS * COUNT)).toFixed(0);
    console.log(
      `  server CPU per PUT: ${perPut(cpu.off)} µs without, ${perPut(cpu.on)} µs with the audit ` +
        `(+${((cpu.on / cpu.off - 1) * 100).toFixed(1)}%)`,
    );
    for (const side of ["off", "on"] as const) {
      const peak = await servers[side].peakRss();
      console.log(`  server peak RSS, audit ${side}: ${((peak ?? 0) / MB).toFixed(0)} MiB`);
    }
  } finally {
    for (const side of ["on", "off"] as const) {
      clients[side].close();
      await servers[side].stop();
    }
  }
}

if (import.meta.main) {
  const child = Deno.args.indexOf("--verify-child");
  if (child >= 0) {
    await verifyChild(Deno.args[child + 1]);
  } else {
    if (!Deno.args.includes("--puts-only")) await benchVerify();
    if (!Deno.args.includes("--verify-only")) await benchPuts();
  }
}
