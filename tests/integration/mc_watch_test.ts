// `mc watch` (MinIO's client, built by scripts/install/mc.sh) against the listen request
// GET /{bucket}?events=...: it prints the events of writes and deletes as they happen.
import { assert, assertEquals } from "./assert.ts";
import { ADMIN_PASSWORD, ADMIN_USER, startServer } from "./server.ts";
import { objectPath } from "./signer.ts";
import { call } from "./notify_helpers.ts";

const MC = new URL("../../.tools/bin/mc", import.meta.url).pathname;

Deno.test("mc watch prints the events of writes and deletes", async () => {
  const server = await startServer();
  const configDir = await Deno.makeTempDir({ prefix: "mc-config-" });
  await call(server, "PUT", objectPath("watched"));
  const child = new Deno.Command(MC, {
    args: ["--config-dir", configDir, "watch", "--json", "--suffix", ".txt", "local/watched"],
    env: { MC_HOST_local: `http://${ADMIN_USER}:${ADMIN_PASSWORD}@127.0.0.1:${server.port}` },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines: { events: { type: string; path: string; size: number } }[] = [];
  const reading = (async () => {
    let buffer = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffer += chunk;
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        lines.push(JSON.parse(buffer.slice(0, nl)));
        buffer = buffer.slice(nl + 1);
      }
    }
  })();
  try {
    // The listen request is live only: write probes until mc shows it is connected.
    for (let i = 0; lines.length === 0; i++) {
      assert(i < 100, "mc watch printed nothing");
      await call(server, "PUT", objectPath("watched", `probe-${i}.txt`), { body: "p" });
      await new Promise((r) => setTimeout(r, 200));
    }
    const before = lines.length;
    await call(server, "PUT", objectPath("watched", "skipped.bin"), { body: "no" });
    await call(server, "PUT", objectPath("watched", "dir/hello.txt"), { body: "hello" });
    await call(server, "DELETE", objectPath("watched", "dir/hello.txt"));
    for (let i = 0; lines.length < before + 2 && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const got = lines.slice(before).map((l) => [l.events.type, new URL(l.events.path).pathname]);
    assertEquals(got, [
      ["s3:ObjectCreated:Put", "/watched/dir/hello.txt"],
      ["s3:ObjectRemoved:Delete", "/watched/dir/hello.txt"],
    ]);
    assertEquals(lines[before].events.size, 5);
  } finally {
    try {
      child.kill("SIGTERM");
    } catch { /* exited */ }
    await child.status;
    await child.stderr.cancel().catch(() => {});
    await reading.catch(() => {});
    await server.stop();
    await Deno.remove(server.dataDir, { recursive: true });
    await Deno.remove(configDir, { recursive: true });
  }
});
