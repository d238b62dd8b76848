// The README's small-box setting (scripts/small-box.env): a server started with it stays within
// the stated RSS when idle and under a few concurrent large uploads and downloads.
import { readEnvFile } from "../../scripts/bench_options.ts";
import { assert, assertEquals } from "./assert.ts";
import { memoryOf, randomBytes, startServer } from "./server.ts";
import { objectPath, signedFetch } from "./signer.ts";

const MiB = 1024 * 1024;
/** Stated bounds (README, Memory). Measured: ~75-90 MiB idle, ~215-240 MiB peak under this load. */
const IDLE_BOUND = 112 * MiB;
const PEAK_BOUND = 320 * MiB;
const OBJECTS = 4;
const SIZE = 32 * MiB;

Deno.test("the small-box setting keeps idle and peak RSS within the stated bounds", async () => {
  const env = readEnvFile(new URL("../../scripts/small-box.env", import.meta.url).pathname);
  const server = await startServer({ env });
  try {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idle = (await memoryOf(server.pid)).rss;
    assert(idle <= IDLE_BOUND, `idle RSS ${(idle / MiB).toFixed(0)} MiB`);

    assertEquals((await signedFetch(server, { method: "PUT", path: "/small" })).status, 200);
    const body = randomBytes(SIZE);
    const keys = Array.from({ length: OBJECTS }, (_, i) => `big-${i}`);
    await Promise.all(keys.map(async (key) => {
      const res = await signedFetch(server, {
        method: "PUT",
        path: objectPath("small", key),
        body,
        payloadHash: "UNSIGNED-PAYLOAD",
      });
      assertEquals(res.status, 200, await res.text());
    }));
    await Promise.all(keys.map(async (key) => {
      const res = await signedFetch(server, { method: "GET", path: objectPath("small", key) });
      assertEquals(res.status, 200);
      let n = 0;
      for await (const part of res.body!) n += part.byteLength;
      assertEquals(n, SIZE);
    }));
    const { peak } = await memoryOf(server.pid);
    console.log(
      `small box: idle ${(idle / MiB).toFixed(0)} MiB, peak ${(peak / MiB).toFixed(0)} MiB`,
    );
    assert(peak <= PEAK_BOUND, `peak RSS ${(peak / MiB).toFixed(0)} MiB`);
  } finally {
    await server.stop();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});
