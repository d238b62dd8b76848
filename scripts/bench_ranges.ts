// Range-read benchmark: N concurrent ranged GETs (default 2,000 of 64 KiB) of one 32 MiB object
// (random bytes, stored as they are; with --sse stored with SSE-S3; with --text compressible
// text, stored compressed), against a server it starts on a temp dir with
// STORE_READ_BUFFER_MAX=64m. Reports the wall time, throughput, the server's peak RSS during the
// range GETs (VmHWM reset before them), and checks every answer's bytes.
//
//   deno task bench:ranges [--count 2000] [--range 64k] [--object 32m] [--rounds 2] [--sse]
//                          [--text]
import { parseArgs } from "node:util";
import { randomFillSync } from "node:crypto";
import { objectPath, Signer } from "./bench_client.ts";
import { Client, peakRssOf, startLocalServer } from "./bench_run.ts";
import { MiB, parseSize, sizeLabel } from "./bench_options.ts";

/** VmRSS of a process (Linux), in bytes. */
async function rssOf(pid: number): Promise<number | undefined> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => "");
  const m = /^VmRSS:\s+(\d+) kB/m.exec(status);
  return m ? Number(m[1]) * 1024 : undefined;
}

const mib = (n: number | undefined) => n === undefined ? "?" : `${(n / MiB).toFixed(0)} MiB`;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    count: { type: "string", default: "2000" },
    range: { type: "string", default: "64k" },
    object: { type: "string", default: "32m" },
    rounds: { type: "string", default: "2" },
    sse: { type: "boolean", default: false },
    text: { type: "boolean", default: false },
  },
});
const count = Number(values.count);
const rangeSize = parseSize(values.range);
const objectSize = parseSize(values.object);
const rounds = Number(values.rounds);

const server = await startLocalServer("us-east-1", { STORE_READ_BUFFER_MAX: String(64 * MiB) });
const client = new Client(server.endpoint, 1);
const signer = new Signer(server.endpoint);
try {
  const path = objectPath("ranges", "big");
  await client.ok({ method: "PUT", path: objectPath("ranges") }, "create bucket");
  const data = new Uint8Array(objectSize);
  for (let at = 0; at < objectSize; at += 65536) randomFillSync(data.subarray(at, at + 65536));
  // Text: lines of a few random words (zstd takes it to about a third).
  if (values.text) { for (let i = 0; i < objectSize; i++) data[i] = 97 + (data[i] % 8); }
  if (values.text) { for (let i = 40; i < objectSize; i += 41) data[i] = 10; }
  const headers: Record<string, string> = values.sse
    ? { "x-amz-server-side-encryption": "AES256" }
    : {};
  await client.ok(
    { method: "PUT", path, headers, body: { buffer: data, size: objectSize } },
    "PUT",
  );
  client.close();
  if (values.sse) {
    const { target, headers } = signer.sign({ method: "HEAD", path });
    const head = await fetch(server.endpoint.url + target, { method: "HEAD", headers });
    const sse = head.headers.get("x-amz-server-side-encryption");
    if (sse !== "AES256") throw new Error(`The object is not stored with SSE-S3 (${sse})`);
  }

  for (let round = 1; round <= rounds; round++) {
    // Resets VmHWM, so the peak is the range GETs' own.
    await Deno.writeTextFile(`/proc/${server.pid}/clear_refs`, "5").catch(() => {});
    const before = await rssOf(server.pid);
    const t0 = performance.now();
    const answers = await Promise.all(Array.from({ length: count }, async (_, i) => {
      const offset = (i * 7919 * 1024 + round * 4099) % (objectSize - rangeSize);
      const range = `bytes=${offset}-${offset + rangeSize - 1}`;
      const { target, headers } = signer.sign({ method: "GET", path, headers: { range } });
      const res = await fetch(server.endpoint.url + target, { headers });
      const got = new Uint8Array(await res.arrayBuffer());
      return res.status === 206 && got.byteLength === rangeSize &&
        got.every((b, j) => b === data[offset + j]);
    }));
    const seconds = (performance.now() - t0) / 1000;
    const wrong = answers.filter((ok) => !ok).length;
    const peak = await peakRssOf(server.pid);
    console.log(
      `round ${round}: ${count} x ${sizeLabel(rangeSize)} range GETs in ${seconds.toFixed(2)} s ` +
        `(${(count / seconds).toFixed(0)} req/s, ` +
        `${(count * rangeSize / MiB / seconds).toFixed(1)} MiB/s), wrong answers: ${wrong}, ` +
        `server RSS ${mib(before)} before, peak ${mib(peak)}`,
    );
    if (wrong > 0) Deno.exitCode = 1;
  }
} finally {
  await server.stop();
}
