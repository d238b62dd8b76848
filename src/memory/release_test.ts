import { startMemoryRelease } from "./release.ts";

function assertEquals<T>(actual: T, expected: T, what: string): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("memory release: only after quiet, never while busy, kept buffers dropped first", async () => {
  let activity = 0;
  let busy = false;
  let dropped = 0;
  const release = startMemoryRelease({
    activity: () => activity,
    busy: () => busy,
    dropKept: () => dropped++,
    quietMs: 40,
    minIntervalMs: 0,
    minGrowthBytes: 0,
  });
  try {
    await sleep(150);
    assertEquals([release.count, dropped], [1, 1], "the start-up garbage released once quiet");
    // Requests keep coming: no release while they do.
    for (let i = 0; i < 10; i++) {
      activity++;
      await sleep(10);
    }
    assertEquals(release.count, 1, "released during a load");
    // A transfer that holds buffers keeps it busy although no request starts.
    busy = true;
    await sleep(150);
    assertEquals(release.count, 1, "released while a transfer held buffers");
    busy = false;
    await sleep(150);
    assertEquals([release.count, dropped], [2, 2], "released once quiet after the load");
    await sleep(150);
    assertEquals(release.count, 2, "released again without activity");
  } finally {
    release.stop();
  }
});

Deno.test("memory release: not when the RSS did not grow, unless asked to", async () => {
  let activity = 0;
  const release = startMemoryRelease({
    activity: () => activity,
    busy: () => false,
    quietMs: 20,
    minIntervalMs: 0,
    minGrowthBytes: 1024 ** 4, // never grows that much here
  });
  try {
    await sleep(100);
    activity++;
    await sleep(100);
    assertEquals(release.count, 0, "released although the RSS did not grow enough");
    release.soon();
    await sleep(100);
    assertEquals(release.count, 1, "soon() releases at the next quiet moment");
  } finally {
    release.stop();
  }
});
