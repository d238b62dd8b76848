// Benchmark of event notifications against a server it starts on a temp dir:
// - small-PUT ops/s into a bucket without notifications vs one with a webhook (alternating
//   rounds, medians), the overhead of recording and delivering events;
// - delivery latency (acknowledged PUT -> webhook received; negative when the event arrived
//   before the client had read the answer), p50 and p99;
// - drain rate of a backlog: the webhook answers 503 while `--backlog` PUTs are made, then
//   comes back; events per second from the first to the last delivery.
//
//   deno task bench:notify [--count 3000] [--rounds 5] [--concurrency 16] [--size 4096]
//                          [--backlog 100000]
import { objectPath } from "./bench_client.ts";
import { Client, startLocalServer } from "./bench_run.ts";

function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}

const COUNT = flag("count", 3000);
const ROUNDS = flag("rounds", 5);
const CONCURRENCY = flag("concurrency", 16);
const SIZE = flag("size", 4096);
const BACKLOG = flag("backlog", 100_000);

/** The webhook: records when each key's event arrived; answers 503 while `down`. */
class Receiver {
  arrivals = new Map<string, number>();
  received = 0;
  down = false;
  firstAt = 0;
  lastAt = 0;
  readonly server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const body = await req.text();
      if (this.down) return new Response(null, { status: 503 });
      const now = performance.now();
      const records: { s3: { object: { key: string } } }[] = JSON.parse(body).Records ?? [];
      for (const record of records) {
        const key = decodeURIComponent(record.s3.object.key);
        if (!this.arrivals.has(key)) this.arrivals.set(key, now);
        this.received++;
        this.firstAt ||= now;
        this.lastAt = now;
      }
      return new Response(null, { status: 200 });
    },
  );
  get url(): string {
    return `http://127.0.0.1:${(this.server.addr as Deno.NetAddr).port}/hook`;
  }
}

async function putMany(
  client: Client,
  bucket: string,
  prefix: string,
  count: number,
  acks?: Map<string, number>,
): Promise<number> {
  const body = { buffer: new Uint8Array(SIZE).fill(97), size: SIZE };
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < count) {
      const key = `${prefix}${next++}`;
      await client.ok({ method: "PUT", path: objectPath(bucket, key), body }, `PUT ${key}`);
      acks?.set(key, performance.now());
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return count / ((performance.now() - started) / 1000);
}

/** CPU time the process has used, in milliseconds (Linux: /proc/<pid>/stat, 100 ticks a second). */
function cpuMs(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
}

async function waitFor(check: () => boolean, what: string, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function main(): Promise<void> {
  const receiver = new Receiver();
  const local = await startLocalServer("us-east-1", {
    STORE_NOTIFY_WEBHOOK_ALLOW: "127.0.0.1",
    STORE_NOTIFY_RETRY_MAX: "1",
  });
  const client = new Client(local.endpoint, CONCURRENCY);
  try {
    for (const bucket of ["bench-plain", "bench-hooked"]) {
      await client.ok({ method: "PUT", path: objectPath(bucket) }, `create ${bucket}`);
    }
    const config =
      `<NotificationConfiguration><WebhookConfiguration><Id>bench</Id><Url>${receiver.url}` +
      `</Url><Event>store:ObjectCreated:*</Event></WebhookConfiguration></NotificationConfiguration>`;
    const doc = new TextEncoder().encode(config);
    await client.ok({
      method: "PUT",
      path: objectPath("bench-hooked"),
      query: [["notification", ""]],
      body: { buffer: doc, size: doc.length },
    }, "PutBucketNotificationConfiguration");
    await putMany(client, "bench-plain", "warm/", 500);
    const plain: number[] = [];
    const hooked: number[] = [];
    const acks = new Map<string, number>();
    const cpu = { plain: 0, hooked: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      let before = cpuMs(local.pid);
      plain.push(await putMany(client, "bench-plain", `r${round}/`, COUNT));
      cpu.plain += cpuMs(local.pid) - before;
      before = cpuMs(local.pid);
      hooked.push(await putMany(client, "bench-hooked", `r${round}/`, COUNT, acks));
      await waitFor(() => acks.size === receiver.arrivals.size, "deliveries");
      cpu.hooked += cpuMs(local.pid) - before;
    }
    const latencies = [...acks].map(([k, t]) => receiver.arrivals.get(k)! - t)
      .sort((a, b) => a - b);
    const p = median(plain);
    const h = median(hooked);
    // Rounds alternate, so each pair saw about the same load from the rest of the machine.
    const ratios = plain.map((v, i) => hooked[i] / v);
    console.log(`small PUT (${SIZE} B, ${CONCURRENCY} in flight, ${ROUNDS}x${COUNT}, medians):`);
    console.log(
      `  no notifications: ${p.toFixed(0)} ops/s   rounds ${plain.map((v) => v.toFixed(0))}`,
    );
    console.log(
      `  webhook:          ${h.toFixed(0)} ops/s   rounds ${hooked.map((v) => v.toFixed(0))}`,
    );
    console.log(
      `  overhead: ${((1 - median(ratios)) * 100).toFixed(1)}% (median of the rounds' pairs; ` +
        `pairs ${ratios.map((r) => ((1 - r) * 100).toFixed(0) + "%").join(" ")})`,
    );
    const perPut = (ms: number) => (ms * 1000 / (ROUNDS * COUNT)).toFixed(0);
    console.log(
      `  server CPU per PUT: ${perPut(cpu.plain)} µs without, ${perPut(cpu.hooked)} µs with ` +
        `the webhook (delivery included): +${((cpu.hooked / cpu.plain - 1) * 100).toFixed(1)}%`,
    );
    console.log(
      `delivery latency (ack -> received): p50 ${percentile(latencies, 0.5).toFixed(1)} ms, ` +
        `p99 ${percentile(latencies, 0.99).toFixed(1)} ms, max ${latencies.at(-1)!.toFixed(1)} ms`,
    );
    if (BACKLOG > 0) {
      receiver.down = true;
      const before = receiver.received;
      const rate = await putMany(client, "bench-hooked", "backlog/", BACKLOG);
      console.log(`backlog: ${BACKLOG} PUTs at ${rate.toFixed(0)} ops/s while the webhook is down`);
      receiver.firstAt = 0;
      receiver.down = false;
      await waitFor(() => receiver.received - before >= BACKLOG, "the backlog to drain");
      const seconds = (receiver.lastAt - receiver.firstAt) / 1000;
      console.log(
        `drain: ${BACKLOG} events in ${seconds.toFixed(1)} s = ${
          (BACKLOG / seconds).toFixed(0)
        } events/s`,
      );
    }
  } finally {
    client.close();
    await local.stop();
    await receiver.server.shutdown();
  }
}

if (import.meta.main) await main();
