// Measures the start-up tightening walk (src/storage/private_modes.ts) over a data directory of
// N shard files (default 100,000) spread like chunks/xx/: the walk's duration and the longest
// stall of the event loop while it runs (a 10 ms timer's worst lateness), on a world-readable
// tree and again on the tightened one.
//   deno task bench:modes [files]
import { join } from "node:path";
import { tightenModes } from "../src/storage/private_modes.ts";

async function makeTree(root: string, files: number): Promise<void> {
  const payload = new Uint8Array(64);
  for (let d = 0; d < 256; d++) {
    await Deno.mkdir(join(root, "chunks", d.toString(16).padStart(2, "0")), { recursive: true });
  }
  const batch: Promise<void>[] = [];
  for (let i = 0; i < files; i++) {
    const dir = (i % 256).toString(16).padStart(2, "0");
    batch.push(Deno.writeFile(join(root, "chunks", dir, `${i}.0`), payload, { mode: 0o644 }));
    if (batch.length >= 256) await Promise.all(batch.splice(0));
  }
  await Promise.all(batch);
  for await (const e of Deno.readDir(join(root, "chunks"))) {
    await Deno.chmod(join(root, "chunks", e.name), 0o755);
  }
  await Deno.chmod(root, 0o755);
}

async function measure(root: string): Promise<string> {
  let worst = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 10);
    last = now;
  }, 10);
  const started = performance.now();
  const report = await tightenModes([root]);
  const ms = performance.now() - started;
  clearInterval(timer);
  return `checked ${report.checked}, changed ${report.changed}: ${Math.round(ms)} ms, ` +
    `longest event-loop stall ${Math.round(worst)} ms`;
}

const files = Number(Deno.args[0] ?? 100_000);
Deno.umask(0o022);
const root = await Deno.makeTempDir({ prefix: "store-bench-modes-" });
try {
  await makeTree(root, files);
  console.log(`${files} shard files, world-readable:  ${await measure(root)}`);
  console.log(`${files} shard files, already private: ${await measure(root)}`);
} finally {
  await Deno.remove(root, { recursive: true });
}
